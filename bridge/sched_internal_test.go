package bridge

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The scheduler runs a unit on one worker at a time: a wake while it runs
// makes it run once more after; a unit's timer fires once at the time its
// run asked for; runNow requeues it behind the others; a stopped unit
// never runs again. A fixed number of goroutines serves any number of units.
func TestSchedulerUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		s := newScheduler(ctx, time.Now)
		s.start(func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() })
		defer func() { cancel(); wg.Wait() }()

		release := make(chan struct{})
		var runs, concurrent, maxConc atomic.Int32
		var times []time.Duration
		var mu sync.Mutex
		start := time.Now()
		u := s.newUnit(func(now time.Time) time.Duration {
			c := concurrent.Add(1)
			maxConc.Store(max(maxConc.Load(), c))
			defer concurrent.Add(-1)
			n := runs.Add(1)
			mu.Lock()
			times = append(times, now.Sub(start))
			mu.Unlock()
			if n == 1 {
				<-release
			}
			if n == 2 {
				return 50 * time.Millisecond // once more, by timer
			}
			return 0
		})
		u.wake()
		synctest.Wait()
		require.EqualValues(t, 1, runs.Load())
		u.wake() // while running
		u.wake()
		close(release)
		synctest.Wait()
		require.EqualValues(t, 2, runs.Load(), "woken (twice) while running: one more run")
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 3, runs.Load(), "the timer its run asked for")
		time.Sleep(time.Second)
		synctest.Wait()
		require.EqualValues(t, 3, runs.Load(), "0: no timer")
		require.EqualValues(t, 1, maxConc.Load(), "never two runs at once")
		require.Equal(t, []time.Duration{0, 0, 50 * time.Millisecond}, times)

		// runNow: requeued behind other units, fairly
		var order []int
		var omu sync.Mutex
		mk := func(id, n int) *unit {
			left := n
			return s.newUnit(func(time.Time) time.Duration {
				omu.Lock()
				order = append(order, id)
				omu.Unlock()
				left--
				if left > 0 {
					return runNow
				}
				return 0
			})
		}
		a, b := mk(1, 3), mk(2, 3)
		a.wake()
		b.wake()
		synctest.Wait()
		require.Len(t, order, 6)
		require.ElementsMatch(t, []int{1, 1, 1, 2, 2, 2}, order)

		// stop: a pending timer never fires
		c := s.newUnit(func(time.Time) time.Duration { runs.Add(100); return 0 })
		s.setTimer(c, 10*time.Millisecond)
		c.stop()
		time.Sleep(time.Second)
		synctest.Wait()
		require.EqualValues(t, 3, runs.Load())
		s.mu.Lock()
		require.Empty(t, s.timers)
		s.mu.Unlock()
	})
}
