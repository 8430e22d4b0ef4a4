package devsim

import (
	"context"
	"sync/atomic"
	"time"
)

// window models the per-socket lock of platforms with the capability
// per_fd_tx_ceiling (Zephyr zsock; anchors.md §2.2): the read task holds the
// socket while it waits in recv for up to socket_timeout_ms, and a send
// waits for the lock. The simulator reduces this to a cycle of
// SocketWindow / SendEfficiency in which the device reads at most one batch
// and writes at most one batch. This reproduces both numbers the knobs
// predict: ~9 sends/s untuned at a 100 ms window (tx-tuning.md) and the
// gateway's ExpressRateCeiling (one express sample per batch, ~0.9 per
// window). Unused slots do not accumulate beyond one.
//
// A nil *window is the platform without the lock: every acquire returns at
// once.
type window struct {
	cycle            time.Duration
	rx, tx           chan struct{}
	rxWaits, txWaits atomic.Uint64
}

func newWindow(cycle time.Duration) *window {
	if cycle <= 0 {
		return nil
	}
	return &window{cycle: cycle, rx: make(chan struct{}, 1), tx: make(chan struct{}, 1)}
}

// run hands out one receive and one send slot per cycle until ctx ends.
func (w *window) run(ctx context.Context) {
	t := time.NewTicker(w.cycle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			offer(w.rx)
			offer(w.tx)
		}
	}
}

func offer(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// acquireRx waits for n receive slots (one per batch read).
func (w *window) acquireRx(ctx context.Context, stop <-chan struct{}, n uint64) bool {
	if w == nil {
		return true
	}
	for range n {
		w.rxWaits.Add(1)
		select {
		case <-w.rx:
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
	return true
}

// acquireTx waits for n send slots (one per batch written).
func (w *window) acquireTx(ctx context.Context, stop <-chan struct{}, n int) bool {
	if w == nil {
		return true
	}
	for range n {
		w.txWaits.Add(1)
		select {
		case <-w.tx:
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
	return true
}
