package replay

import (
	"context"
	"sync"
	"time"
)

// Clock is the engine's notion of time. Tests and dry runs use VirtualClock, so nothing
// really sleeps.
type Clock interface {
	Now() time.Time
	// SleepUntil returns when the clock reaches t (at once if it already has), or with the
	// context's error when ctx is done first.
	SleepUntil(ctx context.Context, t time.Time) error
}

// WallClock is the real clock.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

// SleepUntil sleeps on a timer until t or until ctx is done.
func (WallClock) SleepUntil(ctx context.Context, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// VirtualClock is a clock that jumps: SleepUntil moves it forward to the requested time and
// returns at once. Hooks may observe or cancel each sleep.
type VirtualClock struct {
	mu  sync.Mutex
	now time.Time
	// OnSleep, when set, is called at the start of each SleepUntil with the target time
	// (tests use it to cancel a context after some sleeps).
	OnSleep func(t time.Time)
}

// NewVirtualClock starts a virtual clock at start.
func NewVirtualClock(start time.Time) *VirtualClock { return &VirtualClock{now: start} }

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (a negative d is ignored).
func (c *VirtualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
}

// SleepUntil jumps to t unless ctx is done.
func (c *VirtualClock) SleepUntil(ctx context.Context, t time.Time) error {
	if c.OnSleep != nil {
		c.OnSleep(t)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	return nil
}
