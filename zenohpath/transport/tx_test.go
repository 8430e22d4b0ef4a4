package transport

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

func TestBatchingFlushTimerAndExpress(t *testing.T) {
	cfg := testConfig()
	cfg.FlushPeriod = time.Second
	ln, acc, _ := startListener(t, cfg)
	p, s, _, oa := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)

	// Three non-express messages share one FRAME, written after FlushPeriod.
	start := time.Now()
	for i := 0; i < 3; i++ {
		require.NoError(t, s.Send(push("k", []byte{byte(i)}), SendOptions{Reliable: true}))
	}
	b, err := p.recv(5 * time.Second)
	require.NoError(t, err)
	f, msgs := frameMsgs(t, b)
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "held for FlushPeriod")
	require.True(t, f.Reliable)
	require.Equal(t, oa.InitialSN, f.SN)
	require.False(t, f.HasQoS)
	require.Len(t, msgs, 3)
	for i, m := range msgs {
		require.Equal(t, []byte{byte(i)}, m.payload)
	}

	// Express leaves at once, in its own batch, flushing what was pending first.
	require.NoError(t, s.Send(push("k", []byte("pending")), SendOptions{Reliable: true}))
	start = time.Now()
	require.NoError(t, s.Send(push("k", []byte("express")), SendOptions{Reliable: true, Express: true}))
	b, err = p.recv(5 * time.Second)
	require.NoError(t, err)
	f, msgs = frameMsgs(t, b)
	require.Len(t, msgs, 1)
	require.Equal(t, "pending", string(msgs[0].payload))
	require.Equal(t, oa.InitialSN+1, f.SN)
	b, err = p.recv(5 * time.Second)
	require.NoError(t, err)
	f, msgs = frameMsgs(t, b)
	require.Less(t, time.Since(start), 500*time.Millisecond, "express is not held for FlushPeriod")
	require.Len(t, msgs, 1)
	require.Equal(t, "express", string(msgs[0].payload))
	require.Equal(t, oa.InitialSN+2, f.SN)

	// Best effort uses its own SN space and its own FRAME.
	require.NoError(t, s.Send(push("k", []byte("r")), SendOptions{Reliable: true}))
	require.NoError(t, s.Send(push("k", []byte("be")), SendOptions{}))
	b, _ = p.recv(5 * time.Second)
	f, msgs = frameMsgs(t, b)
	require.True(t, f.Reliable)
	require.Len(t, msgs, 1)
	b, _ = p.recv(5 * time.Second)
	f, msgs = frameMsgs(t, b)
	require.False(t, f.Reliable)
	require.Equal(t, oa.InitialSN, f.SN, "best-effort counter starts at the initial SN too")
	require.Equal(t, "be", string(msgs[0].payload))
}

func TestBatchingFill(t *testing.T) {
	cfg := testConfig()
	cfg.FlushPeriod = time.Hour
	ln, acc, _ := startListener(t, cfg)
	// A pico-like proposer with batch 256 (S flag).
	p, s, ack, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient, HasSize: true, BatchSize: 256}, 10*time.Second, 0)
	require.True(t, ack.HasSize)
	require.EqualValues(t, 256, ack.BatchSize)
	payload := bytes.Repeat([]byte("x"), 100)
	msgLen := push("k", payload).Len()
	const n = 11
	for i := 0; i < n; i++ {
		require.NoError(t, s.Send(push("k", payload), SendOptions{Reliable: true}))
	}
	// Each full batch holds as many messages as fit in 256 − 2 bytes.
	perBatch := (254 - 5) / msgLen
	require.GreaterOrEqual(t, perBatch, 2)
	got := 0
	for got+perBatch < n {
		b, err := p.recv(5 * time.Second)
		require.NoError(t, err)
		require.LessOrEqual(t, len(b), 254, "2 + content ≤ batch size")
		_, msgs := frameMsgs(t, b)
		require.Len(t, msgs, perBatch)
		got += len(msgs)
	}
	// The rest waits for the (1 h) flush timer, or the keep-alive tick (2.5 s).
	_, err := p.recv(300 * time.Millisecond)
	require.True(t, isTimeout(err), "remaining messages are held: %v", err)
	_ = fmt.Sprint()
}

