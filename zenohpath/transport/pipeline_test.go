package transport

import (
	"bytes"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// pipeSession is a started session on one end of a net.Pipe (inside a
// synctest bubble: writes block until the raw peer reads them, time is
// synthetic). The cleanup closes both and waits for the session's end.
func pipeSession(t *testing.T, cfg Config, p params) (*Session, *rawPeer, *recorder) {
	t.Helper()
	a, b := net.Pipe()
	if cfg.ZID.IsZero() {
		cfg.ZID = testZID()
	}
	cfg = cfg.withDefaults()
	if p.resolution == 0 {
		p.resolution = wire.DefaultResolution
	}
	if p.batchSize == 0 {
		p.batchSize = 65535
	}
	if p.peerLease == 0 {
		p.peerLease = time.Hour
	}
	p.peerZID = testZID()
	rec := newRecorder()
	s := newSession(&cfg, newStreamLink(a), p, rec)
	s.start()
	go s.readLoop()
	t.Cleanup(func() {
		_ = s.Close(ReasonShutdown)
		_ = b.Close()
		<-s.Done()
	})
	return s, newRawPeer(t, b), rec
}

// fragBatch is the exact content of one FRAGMENT batch.
func fragBatch(reliable bool, sn uint64, first, more bool, chunk []byte) []byte {
	return wire.Fragment{Reliable: reliable, SN: sn, First: first, More: more, Payload: chunk}.Append(nil)
}

// TestSchedulerInterleaveExactBytes: a best-effort bulk message (Data) is
// cut into FRAGMENTs one batch at a time; a reliable express message
// (RealTime) that arrives while the first fragment is being written goes
// right after it, in its own FRAME, between two fragments of the train (the
// other channel: its own SN space); a best-effort RealTime message must wait
// for the train to end (same channel: consecutive SNs), then goes in a
// FRAME with the next best-effort SN; a reliable Background message goes last.
func TestSchedulerInterleaveExactBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p, _ := pipeSession(t, Config{}, params{batchSize: 256, patch: 1, ourInitialSN: 100})
		bulk := push("bulk", bytes.Repeat([]byte("b"), 600)).Append(nil)
		crit := push("crit", []byte("stop")).Append(nil)
		beRT := push("be", []byte("rt")).Append(nil)
		bg := push("bg", []byte("late")).Append(nil)
		require.NoError(t, s.SendEncoded(bulk, SendOptions{Priority: wire.PriorityData}))
		synctest.Wait() // the writer is blocked writing the first fragment
		require.NoError(t, s.SendEncoded(bg, SendOptions{Reliable: true, Priority: wire.PriorityBackground}))
		require.NoError(t, s.SendEncoded(beRT, SendOptions{Priority: wire.PriorityRealTime}))
		require.NoError(t, s.SendEncoded(crit, SendOptions{Reliable: true, Express: true, Priority: wire.PriorityRealTime}))

		const room = 254 - 3 // batch 256 − prefix − fragment header (with First: 1 + sn + ext)
		var want [][]byte
		want = append(want, fragBatch(false, 100, true, true, bulk[:room]))
		want = append(want, frameBytes(true, 100, crit))
		rest := bulk[room:]
		sn := uint64(101)
		for len(rest) > 0 {
			n := min(254-2, len(rest))
			want = append(want, fragBatch(false, sn, false, n < len(rest), rest[:n]))
			rest = rest[n:]
			sn++
		}
		want = append(want, frameBytes(false, sn, beRT))
		want = append(want, frameBytes(true, 101, bg))
		for i, w := range want {
			got, err := p.recv(time.Minute)
			require.NoError(t, err)
			require.Equal(t, w, got, "batch %d", i)
		}
		require.Equal(t, TxBacklog{}, s.TxBacklog())
	})
}

// frameBytes is the exact content of one FRAME batch of encoded messages.
func frameBytes(reliable bool, sn uint64, msgs ...[]byte) []byte {
	b := wire.Frame{Reliable: reliable, SN: sn}.Append(nil)
	for _, m := range msgs {
		b = append(b, m...)
	}
	return b
}

