package transport

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestEncodedReuseAfterLastRelease: an Encoded's buffer goes back to the
// pool only with the last reference, and releasing more often than held
// panics (our own broken invariant, never input).
func TestEncodedReuseAfterLastRelease(t *testing.T) {
	e := Encode(push("enc/a", []byte("abc")))
	want := append([]byte(nil), e.Bytes()...)
	e.hold() // a session queued it
	e.Release()
	require.Equal(t, want, e.Bytes(), "still held by the session")
	require.Equal(t, int32(1), e.refs.Load())
	e.Release()
	require.Nil(t, e.buf, "last release pools the buffer")
	require.Panics(t, func() {
		x := &Encoded{}
		x.Release()
	})
}

// TestEncodedSlowSession is the fan-out's ownership rule under load (run
// it with -race): one encoding per message is queued on a session whose
// peer reads and on one whose peer stops reading, and the creator releases
// its reference at once. While the slow session still holds queued
// messages, as many other encodings of the same size are made and released
// (they would take the held buffers if those had gone back to the pool),
// and every released buffer is overwritten with 0xEE (poisonReleased).
// The slow peer must then receive every message intact, in order.
func TestEncodedSlowSession(t *testing.T) {
	poisonReleased.Store(true)
	t.Cleanup(func() { poisonReleased.Store(false) })
	const k = 300
	const size = 16 << 10
	gate := make(chan struct{})
	fast, slow := newRecorder(), newRecorder()
	slow.onMsg = func(*Session, wire.NetworkMessage) { <-gate }
	cfg := Config{TxQueue: 4 * k, TxQueueBytes: 4 * k * size}
	fa, _ := sessionPair(t, pairOpts{cfgA: cfg}, HandlerFuncs{}, fast)
	sa, _ := sessionPair(t, pairOpts{cfgA: cfg}, HandlerFuncs{}, slow)
	o := SendOptions{Reliable: true}
	payload := func(i int) []byte {
		p := bytes.Repeat([]byte{byte(i)}, size)
		p[0], p[1] = byte(i>>8), byte(i)
		return p
	}
	for i := range k {
		e := Encode(push("enc/slow", payload(i)))
		require.NoError(t, fa.SendShared(e, o))
		require.NoError(t, sa.SendShared(e, o))
		e.Release()
	}
	for i := range k {
		m := fast.next(t, 10*time.Second)
		require.Equal(t, payload(i), m.payload, "fast peer, message %d", i)
	}
	_, held := sa.TxBacklog().Total()
	require.Positive(t, held, "the slow session must still hold queued encodings for this test to mean anything")
	for range 2 * k {
		e := Encode(push("enc/slow", bytes.Repeat([]byte{0xAB}, size)))
		e.Release()
	}
	close(gate)
	for i := range k {
		m := slow.next(t, 10*time.Second)
		require.Equal(t, "enc/slow", m.key)
		require.True(t, bytes.Equal(payload(i), m.payload), "slow peer, message %d: corrupted (buffer reused while held)", i)
	}
}
