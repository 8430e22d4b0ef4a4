package bridge

import (
	"sync"
	"sync/atomic"
	"time"
)

// The data path's waits (Device.Replay, Gateway.WaitExpressRoom) sleep on
// notifications and on timers set from Options.Clock, never on a poll
// (issue 25 item 3).

// TimerClock is a Clock that also makes timers on its own time. When
// Options.Clock is one, the data path's waits (the next token of a
// replay, the bound of WaitExpressRoom) use its timers; otherwise the
// time package's, which testing/synctest runs on its synthetic time.
type TimerClock interface {
	Clock
	// NewTimer returns a channel that receives once d has passed on the
	// clock, and a function that stops the timer (true: it had not fired).
	NewTimer(d time.Duration) (c <-chan time.Time, stop func() bool)
}

// timer fires after d of the gateway's clock (TimerClock), else of the
// time package's.
func (g *Gateway) timer(d time.Duration) (<-chan time.Time, func() bool) {
	if tc, ok := g.clock.(TimerClock); ok {
		return tc.NewTimer(d)
	}
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// notifier wakes the goroutines waiting for a lane's progress
// (WaitExpressRoom on the express lanes, Device.Replay on a device's
// batched lane). It costs the lane one atomic load per notify while nobody
// waits.
type notifier struct {
	waiters atomic.Int32
	mu      sync.Mutex
	ch      chan struct{} // closed by notify; nil: none made since
}

// wait returns a channel closed at the next notify. A waiter counts itself
// in waiters first, then takes the channel, then looks at the state.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) notify() {
	if n.waiters.Load() == 0 {
		return
	}
	n.mu.Lock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	n.mu.Unlock()
}
