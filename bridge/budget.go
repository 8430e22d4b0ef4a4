package bridge

import (
	"math"
	"sync"
	"time"
)

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
	// sent counts the bytes spent, budget or not (the learned budget
	// reads a device's link only when it changed).
	sent uint64
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
	b.sent += uint64(max(n, 0))
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

// sentBytes is the bytes spent so far (with or without a budget).
func (b *linkBudget) sentBytes() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sent
}

// pingDelay is how long an express probe handed over now waits behind
// what the gateway itself already sent toward the device: the bytes of
// the link model that left the transport (the model's queue less the
// transport's backlog), at the link's rate. The transport's backlog
// itself does not count: it sends RealTime ahead of the Data-priority
// bytes it holds (wait), so a ping does not wait for them. (Counting them
// made a 1 MB bulk message paced at a learned 16 kB/s read as a minute of
// the gateway's own delay, and the classifier took every probe's RTT for
// the gateway's: issue 30.) 0 without a budget.
func (b *linkBudget) pingDelay(now time.Time) time.Duration { return b.delay(now, -1) }

// selfDelay is how long a message handed to the link now waits behind
// what the gateway itself already put there: the link model's queue and
// the transport's backlog, at the link's rate. 0 without a budget.
func (b *linkBudget) selfDelay(now time.Time) time.Duration { return b.delay(now, 1) }

// delay is the link model's queue plus sign × the transport's backlog
// (at least 0), at the link's rate; 0 without a budget.
func (b *linkBudget) delay(now time.Time, sign float64) time.Duration {
	bl := b.backlogBytes() // outside b.mu: it takes the session's locks
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.budget <= 0 {
		return 0
	}
	q := max(b.queuedLocked(now)+sign*float64(bl), 0)
	return time.Duration(q / b.budget * float64(time.Second))
}
