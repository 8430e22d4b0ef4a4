package transport

import (
	"sync"
	"sync/atomic"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Encoded is one encoded network message that several sessions may queue
// at once: the router's fan-out encodes a routed PUSH once and queues the
// same bytes on every target session (SendShared), without allocating per
// message. The bytes sit in a pooled buffer (Send's power-of-two classes,
// 256 B … 256 KiB; a larger message gets a buffer of its own, not pooled)
// that goes back to the pool when the last reference is released: the
// creator's (Release, once it has queued the message everywhere) and one
// per session that queued it (released by that session's writer once it
// copied the bytes into a batch, or when the message is dropped or the
// session closes). So a buffer is reused only when no session holds it
// any more (TestEncodedReuseAfterLastRelease, TestEncodedSlowSession).
type Encoded struct {
	buf  *[]byte
	refs atomic.Int32
}

var encPool = sync.Pool{New: func() any { return new(Encoded) }}

// poisonReleased makes the last Release overwrite the buffer with 0xEE
// before pooling it (tests only: a session still writing it would put
// 0xEE bytes on the wire).
var poisonReleased atomic.Bool

// Encode returns m's encoding (m.Append) in a pooled buffer, holding one
// reference: the caller's, dropped with Release.
func Encode(m wire.NetworkMessage) *Encoded {
	e := encPool.Get().(*Encoded)
	e.buf = getBuf(m.Len())
	*e.buf = m.Append((*e.buf)[:0])
	e.refs.Store(1)
	return e
}

// Bytes is the encoding: the wire bytes of one network message. Valid
// while the caller holds its reference; never modify it.
func (e *Encoded) Bytes() []byte { return *e.buf }

// hold takes one more reference (a session queues the message).
func (e *Encoded) hold() { e.refs.Add(1) }

// Release drops one reference; the last one gives the buffer back to the
// pool. A release without a reference is our own broken invariant and
// panics (a buffer reused while a session still writes it would send
// another message's bytes).
func (e *Encoded) Release() {
	switch n := e.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("transport: Encoded released more often than held")
	}
	if poisonReleased.Load() {
		b := (*e.buf)[:cap(*e.buf)]
		for i := range b {
			b[i] = 0xEE
		}
	}
	putBuf(e.buf)
	e.buf = nil
	encPool.Put(e)
}

// SendShared queues e (see Encoded) as SendEncoded queues bytes: not
// copied at enqueue, copied into a batch by the writer. The session takes
// its own reference on e and releases it once the bytes are written or
// dropped, whatever SendShared returns; the caller keeps its reference
// and releases it when done (after queueing e on every session). Bounds,
// congestion control and errors are as for Send.
func (s *Session) SendShared(e *Encoded, o SendOptions) error {
	select {
	case <-s.closing:
		return ErrClosed
	default:
	}
	b := e.Bytes()
	if len(b) > s.cfg.MaxMessageSize {
		s.drop(dropTooLarge)
		return ErrTooLarge
	}
	e.hold()
	return s.enqueue(txItem{b: b, enc: e, rel: o.Reliable, expr: o.Express, inline: o.Inline}, o)
}