// TestSchedulerPriorityOrder: with the writer blocked, messages queued at
// every priority leave highest first, FIFO within one priority, coalesced
// into FRAMEs of one channel.
func TestSchedulerPriorityOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p, _ := pipeSession(t, Config{}, params{})
		require.NoError(t, s.Send(push("first", nil), SendOptions{Reliable: true, Express: true}))
		synctest.Wait()
		for _, pr := range []wire.Priority{7, 5, 3, 1, 6, 4, 2, 0, 5} {
			require.NoError(t, s.Send(push("k", []byte{byte(pr)}), SendOptions{Reliable: true, Priority: pr}))
		}
		bl := s.TxBacklog()
		_, msgs := bl.Total()
		require.Equal(t, 9, msgs)
		require.Equal(t, 2, bl.Messages[5])
		require.Equal(t, 2*push("k", []byte{5}).Len(), bl.Bytes[5])
		_, first := frameMsgs(t, must(p.recv(time.Minute)))
		require.Equal(t, "first", first[0].key)
		_, got := frameMsgs(t, must(p.recv(time.Minute)))
		var order []byte
		for _, m := range got {
			order = append(order, m.payload[0])
		}
		require.Equal(t, []byte{0, 1, 2, 3, 4, 5, 5, 6, 7}, order)
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestQueueByteBoundDropBlock: each priority queue is bounded in bytes and
// messages; DROP waits exactly WaitBeforeDrop, BLOCK exactly BlockTimeout
// (synthetic time), both counted; one message larger than the bound waits
// beside the others (a second one does not); other priorities are unaffected; a BLOCK sender gets in as
// soon as the writer makes room.
func TestQueueByteBoundDropBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{TxQueueBytes: 1000, TxQueue: 5, BlockTimeout: 50 * time.Millisecond}
		s, p, _ := pipeSession(t, cfg, params{})
		require.NoError(t, s.Send(push("first", nil), SendOptions{Reliable: true, Express: true}))
		synctest.Wait() // the writer is stuck in its first write
		m300 := sized(300)
		for i := 0; i < 3; i++ {
			require.NoError(t, s.Send(m300, SendOptions{Priority: wire.PriorityData}))
		}
		start := time.Now()
		require.ErrorIs(t, s.Send(m300, SendOptions{Priority: wire.PriorityData}), ErrQueueFull)
		require.Equal(t, DefaultWaitBeforeDrop, time.Since(start))
		start = time.Now()
		require.ErrorIs(t, s.Send(m300, SendOptions{Priority: wire.PriorityData, Block: true}), ErrBlockTimeout)
		require.Equal(t, 50*time.Millisecond, time.Since(start))
		// 100 bytes still fit under 1000.
		require.NoError(t, s.Send(sized(100), SendOptions{Priority: wire.PriorityData}))
		// Another priority has its own bound.
		require.NoError(t, s.Send(m300, SendOptions{Priority: wire.PriorityRealTime}))
		// Larger than the bound: one such message waits beside the others.
		big := push("big", bytes.Repeat([]byte("z"), 5000))
		require.NoError(t, s.Send(big, SendOptions{Priority: wire.PriorityBackground}))
		require.ErrorIs(t, s.Send(big, SendOptions{Priority: wire.PriorityBackground}), ErrQueueFull)
		require.NoError(t, s.Send(sized(100), SendOptions{Priority: wire.PriorityBackground}))
		// The count bound (5) with small messages.
		for i := 0; i < 5; i++ {
			require.NoError(t, s.Send(push("c", nil), SendOptions{Priority: wire.PriorityControl}))
		}
		require.ErrorIs(t, s.Send(push("c", nil), SendOptions{Priority: wire.PriorityControl}), ErrQueueFull)

		bl := s.TxBacklog()
		require.Equal(t, 1000, bl.Bytes[wire.PriorityData])
		require.Equal(t, 4, bl.Messages[wire.PriorityData])
		require.Equal(t, 300, bl.Bytes[wire.PriorityRealTime])
		require.Equal(t, big.Len()+100, bl.Bytes[wire.PriorityBackground])
		require.Equal(t, 5, bl.Messages[wire.PriorityControl])
		st := s.Stats()
		require.EqualValues(t, 3, st.Dropped["queue_full"])
		require.EqualValues(t, 1, st.Dropped["block_timeout"])

		// A BLOCK sender waits for room and gets in when the peer reads.
		errc := make(chan error, 1)
		go func() { errc <- s.Send(m300, SendOptions{Priority: wire.PriorityData, Block: true}) }()
		synctest.Wait()
		require.Empty(t, errc)
		for len(errc) == 0 {
			_, err := p.recv(time.Minute)
			require.NoError(t, err)
			synctest.Wait()
		}
		require.NoError(t, <-errc)
	})
}

