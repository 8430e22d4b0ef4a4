package bridge

import (
	"container/heap"
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// scheduler serves every device's lanes with a fixed set of goroutines
// (issue 11 item 1): a ready FIFO of lane units, a few workers that run
// them, and one timer goroutine with a min-heap of the units' next wake-ups.
// A device costs no goroutine: 10 000 idle devices are 20 000 idle units
// (a few words each) and nothing runs for them.
//
// A unit is run by at most one worker at a time (state machine idle →
// queued → running → idle, with rerun when woken while running), so one
// lane's sends stay in order; the two lanes of a device are two units, so
// a long SendBatch never delays the same device's express samples while
// another worker is free. A unit's run returns how long until it wants to
// run again (0: only when woken; runNow: at once, after the others
// queued — a quantum spent).
type scheduler struct {
	ctx    context.Context
	now    func() time.Time
	notify chan struct{} // one token per wake, capacity workers

	mu     sync.Mutex
	ready  []*unit // FIFO
	head   int
	timers unitHeap
	kick   chan struct{} // the earliest timer changed

	// lag is the largest lateness of a timer wake-up (the scheduler's own
	// wake-up delay) since lagSwap, in ns.
	lag atomic.Int64
}

// runNow is what a unit's run returns to run again as soon as the units
// already queued had their turn.
const runNow = time.Duration(-1)

type unit struct {
	s     *scheduler
	run   func(now time.Time) time.Duration
	state atomic.Uint32
	dead  atomic.Bool
	// under s.mu:
	idx int       // in s.timers; -1: not there
	at  time.Time // when its timer fires
}

const (
	unitIdle uint32 = iota
	unitQueued
	unitRunning
	unitRerun // woken while running: queue it again when the run ends
)

// schedWorkers is the number of worker goroutines: enough that a few sinks
// slow to return do not hold up the others, independent of the fleet.
func schedWorkers() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

func newScheduler(ctx context.Context, now func() time.Time) *scheduler {
	return &scheduler{ctx: ctx, now: now, notify: make(chan struct{}, schedWorkers()), kick: make(chan struct{}, 1)}
}

// start runs the workers and the timer goroutine with spawn (the gateway's goOwned).
func (s *scheduler) start(spawn func(func())) {
	for range cap(s.notify) {
		spawn(s.worker)
	}
	spawn(s.timerLoop)
}

func (s *scheduler) newUnit(run func(now time.Time) time.Duration) *unit {
	return &unit{s: s, run: run, idx: -1}
}

// wake makes u run as soon as a worker is free. Safe from any goroutine;
// never blocks.
func (u *unit) wake() {
	for {
		switch st := u.state.Load(); st {
		case unitIdle:
			if u.state.CompareAndSwap(unitIdle, unitQueued) {
				u.s.push(u)
				return
			}
		case unitRunning:
			if u.state.CompareAndSwap(unitRunning, unitRerun) {
				return
			}
		default: // queued or rerun already
			return
		}
	}
}

// stop ends u: it is not run again and its timer is dropped.
func (u *unit) stop() {
	u.dead.Store(true)
	u.s.mu.Lock()
	if u.idx >= 0 {
		heap.Remove(&u.s.timers, u.idx)
	}
	u.s.mu.Unlock()
}

func (s *scheduler) push(u *unit) {
	s.mu.Lock()
	s.ready = append(s.ready, u)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default: // every worker has a token already: one of them will find u
	}
}

func (s *scheduler) pop() *unit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.ready) {
		if s.head > 0 {
			clear(s.ready)
			s.ready, s.head = s.ready[:0], 0
		}
		return nil
	}
	u := s.ready[s.head]
	s.ready[s.head] = nil
	s.head++
	if s.head > 1024 && s.head*2 > len(s.ready) { // compact
		n := copy(s.ready, s.ready[s.head:])
		clear(s.ready[n:])
		s.ready, s.head = s.ready[:n], 0
	}
	return u
}

func (s *scheduler) worker() {
	for {
		u := s.pop()
		if u == nil {
			select {
			case <-s.ctx.Done():
				return
			case <-s.notify:
			}
			continue
		}
		s.runUnit(u)
	}
}

func (s *scheduler) runUnit(u *unit) {
	if u.dead.Load() {
		u.state.Store(unitIdle)
		return
	}
	u.state.Store(unitRunning)
	next := u.run(s.now())
	if next == runNow || !u.state.CompareAndSwap(unitRunning, unitIdle) {
		u.state.Store(unitQueued)
		s.push(u)
		return
	}
	s.setTimer(u, next)
}

// setTimer makes u run after d (replacing its timer), or drops its timer (d ≤ 0).
func (s *scheduler) setTimer(u *unit, d time.Duration) {
	s.mu.Lock()
	if u.dead.Load() { // under s.mu: stop removes the timer under it too
		s.mu.Unlock()
		return
	}
	if d <= 0 {
		if u.idx >= 0 {
			heap.Remove(&s.timers, u.idx)
		}
		s.mu.Unlock()
		return
	}
	u.at = s.now().Add(d)
	if u.idx >= 0 {
		heap.Fix(&s.timers, u.idx)
	} else {
		heap.Push(&s.timers, u)
	}
	first := s.timers[0] == u
	s.mu.Unlock()
	if first {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

func (s *scheduler) timerLoop() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := s.now()
		var due []*unit
		s.mu.Lock()
		for len(s.timers) > 0 && !s.timers[0].at.After(now) {
			u := heap.Pop(&s.timers).(*unit)
			if late := int64(now.Sub(u.at)); late > s.lag.Load() {
				s.lag.Store(late)
			}
			due = append(due, u)
		}
		wait := time.Hour
		if len(s.timers) > 0 {
			wait = s.timers[0].at.Sub(now)
		}
		s.mu.Unlock()
		for _, u := range due {
			u.wake()
		}
		t.Reset(wait)
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick: // Reset at the top discards a stale expiry (Go ≥ 1.23 timers)
		case <-t.C:
		}
	}
}

// lagSwap returns the largest timer lateness since the previous call and resets it.
func (s *scheduler) lagSwap() time.Duration { return time.Duration(s.lag.Swap(0)) }

type unitHeap []*unit

func (h unitHeap) Len() int           { return len(h) }
func (h unitHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h unitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *unitHeap) Push(x any) {
	u := x.(*unit)
	u.idx = len(*h)
	*h = append(*h, u)
}
func (h *unitHeap) Pop() any {
	old := *h
	u := old[len(old)-1]
	old[len(old)-1] = nil
	u.idx = -1
	*h = old[:len(old)-1]
	return u
}
