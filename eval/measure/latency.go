package measure

import (
	"math"
	"slices"
)

// Sample is one message seen by one consumer: the raw row of a run's CSV.
type Sample struct {
	Run      string // run name, e.g. "exp1-cyclone-moderate"
	Consumer string // "critical", "impaired", "noncritical", ...
	Seq      uint64 // publication sequence number (0-based, in send order)
	SendNs   int64  // header stamp of the message = send time, Unix ns
	RecvNs   int64  // receive time at the consumer, Unix ns (same clock)
}

// LatencyMs is receive time − header stamp, in milliseconds.
func (s Sample) LatencyMs() float64 { return float64(s.RecvNs-s.SendNs) / 1e6 }

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of xs with linear interpolation
// between closest ranks (numpy's default, "type 7"); NaN for no data. xs need not be sorted
// and is not modified.
func Percentile(xs []float64, p float64) float64 {
	return Percentiles(xs, p)[0]
}

// Percentiles returns several percentiles of xs at once (one sort).
func Percentiles(xs []float64, ps ...float64) []float64 {
	out := make([]float64, len(ps))
	if len(xs) == 0 {
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	for i, p := range ps {
		p = min(max(p, 0), 100)
		h := p / 100 * float64(len(s)-1)
		lo := math.Floor(h)
		hi := math.Ceil(h)
		out[i] = s[int(lo)] + (h-lo)*(s[int(hi)]-s[int(lo)])
	}
	return out
}

// LatencyStats summarizes the latencies of one consumer.
type LatencyStats struct {
	N             int
	P50, P95, P99 float64 // ms
	Max, Mean     float64 // ms
}

// Latency computes LatencyStats over samples.
func Latency(samples []Sample) LatencyStats {
	if len(samples) == 0 {
		return LatencyStats{P50: math.NaN(), P95: math.NaN(), P99: math.NaN(), Max: math.NaN(), Mean: math.NaN()}
	}
	xs := make([]float64, len(samples))
	sum := 0.0
	mx := math.Inf(-1)
	for i, s := range samples {
		xs[i] = s.LatencyMs()
		sum += xs[i]
		mx = max(mx, xs[i])
	}
	p := Percentiles(xs, 50, 95, 99)
	return LatencyStats{N: len(samples), P50: p[0], P95: p[1], P99: p[2], Max: mx, Mean: sum / float64(len(xs))}
}

// ByConsumer splits samples per consumer, keeping their order.
func ByConsumer(samples []Sample) map[string][]Sample {
	m := map[string][]Sample{}
	for _, s := range samples {
		m[s.Consumer] = append(m[s.Consumer], s)
	}
	return m
}

// CDF returns the sorted latencies (ms) and their cumulative fractions (i+1)/n, for plots.
func CDF(samples []Sample) (xs, ys []float64) {
	xs = make([]float64, len(samples))
	for i, s := range samples {
		xs[i] = s.LatencyMs()
	}
	slices.Sort(xs)
	ys = make([]float64, len(xs))
	for i := range ys {
		ys[i] = float64(i+1) / float64(len(xs))
	}
	return xs, ys
}
