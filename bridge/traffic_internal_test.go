package bridge

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/knobs"
)

// TestTrafficMeterRates: a steady 10 Hz stream of 200 B samples reads as
// 10 Hz and 2000 B/s within 1 % after a minute, and as e^-1 of that one
// TrafficTau after it stopped.
func TestTrafficMeterRates(t *testing.T) {
	var m trafficMeter
	t0 := time.Unix(1000, 0)
	for i := range 600 {
		m.observe("a/b", 200, t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	last := t0.Add(599*100*time.Millisecond + 50*time.Millisecond) // between two samples
	s := m.status(last)
	require.Len(t, s.Keys, 1)
	k := s.Keys[0]
	require.Equal(t, KeyTraffic{Key: "a/b", Samples: 600, Bytes: 120000, SamplesPerS: k.SamplesPerS, BytesPerS: k.BytesPerS, MaxBytes: 200, P95Bytes: 200}, k)
	require.InEpsilon(t, 10, k.SamplesPerS, 0.01)
	require.InEpsilon(t, 2000, k.BytesPerS, 0.01)
	later := m.status(last.Add(TrafficTau)).Keys[0]
	require.InEpsilon(t, k.SamplesPerS*math.Exp(-1), later.SamplesPerS, 0.02)
	require.Equal(t, t0, s.Since)
}

// TestTrafficMeterFirstBurst: 10 samples at one instant read as at most
// about 10 per TrafficMinWindow, not as a flood.
func TestTrafficMeterFirstBurst(t *testing.T) {
	var m trafficMeter
	t0 := time.Unix(1000, 0)
	for range 10 {
		m.observe("k", 10, t0)
	}
	got := m.status(t0).Keys[0].SamplesPerS
	want := 10 / TrafficTau.Seconds() / (1 - math.Exp(-TrafficMinWindow.Seconds()/TrafficTau.Seconds()))
	require.InDelta(t, want, got, 1e-9)
	require.Less(t, got, 11.1)
}

// TestTrafficMeterSizes: p95 is the upper bound of the power-of-two class
// holding the 95th percentile, capped by the largest payload.
func TestTrafficMeterSizes(t *testing.T) {
	var m trafficMeter
	now := time.Unix(1000, 0)
	for range 95 {
		m.observe("k", 100, now)
	}
	for range 5 {
		m.observe("k", 5000, now)
	}
	k := m.status(now).Keys[0]
	require.Equal(t, 128, k.P95Bytes)
	require.Equal(t, 5000, k.MaxBytes)
	require.Equal(t, uint64(95*100+5*5000), k.Bytes)
	m.observe("k", 5000, now) // 94.06 % at or below 128 B now
	require.Equal(t, 5000, m.status(now).Keys[0].P95Bytes)
	require.Equal(t, 0, sizeClass(0))
	require.Equal(t, 0, sizeClass(1))
	require.Equal(t, 1, sizeClass(2))
	require.Equal(t, 2, sizeClass(3))
	require.Equal(t, 10, sizeClass(1024))
	require.Equal(t, 11, sizeClass(1025))
	require.Equal(t, sizeBuckets-1, sizeClass(math.MaxInt))
}

// TestTrafficMeterKeyCap: beyond MaxTrafficKeys subscriptions the samples
// are metered under OtherKey, and ObservedTraffic counts them as unmetered.
func TestTrafficMeterKeyCap(t *testing.T) {
	st := &deviceStats{label: "d"}
	now := time.Unix(1000, 0)
	for i := range MaxTrafficKeys + 3 {
		st.traffic.observe(fmt.Sprintf("k/%d", i), 10, now)
	}
	s := st.traffic.status(now)
	require.Len(t, s.Keys, MaxTrafficKeys+1)
	require.Equal(t, OtherKey, s.Keys[MaxTrafficKeys].Key)
	require.Equal(t, uint64(3), s.Keys[MaxTrafficKeys].Samples)
	st.drop(LaneBatched, DropOversize, 2)
	st.drop(LaneExpress, DropOversize, 1)
	st.drop(LaneBatched, DropRingBudget, 4)
	tr := observedTraffic("src", st, 4, now.Add(2*time.Second))
	require.Len(t, tr.Topics, MaxTrafficKeys)
	require.Equal(t, knobs.Topic{Name: "k/0", Direction: knobs.Sub, RateHz: tr.Topics[0].RateHz, SizeBytes: 10, Line: 1}, tr.Topics[0])
	require.Equal(t, &knobs.Observed{Window: 2 * time.Second, RateTau: TrafficTau, Dropped: map[string]uint64{"oversize": 3, "ring_budget": 4},
		RingDepth: 4, Unmetered: 3}, tr.Observed)
}

// TestTrafficMeterFlushes: occupancy is the fullest subscription's samples
// over the ring depth, averaged with weight 0.1; full flushes counted.
func TestTrafficMeterFlushes(t *testing.T) {
	var m trafficMeter
	m.flushed(2, 4)
	m.flushed(4, 4)
	s := m.status(time.Unix(0, 0))
	require.Equal(t, uint64(2), s.Flushes)
	require.Equal(t, uint64(1), s.FullFlushes)
	require.InDelta(t, 0.5+0.1*(1-0.5), s.FlushOccupancy, 1e-12)
	require.Equal(t, 1.0, s.FlushOccupancyMax)
}

// BenchmarkTrafficObserve: the meter's cost per offered sample (every
// sample to a device pays it), 8 subscriptions metered.
func BenchmarkTrafficObserve(b *testing.B) {
	var m trafficMeter
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = fmt.Sprintf("robot/topic%d", i)
	}
	now := time.Unix(1000, 0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now = now.Add(time.Millisecond)
		m.observe(keys[i%len(keys)], 64, now)
		i++
	}
}
