package bridge

import (
	"sync"
	"sync/atomic"
	"time"
)

// Added by the assembly (bridge/server), kept apart from the lanes' files.

// WaitExpressDrained waits, at most max, until no attached device still
// holds a pending express sample of key, and reports whether that is so.
// The server calls it before publishing the next sample of a critical
// route that DDS delivered in a burst: the express lane keeps at most its
// depth of samples per key, so a burst longer than that, arriving faster
// than a device's express lane is scheduled, would otherwise drop samples
// (counted as congestion) although the device keeps up.
// Devices whose critical traffic alone exceeds their link budget
// (policy.link) are paced on purpose and are not waited for: one slow
// device never slows the route for the others.
//
// It does not poll: the express lanes notify each sample they hand to a
// device (and a device's detach), and it looks again only then, so it
// returns the moment the last pending sample of key is taken.
func (g *Gateway) WaitExpressDrained(key string, max time.Duration) bool {
	if !g.expressPending(key) {
		return true
	}
	g.drained.waiters.Add(1)
	defer g.drained.waiters.Add(-1)
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		ch := g.drained.wait() // before looking, so a notify in between is not missed
		if !g.expressPending(key) {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return !g.expressPending(key)
		}
	}
}

func (g *Gateway) expressPending(key string) bool {
	for _, d := range *g.devices.Load() {
		e := d.egress()
		if e.exp.linkPaced.Load() {
			continue
		}
		e.exp.mu.Lock()
		_, ok := e.exp.items[key]
		e.exp.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// notifier wakes the goroutines waiting in WaitExpressDrained. It costs the
// express lanes one atomic load per sample while nobody waits.
type notifier struct {
	waiters atomic.Int32
	mu      sync.Mutex
	ch      chan struct{} // closed by notify; nil: none made since
}

// wait returns a channel closed at the next notify.
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
