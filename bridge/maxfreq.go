package bridge

import "time"

// Downsampler applies a routes.pub_max_frequencies cap to one route: at
// most one sample per period goes out, and it is the newest one.
// zenoh-bridge-ros2dds (dds_utils.rs create_dds_reader with a read
// period) reads a KEEP_LAST 1 reader every period; here a sample that
// arrives when its slot is open goes out at once (no period of added
// delay), one that arrives early is held and replaces the one held before
// it (that one is dropped, reason max_frequency), and the held one goes
// out when its slot opens (Due, Flush), so the last sample of a burst is
// never lost.
//
// Slots are one period apart and do not drift with late arrivals: a
// steady source faster than the cap is bridged at exactly the cap on
// average, and over any window W at most W/period + 2 samples go out. After
// a silence of more than a period, the next sample goes out at once.
//
// Not safe for concurrent use (one per route, used by its forwarding
// goroutine); time comes from the caller.
type Downsampler[T any] struct {
	period  time.Duration
	next    time.Time // the next slot; zero: open
	held    T
	holding bool
}

// NewDownsampler caps at one sample per period (> 0).
func NewDownsampler[T any](period time.Duration) *Downsampler[T] {
	return &Downsampler[T]{period: period}
}

// Offer is a sample v arriving at now. send: v goes out now (a sample held
// before it is dropped: dropped 1). Else v is held until Due (dropped 1 if
// it replaced one).
func (d *Downsampler[T]) Offer(now time.Time, v T) (send bool, dropped int) {
	if d.holding {
		dropped = 1
	}
	if d.next.IsZero() || !now.Before(d.next) {
		d.advance(now)
		var zero T
		d.held, d.holding = zero, false
		return true, dropped
	}
	d.held, d.holding = v, true
	return false, dropped
}

// Due is when the held sample goes out; ok false when none is held.
func (d *Downsampler[T]) Due() (at time.Time, ok bool) { return d.next, d.holding }

// Flush returns the held sample if its slot is open at now (and takes the
// slot); ok false otherwise.
func (d *Downsampler[T]) Flush(now time.Time) (v T, ok bool) {
	if !d.holding || now.Before(d.next) {
		return v, false
	}
	d.advance(now)
	v = d.held
	var zero T
	d.held, d.holding = zero, false
	return v, true
}

// advance takes the open slot at now: the next one is a period after the
// slot (not after now), unless the slot is a period or more behind.
func (d *Downsampler[T]) advance(now time.Time) {
	if d.next.IsZero() || now.Sub(d.next) >= d.period {
		d.next = now.Add(d.period)
		return
	}
	d.next = d.next.Add(d.period)
}
