package devsim

import (
	"context"
	"time"
)

// txPath is a device's transmit path as zenoh-pico (nano-ros fork) builds
// it, over the socket model fdLock:
//
//   - without zenoh.tx.batch, every put is its own socket send, written
//     under the transport TX mutex: the publishing thread waits for the
//     socket (z_put blocks);
//   - with zenoh.tx.batch, puts append to the batch under the TX mutex; the
//     flush thread (capability flush_thread) or, without it, the
//     application's spin sends the batch; a put that would overflow the
//     batch flushes it first (_z_transport_tx_batch_overflow);
//   - without zenoh.tx.split_lock the TX mutex is held for the whole send,
//     socket wait included, so appends block while a flush waits (nano-ros
//     phase-279 W4: "puts still BLOCK on the transport tx mutex whenever the
//     flush thread is mid-send");
//   - with split lock (fork Z_FEATURE_TX_SPLIT_LOCK, phase-282 W1/W2.c) the
//     flush steals the batch under the TX mutex and writes it under a
//     separate link mutex, so appends go on meanwhile; an overflow parks the
//     full batch in the one spare buffer, and a second overflow while one is
//     parked sends the parked one inline (the publisher waits); a flush
//     with a batch parked sends that one (the steal needs the spare buffer
//     to swap into) and an express put sends it before its own; the spare
//     is only touched under the link mutex, taken after the TX mutex (lock
//     order tx → link);
//   - express puts (tx_express) bypass the batch: one send of their own.
//
// write does the socket write of msgs (ok=false: abandoned, count them as
// TX drops); single is true for a one-message send (unbatched or express).
type txPath struct {
	batch, split bool
	content      int // bytes one batch carries
	lock         *fdLock
	write        func(msgs []pendingMsg, ok, single bool)

	txMu         chanMutex // the transport TX mutex
	pending      []pendingMsg
	pendingBytes int
	linkMu       chanMutex    // split lock: the link-write mutex
	spare        []pendingMsg // split lock: the parked full batch (under linkMu)
}

// chanMutex is a mutex whose waiters are served in arrival order, as a
// Zephyr k_mutex hands itself to its (equal-priority) waiters at unlock;
// a channel also lets testing/synctest see a waiter as durably blocked.
type chanMutex chan struct{}

func newChanMutex() chanMutex { return make(chanMutex, 1) }

func (m chanMutex) Lock()   { m <- struct{}{} }
func (m chanMutex) Unlock() { <-m }

// TryLock takes the mutex if it is free.
func (m chanMutex) TryLock() bool {
	select {
	case m <- struct{}{}:
		return true
	default:
		return false
	}
}

// newTxPath returns the TX path of a device (see txPath).
func newTxPath(batch, split bool, content int, lock *fdLock, write func(msgs []pendingMsg, ok, single bool)) *txPath {
	return &txPath{batch: batch, split: split && batch, content: content, lock: lock, write: write,
		txMu: newChanMutex(), linkMu: newChanMutex()}
}

// send waits for the socket and writes msgs in one send.
func (p *txPath) send(ctx context.Context, stop <-chan struct{}, msgs []pendingMsg, single bool) {
	release, ok := p.lock.acquire(ctx, stop)
	p.write(msgs, ok, single)
	if ok {
		release()
	}
}

// publish is one put from an application thread; it returns when the put
// returns on the device (appended, or sent).
func (p *txPath) publish(ctx context.Context, stop <-chan struct{}, m pendingMsg, express bool) {
	if !p.batch || express {
		if p.batch && p.split {
			p.linkMu.Lock()
			defer p.linkMu.Unlock()
			p.drainSpare(ctx, stop)
		} else {
			p.txMu.Lock()
			defer p.txMu.Unlock()
		}
		p.send(ctx, stop, []pendingMsg{m}, true)
		return
	}
	p.txMu.Lock()
	defer p.txMu.Unlock()
	if len(p.pending) > 0 && p.pendingBytes+m.size > p.content {
		full := p.take()
		if !p.split {
			p.send(ctx, stop, full, false) // inline, TX mutex held
		} else {
			p.linkMu.Lock()
			p.drainSpare(ctx, stop) // a batch is parked already: send it inline
			p.spare = full
			p.linkMu.Unlock()
		}
	}
	p.pending = append(p.pending, m)
	p.pendingBytes += m.size
}

// flush sends what is batched (zp_batch_flush): the flush thread's, or the
// application spin's, flush.
func (p *txPath) flush(ctx context.Context, stop <-chan struct{}) {
	p.txMu.Lock()
	if !p.split {
		defer p.txMu.Unlock()
		if b := p.take(); len(b) > 0 {
			p.send(ctx, stop, b, false)
		}
		return
	}
	p.linkMu.Lock()
	defer p.linkMu.Unlock()
	if len(p.spare) > 0 {
		// The steal swaps the batch into the spare buffer: with a batch
		// parked there, this flush sends the parked one and leaves the
		// current batch for the next flush (one socket send per flush).
		p.txMu.Unlock()
		p.drainSpare(ctx, stop)
		return
	}
	b := p.take()
	p.txMu.Unlock()
	if len(b) > 0 {
		p.send(ctx, stop, b, false)
	}
}

// drainSpare sends the parked batch, if any; linkMu held.
func (p *txPath) drainSpare(ctx context.Context, stop <-chan struct{}) {
	if len(p.spare) > 0 {
		s := p.spare
		p.spare = nil
		p.send(ctx, stop, s, false)
	}
}

// take empties the batch; txMu held.
func (p *txPath) take() []pendingMsg {
	b := p.pending
	p.pending, p.pendingBytes = nil, 0
	return b
}

// discard drops (write ok=false) what is batched or parked for a session
// that ended.
func (p *txPath) discard(keep func(pendingMsg) bool) {
	var gone []pendingMsg
	split := func(ms []pendingMsg) []pendingMsg {
		var kept []pendingMsg
		for _, m := range ms {
			if keep(m) {
				kept = append(kept, m)
			} else {
				gone = append(gone, m)
			}
		}
		return kept
	}
	p.txMu.Lock()
	p.pending = split(p.pending)
	p.pendingBytes = 0
	for _, m := range p.pending {
		p.pendingBytes += m.size
	}
	p.txMu.Unlock()
	if p.linkMu.TryLock() { // a send in progress drops its own
		p.spare = split(p.spare)
		p.linkMu.Unlock()
	}
	if len(gone) > 0 {
		p.write(gone, false, false)
	}
}

// flushLoop is the flush thread: flush, then sleep flush_ms (nano-ros
// zpico.c _zpico_tx_flush_task_fn: zp_batch_flush + z_sleep_ms).
func (p *txPath) flushLoop(ctx context.Context, every time.Duration) {
	for {
		p.flush(ctx, nil)
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
