package linkemu

import (
	"container/heap"
	"sync"
	"time"
)

// packet is one unit waiting in a delay line.
type packet struct {
	at      time.Time   // release time
	arrived time.Time   // when it was read from the sender
	seq     uint64      // tie-break: equal release times keep arrival order
	b       []byte      // owned by the packet
	eof     bool        // TCP: the sender half-closed; propagate it
	sess    *udpSession // UDP: the client mapping it belongs to
}

type packetHeap []*packet

func (h packetHeap) Len() int { return len(h) }
func (h packetHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h packetHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *packetHeap) Push(x any)   { *h = append(*h, x.(*packet)) }
func (h *packetHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}

// delayLine holds packets until their release time and hands them to a
// deliver function in release order (then arrival order). It holds at most
// limit bytes: tryPush refuses beyond that (UDP drops), push waits (TCP
// pushes back on its sender). A packet larger than limit is accepted when
// the line is empty, so nothing can wedge.
type delayLine struct {
	limit int

	mu    sync.Mutex
	h     packetHeap
	bytes int
	seq   uint64
	wake  chan struct{} // a new packet arrived
	space chan struct{} // bytes were freed
}

func newDelayLine(limit int) *delayLine {
	return &delayLine{limit: limit, wake: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (d *delayLine) tryPush(p *packet) bool {
	d.mu.Lock()
	if d.limit > 0 && d.bytes > 0 && d.bytes+len(p.b) > d.limit {
		d.mu.Unlock()
		return false
	}
	d.seq++
	p.seq = d.seq
	d.bytes += len(p.b)
	heap.Push(&d.h, p)
	d.mu.Unlock()
	signal(d.wake)
	return true
}

// push waits for room; it returns false if done is closed first.
func (d *delayLine) push(p *packet, done <-chan struct{}) bool {
	for !d.tryPush(p) {
		select {
		case <-d.space:
		case <-done:
			return false
		}
	}
	return true
}

// run delivers packets at their release time until done is closed or
// deliver returns false. Packets still queued then are discarded.
func (d *delayLine) run(done <-chan struct{}, deliver func(*packet) bool) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		d.mu.Lock()
		var next *packet
		var wait time.Duration
		if len(d.h) > 0 {
			next = d.h[0]
			if wait = time.Until(next.at); wait <= 0 {
				heap.Pop(&d.h)
				d.bytes -= len(next.b)
			}
		}
		d.mu.Unlock()
		switch {
		case next != nil && wait <= 0:
			signal(d.space)
			if !deliver(next) {
				return
			}
			continue
		case next != nil:
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-d.wake:
			case <-done:
				return
			}
		default:
			select {
			case <-d.wake:
			case <-done:
				return
			}
		}
	}
}
