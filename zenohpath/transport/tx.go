package transport

import (
	"sync"
	"syscall"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// The writer owns the link's write side, the TX SN counters, the fragment
// trains and the batch being filled. Rules (zenoh-wire.md §3.2, §4.6, §4.7,
// §12.8):
//   - one transport message per batch: a FRAME (holding ≥1 network
//     messages of one channel), a FRAGMENT, a KEEP_ALIVE or a CLOSE; never
//     anything after a FRAME (zenoh-pico reads a FRAME to the end of its batch);
//   - batch content ≤ negotiated batch size − 2 on streams;
//   - no Frame/Fragment QoS extension (QoS is never negotiated);
//   - the fragments of one message take consecutive SNs of its channel with
//     nothing else of that channel in between: Rust's DefragBuffer::push
//     requires sn == expected (transport/src/common/defragmentation.rs) and
//     zenoh-pico drops a train whose next fragment is not consecutive to the
//     channel's last SN (src/transport/unicast/rx.c). The other channel has
//     its own SN space and defragmentation buffer in both, so its messages
//     may go between two fragments.
//
// No goroutine runs while a session is idle: Send (or the keep-alive timer,
// or shutdown) starts writeLoop when none runs, and writeLoop returns once
// the queues, the fragment trains and the pending FRAME are empty, handing
// its batch buffer back to a pool.

// writer is the state of the TX side that only the running writeLoop
// touches; it persists across writeLoop runs (SNs, pacing tokens).
type writer struct {
	s       *Session
	buf     []byte  // StreamPrefixLen reserved bytes + batch content; nil while idle
	bufp    *[]byte // buf's pool slot
	pending bool    // buf holds a FRAME with at least one message
	pendRel bool
	err     error
	closing time.Time // set while closing: the deadline of every write

	train    [2]train // per channel: a message being fragmented
	trainSeq uint64

	flushT     *time.Timer
	flushArmed bool

	paceT   *time.Timer
	lingerT *time.Timer

	// inline write (inline.go)
	raw     syscall.RawConn
	rawFn   func(fd uintptr) bool
	rawBuf  []byte
	rawN    int
	rawErr  error
	tail    bool // buf holds a batch whose first tailOff bytes were written
	tailOff int

	tokens float64 // pacing bucket, bytes (negative: debt)
	tokAt  time.Time
}

// train is a message being cut into FRAGMENTs, one batch at a time.
type train struct {
	it     txItem
	off    int
	active bool
	seq    uint64 // start order (FIFO between two trains of one priority)
}

// Batch buffers are pooled per capacity (the few negotiated batch sizes in
// use), so an idle session holds none.
var batchPools sync.Map // int → *sync.Pool of *[]byte

func batchPool(size int) *sync.Pool {
	if p, ok := batchPools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := batchPools.LoadOrStore(size, &sync.Pool{New: func() any { b := make([]byte, 0, size); return &b }})
	return p.(*sync.Pool)
}

func (w *writer) size() int { return wire.StreamPrefixLen + w.s.maxContent }

func (w *writer) acquire() {
	if w.buf == nil {
		w.bufp = batchPool(w.size()).Get().(*[]byte)
		w.buf = (*w.bufp)[:wire.StreamPrefixLen]
	}
}

func (w *writer) releaseBuf() {
	if w.buf != nil {
		if w.bufp == nil || cap(w.buf) != w.size() {
			w.buf = nil // not from the pool (tests)
			return
		}
		*w.bufp = w.buf[:0]
		batchPool(w.size()).Put(w.bufp)
		w.buf, w.bufp = nil, nil
	}
}

// limit is the largest batch content now: the negotiated one, or the paced
// chunk (SetTxRate).
func (w *writer) limit() int {
	if r := w.s.TxRate(); r > 0 {
		return pacedChunk(r, w.s.maxContent)
	}
	return w.s.maxContent
}

// action is what the scheduler picked for one step.
type action struct {
	kind int // actNone, actItem, actFragment
	it   txItem
	ch   int
	frag bool // actItem: it starts a fragment train (still counted in its queue)
}

const (
	actNone = iota
	actItem
	actFragment
)

// pickLocked chooses the next step: for priorities from 0 (Control) to 7
// (Background), first a fragment train of that priority (the older one
// first), then the older of the priority's two channel heads whose channel
// has no unfinished train; when every head waits for a train of its
// channel, that train goes on (whatever its priority: nothing of its
// channel may pass it; the waiting head gets its turn after at most one
// batch per remaining fragment). Caller holds s.tx.mu.
func (w *writer) pickLocked() action {
	t := &w.s.tx
	for p := 0; p < numPrio; p++ {
		if c, ok := w.trainAt(uint8(p)); ok {
			return action{kind: actFragment, ch: c}
		}
		q := &t.q[p]
		if q.count == 0 {
			continue
		}
		c, blocked := -1, -1
		for k := range q.ch {
			r := &q.ch[k]
			switch {
			case r.n == 0:
			case w.train[k].active:
				if blocked < 0 || r.peek().seq < q.ch[blocked].peek().seq {
					blocked = k
				}
			case c < 0 || r.peek().seq < q.ch[c].peek().seq:
				c = k
			}
		}
		if c < 0 {
			return action{kind: actFragment, ch: blocked}
		}
		it := q.ch[c].pop()
		// The writer has it now: its queue has room again. A message to
		// fragment is held by its train (one per channel) until written.
		t.doneLocked(it.prio, len(it.b))
		frag := w.needsFragments(&it)
		if frag {
			t.trainBytes[it.prio] += len(it.b)
			t.trainMsgs[it.prio]++
		}
		return action{kind: actItem, it: it, frag: frag}
	}
	return action{}
}

func (w *writer) trainAt(p uint8) (int, bool) {
	a, b := &w.train[chReliable], &w.train[chBestEffort]
	okA, okB := a.active && a.it.prio == p, b.active && b.it.prio == p
	switch {
	case okA && okB:
		if a.seq < b.seq {
			return chReliable, true
		}
		return chBestEffort, true
	case okA:
		return chReliable, true
	case okB:
		return chBestEffort, true
	}
	return 0, false
}

// needsFragments: it does not fit in an empty batch as a FRAME.
func (w *writer) needsFragments(it *txItem) bool {
	sn := w.s.txSN[channel(it.rel)]
	return 1+wire.VLELen(sn)+len(it.b) > w.limit()
}

// maxAppendLocked bounds how many small messages the writer appends to a
// FRAME in one critical section (so Send waits at most that long for mu).
const maxAppendLocked = 64

// idleLinger is how long an idle writer waits for more work before its
// goroutine exits: long enough to carry a steady stream (or a ping-pong)
// without a goroutine start per message, short enough that idle sessions
// hold no goroutine.
const idleLinger = 2 * time.Millisecond

func (s *Session) writeLoop() {
	t := &s.tx
	w := &t.w
	t.starts.Add(1)
	w.acquire()
	if w.tail {
		w.writeTail()
	}
	lingered := false
	for {
		if w.err == nil {
			select {
			case <-s.closing:
				w.closeLink()
				t.exit()
				return
			default:
			}
		}
		if w.err != nil {
			w.failed()
			t.exit()
			return
		}
		if d := w.paceDelay(); d > 0 && !w.expressWaiting() {
			w.sleep(d)
			continue
		}
		t.mu.Lock()
		a := w.pickLocked()
		// Small messages that fit in the pending FRAME are appended under
		// the same lock (no I/O), saving a lock round trip per message.
		for i := 0; i < maxAppendLocked && a.kind == actItem && w.fitsLocked(&a); i++ {
			w.appendFrame(a.it) // never I/O: mu is held
			a = w.pickLocked()
			// New work, as after w.do: the next idle turn lingers again
			// rather than exiting (a quiet session's small messages would
			// otherwise start a writer goroutine every second message;
			// docs/perf.md, "Tails").
			lingered = false
		}
		if a.kind != actNone {
			t.mu.Unlock()
			w.do(a)
			lingered = false
			continue
		}
		switch {
		case t.kaDue:
			t.kaDue = false
			t.mu.Unlock()
			w.keepAlive()
			lingered = true // a keep-alive alone is no reason to linger
		case w.pending && s.cfg.FlushPeriod <= 0:
			t.mu.Unlock()
			w.flush()
		case !w.pending && !lingered:
			// Idle: wait a little for more before giving the goroutine up
			// (a steady stream would otherwise start one per message).
			lingered = true
			t.sleeping = true
			t.mu.Unlock()
			if w.lingerT == nil {
				w.lingerT = time.NewTimer(idleLinger)
			} else {
				w.lingerT.Reset(idleLinger)
			}
			select {
			case <-t.wake:
				w.lingerT.Stop()
			case <-w.lingerT.C:
			case <-s.closing:
				w.lingerT.Stop()
			}
			t.mu.Lock()
			t.sleeping = false
			t.mu.Unlock()
		case isClosed(s.closing):
			// Close came after the check above and found us running.
			t.mu.Unlock()
		case !w.pending:
			// Idle: hand the buffer back and let the goroutine go.
			for i := range t.q {
				for k := range t.q[i].ch {
					if r := &t.q[i].ch[k]; r.n == 0 && len(r.items) > idleRing {
						r.items, r.head = nil, 0
					}
				}
			}
			w.releaseBuf()
			t.running, t.sleeping = false, false
			t.mu.Unlock()
			return
		default:
			// A partly filled FRAME waits for FlushPeriod or more messages.
			t.sleeping = true
			t.mu.Unlock()
			w.armFlush()
			select {
			case <-t.wake:
			case <-w.flushT.C:
				w.flushArmed = false
				w.flush()
			case <-s.closing:
			}
			t.mu.Lock()
			t.sleeping = false
			t.mu.Unlock()
		}
	}
}

// exit ends the last writer: what is still queued is dropped (counted
// closed), no writer starts again, and wdone is closed.
func (t *txState) exit() {
	w := &t.w
	t.mu.Lock()
	t.dead = true
	t.running = false
	w.discardLocked()
	t.ka.Stop()
	t.mu.Unlock()
	if w.flushT != nil {
		w.flushT.Stop()
	}
	if w.paceT != nil {
		w.paceT.Stop()
	}
	if w.lingerT != nil {
		w.lingerT.Stop()
	}
	w.releaseBuf()
	close(w.s.wdone)
}

// discardLocked drops every queued message and unfinished train (counted
// closed). Caller holds s.tx.mu.
func (w *writer) discardLocked() {
	s := w.s
	t := &s.tx
	for c := range w.train {
		if tr := &w.train[c]; tr.active {
			t.trainBytes[tr.it.prio] -= len(tr.it.b) - tr.off
			t.trainMsgs[tr.it.prio]--
			tr.it.release()
			tr.active = false
			s.drop(dropClosed)
		}
	}
	for i := range t.q {
		for k := range t.q[i].ch {
			r := &t.q[i].ch[k]
			for r.n > 0 {
				it := r.pop()
				t.doneLocked(it.prio, len(it.b))
				it.release()
				s.drop(dropClosed)
			}
			r.items, r.head = nil, 0
		}
	}
}

// kaFire is the keep-alive timer's function: it asks the writer for a
// KEEP_ALIVE after kaPeriod without TX, running it itself when none runs.
func (s *Session) kaFire() {
	t := &s.tx
	t.mu.Lock()
	if t.dead {
		t.mu.Unlock()
		return
	}
	if idle := t.sinceTx(); idle < s.kaPeriod {
		t.ka.Reset(s.kaPeriod - idle)
		t.mu.Unlock()
		return
	}
	t.kaDue = true
	run := t.kickLocked()
	t.mu.Unlock()
	if run {
		s.writeLoop()
	}
}

// failed closes the session after a write error.
func (w *writer) failed() {
	s := w.s
	if isTimeout(w.err) {
		s.shutdown(ReasonWriteTimeout, w.err, false)
	} else {
		s.shutdown(ReasonLinkError, w.err, false)
	}
	_ = s.l.close() // unblock the reader
}

// closeLink writes what is queued (best effort, within closeGrace, unpaced),
// sends CLOSE when asked and closes the link so that the reader wakes up.
func (w *writer) closeLink() {
	s := w.s
	s.closeMu.Lock()
	send, reason := s.sendClose, s.closeErr.Reason
	s.closeMu.Unlock()
	w.closing = time.Now().Add(closeGrace)
	if send {
		for w.err == nil && time.Now().Before(w.closing) {
			s.tx.mu.Lock()
			a := w.pickLocked()
			s.tx.mu.Unlock()
			if a.kind == actNone {
				break
			}
			w.do(a)
		}
		w.flush()
		if w.err == nil {
			w.writeMsg(&wire.Close{Session: true, Reason: reason.Wire()}, w.deadline())
		}
	}
	_ = s.l.close()
}

// deadline bounds one write: the peer's lease (a peer that reads nothing
// for that long is gone), or the close grace period while closing.
func (w *writer) deadline() time.Time {
	if !w.closing.IsZero() {
		return w.closing
	}
	return time.Now().Add(w.s.rxLease)
}

// do carries out one scheduler step.
func (w *writer) do(a action) {
	if a.kind == actFragment {
		w.fragmentStep(a.ch)
		return
	}
	it := a.it
	if a.frag {
		w.flush()
		c := channel(it.rel)
		w.trainSeq++
		w.train[c] = train{it: it, active: true, seq: w.trainSeq}
		w.fragmentStep(c)
		return
	}
	w.add(it)
}

// fitsLocked: a's message is small, not express, and fits in the pending
// FRAME (or starts one), so that add does no I/O.
func (w *writer) fitsLocked(a *action) bool {
	it := &a.it
	if a.frag || it.expr || len(it.b) > 1024 {
		return false
	}
	return !w.pending || (w.pendRel == it.rel && len(w.buf)-wire.StreamPrefixLen+len(it.b) <= w.limit())
}

// add places one message that fits in a batch: in the pending FRAME or in
// a new one; an express message is flushed at once, alone.
func (w *writer) add(it txItem) {
	if w.err != nil {
		it.release()
		return
	}
	if w.pending && (it.expr || w.pendRel != it.rel || len(w.buf)-wire.StreamPrefixLen+len(it.b) > w.limit()) {
		w.flush()
	}
	expr := it.expr
	w.appendFrame(it)
	if expr {
		w.flush()
	}
}

// appendFrame appends it to the pending FRAME, starting one when there is
// none; no I/O. The caller checked that it fits.
func (w *writer) appendFrame(it txItem) {
	defer it.release()
	if !w.pending {
		sn := w.nextSN(it.rel)
		w.buf = wire.Frame{Reliable: it.rel, SN: sn}.Append(w.buf[:wire.StreamPrefixLen])
		w.pending, w.pendRel = true, it.rel
	}
	w.buf = append(w.buf, it.b...)
	w.s.stats.txMsgs.Add(1)
}

func (w *writer) nextSN(reliable bool) uint64 {
	ch := channel(reliable)
	sn := w.s.txSN[ch]
	w.s.txSN[ch] = snNext(sn, w.s.mask)
	return sn
}

// flush writes the pending FRAME, if any.
func (w *writer) flush() {
	if !w.pending || w.err != nil {
		return
	}
	w.pending = false
	if w.flushArmed {
		w.flushT.Stop()
		w.flushArmed = false
	}
	w.write(w.buf)
	w.buf = w.buf[:wire.StreamPrefixLen]
}

func (w *writer) armFlush() {
	if w.flushArmed {
		return
	}
	if w.flushT == nil {
		w.flushT = time.NewTimer(w.s.cfg.FlushPeriod)
	} else {
		w.flushT.Reset(w.s.cfg.FlushPeriod)
	}
	w.flushArmed = true
}

// fragmentStep writes the next FRAGMENT of channel c's train, taking the
// next SN of the channel; the first carries First when Patch ≥ 1 was
// negotiated. A pending FRAME (of either channel) is written first: one
// transport message per batch.
func (w *writer) fragmentStep(c int) {
	s := w.s
	tr := &w.train[c]
	t := &s.tx
	w.flush()
	if w.err == nil {
		msg := tr.it.b
		sn := w.nextSN(tr.it.rel)
		f := wire.Fragment{Reliable: tr.it.rel, SN: sn, First: tr.off == 0 && s.p.patch >= 1}
		n := min(w.limit()-f.HeaderLen(), len(msg)-tr.off)
		f.More = tr.off+n < len(msg)
		w.buf = f.Append(w.buf[:wire.StreamPrefixLen])
		w.buf = append(w.buf, msg[tr.off:tr.off+n]...)
		w.write(w.buf)
		w.buf = w.buf[:wire.StreamPrefixLen]
		if w.err == nil {
			tr.off += n
			t.mu.Lock()
			t.trainBytes[tr.it.prio] -= n
			if !f.More {
				t.trainMsgs[tr.it.prio]--
			}
			t.mu.Unlock()
			if f.More {
				return
			}
			s.stats.txMsgs.Add(1)
			tr.it.release()
			tr.active = false
		}
	}
	// On a write error the train stays: exit discards it (counted closed).
}

// keepAlive answers the keep-alive timer: a pending FRAME is written
// instead when there is one; else a KEEP_ALIVE when nothing was written for
// kaPeriod. Then the timer is re-armed from the last write.
func (w *writer) keepAlive() {
	s := w.s
	if w.pending {
		w.flush()
	} else if s.tx.sinceTx() >= s.kaPeriod {
		w.writeMsg(&wire.KeepAlive{}, w.deadline())
		if w.err == nil {
			s.stats.keepAlivesTx.Add(1)
		}
	}
	s.tx.ka.Reset(max(s.kaPeriod-s.tx.sinceTx(), time.Millisecond))
}

func (w *writer) writeMsg(m wire.TransportMessage, deadline time.Time) {
	w.acquire()
	w.buf = m.Append(w.buf[:wire.StreamPrefixLen])
	w.writeDeadline(w.buf, deadline)
	w.buf = w.buf[:wire.StreamPrefixLen]
}

func (w *writer) write(b []byte) { w.writeDeadline(b, w.deadline()) }

func (w *writer) writeDeadline(b []byte, deadline time.Time) {
	if w.err != nil {
		return
	}
	if err := w.s.l.writeBatch(b, deadline); err != nil {
		w.err = err
		return
	}
	w.wrote(len(b))
}

// wrote accounts for one batch of len(b) bytes written (prefix included).
func (w *writer) wrote(size int) {
	n := size - wire.StreamPrefixLen
	t := &w.s.tx
	t.lastTx.Store(int64(time.Since(t.epoch)))
	w.charge(size)
	w.s.stats.txBytes.Add(uint64(n))
	w.s.stats.txBatches.Add(1)
	w.s.m.tx(n)
}

// Pacing (SetTxRate): a token bucket in bytes, at most one batch of burst.
// A batch may take the bucket into debt; the writer then sleeps until the
// debt is paid before it picks the next step, so a message that arrives
// meanwhile is still scheduled by priority.

func (w *writer) paceDelay() time.Duration {
	rate := w.s.TxRate()
	if rate <= 0 || !w.closing.IsZero() {
		w.tokAt = time.Time{}
		return 0
	}
	now := time.Now()
	burst := float64(wire.StreamPrefixLen + w.limit())
	if w.tokAt.IsZero() {
		w.tokens = burst
	} else {
		w.tokens = min(burst, w.tokens+rate*now.Sub(w.tokAt).Seconds())
	}
	w.tokAt = now
	if w.tokens >= 0 {
		return 0
	}
	return time.Duration(-w.tokens/rate*float64(time.Second)) + 1
}

func (w *writer) charge(n int) {
	if !w.tokAt.IsZero() {
		w.tokens -= float64(n)
	}
}

// expressWaiting: an express message waits at the head of a priority
// queue (RealTime or above). It does not wait for pacing tokens: it goes
// now and its bytes are charged, so the bulk behind pays the debt
// (critical first; the pacing still holds the session's rate on average).
func (w *writer) expressWaiting() bool {
	t := &w.s.tx
	t.mu.Lock()
	defer t.mu.Unlock()
	for p := 0; p <= int(wire.PriorityRealTime); p++ {
		for k := range t.q[p].ch {
			if r := &t.q[p].ch[k]; r.n > 0 && r.peek().expr && !w.train[k].active {
				return true
			}
		}
	}
	return false
}

// sleep waits d for pacing tokens, until an express message arrives (it
// need not wait: expressWaiting), or until the session closes.
func (w *writer) sleep(d time.Duration) {
	t := &w.s.tx
	if w.paceT == nil {
		w.paceT = time.NewTimer(d)
	} else {
		w.paceT.Reset(d)
	}
	t.mu.Lock()
	t.sleeping = true
	t.mu.Unlock()
	select {
	case <-w.paceT.C:
	case <-t.wake:
		w.paceT.Stop()
	case <-w.s.closing:
		w.paceT.Stop()
	}
	t.mu.Lock()
	t.sleeping = false
	t.mu.Unlock()
}
