package transport

import (
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// The write goroutine owns the link's write side, the TX SN counters and
// the batch being filled. Rules (zenoh-wire.md §3.2, §4.6, §4.7, §12.8):
//   - one transport message per batch: a FRAME (holding ≥1 network
//     messages of one channel), a FRAGMENT, a KEEP_ALIVE or a CLOSE; never
//     anything after a FRAME (zenoh-pico reads a FRAME to the end of its batch);
//   - batch content ≤ negotiated batch size − 2 on streams;
//   - no Frame/Fragment QoS extension (QoS is never negotiated).

// writer is the state of the write goroutine.
type writer struct {
	s       *Session
	buf     []byte // StreamPrefixLen reserved bytes + batch content
	pending bool   // buf holds a FRAME with at least one message
	pendRel bool
	lastTx  time.Time
	err     error
	closing time.Time // set while closing: the deadline of every write

	flushT     *time.Timer
	flushArmed bool
}

func (s *Session) writeLoop() {
	defer close(s.wdone)
	w := &writer{s: s, buf: make([]byte, wire.StreamPrefixLen, wire.StreamPrefixLen+s.maxContent), lastTx: time.Now()}
	ka := time.NewTimer(s.kaPeriod)
	defer ka.Stop()
	w.flushT = time.NewTimer(time.Hour)
	w.flushT.Stop()
	defer w.flushT.Stop()
	for {
		select {
		case <-s.closing:
			w.closeLink()
			return
		case it := <-s.txq:
			w.add(it)
			// Coalesce whatever is queued already (bounded, so that a
			// flood cannot starve the close, flush and keep-alive cases).
		drain:
			for i := 0; i < cap(s.txq) && w.err == nil; i++ {
				select {
				case it := <-s.txq:
					w.add(it)
				default:
					break drain
				}
			}
			if w.pending {
				if s.cfg.FlushPeriod <= 0 {
					w.flush()
				} else if !w.flushArmed {
					w.flushT.Reset(s.cfg.FlushPeriod)
					w.flushArmed = true
				}
			}
		case <-w.flushT.C:
			w.flushArmed = false
			w.flush()
		case <-ka.C:
			if idle := time.Since(w.lastTx); idle >= s.kaPeriod {
				w.keepAlive()
				ka.Reset(s.kaPeriod)
			} else {
				ka.Reset(s.kaPeriod - idle)
			}
		}
		if w.err != nil {
			w.failed()
			return
		}
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
	w.discardQueue()
}

// closeLink flushes what is queued (best effort), sends CLOSE when asked
// and closes the link so that the reader wakes up.
func (w *writer) closeLink() {
	s := w.s
	s.closeMu.Lock()
	send, reason := s.sendClose, s.closeErr.Reason
	s.closeMu.Unlock()
	w.closing = time.Now().Add(closeGrace)
	if send {
		for w.err == nil {
			select {
			case it := <-s.txq:
				w.add(it)
				continue
			default:
			}
			break
		}
		w.flush()
		if w.err == nil {
			w.writeMsg(&wire.Close{Session: true, Reason: reason.Wire()}, w.deadline())
		}
	}
	_ = s.l.close()
	w.discardQueue()
}

func (w *writer) discardQueue() {
	for {
		select {
		case it := <-w.s.txq:
			putBuf(it.buf)
			w.s.drop(dropClosed)
		default:
			return
		}
	}
}

// deadline bounds one write: the peer's lease (a peer that reads nothing
// for that long is gone), or the close grace period while closing.
func (w *writer) deadline() time.Time {
	if !w.closing.IsZero() {
		return w.closing
	}
	return time.Now().Add(w.s.rxLease)
}

// add places one message: in the pending FRAME, in a new FRAME, or as
// FRAGMENTs when it does not fit in an empty batch.
func (w *writer) add(it txItem) {
	defer putBuf(it.buf)
	if w.err != nil {
		return
	}
	s := w.s
	msg := *it.buf
	if w.pending && (it.express || w.pendRel != it.reliable || len(w.buf)-wire.StreamPrefixLen+len(msg) > s.maxContent) {
		w.flush()
	}
	if !w.pending {
		ch := channel(it.reliable)
		hdr := 1 + wire.VLELen(w.s.txSN[ch])
		if hdr+len(msg) > s.maxContent {
			w.fragment(msg, it.reliable)
			return
		}
		sn := w.nextSN(it.reliable)
		w.buf = wire.Frame{Reliable: it.reliable, SN: sn}.Append(w.buf[:wire.StreamPrefixLen])
		w.pending, w.pendRel = true, it.reliable
	}
	w.buf = append(w.buf, msg...)
	s.stats.txMsgs.Add(1)
	if it.express {
		w.flush()
	}
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

// fragment sends msg as FRAGMENTs, one per batch, each taking the next SN
// of the channel; the first carries First when Patch ≥ 1 was negotiated.
func (w *writer) fragment(msg []byte, reliable bool) {
	s := w.s
	first := true
	for len(msg) > 0 && w.err == nil {
		sn := w.nextSN(reliable)
		f := wire.Fragment{Reliable: reliable, SN: sn, First: first && s.p.patch >= 1}
		room := s.maxContent - f.HeaderLen()
		n := min(room, len(msg))
		f.More = n < len(msg)
		w.buf = f.Append(w.buf[:wire.StreamPrefixLen])
		w.buf = append(w.buf, msg[:n]...)
		w.write(w.buf)
		msg = msg[n:]
		first = false
	}
	w.buf = w.buf[:wire.StreamPrefixLen]
	s.stats.txMsgs.Add(1)
}

func (w *writer) keepAlive() {
	w.flush()
	if w.err == nil {
		w.writeMsg(&wire.KeepAlive{}, w.deadline())
		w.s.stats.keepAlivesTx.Add(1)
	}
}

func (w *writer) writeMsg(m wire.TransportMessage, deadline time.Time) {
	b := m.Append(make([]byte, wire.StreamPrefixLen, wire.StreamPrefixLen+m.Len()))
	w.writeDeadline(b, deadline)
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
	n := len(b) - wire.StreamPrefixLen
	w.lastTx = time.Now()
	w.s.stats.txBytes.Add(uint64(n))
	w.s.stats.txBatches.Add(1)
	w.s.m.tx(n)
}
