package bridge

import (
	"time"
)

// Added by the assembly (bridge/server), kept apart from the lanes' files.

// expressStall is how long one SendExpress call may run before its device
// counts as stalled: WaitExpressRoom and WaitExpressDrained wait for a
// device's express lane only while it waits for the CPU (the scheduler),
// never for its link. A sink returns ErrCongested rather than block
// (DeviceSink; the server's after the transport's wait_before_drop, 1 ms),
// and a refused sample marks the device as not waited for at once; a sink
// that blocks anyway (a synchronous write into a socket that takes no
// byte) delays the ingress at most this long, once per stall, whatever
// the number of bursts meanwhile. A healthy sink's call takes microseconds.
const expressStall = 5 * time.Millisecond

// WaitExpressRoom waits, at most max, until every attached device that
// holds express samples of key has room for one more in the key's FIFO
// (fewer than its depth pending), and reports whether that is so. The
// server calls it before publishing the next sample of a critical route
// that DDS delivered in a burst: the express lane keeps at most its depth
// of samples per key (≤ the device's ring depth, invariant 3), so a burst
// longer than that, published faster than the device's express lane is
// scheduled, would otherwise drop samples (counted as congestion) although
// the device keeps up. A burst no longer than the depth never waits.
//
// Not waited for (one slow device never slows the route for the others,
// invariant 1): a device whose critical traffic alone exceeds its link
// budget (policy.link: paced on purpose), a device whose express lane is
// inside one SendExpress call for expressStall or longer, and a device
// whose last SendExpress returned an error (ErrCongested: its link is
// full) or took that long, until one returns nil in time (its link takes
// samples again). Such a device does not keep up: keep-latest drops its
// oldest samples, counted as congestion.
//
// It does not poll: the express lanes notify each sample they take (and a
// device's detach), and it looks again only then, or when a device's
// sink call reaches expressStall, or at max; times are Options.Clock's.
func (g *Gateway) WaitExpressRoom(key string, max time.Duration) bool {
	return g.waitExpress(key, max, true, nil)
}

// WaitExpressRoom is Gateway.WaitExpressRoom for this device alone: it
// waits, at most max, until the device's express lane has room for one
// more sample of key, and reports whether it has. A device that is
// detached, link-paced, stalled in its sink or slow (see
// Gateway.WaitExpressRoom) is not waited for. The server calls it before
// it offers a sample of a critical route that the router diverted to the
// device from another face (upstream Zenoh): the router hands it the
// samples of one received batch back to back, faster than the device's
// express lane is scheduled on a busy host, and a burst longer than the
// lane's depth would otherwise lose its oldest samples as congestion
// although the device keeps up (issue 29: 20-38 % of a 30 Hz stream at
// 50 devices; the DDS ingress waits the same way).
func (d *Device) WaitExpressRoom(key string, max time.Duration) bool {
	return d.g.waitExpress(key, max, true, d)
}

// WaitExpressDrained is WaitExpressRoom until no device it waits for
// holds any express sample of key.
func (g *Gateway) WaitExpressDrained(key string, max time.Duration) bool {
	return g.waitExpress(key, max, false, nil)
}

// waitExpress waits for the devices' express lanes (only: that device's,
// nil: every attached device's).
func (g *Gateway) waitExpress(key string, max time.Duration, room bool, only *Device) bool {
	now := g.clock.Now()
	if full, _ := g.expressFull(key, room, now, only); !full {
		return true
	}
	g.drained.waiters.Add(1)
	defer g.drained.waiters.Add(-1)
	deadline := now.Add(max)
	for {
		ch := g.drained.wait() // before looking, so a notify in between is not missed
		now = g.clock.Now()
		full, recheck := g.expressFull(key, room, now, only)
		if !full {
			return true
		}
		left := deadline.Sub(now)
		if left <= 0 {
			return false
		}
		if recheck > 0 && recheck < left {
			left = recheck
		}
		tick, stop := g.timer(left)
		select {
		case <-ch:
		case <-tick:
		}
		stop()
	}
}

// expressFull reports whether a device waited for (only that one, when
// set) holds express samples of key (room: its depth of them), and, when
// one of those is inside a sink call, how long until that call reaches
// expressStall (0: none).
func (g *Gateway) expressFull(key string, room bool, now time.Time, only *Device) (full bool, recheck time.Duration) {
	devices := *g.devices.Load()
	if only != nil {
		if only.detached.Load() {
			return false, 0
		}
		devices = []*Device{only}
	}
	for _, d := range devices {
		e := d.egress()
		if e.exp.linkPaced.Load() || e.exp.slow.Load() {
			continue
		}
		var left time.Duration
		if at := e.exp.sinkAt.Load(); at != 0 {
			left = expressStall - now.Sub(g.started.Add(time.Duration(at-1)))
			if left <= 0 {
				continue // stalled in its sink: not waited for
			}
		}
		e.exp.mu.Lock()
		n := len(e.exp.items[key])
		e.exp.mu.Unlock()
		if n == 0 || (room && n < e.exp.depth) {
			continue
		}
		full = true
		if left > 0 && (recheck == 0 || left < recheck) {
			recheck = left
		}
	}
	return full, recheck
}
