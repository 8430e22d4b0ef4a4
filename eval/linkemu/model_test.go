package linkemu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJitterTruncatedNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	j := Jitter{Mean: 40 * time.Millisecond, SD: 15 * time.Millisecond}
	const n = 100_000
	var sum, sq float64
	for range n {
		d := j.Sample(rng)
		require.GreaterOrEqual(t, d, time.Duration(0))
		sum += float64(d)
		sq += float64(d) * float64(d)
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	require.InEpsilon(t, float64(j.Mean), mean, 0.02)
	require.InEpsilon(t, float64(j.SD), sd, 0.05)

	// Mean 0: half the draws would be negative; none may be.
	z := Jitter{SD: 10 * time.Millisecond}
	for range 10_000 {
		require.GreaterOrEqual(t, z.Sample(rng), time.Duration(0))
	}
	require.Equal(t, 5*time.Millisecond, Jitter{Mean: 5 * time.Millisecond}.Sample(rng))
	require.Error(t, Jitter{Mean: -1}.Validate())
	require.Equal(t, "0", Jitter{}.String())
}

func TestBitrateTxTime(t *testing.T) {
	r := 5000 * Kbit
	require.Equal(t, 1600*time.Microsecond, r.TxTime(1000)) // 8000 bit at 5 Mbit/s
	require.Zero(t, Bitrate(0).TxTime(1000))
}

func TestShaperSerializesAndBoundsBacklog(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := shaper{rate: 8000, limit: 3000} // 1000 bytes per second
	d, ok := s.reserve(t0, 1000)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Second), d)
	d, ok = s.reserve(t0, 1000) // waits behind the first
	require.True(t, ok)
	require.Equal(t, t0.Add(2*time.Second), d)
	d, ok = s.reserve(t0, 1000)
	require.True(t, ok)
	require.Equal(t, t0.Add(3*time.Second), d)
	_, ok = s.reserve(t0, 1000) // 3000 bytes queued ahead: full
	require.False(t, ok)
	d, ok = s.reserve(t0.Add(10*time.Second), 500) // idle again
	require.True(t, ok)
	require.Equal(t, t0.Add(10500*time.Millisecond), d)

	u := shaper{}
	d, ok = u.reserve(t0, 1<<30)
	require.True(t, ok)
	require.Equal(t, t0, d)
}

func TestRTOModel(t *testing.T) {
	moderate, err := LookupProfile("moderate")
	require.NoError(t, err)
	// srtt = 40 + 40 + 20 ms; σ = sqrt(15² + 15² + 10²) ≈ 23.5 ms, 4σ ≈ 94 ms < 200 ms.
	require.Equal(t, 300*time.Millisecond, RTOConfig{}.RTO(moderate))
	require.Equal(t, DefaultRTOMin, RTOConfig{}.RTO(Clean))
	require.Equal(t, 50*time.Millisecond, RTOConfig{Initial: 50 * time.Millisecond}.RTO(moderate))
	big := Profile{Name: "big", ToDevice: Impairment{Delay: Jitter{Mean: time.Second, SD: 100 * time.Millisecond}}}
	require.Equal(t, time.Second+400*time.Millisecond, RTOConfig{}.RTO(big))
	require.Equal(t, 500*time.Millisecond, RTOConfig{Max: 500 * time.Millisecond}.RTO(big))
}

func TestLinkSegmentBacksOff(t *testing.T) {
	l := newLink(ToDevice, 1, 0, time.Second, 4, nil)
	l.set(Impairment{Loss: GE{LossGood: 1}}, 100*time.Millisecond) // every transmission lost
	t0 := time.Unix(0, 0)
	// 4 retransmissions: 100 + 200 + 400 + 800 (capped at 1 s: not reached) ms.
	require.Equal(t, t0.Add(1500*time.Millisecond), l.segment(t0, 10))
	st := l.snapshot()
	require.EqualValues(t, 1, st.Packets)
	require.EqualValues(t, 5, st.Sent)
	require.EqualValues(t, 4, st.Lost)
	require.EqualValues(t, 4, st.Retransmits)
	require.EqualValues(t, 1, st.Stalled)
	require.InDelta(t, 0.8, st.ProducedLoss(), 1e-9)
}
