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
	d, ok := s.reserve(t0, 1000, true)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Second), d)
	d, ok = s.reserve(t0, 1000, true) // waits behind the first
	require.True(t, ok)
	require.Equal(t, t0.Add(2*time.Second), d)
	d, ok = s.reserve(t0, 1000, true)
	require.True(t, ok)
	require.Equal(t, t0.Add(3*time.Second), d)
	_, ok = s.reserve(t0, 1000, true) // 3000 bytes queued ahead: full
	require.False(t, ok)
	d, ok = s.reserve(t0, 1000, false) // unbounded (TCP) still books
	require.True(t, ok)
	require.Equal(t, t0.Add(4*time.Second), d)
	d, ok = s.reserve(t0.Add(10*time.Second), 500, true) // idle again
	require.True(t, ok)
	require.Equal(t, t0.Add(10500*time.Millisecond), d)

	u := shaper{}
	d, ok = u.reserve(t0, 1<<30, true)
	require.True(t, ok)
	require.Equal(t, t0, d)
}

func TestRTOModel(t *testing.T) {
	moderate, err := LookupProfile("moderate")
	require.NoError(t, err)
	// srtt = 40 + 40 + 20 ms; σ = sqrt(15² + 15² + 10²) ≈ 23.5 ms, 4σ ≈ 94 ms < 200 ms.
	require.Equal(t, 300*time.Millisecond, RTOConfig{}.RTO(moderate))
	require.Equal(t, DefaultRTOMin, RTOConfig{}.RTO(Clean))
	for name, want := range map[string]time.Duration{"mild": 260 * time.Millisecond, "strong": 340 * time.Millisecond} {
		p, err := LookupProfile(name)
		require.NoError(t, err)
		require.Equal(t, want, RTOConfig{}.RTO(p), name)
	}
	require.Equal(t, 50*time.Millisecond, RTOConfig{Initial: 50 * time.Millisecond}.RTO(moderate))
	big := Profile{Name: "big", ToDevice: Impairment{Delay: Jitter{Mean: time.Second, SD: 100 * time.Millisecond}}}
	require.Equal(t, time.Second+400*time.Millisecond, RTOConfig{}.RTO(big))
	require.Equal(t, 500*time.Millisecond, RTOConfig{Max: 500 * time.Millisecond}.RTO(big))
}

func TestLinkSegmentBacksOff(t *testing.T) {
	l := newLink(ToDevice, 1, 0, time.Second, 4, nil)
	l.set(Impairment{Loss: GE{LossGood: 1}}, 100*time.Millisecond, 0) // every transmission lost; no srtt: RTO only
	t0 := time.Unix(0, 0)
	// 4 retransmissions: 100 + 200 + 400 + 800 (capped at 1 s: not reached) ms.
	require.Equal(t, t0.Add(1500*time.Millisecond), l.segment(t0, 10))
	st := l.snapshot()
	require.EqualValues(t, 1, st.Packets)
	require.EqualValues(t, 5, st.Sent)
	require.EqualValues(t, 4, st.Lost)
	require.EqualValues(t, 4, st.Retransmits)
	require.EqualValues(t, 1, st.Stalled)
	require.EqualValues(t, 4, st.Timeouts)
	require.Zero(t, st.FastRepairs)
	require.InDelta(t, 0.8, st.ProducedLoss(), 1e-9)
}

// TestLinkRepairTime pins the loss-detection model (link.repairTime) case
// by case: RACK one round trip after the next unit left, TLP at 2·srtt
// when nothing follows in time, the RTO otherwise, RepairRTO always the RTO.
func TestLinkRepairTime(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name           string
		repair         Repair
		srtt, gap, rto time.Duration
		k              int
		want           time.Duration
		timeout        bool
	}{
		{"steady stream: RACK after the next unit's SACK", RepairLinux, 40 * ms, 10 * ms, 240 * ms, 0, 50 * ms, false},
		{"back to back: RACK's reordering window srtt/4", RepairLinux, 40 * ms, ms, 240 * ms, 0, 50 * ms, false},
		{"30 Hz over a 40 ms round trip: the next sample repairs it", RepairLinux, 40 * ms, 33 * ms, 240 * ms, 0, 73 * ms, false},
		{"sparse, next unit before the RTO", RepairLinux, 40 * ms, 100 * ms, 240 * ms, 0, 140 * ms, false},
		{"lost retransmission: RACK again", RepairLinux, 40 * ms, 10 * ms, 240 * ms, 1, 50 * ms, false},
		{"sparse beyond the RTO: timeout", RepairLinux, 40 * ms, 300 * ms, 240 * ms, 0, 240 * ms, true},
		{"first packet (no gap): 2·srtt+200 ms > RTO: timeout", RepairLinux, 40 * ms, 0, 240 * ms, 0, 240 * ms, true},
		{"tail loss probe before a long RTO", RepairLinux, 100 * ms, 450 * ms, 500 * ms, 0, 400 * ms, false},
		{"a lost probe's unit waits the RTO", RepairLinux, 100 * ms, 450 * ms, 500 * ms, 1, 500 * ms, true},
		{"RTO model", RepairRTO, 40 * ms, 10 * ms, 240 * ms, 0, 240 * ms, true},
		{"no round trip known: RTO", RepairLinux, 0, 10 * ms, 240 * ms, 0, 240 * ms, true},
	} {
		l := newLink(ToDevice, 1, 0, DefaultRTOMax, DefaultMaxRetransmits, nil)
		l.repair, l.srtt, l.gap = tc.repair, tc.srtt, float64(tc.gap)
		got, timeout := l.repairTime(tc.k, tc.rto)
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, tc.timeout, timeout, tc.name)
	}
}