// TestPacingRate: under SetTxRate the writer releases at most one batch of
// burst and then exactly the rate (synthetic time), and cuts batches to the
// paced chunk (rate × 1 ms, at least 1 KiB); an express message queued
// behind bulk leaves after at most one more batch.
func TestPacingRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p, _ := pipeSession(t, Config{}, params{patch: 1})
		const rate = 2_000_000.0 // bytes/s: chunk 2000 bytes
		s.SetTxRate(rate)
		require.Equal(t, rate, s.TxRate())
		bulk := push("bulk", bytes.Repeat([]byte("b"), 40000))
		start := time.Now()
		require.NoError(t, s.Send(bulk, SendOptions{Priority: wire.PriorityData}))
		var sizes []int
		var at []time.Duration
		total := 0
		sentExpress := false
		expressAt := -1
		for {
			b, err := p.recv(time.Minute)
			require.NoError(t, err)
			sizes = append(sizes, len(b))
			at = append(at, time.Since(start))
			total += len(b) + 2
			if b[0]&0x1f == byte(wire.IDFrame) {
				expressAt = len(sizes) - 1
				break
			}
			if !sentExpress && len(sizes) == 5 {
				require.NoError(t, s.Send(push("crit", []byte("x")), SendOptions{Reliable: true, Express: true, Priority: wire.PriorityRealTime}))
				sentExpress = true
			}
		}
		require.Equal(t, 5, expressAt, "the express FRAME follows the fragment being written")
		for _, n := range sizes {
			require.LessOrEqual(t, n, 2000)
		}
		// The first batch leaves at once (burst); batch i starts when the
		// bytes before it, less one batch of burst, have been paid at rate;
		// the express FRAME does not wait for tokens (it leaves as soon as
		// it is sent, right after the fragment being written), but its
		// bytes are charged: the batches after it pay for them.
		sum := 0
		for i := range sizes {
			if i == expressAt {
				require.Equal(t, at[i-1], at[i], "express: no pacing wait")
			} else if i > 0 {
				want := time.Duration(float64(sum-2002) / rate * float64(time.Second))
				require.InDelta(t, float64(want), float64(at[i]), float64(time.Microsecond), "batch %d", i)
			}
			sum += sizes[i] + 2
		}
		s.SetTxRate(0)
		// Unpaced: the rest of the train leaves at once, in full batches.
		t0 := time.Now()
		last := must(p.recv(time.Minute))
		require.Greater(t, len(last), 2000)
		require.Zero(t, last[0]&wire.FlagMore, "the rest of the train in one batch")
		require.Less(t, time.Since(t0), time.Millisecond)
	})
}

