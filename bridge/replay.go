package bridge

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// Added by the assembly (bridge/server) for TRANSIENT_LOCAL history, kept
// apart from the lanes' files.

// Replay sends history samples (a TRANSIENT_LOCAL route's retained
// samples, oldest first) to this device only, through its batched lane, so
// that a late joiner's history never competes with the express lane's
// critical traffic (invariant 6) and obeys the device's batched rate, ring
// depth and link budget like any noncritical sample. It offers one sample
// at a time: the next only when the lane has sent the previous one and the
// key's token bucket has a token, so the keep-latest history of the lane
// never replaces a history sample and the rate limit never drops one. A
// newer live sample of the same key may still replace a pending history
// sample (counted as usual: the live one is newer). While the supervisor
// suspends the batched lane (DEGRADED, EMERGENCY) it waits. It returns the number
// of samples offered when all were, when done is closed, when the device
// detaches or when the gateway closes; it blocks meanwhile (run it on its
// own goroutine).
//
// It never polls (issue 25 item 3): it sleeps until the batched lane's
// flush took the key's pending sample, the supervisor changes mode, the
// device's class (its bucket rate) or configuration changes, it detaches,
// or — the one timer — the instant the key's bucket has a whole token
// again, computed from the bucket's rate at Options.Clock's time
// (Gateway.timer). The next sample is offered at that instant: a replay
// of N samples takes (N − burst) bucket periods, to the flush grid.
func (d *Device) Replay(samples []Sample, done <-chan struct{}) int {
	d.lane.waiters.Add(1)
	defer d.lane.waiters.Add(-1)
	for i, s := range samples {
		for {
			// Take the channels before looking, so that a change in
			// between closes one of them and is not missed.
			lane, mode := d.lane.wait(), d.g.sup.Changed()
			if d.detached.Load() {
				return i
			}
			ready, wait := d.replayReady(s.Key)
			if ready {
				break
			}
			var tick <-chan time.Time
			stop := func() bool { return false }
			if wait > 0 {
				tick, stop = d.g.timer(wait)
			}
			select {
			case <-done:
				stop()
				return i
			case <-d.g.ctx.Done():
				stop()
				return i
			case <-lane:
			case <-mode:
			case <-tick:
			}
			stop()
		}
		s.Time = time.Time{} // the lane's keep-latest and age count from the offer
		s.History = true     // never dropped as stale (Sample.History)
		d.Offer(s, Noncritical)
	}
	return len(samples)
}

// replayReady: the supervisor lets the batched lane forward, nothing of key
// waits in it and its bucket has a token now. When only the token is
// missing, wait is how long until the bucket has one (0: no timer helps;
// a notification will come).
func (d *Device) replayReady(key string) (ready bool, wait time.Duration) {
	if d.g.sup.Mode() != Normal {
		return false, 0 // DEGRADED/EMERGENCY suspend the batched lane: wait rather than lose history
	}
	e := d.egress()
	now := d.g.clock.Now()
	e.bat.mu.Lock()
	defer e.bat.mu.Unlock()
	q, ok := e.bat.keys[key]
	if !ok {
		return true, 0
	}
	if len(q.items) > 0 {
		return false, 0 // the flush that takes it notifies d.lane
	}
	return tokenWait(q.lim, now)
}

// tokenEpsilon absorbs float rounding in the bucket's refill: a bucket this
// close to a whole token has one (10⁻⁶ of a period early at most; admit
// takes a token up to a tenth of a period early anyway).
const tokenEpsilon = 1e-6

// tokenWait reports whether lim has a whole token at now and, if not, how
// long until it has (to the nearest nanosecond, at least 1; 0 when the
// bucket does not refill: rate 0).
func tokenWait(lim *rate.Limiter, now time.Time) (bool, time.Duration) {
	tok := lim.TokensAt(now)
	if tok >= 1-tokenEpsilon {
		return true, 0
	}
	r := float64(lim.Limit())
	switch {
	case math.IsInf(r, 1):
		return true, 0
	case r <= 0:
		return false, 0
	}
	return false, max(time.Duration(math.Round((1-tok)/r*float64(time.Second))), 1)
}