// TestLinkSegmentRACKRepeats: a unit lost on every transmission of a
// steady stream is repaired by RACK each time (no back-off), until
// maxRtx lets it through.
func TestLinkSegmentRACKRepeats(t *testing.T) {
	l := newLink(ToDevice, 1, 0, time.Second, 3, nil)
	l.set(Impairment{}, 240*time.Millisecond, 40*time.Millisecond) // clean while the gap is learnt
	t0 := time.Unix(0, 0)
	for i := range 10 {
		require.Equal(t, t0.Add(time.Duration(i)*10*time.Millisecond), l.segment(t0.Add(time.Duration(i)*10*time.Millisecond), 10))
	}
	l.set(Impairment{Loss: GE{LossGood: 1}}, 240*time.Millisecond, 40*time.Millisecond)
	now := t0.Add(100 * time.Millisecond)
	// 3 transmissions lost, each noticed 40 + max(10, 10) ms later.
	require.Equal(t, now.Add(150*time.Millisecond), l.segment(now, 10))
	st := l.snapshot()
	require.EqualValues(t, 3, st.Retransmits)
	require.EqualValues(t, 3, st.FastRepairs)
	require.Zero(t, st.Timeouts)
}

// TestLinkProducedLossPerProfile drives each direction of each built-in
// profile with 200 000 datagrams (1 KiB every 2 ms: below the 5000 kbit/s
// rate, so no queue drops) through the same model the UDP proxy uses and
// compares the produced loss its counters report with ExpectedLoss.
func TestLinkProducedLossPerProfile(t *testing.T) {
	for _, p := range Profiles() {
		for _, d := range []Direction{ToDevice, ToGateway} {
			l := newLink(d, 1, DefaultQueueBytes, DefaultRTOMax, DefaultMaxRetransmits, nil)
			l.set(p.Dir(d), 0, 0)
			now := time.Unix(0, 0)
			for range geSteps {
				l.datagram(now, 1024, true)
				now = now.Add(2 * time.Millisecond)
			}
			st := l.snapshot()
			want := p.Dir(d).ExpectedLoss()
			t.Logf("%-8s %-10s produced %.4f expected %.4f (lost %d of %d)", p.Name, d, st.ProducedLoss(), want, st.Lost, st.Sent)
			require.Zero(t, st.QueueDrops)
			require.Equal(t, st.Lost, st.Dropped)
			if want == 0 {
				require.Zero(t, st.Lost)
				continue
			}
			require.InEpsilon(t, want, st.ProducedLoss(), 0.10)
		}
	}
}

// TestLinkSegmentLossPerProfile drives the TCP model of each profile with
// 200 000 batches. First transmissions follow the chain, so the share of
// stalled batches is the expected loss. A retransmission is drawn
// stall/gap steps ahead: at 2 ms spacing the chain has mixed by then and
// the produced loss (retransmissions included) is the expected one; at
// 30 Hz RACK resends a lost batch one round trip plus one gap later, only
// 2–3 steps ahead, so a batch lost in the bad state is more likely to be
// lost again and the produced loss is higher (strong: 0.109 for 0.092).
func TestLinkSegmentLossPerProfile(t *testing.T) {
	for _, gap := range []time.Duration{2 * time.Millisecond, time.Second / 30} {
		for _, p := range Profiles()[1:] {
			l := newLink(ToDevice, 1, 0, DefaultRTOMax, DefaultMaxRetransmits, nil)
			l.set(p.ToDevice, RTOConfig{}.RTO(p), RTOConfig{}.SRTT(p))
			now := time.Unix(0, 0)
			for range geSteps {
				l.segment(now, 100)
				now = now.Add(gap)
			}
			st := l.snapshot()
			want := p.ToDevice.ExpectedLoss()
			first := float64(st.Stalled) / float64(st.Packets)
			t.Logf("gap %-8v %-8s produced %.4f (first transmissions %.4f) expected %.4f; %d stalled, %d retransmissions",
				gap, p.Name, st.ProducedLoss(), first, want, st.Stalled, st.Retransmits)
			if want == 0 {
				require.Zero(t, st.Lost)
				continue
			}
			require.InEpsilon(t, want, first, 0.10)
			require.Equal(t, st.Lost, st.Retransmits)
			if gap == 2*time.Millisecond {
				require.InEpsilon(t, want, st.ProducedLoss(), 0.10)
			} else {
				require.GreaterOrEqual(t, st.ProducedLoss(), want*0.95)
				require.LessOrEqual(t, st.ProducedLoss(), want*1.25)
			}
		}
	}
}

func TestChannelAhead(t *testing.T) {
	g := GE{P: 0.03, R: 0.15, LossGood: 0.005, LossBad: 0.3}
	ch := NewChannel(g, 9, 0)
	piB := g.P / (g.P + g.R)
	for _, k := range []int{1, 5, 20, 1000} {
		const n = 100_000
		bad := 0
		for range n {
			if ch.Ahead(GEBad, k) == GEBad {
				bad++
			}
		}
		want := piB + (1-piB)*math.Pow(1-g.P-g.R, float64(k))
		require.InDelta(t, want, float64(bad)/n, 0.01, "k=%d", k)
	}
	require.Equal(t, GEBad, ch.Ahead(GEBad, 0))
	require.Equal(t, GEGood, NewChannel(GE{LossGood: 1}, 1, 0).Ahead(GEGood, 5), "p = r = 0 never moves")
	require.True(t, NewChannel(GE{LossBad: 1, P: 1, R: 1}, 1, 0).LostIn(GEBad))
	require.False(t, NewChannel(GE{LossBad: 1, P: 1, R: 1}, 1, 0).LostIn(GEGood))
}
