package bridge

// The critical express path: each sample to the device at once, a FIFO of at
// most the lane's depth per key while the device's unit has not run.

import (
	"log/slog"
	"time"
)

// offerExpress queues s for at-once delivery behind the pending samples of
// its key (at most the lane's depth per key, sent in order); when the key's
// queue is full the oldest pending sample is dropped (keep-latest). It
// never blocks.
func (e *egress) offerExpress(s Sample, now time.Time) {
	if e.oversize(LaneExpress, s, true, now) {
		return
	}
	e.exp.mu.Lock()
	if q, ok := e.exp.items[s.Key]; ok {
		if len(q) < e.exp.depth {
			e.exp.items[s.Key] = append(q, pendingSample{s: s, at: now})
			e.exp.n.Add(1)
			e.exp.mu.Unlock()
			return
		}
		copy(q, q[1:])
		q[len(q)-1] = pendingSample{s: s, at: now}
		e.exp.mu.Unlock()
		e.drop(LaneExpress, DropCongestion, 1, true, now)
		e.log.once(LaneExpress, DropCongestion, "device cannot keep up: keeping the latest samples per key", slog.String("key", s.Key), slog.Int("depth", e.exp.depth))
		return
	}
	if len(e.exp.items) >= e.pol.Express.MaxKeys {
		e.exp.mu.Unlock()
		e.drop(LaneExpress, DropQueueFull, 1, true, now)
		e.log.once(LaneExpress, DropQueueFull, "express lane full", slog.String("key", s.Key), slog.Int("max_keys", e.pol.Express.MaxKeys))
		return
	}
	q := make([]pendingSample, 1, e.exp.depth)
	q[0] = pendingSample{s: s, at: now}
	e.exp.items[s.Key] = q
	e.exp.order = append(e.exp.order, s.Key)
	e.exp.n.Add(1)
	e.exp.mu.Unlock()
	if e.wakeExpress != nil {
		e.wakeExpress()
	}
}

// nextExpress pops the oldest pending express sample if the link budget
// allows it at now; otherwise wait is how long until it does (0 with ok
// false: nothing pending). Nothing else paces the express lane: samples go
// out at the producer's rate (invariant 9). Keys take turns:
// a key that still has samples after its oldest is popped goes to the back
// of the order. While it waits, a key's samples queue up to the lane's
// depth; beyond, the oldest is dropped (keep-latest, counted as congestion
// in offerExpress).
func (e *egress) nextExpress(now time.Time) (s Sample, ok bool, wait time.Duration) {
	e.exp.mu.Lock()
	defer e.exp.mu.Unlock()
	if len(e.exp.order) == 0 {
		return Sample{}, false, 0
	}
	key := e.exp.order[0]
	q := e.exp.items[key]
	p := q[0]
	if wait := e.link.wait(sampleBytes(p.s), true, now); wait > 0 {
		e.exp.linkPaced.Store(true)
		return Sample{}, false, wait
	}
	e.exp.linkPaced.Store(false)
	e.link.spend(sampleBytes(p.s), true, now)
	e.exp.order = e.exp.order[1:]
	if len(q) == 1 {
		delete(e.exp.items, key)
	} else {
		copy(q, q[1:])
		q[len(q)-1] = pendingSample{}
		e.exp.items[key] = q[:len(q)-1]
		e.exp.order = append(e.exp.order, key)
	}
	e.exp.n.Add(-1)
	return p.s, true, 0
}

// expressWaiting reports whether express samples wait for the device.
func (e *egress) expressWaiting() bool { return e.exp.n.Load() > 0 }
