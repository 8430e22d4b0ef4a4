package probe

import "time"

// RTT is a pong's round trip: elapsed (the gateway's receive time − its send
// time) minus the device's processing time (dev_send − dev_recv) when the
// device reports one shorter than elapsed; a device clock that went
// backwards (dev_send < dev_recv) is ignored.
func (p Message) RTT(elapsed time.Duration) time.Duration {
	if p.DevSend >= p.DevRecv {
		if proc := time.Duration(p.DevSend - p.DevRecv); proc < elapsed {
			elapsed -= proc
		}
	}
	return elapsed
}

// Window holds the last n settled probes, each answered (with its RTT) or
// lost, in a ring: the Adaptive Bridge paper's 50-probe window. The zero
// value is unusable; make one with NewWindow. It is not safe for concurrent
// use (the classifier holds its own lock).
type Window struct {
	ring []settled
	head int // next write
	full bool
}

type settled struct {
	rtt  time.Duration
	lost bool
}

// Stats is what a Window says about its probes.
type Stats struct {
	Samples int           // settled probes in the window, ≤ its size
	Replies int           // of them answered
	RTT     time.Duration // mean RTT of the answered ones; 0 when none
	Loss    float64       // lost / Samples, 0..1; 0 when Samples is 0
}

// NewWindow returns an empty window of n probes (at least 1).
func NewWindow(n int) Window { return Window{ring: make([]settled, max(n, 1))} }

// Answered settles one probe answered with rtt.
func (w *Window) Answered(rtt time.Duration) { w.put(settled{rtt: rtt}) }

// Lost settles one probe as lost.
func (w *Window) Lost() { w.put(settled{lost: true}) }

func (w *Window) put(s settled) {
	w.ring[w.head] = s
	w.head++
	if w.head == len(w.ring) {
		w.head, w.full = 0, true
	}
}

// Stats returns the window's mean RTT and loss.
func (w *Window) Stats() Stats {
	n := w.head
	if w.full {
		n = len(w.ring)
	}
	var s Stats
	var sum time.Duration
	lost := 0
	for _, p := range w.ring[:n] {
		if p.lost {
			lost++
			continue
		}
		sum += p.rtt
		s.Replies++
	}
	s.Samples = n
	if s.Replies > 0 {
		s.RTT = sum / time.Duration(s.Replies)
	}
	if n > 0 {
		s.Loss = float64(lost) / float64(n)
	}
	return s
}
