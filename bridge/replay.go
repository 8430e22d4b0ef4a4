package bridge

import (
	"time"
)

// Added by the assembly (bridge/server) for TRANSIENT_LOCAL history, kept
// apart from the lanes' files.

// replayPoll is how often Replay looks whether the lane took the previous
// sample and the key's token bucket has a token.
const replayPoll = 5 * time.Millisecond

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
// of samples offered when all were, when done is closed or when the device
// detaches; it blocks meanwhile (run it on its own goroutine).
func (d *Device) Replay(samples []Sample, done <-chan struct{}) int {
	for i, s := range samples {
		for !d.replayReady(s.Key) {
			if d.detached.Load() {
				return i
			}
			select {
			case <-done:
				return i
			case <-time.After(replayPoll):
			}
		}
		s.Time = time.Time{} // the lane's keep-latest and age count from the offer
		s.History = true     // never dropped as stale (Sample.History)
		d.Offer(s, Noncritical)
	}
	return len(samples)
}

// replayReady: the supervisor lets the batched lane forward, nothing of key
// waits in it and its bucket has a token now.
func (d *Device) replayReady(key string) bool {
	if d.g.sup.Mode() != Normal {
		return false // DEGRADED/EMERGENCY suspend the batched lane: wait rather than lose history
	}
	e := d.egress()
	now := d.g.clock.Now()
	e.bat.mu.Lock()
	defer e.bat.mu.Unlock()
	q, ok := e.bat.keys[key]
	if !ok {
		return true
	}
	return len(q.items) == 0 && q.lim.TokensAt(now) >= 1
}
