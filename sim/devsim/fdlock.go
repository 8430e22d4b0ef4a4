package devsim

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// fdLock models the per-socket lock of platforms with the capability
// per_fd_tx_ceiling (Zephyr zsock; anchors.md §2.2, §2.6). zenoh-pico's read
// task sits in a blocking recv with SO_RCVTIMEO = socket_timeout_ms
// (zenoh-pico src/link/transport/tcp/tcp_zephyr.c: the SO_RCVTIMEO of
// _z_tcp_zephyr_open, the plain recv of _z_tcp_zephyr_read) and holds the
// socket meanwhile. A recv returns when data arrives or when the window
// expires; at that moment the socket goes to the first send waiting for it
// (k_mutex hands the lock to a waiter at unlock), that send goes out, and
// the read task enters its next recv. So the device's own sends get one
// socket send per recv return: ~1 per window with nothing inbound (nano-ros
// tx-tuning.md, ~9 msg/s at 100 ms), one per arriving batch otherwise.
// Receive is never paced: arrived ends the recv at once.
//
// One grant per recv return (not one per waiting thread) is what nano-ros
// phase-279 W1 measured: a 100 Hz and a 10 Hz publisher of one image
// converge to ~4.3 msg/s each, 8.6 in total.
//
// A nil *fdLock is the platform without the lock: acquire returns at once.
type fdLock struct {
	window time.Duration
	wake   chan struct{} // cap 1: data arrived at the socket

	mu    sync.Mutex
	queue []*fdWaiter

	timeouts  atomic.Uint64 // recvs that ended with the window
	dataWakes atomic.Uint64 // recvs that ended with data
	waits     atomic.Uint64 // sends that asked for the socket
	grants    atomic.Uint64 // sends that got it
}

type fdWaiter struct {
	grant chan struct{} // closed when the socket is this send's
	done  chan struct{} // closed by the send when it is written
}

// newFDLock returns the lock of a socket whose read task waits window per
// recv, or nil when window ≤ 0.
func newFDLock(window time.Duration) *fdLock {
	if window <= 0 {
		return nil
	}
	return &fdLock{window: window, wake: make(chan struct{}, 1)}
}

// run is the read task's recv loop, until ctx ends.
func (l *fdLock) run(ctx context.Context) {
	t := time.NewTimer(l.window)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
			l.dataWakes.Add(1)
			t.Stop()
		case <-t.C:
			l.timeouts.Add(1)
		}
		// recv returned: the socket goes to the first waiting send.
		if w := l.pop(); w != nil {
			l.grants.Add(1)
			close(w.grant)
			select {
			case <-w.done:
			case <-ctx.Done():
				return
			}
		}
		t.Reset(l.window)
	}
}

// arrived says that data (a batch) reached the socket: the recv in progress
// returns. Arrivals while the read task is not in recv end its next recv.
func (l *fdLock) arrived() {
	if l == nil {
		return
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *fdLock) pop() *fdWaiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return nil
	}
	w := l.queue[0]
	l.queue = l.queue[1:]
	return w
}

// acquire waits until the socket is the caller's (FIFO among senders) and
// returns the function that gives it back after the send; false when ctx
// ends or stop closes first (the send is abandoned).
func (l *fdLock) acquire(ctx context.Context, stop <-chan struct{}) (release func(), ok bool) {
	if l == nil {
		return func() {}, true
	}
	w := &fdWaiter{grant: make(chan struct{}), done: make(chan struct{})}
	l.waits.Add(1)
	l.mu.Lock()
	l.queue = append(l.queue, w)
	l.mu.Unlock()
	select {
	case <-w.grant:
		return func() { close(w.done) }, true
	case <-ctx.Done():
	case <-stop:
	}
	l.mu.Lock()
	queued := false
	for i, q := range l.queue {
		if q == w {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			queued = true
			break
		}
	}
	l.mu.Unlock()
	if !queued { // popped meanwhile: the grant is (being) given; give it back
		<-w.grant
		close(w.done)
	}
	return nil, false
}

// fdStats are the lock's counters (DeviceStats).
type fdStats struct {
	RecvTimeouts uint64 `json:"recv_timeouts"`
	RecvDataEnds uint64 `json:"recv_data_ends"`
	TxWaits      uint64 `json:"tx_socket_waits"`
	TxGrants     uint64 `json:"tx_socket_grants"`
}

func (l *fdLock) stats() fdStats {
	if l == nil {
		return fdStats{}
	}
	return fdStats{RecvTimeouts: l.timeouts.Load(), RecvDataEnds: l.dataWakes.Load(), TxWaits: l.waits.Load(), TxGrants: l.grants.Load()}
}
