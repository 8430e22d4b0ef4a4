package transport

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// waitIdle waits until no writer runs on s (the linger after the last
// batch is 2 ms).
func waitIdle(t *testing.T, s *Session) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.tx.mu.Lock()
		idle := !s.tx.running
		s.tx.mu.Unlock()
		if idle {
			return
		}
		require.True(t, time.Now().Before(deadline), "writer never went idle")
		time.Sleep(time.Millisecond)
	}
}

// TestInlineWrite: on an idle TCP session Send writes the batch itself (no
// writer goroutine is started: none runs when Send returns), for express
// and, with FlushPeriod 0, for plain messages; the bytes are the same
// FRAME the writer would send, with consecutive SNs.
func TestInlineWrite(t *testing.T) {
	ln, acc, _ := startListener(t, testConfig())
	p, s, _, oa := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)
	for i, o := range []SendOptions{{Reliable: true, Express: true}, {Reliable: true}, {Priority: wire.PriorityBackground}} {
		waitIdle(t, s)
		time.Sleep(inlineMinGap)
		before := s.tx.inlineWrites.Load()
		m := push("k", []byte{byte(i)})
		require.NoError(t, s.Send(m, o))
		s.tx.mu.Lock()
		running := s.tx.running
		s.tx.mu.Unlock()
		require.False(t, running, "no writer goroutine for an inline write")
		require.Equal(t, before+1, s.tx.inlineWrites.Load())
		b, err := p.recv(5 * time.Second)
		require.NoError(t, err)
		sn := oa.InitialSN + uint64(i)
		if !o.Reliable {
			sn = oa.InitialSN
		}
		require.Equal(t, frameBytes(o.Reliable, sn, m.Append(nil)), b)
	}
	// A stream (the session wrote less than inlineMinGap ago) and a
	// fragmented message never go inline.
	waitIdle(t, s)
	before := s.tx.inlineWrites.Load()
	s.tx.lastTx.Store(int64(time.Since(s.tx.epoch))) // as if it had just written
	require.NoError(t, s.Send(push("k", nil), SendOptions{Reliable: true, Express: true}))
	require.Equal(t, before, s.tx.inlineWrites.Load())
	_, err := p.recv(5 * time.Second)
	require.NoError(t, err)
	waitIdle(t, s)
	time.Sleep(inlineMinGap)
	require.NoError(t, s.Send(push("k", make([]byte, 70000)), SendOptions{Reliable: true}))
	require.Equal(t, before, s.tx.inlineWrites.Load())
}

// TestInlinePartialWrite: a peer that does not read makes the kernel take
// only part of an inline batch (TCP_NOTSENT_LOWAT 16 KiB); the writer
// finishes it before anything else, DROP drops once the queue is full, and when the peer reads, every accepted message arrives
// intact and in order.
func TestInlinePartialWrite(t *testing.T) {
	ln, acc, _ := startListener(t, testConfig())
	p, s, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)
	waitIdle(t, s)
	var accepted []uint32
	for i := uint32(0); i < 200; i++ {
		payload := bytes.Repeat([]byte{byte(i)}, 30000)
		binary.LittleEndian.PutUint32(payload, i)
		time.Sleep(inlineMinGap)
		err := s.Send(push("k", payload), SendOptions{Reliable: true, Express: true})
		if err == nil {
			accepted = append(accepted, i)
		} else {
			require.ErrorIs(t, err, ErrQueueFull)
		}
	}
	require.Positive(t, s.tx.inlinePartial.Load(), "the kernel took part of an inline batch")
	require.Less(t, len(accepted), 200, "the queue filled and dropped")
	var got []uint32
	for len(got) < len(accepted) {
		b, err := p.recv(10 * time.Second)
		require.NoError(t, err)
		if m, _, err := wire.ParseTransport(b); err == nil {
			if _, ka := m.(*wire.KeepAlive); ka {
				continue
			}
		}
		_, msgs := frameMsgs(t, b)
		for _, m := range msgs {
			require.Len(t, m.payload, 30000)
			id := binary.LittleEndian.Uint32(m.payload)
			require.Equal(t, bytes.Repeat([]byte{byte(id)}, 30000-4), m.payload[4:], "message %d intact", id)
			got = append(got, id)
		}
	}
	require.Equal(t, accepted, got)
}

// TestInlineAllocs pins zero allocations on the inline write (Send on an
// idle TCP session: encode, FRAME, one write(2)).
func TestInlineAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("SKIP: allocation counts are not meaningful under -race (sync.Pool drops items)")
	}
	ln, acc, _ := startListener(t, testConfig())
	p, s, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)
	go func() { // drain without allocating
		buf := make([]byte, 64<<10)
		for {
			if _, err := p.c.Read(buf); err != nil {
				return
			}
		}
	}()
	waitIdle(t, s)
	m := push("demo/alloc", []byte("payload"))
	before := s.tx.inlineWrites.Load()
	allocs := testing.AllocsPerRun(1000, func() {
		time.Sleep(inlineMinGap)
		if err := s.Send(m, SendOptions{Reliable: true, Express: true}); err != nil {
			t.Fatal(err)
		}
	})
	require.Greater(t, s.tx.inlineWrites.Load(), before+900, "the runs took the inline path")
	require.Zero(t, allocs, "inline Send allocates")
}

// TestIdleSessionsOneGoroutine: 100 idle TCP sessions that exchanged
// traffic cost one goroutine each (the reader): no TX goroutine stays, no
// batch buffer is held (issue 11: idle cost per session).
func TestIdleSessionsOneGoroutine(t *testing.T) {
	const pairs = 50
	before := runtime.NumGoroutine()
	var all []*Session
	for i := 0; i < pairs; i++ {
		rb := newRecorder()
		a, b := sessionPair(t, pairOpts{}, newRecorder(), rb)
		require.NoError(t, a.Send(push("k", make([]byte, 100)), SendOptions{Reliable: true}))
		require.NoError(t, a.Send(push("k", make([]byte, 200000)), SendOptions{Reliable: true})) // fragmented: the writer runs
		rb.next(t, 5*time.Second)
		rb.next(t, 5*time.Second)
		all = append(all, a, b)
	}
	// Every writer goes idle within its linger and hands its buffer back.
	// Checked per session (not by the goroutine count alone: with
	// -shuffle a goroutine of an earlier test may end meanwhile and make
	// the count match while a writer still lingers), and never failing
	// with tx.mu held (the sessions' cleanup needs it).
	busy := func() (n int) {
		for _, s := range all {
			s.tx.mu.Lock()
			if s.tx.running || s.tx.w.buf != nil {
				n++
			}
			s.tx.mu.Unlock()
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for n := busy(); n > 0; n = busy() {
		require.True(t, time.Now().Before(deadline), "%d of %d sessions still hold a writer or a batch buffer", n, len(all))
		time.Sleep(5 * time.Millisecond)
	}
	for runtime.NumGoroutine() > before+2*pairs {
		require.True(t, time.Now().Before(deadline), "goroutines: %d, want at most %d (one reader per session)", runtime.NumGoroutine(), before+2*pairs)
		time.Sleep(5 * time.Millisecond)
	}
}
