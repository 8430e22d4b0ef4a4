package measure

import (
	"math"
	"time"
)

// Attempt is one publication attempt by the publisher.
type Attempt struct {
	Seq     uint64
	StartNs int64         // when the write call started (= header stamp), Unix ns
	Dur     time.Duration // how long the write call took
	Err     bool          // the write failed (Fast DDS write()=false, Cyclone timeout, ...)
}

// BlockThreshold is the write-call duration above which a call counts as blocked: a write
// that does not block returns in microseconds (docs/dds.md: ≈ 2–5 µs per Write).
const BlockThreshold = time.Millisecond

// PublishStats summarizes a publisher.
type PublishStats struct {
	Attempts   int
	Errors     int
	Blocked    int           // calls longer than BlockThreshold
	BlockedFor time.Duration // total duration of those calls
	MaxBlock   time.Duration // longest write call
	Rate       float64       // attempts per second over the whole run
	Windows    []float64     // attempts per second in consecutive 5 s windows
	RateStd    float64       // std of the rate over 5 s windows sliding by 1 s
}

// Window is the rate window of evaluation.md (5 s); SlideStep is the step of the sliding
// windows whose rate standard deviation is reported.
const (
	Window    = 5 * time.Second
	SlideStep = time.Second
)

// Publish computes PublishStats over [startNs, endNs).
func Publish(attempts []Attempt, startNs, endNs int64) PublishStats {
	ps := PublishStats{Attempts: len(attempts)}
	times := make([]int64, len(attempts))
	for i, a := range attempts {
		times[i] = a.StartNs
		if a.Err {
			ps.Errors++
		}
		if a.Dur > BlockThreshold {
			ps.Blocked++
			ps.BlockedFor += a.Dur
		}
		ps.MaxBlock = max(ps.MaxBlock, a.Dur)
	}
	if endNs > startNs {
		ps.Rate = float64(countIn(times, startNs, endNs)) / (float64(endNs-startNs) / 1e9)
	}
	ps.Windows = WindowRates(times, startNs, endNs, Window, Window)
	ps.RateStd = Std(WindowRates(times, startNs, endNs, Window, SlideStep))
	return ps
}

// WindowRates counts events per window of width win starting every step within
// [startNs, endNs) (only whole windows) and returns events per second.
func WindowRates(times []int64, startNs, endNs int64, win, step time.Duration) []float64 {
	var out []float64
	for w := startNs; w+int64(win) <= endNs; w += int64(step) {
		out = append(out, float64(countIn(times, w, w+int64(win)))/win.Seconds())
	}
	return out
}

func countIn(times []int64, from, to int64) int {
	n := 0
	for _, t := range times {
		if t >= from && t < to {
			n++
		}
	}
	return n
}

// Std is the population standard deviation (0 for fewer than two values).
func Std(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)))
}

// DeliveredRate is samples received per second over [startNs, endNs) by receive time.
func DeliveredRate(samples []Sample, startNs, endNs int64) float64 {
	if endNs <= startNs {
		return 0
	}
	n := 0
	for _, s := range samples {
		if s.RecvNs >= startNs && s.RecvNs < endNs {
			n++
		}
	}
	return float64(n) / (float64(endNs-startNs) / 1e9)
}
