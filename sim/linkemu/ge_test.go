package linkemu

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// geSteps is the length of the long-run loss runs.
const geSteps = 200_000

func TestExpectedLossOfProfiles(t *testing.T) {
	// evaluation.md: mild ≈ 2.3 %, moderate ≈ 5.4 %, strong ≈ 9.2 %.
	for _, tc := range []struct {
		name string
		want float64
	}{{"clean", 0}, {"mild", 0.0234}, {"moderate", 0.0542}, {"strong", 0.0917}} {
		p, err := LookupProfile(tc.name)
		require.NoError(t, err)
		require.InDelta(t, tc.want, p.ToDevice.ExpectedLoss(), 0.0001, tc.name)
		require.InDelta(t, tc.want, p.ToGateway.ExpectedLoss(), 0.0001, tc.name)
	}
}

func TestGELongRunLossMatchesFormula(t *testing.T) {
	for _, p := range Profiles() {
		for _, seed := range []uint64{1, 2, 3} {
			ch := NewChannel(p.ToDevice.Loss, seed, geStream(ToDevice))
			lostN, bad := 0, 0
			for range geSteps {
				if ch.State() == GEBad {
					bad++
				}
				if ch.Step() {
					lostN++
				}
			}
			got := float64(lostN) / geSteps
			want := p.ToDevice.ExpectedLoss()
			t.Logf("%-8s seed %d: produced loss %.4f, expected %.4f, bad-state share %.4f", p.Name, seed, got, want, float64(bad)/geSteps)
			if want == 0 {
				require.Zero(t, lostN)
				continue
			}
			// The chain's losses come in bursts, so the tolerance is wider than
			// a binomial one: 5 standard deviations of the run mean are < 10 %.
			require.InEpsilon(t, want, got, 0.10, "%s seed %d", p.Name, seed)
			g := p.ToDevice.Loss
			if g.P+g.R == 0 { // Bernoulli: the chain never leaves the good state
				require.Zero(t, bad)
				continue
			}
			require.InEpsilon(t, g.P/(g.P+g.R), float64(bad)/geSteps, 0.10, "bad-state share")
		}
	}
}

func lossSequence(g GE, seed, stream uint64, n int) []bool {
	ch := NewChannel(g, seed, stream)
	out := make([]bool, n)
	for i := range out {
		out[i] = ch.Step()
	}
	return out
}

func TestGESameSeedSameSequence(t *testing.T) {
	p, err := LookupProfile("strong")
	require.NoError(t, err)
	a := lossSequence(p.ToDevice.Loss, 42, 0, 10_000)
	require.Equal(t, a, lossSequence(p.ToDevice.Loss, 42, 0, 10_000))
	require.NotEqual(t, a, lossSequence(p.ToDevice.Loss, 43, 0, 10_000), "another seed")
	require.NotEqual(t, a, lossSequence(p.ToDevice.Loss, 42, 1, 10_000), "another stream")
}

func TestGEDegenerateModels(t *testing.T) {
	require.False(t, slicesContains(lossSequence(GE{}, 1, 0, 1000), true), "zero model loses nothing")
	require.True(t, GE{}.Zero())
	all := lossSequence(GE{LossGood: 1}, 1, 0, 1000)
	require.False(t, slicesContains(all, false), "loss_good 1 loses everything")
	require.Equal(t, 0.25, GE{LossGood: 0.25}.ExpectedLoss(), "p = r = 0 stays good")

	ch := NewChannel(GE{P: 1, R: 1, LossBad: 1}, 1, 0)
	require.Equal(t, []bool{false, true, false, true}, []bool{ch.Step(), ch.Step(), ch.Step(), ch.Step()}, "alternating states")
	ch.SetModel(GE{})
	require.Equal(t, GEGood, ch.State())
	require.Equal(t, "bad", GEBad.String())
}

func slicesContains(s []bool, v bool) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestGEValidate(t *testing.T) {
	for _, tc := range []struct {
		g   GE
		err string
	}{
		{GE{P: 0.1, R: 0.2, LossGood: 0, LossBad: 1}, ""},
		{GE{P: -0.1, R: 0.2}, "ge.p"},
		{GE{P: 0.1, R: 1.5}, "ge.r"},
		{GE{LossBad: 2}, "ge.loss_bad"},
		{GE{P: 0.1}, "never be left"},
	} {
		err := tc.g.Validate()
		if tc.err == "" {
			require.NoError(t, err)
		} else {
			require.ErrorContains(t, err, tc.err)
		}
	}
}
