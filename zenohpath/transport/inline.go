package transport

import (
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// The inline write (issue 10, pico z_ping p99): when a session is idle (no
// writer running, nothing queued, no fragment train, no pending FRAME, not
// paced) and a message fits in one batch, Send writes its batch itself with
// one non-blocking write(2) instead of waking a writer goroutine: one
// goroutine hand-off and one scheduler wake-up less per message on the
// latency path (a router forwarding a ping from its read goroutine writes
// the pong's batch at once).
//
// Send still never waits on the peer: the write is a single non-blocking
// system call. If the kernel takes only part of the batch (or none:
// EAGAIN), the rest is handed to a writer goroutine, which writes it before
// anything else, so the byte stream stays intact; what Send queues
// meanwhile waits behind it as usual. Only TCP links take this path (a
// datagram cannot be split).

// inlineMinGap is how long a session must have been silent for Send to
// write inline. A caller that sends a stream (a router's read goroutine
// forwarding a burst) must not do every write(2) itself: that serializes
// reading and writing on one goroutine, and measured under load (2 cores,
// -race, Python express publisher at 36 k msg/s through the router) it cut
// the router's forwarding rate so much that the publisher's own queue
// dropped 18 % of the samples. A ping-pong (one message per round trip,
// ≥ 100 µs on this class of host) still goes inline; a faster exchange is
// already at Rust's latency without it.
const inlineMinGap = 100 * time.Microsecond

// inlineOKLocked: it may be written by the caller now. Caller holds mu and
// has admitted it (its queue was empty).
func (t *txState) inlineOKLocked(it *txItem) bool {
	w := &t.w
	if t.running || t.dead || !t.started || t.kaDue || t.queued != 0 || w.raw == nil {
		return false
	}
	if it.pooled == nil && !it.inline {
		// SendEncoded, SendShared: one sample fanned out to N sessions by
		// one caller. Writing inline would make that caller do all N
		// write(2)s in a row (fleetbench, 3 000 sessions × 30 Hz: 77 %
		// delivered instead of 100 %); N writer goroutines spread them
		// over the cores. A caller that queues on this session alone says
		// so (SendOptions.Inline): a router forwarding to one subscriber.
		return false
	}
	s := w.s
	if !it.expr && s.cfg.FlushPeriod > 0 {
		return false // it would wait for company
	}
	if t.rate.Load() != 0 || w.needsFragments(it) {
		return false
	}
	if t.sinceTx() < inlineMinGap {
		return false // a stream: leave the writes to the writer goroutine
	}
	select {
	case <-s.closing:
		return false
	default:
	}
	return true
}

// writeInline writes it in its own FRAME from the caller's goroutine. The
// caller set t.running (it is the writer for this one batch).
func (s *Session) writeInline(it txItem) {
	t := &s.tx
	w := &t.w
	w.acquire()
	sn := w.nextSN(it.rel)
	w.buf = wire.Frame{Reliable: it.rel, SN: sn}.Append(w.buf[:wire.StreamPrefixLen])
	w.buf = append(w.buf, it.b...)
	it.release()
	s.stats.txMsgs.Add(1)
	b := w.buf
	wire.PutStreamPrefix(b, len(b)-wire.StreamPrefixLen)
	w.rawBuf = b
	w.rawN, w.rawErr = 0, nil
	err := w.s.l.(*tcpLink).c.SetWriteDeadline(w.deadline())
	if err == nil {
		err = w.raw.Write(w.rawFn)
	}
	n := w.rawN
	w.rawBuf = nil
	switch {
	case err == nil && w.rawErr == nil && n == len(b):
		t.inlineWrites.Add(1)
		w.wrote(len(b))
		w.buf = w.buf[:wire.StreamPrefixLen]
	case w.rawErr != nil && !errors.Is(w.rawErr, syscall.EAGAIN):
		w.err = w.rawErr // the link failed: the writer closes the session
	default:
		// EAGAIN, a short write, or the poller refused (deadline,
		// closing): the writer writes the rest, before anything else.
		t.inlinePartial.Add(1)
		w.tail, w.tailOff = true, n
	}
	t.mu.Lock()
	// Give up the writer role only with nothing left to do; a Close that
	// came meanwhile found us running and left the close to us.
	if !w.tail && w.err == nil && t.queued == 0 && !t.kaDue && !isClosed(s.closing) {
		w.releaseBuf()
		t.running = false
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	go s.tx.loop()
}

// rawWrite is the RawConn.Write callback: one write(2), never a wait.
func (w *writer) rawWrite(fd uintptr) bool {
	for w.rawN < len(w.rawBuf) {
		n, err := syscall.Write(int(fd), w.rawBuf[w.rawN:])
		if n > 0 {
			w.rawN += n
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			if err == nil {
				err = syscall.EAGAIN
			}
			w.rawErr = err
			break
		}
	}
	return true
}

// writeTail writes the rest of a batch the inline path could not finish.
func (w *writer) writeTail() {
	b := w.buf
	off := w.tailOff
	w.tail, w.tailOff = false, 0
	tl := w.s.l.(*tcpLink)
	if err := tl.c.SetWriteDeadline(w.deadline()); err != nil {
		w.err = err
		return
	}
	if _, err := tl.c.Write(b[off:]); err != nil {
		w.err = err
		return
	}
	w.wrote(len(b))
	w.buf = w.buf[:wire.StreamPrefixLen]
}

// initInline enables the inline path on TCP links.
func (w *writer) initInline() {
	tl, ok := w.s.l.(*tcpLink)
	if !ok {
		return
	}
	sc, ok := tl.c.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	w.raw = rc
	w.rawFn = w.rawWrite
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