// TestSetTxRateWakesPacedWriter: a writer waiting for pacing tokens at a
// slow rate writes at once when the rate is lifted (SetTxRate(0)), in
// synthetic time: no wait for the old rate's tokens (TestPacingRate's last
// step failed ~1 in 20 runs in CI while the writer slept out one batch).
func TestSetTxRateWakesPacedWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p, _ := pipeSession(t, Config{}, params{patch: 1})
		s.SetTxRate(1024) // 1 KiB/s: each 1 KiB batch waits about 1 s
		require.NoError(t, s.Send(push("bulk", bytes.Repeat([]byte("b"), 8000)), SendOptions{Priority: wire.PriorityData}))
		for { // the burst goes at once; then the writer sleeps for tokens
			must(p.recv(time.Minute))
			synctest.Wait()
			s.tx.mu.Lock()
			sleeping := s.tx.sleeping
			s.tx.mu.Unlock()
			if sleeping {
				break
			}
		}
		t0 := time.Now()
		s.SetTxRate(0)
		for { // batches already written at the slow rate, then the rest unpaced
			b := must(p.recv(time.Minute))
			if b[0]&wire.FlagMore == 0 {
				require.Greater(t, len(b), 2048, "the rest in one unpaced batch")
				break
			}
		}
		require.Zero(t, time.Since(t0), "written at once, in the same instant")
	})
}

// TestSendEncodedSharedSlice: one encoded message queued on two sessions is
// not copied at enqueue (the queue holds the caller's slice), never pooled,
// and arrives intact on both.
func TestSendEncodedSharedSlice(t *testing.T) {
	cfg := testConfig().withDefaults()
	s := newSession(&cfg, nullLink{}, params{resolution: wire.DefaultResolution, batchSize: 65535, peerLease: time.Second}, HandlerFuncs{})
	enc := push("fan/out", []byte("one encoding")).Append(nil)
	require.NoError(t, s.SendEncoded(enc, SendOptions{Priority: wire.PriorityData}))
	q := &s.tx.q[wire.PriorityData].ch[chBestEffort]
	require.Equal(t, 1, q.n)
	require.Same(t, &enc[0], &q.peek().b[0], "queued without a copy")
	require.Nil(t, q.peek().pooled)

	ra, rb := newRecorder(), newRecorder()
	a, _ := sessionPair(t, pairOpts{}, HandlerFuncs{}, ra)
	b, _ := sessionPair(t, pairOpts{}, HandlerFuncs{}, rb)
	orig := append([]byte(nil), enc...)
	for i := 0; i < 100; i++ {
		require.NoError(t, a.SendEncoded(enc, SendOptions{Reliable: true}))
		require.NoError(t, b.SendEncoded(enc, SendOptions{Reliable: true}))
		// Send draws from the pool meanwhile: enc must never be handed out.
		require.NoError(t, a.Send(push("other", bytes.Repeat([]byte{0xee}, len(enc))), SendOptions{Reliable: true}))
	}
	for i := 0; i < 100; i++ {
		m := ra.next(t, 5*time.Second)
		require.Equal(t, "fan/out", m.key)
		require.Equal(t, "one encoding", string(m.payload))
		require.Equal(t, "other", ra.next(t, 5*time.Second).key)
		require.Equal(t, "one encoding", string(rb.next(t, 5*time.Second).payload))
	}
	require.Equal(t, orig, enc)
}