func TestSendQueueFullDrops(t *testing.T) {
	cfg := testConfig()
	cfg.TxQueue = 2
	cfg.BlockTimeout = 50 * time.Millisecond
	ln, acc, _ := startListener(t, cfg)
	_, s, _, _ := rawOpen(t, ln, acc, wire.InitSyn{WhatAmI: wire.WhatAmIClient}, 10*time.Second, 0)
	// The raw peer never reads: the socket buffers fill, the writer blocks, the queue fills.
	big := bytes.Repeat([]byte("y"), 60000)
	var dropped, timedOut int
	deadline := time.Now().Add(10 * time.Second)
	for dropped == 0 && time.Now().Before(deadline) {
		if err := s.Send(push("k", big), SendOptions{}); err == ErrQueueFull {
			dropped++
		}
	}
	require.Positive(t, dropped)
	start := time.Now()
	for timedOut == 0 && time.Now().Before(deadline) {
		if err := s.Send(push("k", big), SendOptions{Block: true}); err == ErrBlockTimeout {
			timedOut++
			require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)
		}
		start = time.Now()
	}
	st := s.Stats()
	require.EqualValues(t, dropped, st.Dropped["queue_full"])
	require.EqualValues(t, 1, st.Dropped["block_timeout"])
}

// TestSNWrapTX: TX counters wrap inside the 28-bit mask.
func TestSNWrapTX(t *testing.T) {
	const mask = 0x0fffffff
	rb := newRecorder()
	a, b := sessionPair(t, pairOpts{snA: mask - 1}, newRecorder(), rb)
	for i := 0; i < 4; i++ {
		require.NoError(t, a.Send(push("k", []byte{byte(i)}), SendOptions{Reliable: true, Express: true}))
	}
	for i := 0; i < 4; i++ {
		require.Equal(t, []byte{byte(i)}, rb.next(t, 5*time.Second).payload)
	}
	require.Empty(t, b.Stats().Dropped)
}

func TestUDPPair(t *testing.T) {
	client, server, crec, srec := pair(t, "udp", testConfig(), testConfig())
	require.Equal(t, DefaultUDPBatchSize, client.BatchSize())
	require.NoError(t, client.Send(push("u", []byte("over udp")), SendOptions{Reliable: true}))
	require.Equal(t, "over udp", string(srec.next(t, 5*time.Second).payload))
	big := bytes.Repeat([]byte("z"), 30000)
	require.NoError(t, server.Send(push("u", big), SendOptions{}))
	require.Equal(t, big, crec.next(t, 5*time.Second).payload, "fragmented over UDP")
	require.NoError(t, client.Close(ReasonShutdown))
	ce := srec.waitClose(t, 5*time.Second)
	require.Equal(t, ReasonRemoteClose, ce.Reason)
}

// TestUDPListenerCloseSendsClose: closing a UDP Listener sends CLOSE to
// each peer before the socket goes.
func TestUDPListenerCloseSendsClose(t *testing.T) {
	crec := newRecorder()
	acc := make(chan *Session, 1)
	ln, err := Listen(context.Background(), "udp/127.0.0.1:0", testConfig(), func(s *Session) Handler { acc <- s; return newRecorder() })
	require.NoError(t, err)
	dc := testConfig()
	dc.WhatAmI = wire.WhatAmIClient
	s, err := Dial(context.Background(), ln.Endpoint(), dc, crec)
	require.NoError(t, err)
	<-acc
	require.NoError(t, ln.Close())
	ce := crec.waitClose(t, 5*time.Second)
	require.Equal(t, ReasonRemoteClose, ce.Reason)
	<-s.Done()
}
