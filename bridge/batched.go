package bridge

// The batched noncritical path: token bucket per key, keep-latest, stale-drop,
// at most the ring depth per subscription per flush window, the link budget.

import (
	"log/slog"
	"time"

	"golang.org/x/time/rate"
)

// offerBatched runs s through the token bucket of its key and queues it for
// the next flush, keeping at most policy.batched.history samples per key
// (the oldest is replaced: keep-latest). crit says the route is critical (a
// demoted critical route): its drops are counted and logged apart. It
// never blocks.
func (e *egress) offerBatched(s Sample, now time.Time, crit ...bool) {
	critical := len(crit) > 0 && crit[0]
	if e.oversize(LaneBatched, s, critical, now) {
		return
	}
	e.bat.mu.Lock()
	q, ok := e.bat.keys[s.Key]
	if !ok {
		if len(e.bat.keys) >= e.pol.Batched.MaxKeys && !e.evictIdleLocked() {
			e.bat.mu.Unlock()
			e.drop(LaneBatched, DropQueueFull, 1, critical, now)
			e.log.once(LaneBatched, DropQueueFull, "batched lane full", slog.String("key", s.Key), slog.Int("max_keys", e.pol.Batched.MaxKeys))
			return
		}
		q = &keyQueue{key: s.Key, lim: rate.NewLimiter(rate.Limit(e.bat.rate), e.pol.Batched.Burst), held: numReasons}
		e.bat.keys[s.Key] = q
		e.bat.order = append(e.bat.order, q)
	}
	q.crit = critical
	if !admit(q.lim, now) {
		e.bat.mu.Unlock()
		e.drop(LaneBatched, DropRateLimit, 1, critical, now)
		return // by design at every sample: counted, not logged (a critical one: rate-limited log)
	}
	replaced, why := false, DropCongestion
	if len(q.items) >= e.pol.Batched.History {
		copy(q.items, q.items[1:])
		q.items = q.items[:len(q.items)-1]
		replaced = true
		if q.held != numReasons {
			why = q.held
		}
	} else {
		e.bat.pending++
	}
	q.items = append(q.items, s)
	first := e.bat.pending == 1 && !replaced
	e.bat.mu.Unlock()
	if replaced {
		e.drop(LaneBatched, why, 1, critical, now)
		e.log.once(LaneBatched, why, "a newer sample of the key replaced a pending one (keep-latest)", slog.String("key", s.Key))
	}
	if first && e.wakeBatched != nil {
		e.wakeBatched()
	}
}

// admit takes a token from lim at now. A sample that comes up to a tenth
// of the period early is admitted against the next token (the bucket goes
// slightly into debt, so the long-run rate stays exact): a 30 Hz publisher
// whose samples come every 33.33 ms then gets exactly 10 Hz through a 10 Hz
// bucket instead of 7.5 Hz.
func admit(lim *rate.Limiter, now time.Time) bool {
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return false
	}
	tol := time.Duration(float64(time.Second) / float64(lim.Limit()) / 10)
	if r.DelayFrom(now) > tol {
		r.CancelAt(now)
		return false
	}
	return true
}

// evictIdleLocked forgets one key with nothing pending.
func (e *egress) evictIdleLocked() bool {
	for i, q := range e.bat.order {
		if len(q.items) == 0 {
			delete(e.bat.keys, q.key)
			e.bat.order = append(e.bat.order[:i], e.bat.order[i+1:]...)
			return true
		}
	}
	return false
}

