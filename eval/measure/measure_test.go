package measure

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentilesInterpolate(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3} // sorted 1..5
	p := Percentiles(xs, 0, 50, 95, 99, 100)
	require.InDeltaSlice(t, []float64{1, 3, 4.8, 4.96, 5}, p, 1e-9)
	require.Equal(t, []float64{5, 1, 4, 2, 3}, xs, "input untouched")
	require.True(t, math.IsNaN(Percentile(nil, 50)))
	require.Equal(t, 7.0, Percentile([]float64{7}, 99))
}

func TestLatencyFromSamples(t *testing.T) {
	var ss []Sample
	for i := range 100 {
		ss = append(ss, Sample{Consumer: "critical", Seq: uint64(i), SendNs: int64(i) * 1e9, RecvNs: int64(i)*1e9 + int64(i+1)*1e6})
	}
	l := Latency(ss)
	require.Equal(t, 100, l.N)
	require.InDelta(t, 50.5, l.P50, 1e-9)
	require.InDelta(t, 95.05, l.P95, 1e-9)
	require.InDelta(t, 99.01, l.P99, 1e-9)
	require.InDelta(t, 100, l.Max, 1e-9)
	require.InDelta(t, 50.5, l.Mean, 1e-9)
	xs, ys := CDF(ss)
	require.Len(t, xs, 100)
	require.Equal(t, 1.0, xs[0])
	require.Equal(t, 1.0, ys[99])
	require.True(t, math.IsNaN(Latency(nil).P95))
}

func TestCheckDelivery(t *testing.T) {
	pub := []uint64{0, 1, 2, 3, 4}
	mk := func(seqs ...uint64) []Sample {
		var s []Sample
		for _, q := range seqs {
			s = append(s, Sample{Seq: q})
		}
		return s
	}
	d := CheckDelivery(pub, mk(0, 1, 2, 3, 4))
	require.True(t, d.Complete())
	d = CheckDelivery(pub, mk(0, 2, 1, 1, 4))
	require.False(t, d.Complete())
	require.Equal(t, Delivery{Published: 5, Received: 5, Unique: 4, Missing: 1, Duplicates: 1, Reordered: 1}, d)
}

func TestPublishRateWindows(t *testing.T) {
	// 30 Hz for 10 s, then 15 Hz for 10 s.
	var at []Attempt
	seq := uint64(0)
	for i := range 300 {
		at = append(at, Attempt{Seq: seq, StartNs: int64(i) * int64(time.Second) / 30, Dur: 10 * time.Microsecond})
		seq++
	}
	for i := range 150 {
		at = append(at, Attempt{Seq: seq, StartNs: int64(10*time.Second) + int64(i)*int64(time.Second)/15, Dur: 50 * time.Millisecond, Err: i%10 == 0})
		seq++
	}
	ps := Publish(at, 0, int64(20*time.Second))
	require.Equal(t, 450, ps.Attempts)
	require.Equal(t, 15, ps.Errors)
	require.Equal(t, 150, ps.Blocked)
	require.Equal(t, 150*50*time.Millisecond, ps.BlockedFor)
	require.Equal(t, 50*time.Millisecond, ps.MaxBlock)
	require.InDelta(t, 22.5, ps.Rate, 1e-9)
	require.InDeltaSlice(t, []float64{30, 30, 15, 15}, ps.Windows, 1e-9)
	// 16 sliding windows (0..15 s): 6 at 30, 4 mixed (27, 24, 21, 18), 6 at 15.
	rates := WindowRates([]int64{}, 0, int64(20*time.Second), Window, SlideStep)
	require.Len(t, rates, 16)
	want := Std([]float64{30, 30, 30, 30, 30, 30, 27, 24, 21, 18, 15, 15, 15, 15, 15, 15})
	require.InDelta(t, want, ps.RateStd, 1e-9)

	steady := Publish(at[:300], 0, int64(10*time.Second))
	require.Equal(t, 0.0, steady.RateStd)
	require.InDelta(t, 30, steady.Rate, 1e-9)
}

func TestStd(t *testing.T) {
	require.Equal(t, 0.0, Std(nil))
	require.InDelta(t, 2, Std([]float64{2, 4, 4, 4, 5, 5, 7, 9}), 1e-12)
}

func TestDeliveredRate(t *testing.T) {
	var ss []Sample
	for i := range 30 {
		ss = append(ss, Sample{RecvNs: int64(i) * int64(100*time.Millisecond)})
	}
	require.InDelta(t, 10, DeliveredRate(ss, 0, int64(3*time.Second)), 1e-9)
	require.Equal(t, 0.0, DeliveredRate(ss, 5, 5))
}

func TestToggleResponses(t *testing.T) {
	s := int64(time.Second)
	toggles := []Toggle{{0, true}, {60 * s, false}, {120 * s, true}, {180 * s, false}}
	trs := []Transition{
		{AtNs: 2 * s, Device: "d", From: "UNKNOWN", To: "CRITICAL"}, // start-up, not a response
		{AtNs: 5 * s, Device: "d", From: "CRITICAL", To: "NONCRITICAL"},
		{AtNs: 70 * s, Device: "d", From: "NONCRITICAL", To: "CRITICAL"},
		{AtNs: 121 * s, Device: "other", From: "CRITICAL", To: "NONCRITICAL"},
		{AtNs: 123 * s, Device: "d", From: "CRITICAL", To: "NONCRITICAL"},
	}
	rs := Responses(toggles, trs, "d")
	require.Len(t, rs, 4)
	require.Equal(t, 5*time.Second, rs[0].After)
	require.Equal(t, 10*time.Second, rs[1].After)
	require.Equal(t, 3*time.Second, rs[2].After)
	require.False(t, rs[3].Detected)
	d, r, okD, okR := DetectRecover(rs)
	require.True(t, okD)
	require.True(t, okR)
	require.Equal(t, 4*time.Second, d)
	require.Equal(t, 10*time.Second, r)

	ts, lv := StateSeries(trs, "d", 0, 240*s, "UNKNOWN")
	require.Equal(t, []float64{0, 2, 2, 5, 5, 70, 70, 123, 123, 240}, ts)
	require.Equal(t, []float64{0, 0, 2, 2, 1, 1, 2, 2, 1, 1}, lv)
}

func TestParseProc(t *testing.T) {
	stat := []byte("1234 (my (odd) proc) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 5 0 100 1000000 500 18446744073709551615\n")
	status := []byte("Name:\tx\nVmPeak:\t 9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1024 kB\n")
	u, err := parseProc(stat, status)
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, u.CPU)
	require.Equal(t, int64(2048<<10), u.PeakRSS)
	_, err = parseProc([]byte("garbage"), status)
	require.Error(t, err)
}

func TestOwnUsage(t *testing.T) {
	u, err := ProcUsage(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, u.PeakRSS)
	s := SelfUsage()
	require.Positive(t, s.PeakRSS)
	require.Equal(t, time.Second, Usage{CPU: 3 * time.Second}.Sub(Usage{CPU: 2 * time.Second}).CPU)
}
