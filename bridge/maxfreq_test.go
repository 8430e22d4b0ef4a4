package bridge_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

// capRun drives a Downsampler with samples 0..len(at)-1 arriving at the
// given offsets (synthetic time), flushing the held one whenever its slot
// opens before the next arrival, as the route's forwarding loop does; it
// returns the samples sent with their times, and the drops.
func capRun(period time.Duration, at []time.Duration) (sent []int, times []time.Duration, dropped int) {
	t0 := time.Unix(1000, 0)
	d := bridge.NewDownsampler[int](period)
	flushUntil := func(now time.Time) {
		for {
			due, ok := d.Due()
			if !ok || due.After(now) {
				return
			}
			v, ok := d.Flush(due)
			if !ok {
				return
			}
			sent, times = append(sent, v), append(times, due.Sub(t0))
		}
	}
	for i, off := range at {
		now := t0.Add(off)
		flushUntil(now)
		send, n := d.Offer(now, i)
		dropped += n
		if send {
			sent, times = append(sent, i), append(times, off)
		}
	}
	flushUntil(t0.Add(time.Hour))
	return sent, times, dropped
}

// pub_max_frequencies 10 on a 100 Hz topic for 10 s (synthetic time):
// exactly 101 samples out (one per 100 ms slot, 0 ms..10 s, the last one
// the final sample of the stream), every other one dropped and counted.
func TestDownsampler100HzTo10Hz(t *testing.T) {
	const n = 1000
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = time.Duration(i) * 10 * time.Millisecond
	}
	sent, times, dropped := capRun(100*time.Millisecond, at)
	require.Len(t, sent, 101)
	require.Equal(t, n, len(sent)+dropped, "every sample sent or counted")
	require.Equal(t, 0, sent[0], "the first sample goes out at once")
	require.Equal(t, n-1, sent[len(sent)-1], "the last sample of the stream is not lost")
	for i := 1; i < len(times); i++ {
		require.Equal(t, 100*time.Millisecond, times[i]-times[i-1], "one per slot")
		require.Equal(t, 10*i-1, sent[i], "the newest sample of the slot")
	}
}

// With arrival jitter, the cap holds over every window: k samples out take
// more than (k-2) periods, and the average stays at the cap (slots do not
// drift with late arrivals).
func TestDownsamplerJitterBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	period := 100 * time.Millisecond
	at := make([]time.Duration, 3000) // ~100 Hz for 30 s, ±4 ms jitter
	for i := range at {
		at[i] = time.Duration(i)*10*time.Millisecond + time.Duration(rng.IntN(8000))*time.Microsecond
	}
	sent, times, dropped := capRun(period, at)
	require.Equal(t, len(at), len(sent)+dropped)
	for i := range times {
		for j := i + 1; j < len(times); j++ {
			require.Greater(t, times[j]-times[i], time.Duration(j-i-1)*period, "samples %d..%d", i, j)
		}
	}
	span := times[len(times)-1] - times[0]
	require.InDelta(t, float64(span)/float64(period), float64(len(sent)-1), 1, "average rate is the cap")
}

// A burst then silence: the first goes out at once, the last when its slot
// opens, the ones between are dropped; after a silence longer than a
// period the next sample goes out at once.
func TestDownsamplerBurstAndSilence(t *testing.T) {
	ms := time.Millisecond
	sent, times, dropped := capRun(100*ms, []time.Duration{0, 1 * ms, 2 * ms, 3 * ms, 4 * ms, 500 * ms, 530 * ms})
	require.Equal(t, []int{0, 4, 5, 6}, sent)
	require.Equal(t, []time.Duration{0, 100 * ms, 500 * ms, 600 * ms}, times)
	require.Equal(t, 3, dropped)
}
