package bridge

import (
	"math"
	"sync"
	"time"
)

// SendsPerWindow is the send budget of a device with a per-socket lock
// (knobs.Capacity.PerFdTxCeiling, Zephyr): batches per socket window
// (knobs.Capacity.DrainInterval). Such a device reads about 0.9 batches per
// window (anchors.md §2 "≈ 9 msg/s untuned" at a 100 ms window; the
// measurement behind knobs.Capacity.ExpressRateCeiling); 0.8 leaves headroom
// for jitter in the device's drain tick. firmware/devsim measured a sender at
// one batch per window (10/s on native_sim) against the ~9/s the device
// reads: a backlog and 44 of 240 samples dropped in the device's ring
// (docs/devsim.md, Findings); its shaped sender (TestCapacityContract) uses
// the same 1.25 windows per batch.
const SendsPerWindow = 0.8

// ProbeShare is the most of a device's send budget its probe pings take:
// a native_sim device (8 sends/s) is probed at most twice a second, not at
// classifier.probe_interval's 5 Hz, which would leave its batched lane 3
// flushes a second. A tick whose ping would exceed the share is skipped,
// and a skipped ping is not loss: the classifier's window simply spans more
// time.
const ProbeShare = 0.25

// sendBudget is a device's one send budget, shared by the express lane, the
// batched lane and the prober: a token bucket of depth 1 kept as the earliest
// time of the next send, so two sink calls are never closer than interval
// (exact integer arithmetic: no float rounding lets a window hold one more).
// Priority is express > probe > batched: the batched lane does not take a
// token while an express sample or a probe is waiting (egress.batchedYield).
type sendBudget struct {
	mu       sync.Mutex
	interval time.Duration // 0: no budget
	next     time.Time
}

// sendInterval is the spacing of sends at rate per second (rounded up); 0 for no rate.
func sendInterval(rate float64) time.Duration {
	if rate <= 0 || math.IsInf(rate, 1) {
		return 0
	}
	return time.Duration(math.Ceil(float64(time.Second) / rate))
}

func (b *sendBudget) setInterval(d time.Duration) {
	b.mu.Lock()
	b.interval = d
	b.mu.Unlock()
}

// limited reports whether the device has a budget at all.
func (b *sendBudget) limited() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.interval > 0
}

// take spends the token if there is one at now; otherwise wait is how long
// until there is.
func (b *sendBudget) take(now time.Time) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.interval <= 0 {
		return true, 0
	}
	if now.Before(b.next) {
		return false, b.next.Sub(now)
	}
	b.next = now.Add(b.interval)
	return true, 0
}

// charge records a send that did not ask first (Device.Flush called
// directly): the next token moves one interval on.
func (b *sendBudget) charge(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.interval <= 0 {
		return
	}
	if b.next.Before(now) {
		b.next = now
	}
	b.next = b.next.Add(b.interval)
}

// yieldWait is how long a lower-priority sender waits before trying again
// while a higher-priority one is waiting: past the next token, which the
// higher-priority sender takes the instant it comes.
func (b *sendBudget) yieldWait(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.next.Sub(now)
	if w <= 0 {
		w = b.interval
	}
	return w + time.Millisecond
}