// flush takes what the batched lane sends at now. Per key, samples older
// than stale_after are dropped (stale) and at most RingDepth of the newest
// are kept (the rest: ring_budget). Then, per subscription of the device
// (a wildcard subscription covers all its keys), at most RingDepth samples
// go in one flush, and only as many bytes as the link budget allows (after
// the express lane, which borrows first): what does not fit stays pending
// for the next flush (a newer sample of its key replaces it, counted as
// ring_budget or link_budget). Keys come in first-arrival order; after a
// flush that held samples back the next one starts one key later, so every
// key gets its turn.
func (e *egress) flush(now time.Time, out []Sample) []Sample {
	e.bat.mu.Lock()
	defer e.bat.mu.Unlock()
	if e.bat.pending == 0 {
		return out
	}
	type count struct{ all, crit int }
	var stale, budget count
	add := func(c *count, n int, crit bool) {
		c.all += n
		if crit {
			c.crit += n
		}
	}
	if e.bat.perSub == nil {
		e.bat.perSub = map[int]int{}
	}
	if now.Sub(e.bat.winAt) >= e.shape.FlushInterval || now.Before(e.bat.winAt) {
		clear(e.bat.perSub)
		e.bat.winAt = now
	}
	e.bat.outCrit = 0
	e.bat.retry = 0
	len0 := len(out)
	var linkWait time.Duration
	ringHeld := false
	n := len(e.bat.order)
	start := e.bat.rot % max(n, 1)
	pending, held := 0, false
	linkFull := false
	for i := range n {
		q := e.bat.order[(start+i)%n]
		q.held = numReasons
		if len(q.items) == 0 {
			continue
		}
		items := q.items
		fresh := items[:0]
		for _, s := range items {
			if !s.History && now.Sub(s.Time) > e.pol.Batched.StaleAfter {
				add(&stale, 1, q.crit)
				continue
			}
			fresh = append(fresh, s)
		}
		if extra := len(fresh) - e.shape.RingDepth; extra > 0 {
			add(&budget, extra, q.crit)
			fresh = fresh[extra:]
		}
		subs := e.subsLocked(q)
		keep := items[:0]
		for _, s := range fresh {
			if !e.subsRoom(subs) {
				keep = append(keep, s)
				q.held = DropRingBudget
				ringHeld = true
				continue
			}
			if w := e.link.wait(sampleBytes(s), false, now); linkFull || w > 0 {
				if !linkFull {
					linkWait = w
				}
				linkFull = true
				keep = append(keep, s)
				q.held = DropLinkBudget
				continue
			}
			e.link.spend(sampleBytes(s), false, now)
			for _, i := range subs {
				e.bat.perSub[i]++
			}
			out = append(out, s)
			if q.crit {
				e.bat.outCrit++
			}
		}
		clear(items[len(keep):])
		q.items = keep
		pending += len(keep)
		held = held || len(keep) > 0
	}
	e.bat.pending = pending
	if sent := out[len0:]; len(sent) > 0 {
		fullest := 0
		for _, n := range e.bat.perSub {
			fullest = max(fullest, n)
		}
		if e.bat.perKey == nil {
			e.bat.perKey = map[string]int{}
		}
		clear(e.bat.perKey)
		for _, s := range sent {
			e.bat.perKey[s.Key]++
			fullest = max(fullest, e.bat.perKey[s.Key])
		}
		e.stats.traffic.flushed(fullest, e.shape.RingDepth)
	}
	if held {
		e.bat.rot++
		// Try again when the link budget has the bytes, or when the flush
		// window ends for samples held by the ring budget.
		if ringHeld {
			e.bat.retry = e.bat.winAt.Add(e.shape.FlushInterval).Sub(now)
		}
		if linkFull && (e.bat.retry <= 0 || linkWait < e.bat.retry) {
			e.bat.retry = linkWait
		}
	}
	if stale.all > 0 {
		e.drop(LaneBatched, DropStale, stale.all-stale.crit, false, now)
		e.drop(LaneBatched, DropStale, stale.crit, true, now)
		e.log.once(LaneBatched, DropStale, "samples went stale before their flush", slog.Duration("stale_after", e.pol.Batched.StaleAfter))
	}
	if budget.all > 0 {
		e.drop(LaneBatched, DropRingBudget, budget.all-budget.crit, false, now)
		e.drop(LaneBatched, DropRingBudget, budget.crit, true, now)
		e.log.once(LaneBatched, DropRingBudget, "more samples of one key per flush than the device's ring depth", slog.Int("ring_depth", e.shape.RingDepth))
	}
	return out
}

// subsLocked is the device's subscriptions that include q's key, refreshed
// when the subscription list changed.
func (e *egress) subsLocked(q *keyQueue) []int {
	if e.subsOf == nil {
		return nil
	}
	if gen := e.subsOf.subsGen(); q.subs == nil || q.gen != gen {
		q.gen, q.subs = gen, e.subsOf.subsFor(q.key)
	}
	return q.subs
}

// subsSource is the device's subscription list as the ring budget sees it.
type subsSource interface {
	// subsGen changes whenever the list changes.
	subsGen() uint64
	// subsFor lists the indices of the subscriptions that include key
	// (never nil: empty when none does).
	subsFor(key string) []int
	// largeFor reports whether a subscription that includes key is listed
	// in the device's large_subscriptions (it has a large-class slot).
	largeFor(key string) bool
}

// subsRoom reports whether every subscription in subs has room for one
// more sample in this flush (RingDepth each); nil subs: the key alone,
// already bounded per key.
func (e *egress) subsRoom(subs []int) bool {
	for _, i := range subs {
		if e.bat.perSub[i] >= e.shape.RingDepth {
			return false
		}
	}
	return true
}

// batchedHeld reports whether samples wait for a later flush, and when
// to try again (the link budget's wait, or the end of the flush window; 0:
// the next flush on the cadence).
func (e *egress) batchedHeld() (bool, time.Duration) {
	e.bat.mu.Lock()
	defer e.bat.mu.Unlock()
	return e.bat.pending > 0, e.bat.retry
}

// setBatchedRate changes every key's token bucket (class change).
func (e *egress) setBatchedRate(hz float64, now time.Time) {
	e.bat.mu.Lock()
	defer e.bat.mu.Unlock()
	if hz == e.bat.rate {
		return
	}
	e.bat.rate = hz
	for _, q := range e.bat.order {
		q.lim.SetLimitAt(now, rate.Limit(hz))
	}
}