// TestMaxMessageSize: Send and SendEncoded refuse a message above
// MaxMessageSize (too_large); a receiver drops a train above its own
// MaxMessageSize (fragment_oversize) and still gets what follows; the
// deprecated MaxReassembly still sets the bound.
func TestMaxMessageSize(t *testing.T) {
	require.Equal(t, 1234, Config{MaxReassembly: 1234}.withDefaults().MaxMessageSize)
	require.Equal(t, 99, Config{MaxReassembly: 1234, MaxMessageSize: 99}.withDefaults().MaxReassembly)
	require.Equal(t, DefaultMaxMessageSize, Config{}.withDefaults().MaxMessageSize)
	require.Equal(t, 8<<20, Config{}.MessageSizeLimit())

	rb := newRecorder()
	o := pairOpts{batch: 2048, patch: 1}
	o.cfgA.MaxMessageSize = 10000
	o.cfgB.MaxMessageSize = 5000
	a, b := sessionPair(t, o, newRecorder(), rb)
	over := push("k", bytes.Repeat([]byte("o"), 10000))
	require.ErrorIs(t, a.Send(over, SendOptions{}), ErrTooLarge)
	require.ErrorIs(t, a.SendEncoded(over.Append(nil), SendOptions{}), ErrTooLarge)
	require.EqualValues(t, 2, a.Stats().Dropped["too_large"])
	require.NoError(t, a.Send(push("k", bytes.Repeat([]byte("m"), 6000)), SendOptions{Reliable: true}))
	require.NoError(t, a.Send(push("k", bytes.Repeat([]byte("s"), 4000)), SendOptions{Reliable: true}))
	m := rb.next(t, 5*time.Second)
	require.Len(t, m.payload, 4000)
	require.EqualValues(t, 1, b.Stats().Dropped["fragment_oversize"])
}

// TestIdleSessionHoldsNoWriter: once the queues drain, the writer goroutine
// exits and hands its batch buffer back; keep-alives still go out (from the
// timer), and a later Send starts a writer again.
func TestIdleSessionHoldsNoWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p, _ := pipeSession(t, Config{Lease: 4 * time.Second}, params{peerLease: 4 * time.Second})
		idle := func() bool {
			s.tx.mu.Lock()
			defer s.tx.mu.Unlock()
			for i := range s.tx.q {
				for k := range s.tx.q[i].ch {
					if s.tx.q[i].ch[k].items != nil {
						return false
					}
				}
			}
			return !s.tx.running && s.tx.w.buf == nil
		}
		time.Sleep(idleLinger)
		synctest.Wait()
		require.True(t, idle())
		for i := 0; i < 100; i++ {
			require.NoError(t, s.Send(push("k", []byte{byte(i)}), SendOptions{Reliable: true}))
		}
		for n := 0; n < 100; {
			_, msgs := frameMsgs(t, must(p.recv(time.Minute)))
			n += len(msgs)
		}
		synctest.Wait()
		require.False(t, idle(), "the writer lingers for idleLinger")
		time.Sleep(idleLinger)
		synctest.Wait()
		require.True(t, idle(), "no goroutine, batch buffer or large ring while idle")
		// Keep-alive after lease/4 = 1 s of silence, written by the timer.
		start := time.Now()
		require.IsType(t, &wire.KeepAlive{}, p.recvMsg(time.Minute))
		require.Equal(t, time.Second-idleLinger, time.Since(start))
		time.Sleep(idleLinger)
		synctest.Wait()
		require.True(t, idle())
		require.NoError(t, s.Send(push("again", nil), SendOptions{Express: true}))
		_, msgs := frameMsgs(t, must(p.recv(time.Minute)))
		require.Equal(t, "again", msgs[0].key)
	})
}

// sized is a PUSH whose encoding is n bytes long.
func sized(n int) *wire.Push {
	m := push("k", make([]byte, n-8))
	m = push("k", make([]byte, n-8+n-m.Len()))
	if m.Len() != n {
		panic("sized")
	}
	return m
}

// TestBufClasses: Send's buffers come from power-of-two classes, so a
// queued message pins at most twice its size; larger ones are not pooled.
func TestBufClasses(t *testing.T) {
	for _, tc := range []struct{ n, c int }{{0, 256}, {1, 256}, {256, 256}, {257, 512}, {4096, 4096}, {4097, 8192}, {256 << 10, 256 << 10}, {256<<10 + 1, 256<<10 + 1}} {
		b := getBuf(tc.n)
		require.Equal(t, tc.c, cap(*b), "n=%d", tc.n)
		putBuf(b)
	}
	big := make([]byte, 0, 300<<10)
	putBuf(&big) // not pooled: no class
	odd := make([]byte, 0, 1000)
	putBuf(&odd) // not a class size: dropped
	require.Equal(t, 1024, cap(*getBuf(1000)))
}
