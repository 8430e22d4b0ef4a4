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

// linkBudget is a device link's byte budget (policy.link, issue 10 item
// 2), shared by both lanes: a token bucket of rate bytes/s (the budget ×
// headroom) and depth bytes. Critical first: the express lane may borrow
// up to one depth ahead of its own bucket (ctokens, spent by critical
// samples only, down to −depth), so it waits only when critical traffic
// alone exceeds the budget, never for the debt a large bulk message left
// in the shared bucket; the batched lane needs the shared tokens it spends
// (or a full bucket, for a message larger than the depth), which critical
// samples spend too.
// It also keeps a model of the bytes queued in the link (handed over, not
// yet drained at the link's rate) and reads the transport's own TX backlog,
// so the classifier can tell the delay the gateway causes itself
// (selfDelay) from the device's. The zero value (rate 0) is no budget.
type linkBudget struct {
	mu     sync.Mutex
	budget float64 // the link's bytes/s; 0: none
	rate   float64 // bytes/s the lanes use: budget × headroom
	depth  float64 // bytes
	tokens float64 // shared bucket: both lanes spend it, the batched lane waits on it
	// ctokens is the critical traffic's own bucket (same rate and depth):
	// the express lane spends it and waits on it alone.
	ctokens float64
	last    time.Time
	queued  float64 // bytes in the link model at qAt
	qAt     time.Time
	// backlog reads the bytes the device's transport session still holds
	// (Session.TxBacklog); nil: none known.
	backlog func() int
}

// minLinkDepth is the least depth of a link budget's bucket, in bytes: one
// Ethernet-sized message.
const minLinkDepth = 1500

// set changes the budget (bytes/s, 0: none). The bucket starts full.
func (b *linkBudget) set(budget, headroom float64, burst time.Duration, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if budget <= 0 || math.IsInf(budget, 1) {
		b.budget, b.rate = 0, 0
		return
	}
	if headroom <= 0 || headroom > 1 {
		headroom = 1
	}
	changed := b.rate == 0
	b.budget, b.rate = budget, budget*headroom
	b.depth = max(b.rate*burst.Seconds(), minLinkDepth)
	if changed {
		b.tokens, b.ctokens, b.last = b.depth, b.depth, now
	}
	b.tokens = min(b.tokens, b.depth)
	b.ctokens = min(b.ctokens, b.depth)
}

// Rate is the lanes' share of the budget in bytes/s (0: none).
func (b *linkBudget) Rate() (budget, rate float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.budget, b.rate
}

func (b *linkBudget) refillLocked(now time.Time) {
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(b.depth, b.tokens+b.rate*dt.Seconds())
		b.ctokens = min(b.depth, b.ctokens+b.rate*dt.Seconds())
		b.last = now
	}
}

func (b *linkBudget) queuedLocked(now time.Time) float64 {
	if dt := now.Sub(b.qAt); dt > 0 {
		b.queued = max(0, b.queued-b.budget*dt.Seconds())
		b.qAt = now
	}
	return b.queued
}

func (b *linkBudget) backlogBytes() int {
	if b.backlog == nil {
		return 0
	}
	return b.backlog()
}

// wait is how long until a lane may spend n bytes (0: now), without
// spending: the express lane may borrow one depth ahead of the critical
// bucket, the batched lane needs the shared tokens (or a full bucket). The transport's own backlog beyond
// one depth counts as spent for the batched lane: the gateway does not pile
// more onto its queue. It does not count for the express lane: the
// transport sends RealTime ahead of the Data-priority bytes it holds
// (docs/transport.md, the TX pipeline), so a bulk backlog must not hold a
// critical sample back (egressbench a with a configured budget: 76 of 1000
// express samples before this rule, the rest dropped as congestion).
func (b *linkBudget) wait(n int, express bool, now time.Time) time.Duration {
	bl := 0
	if !express {
		bl = b.backlogBytes() // outside b.mu: it takes the session's locks
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate <= 0 {
		return 0
	}
	b.refillLocked(now)
	if express {
		if b.ctokens > -b.depth {
			return 0
		}
		lack := -b.depth - b.ctokens + 1
		return max(time.Duration(lack/b.rate*float64(time.Second)), time.Millisecond)
	}
	avail := b.tokens - max(float64(bl)-b.depth, 0)
	need := float64(n)
	if avail >= need || avail >= b.depth {
		return 0
	}
	lack := min(need, b.depth) - avail
	return max(time.Duration(lack/b.rate*float64(time.Second)), time.Millisecond)
}

// spend takes n bytes (after wait said 0) from the shared bucket, and from
// the critical bucket too when express.
func (b *linkBudget) spend(n int, express bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate <= 0 {
		return
	}
	b.refillLocked(now)
	b.tokens -= float64(n)
	if express {
		b.ctokens -= float64(n)
	}
	b.queuedLocked(now)
	b.queued += float64(n)
}

// selfDelay is how long a message handed to the link now waits behind
// what the gateway itself already put there: the link model's queue and
// the transport's backlog, at the link's rate. 0 without a budget.
func (b *linkBudget) selfDelay(now time.Time) time.Duration {
	bl := b.backlogBytes()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.budget <= 0 {
		return 0
	}
	q := b.queuedLocked(now) + float64(bl)
	return time.Duration(q / b.budget * float64(time.Second))
}
