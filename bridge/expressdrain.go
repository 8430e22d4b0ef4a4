package bridge

import (
	"runtime"
	"time"
)

// Added by the assembly (bridge/server), kept apart from the lanes' files.

// WaitExpressDrained waits, at most max, until no attached device still holds a pending express sample of key, and
// reports whether that is so. The server calls it before publishing the
// next sample of a critical route that DDS delivered in a burst: the
// express lane keeps at most its depth of samples per key, so a burst
// longer than that, arriving faster than a device's express goroutine is
// scheduled, would otherwise drop samples (counted as congestion) although
// the device keeps up.
// Devices whose critical traffic alone exceeds their link budget
// (policy.link) are paced on purpose and are not waited for: one slow
// device never slows the route for the others.
func (g *Gateway) WaitExpressDrained(key string, max time.Duration) bool {
	var deadline time.Time
	for {
		if !g.expressPending(key) {
			return true
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(max)
		} else if now.After(deadline) {
			return false
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
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
