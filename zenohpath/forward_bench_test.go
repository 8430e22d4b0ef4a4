package zenohpath

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// forwardPayload is the sample size of the forward-path benchmarks (zbench's
// smallest row: 8 B).
const forwardPayload = 8

// BenchmarkForward measures the router's steady forward path for one PUSH
// (8 B PUT, congestion control BLOCK, as zbench's throughput rows) from one
// face to N subscriber faces that are real transport sessions over
// loopback TCP (each with a client that counts the PUSHes it receives; an
// op ends when the clients received every sample, so the router's TX
// writers and the clients' reads are inside the time). ns/op and allocs/op
// are per message received by the router (allocs/op count every goroutine
// of the process, the clients' included).
//
//   - rx=parse: the router's read side without the socket: a wire.Parser
//     walks a prebuilt batch (one FRAME, one PUSH) as the transport's read
//     loop does and hands the PUSH to Router.handle (decode, resolve,
//     route, encode, enqueue on N sessions, their writers);
//   - rx=tcp: end to end: a publisher transport session sends the PUSHes
//     (Send, batched) to the router over loopback TCP; its writer and the
//     router's read loop are inside the time too.
//   - ping: one express PUSH at a time through the router and back (an
//     echo client answers each ping with a pong): ns/op is the round
//     trip, which shows the goroutine hand-offs of an idle face;
//     ping/gap=1ms waits 1 ms (outside the timer) between round trips,
//     as a sensor or a slow ping does: every writer is idle by then.
func BenchmarkForward(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("rx=parse/N=%d", n), func(b *testing.B) { benchForward(b, n, false) })
	}
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("rx=tcp/N=%d", n), func(b *testing.B) { benchForward(b, n, true) })
	}
	b.Run("ping", func(b *testing.B) { benchForwardPing(b, 0) })
	b.Run("ping/gap=1ms", func(b *testing.B) { benchForwardPing(b, time.Millisecond) })
}

// fwdBench is a router on loopback TCP with n counting subscriber clients
// on bench/fwd.
type fwdBench struct {
	r         *Router
	ln        *transport.Listener
	delivered atomic.Int64
	clients   []*transport.Session
	// notify gets a token (if there is room) after each delivery.
	notify chan struct{}
}

func newFwdBench(tb testing.TB, n int) *fwdBench {
	tb.Helper()
	fb := &fwdBench{r: NewRouter(RouterConfig{Transport: transport.Config{TxQueue: 4096}}), notify: make(chan struct{}, 1)}
	tb.Cleanup(func() { _ = fb.r.Close() })
	ctx := context.Background()
	ln, err := fb.r.Listen(ctx, "tcp/127.0.0.1:0")
	require.NoError(tb, err)
	fb.ln = ln
	h := transport.HandlerFuncs{Network: func(_ *transport.Session, m wire.NetworkMessage) {
		if _, ok := m.(*wire.Push); ok {
			fb.delivered.Add(1)
			select {
			case fb.notify <- struct{}{}:
			default:
			}
		}
	}}
	for range n {
		s, err := transport.Dial(ctx, ln.Endpoint(), transport.Config{ZID: RandomZID(), WhatAmI: wire.WhatAmIClient}, h)
		require.NoError(tb, err)
		fb.clients = append(fb.clients, s)
		require.NoError(tb, s.Send(declSub(1, "bench/fwd"), transport.SendOptions{Reliable: true, Block: true}))
	}
	tb.Cleanup(func() {
		for _, s := range fb.clients {
			_ = s.Close(transport.ReasonShutdown)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for countSubs(fb.r) < n {
		require.True(tb, time.Now().Before(deadline), "subscribers declared: %d of %d", countSubs(fb.r), n)
		time.Sleep(time.Millisecond)
	}
	return fb
}

// wait waits until want PUSHes were delivered; it fails only on a stall (no
// delivery for 30 s), never on slowness.
func (fb *fwdBench) wait(tb testing.TB, want int64) {
	last, lastAt := int64(-1), time.Now()
	for got := fb.delivered.Load(); got < want; got = fb.delivered.Load() {
		if got != last {
			last, lastAt = got, time.Now()
		}
		require.Less(tb, time.Since(lastAt), 30*time.Second, "stalled at %d of %d deliveries", got, want)
		time.Sleep(50 * time.Microsecond)
	}
}

// fwdPush is the benchmarks' PUSH: 8 B PUT on bench/fwd, BLOCK.
func fwdPush() *wire.Push {
	return &wire.Push{WireExpr: wireKey("bench/fwd"), NetExt: wire.NetExt{QoS: wire.NewQoS(wire.PriorityData, wire.CongestionBlock, false), HasQoS: true},
		Body: &wire.Put{Payload: make([]byte, forwardPayload)}}
}

// fwdBatch is one batch (no stream prefix) holding a reliable FRAME with m.
func fwdBatch(m wire.NetworkMessage) []byte {
	b := wire.Frame{Reliable: true, SN: 1}.Append(nil)
	return m.Append(b)
}

func benchForward(b *testing.B, n int, viaTCP bool) {
	fb := newFwdBench(b, n)
	var send func()
	if viaTCP {
		// The publisher blocks rather than fail when a loaded host stalls
		// the router for over the default block timeout (1 s).
		pub, err := transport.Dial(context.Background(), fb.ln.Endpoint(),
			transport.Config{ZID: RandomZID(), WhatAmI: wire.WhatAmIClient, TxQueue: 4096, BlockTimeout: time.Minute}, transport.HandlerFuncs{})
		require.NoError(b, err)
		b.Cleanup(func() { _ = pub.Close(transport.ReasonShutdown) })
		m := fwdPush()
		o := transport.SendOptions{Reliable: true, Block: true, Priority: wire.PriorityData}
		send = func() {
			if err := pub.Send(m, o); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		pub, ok := fb.r.addFace(nopLink{}, RandomZID(), wire.WhatAmIClient, false)
		require.True(b, ok)
		batch := fwdBatch(fwdPush())
		var p wire.Parser
		walk := func(_ wire.TransportMessage, m wire.NetworkMessage) error {
			if m != nil {
				fb.r.handle(pub, m)
			}
			return nil
		}
		send = func() {
			if err := p.WalkBatch(batch, walk); err != nil {
				b.Fatal(err)
			}
		}
	}
	send() // warm the route cache and the pools
	fb.wait(b, int64(n))
	start := fb.delivered.Load()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		send()
	}
	fb.wait(b, start+int64(b.N)*int64(n))
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*int64(n)), "ns/delivery")
}

// benchForwardPing: a pinger client sends an express PUSH on bench/ping
// and waits for the pong; an echo client subscribed to bench/ping answers
// each with an express PUSH on bench/pong. Two router forwards per op,
// each from an idle face.
func benchForwardPing(b *testing.B, gap time.Duration) {
	r := NewRouter(RouterConfig{})
	b.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()
	ln, err := r.Listen(ctx, "tcp/127.0.0.1:0")
	require.NoError(b, err)
	qos := wire.NewQoS(wire.PriorityData, wire.CongestionBlock, true)
	o := transport.SendOptions{Reliable: true, Block: true, Express: true, Priority: wire.PriorityData}
	pong := &wire.Push{WireExpr: wireKey("bench/pong"), NetExt: wire.NetExt{QoS: qos, HasQoS: true}, Body: &wire.Put{Payload: make([]byte, forwardPayload)}}
	echo, err := transport.Dial(ctx, ln.Endpoint(), transport.Config{ZID: RandomZID(), WhatAmI: wire.WhatAmIClient},
		transport.HandlerFuncs{Network: func(s *transport.Session, m wire.NetworkMessage) {
			if _, ok := m.(*wire.Push); ok {
				_ = s.Send(pong, o)
			}
		}})
	require.NoError(b, err)
	b.Cleanup(func() { _ = echo.Close(transport.ReasonShutdown) })
	got := make(chan struct{}, 1)
	pinger, err := transport.Dial(ctx, ln.Endpoint(), transport.Config{ZID: RandomZID(), WhatAmI: wire.WhatAmIClient},
		transport.HandlerFuncs{Network: func(_ *transport.Session, m wire.NetworkMessage) {
			if _, ok := m.(*wire.Push); ok {
				got <- struct{}{}
			}
		}})
	require.NoError(b, err)
	b.Cleanup(func() { _ = pinger.Close(transport.ReasonShutdown) })
	require.NoError(b, echo.Send(declSub(1, "bench/ping"), transport.SendOptions{Reliable: true, Block: true}))
	require.NoError(b, pinger.Send(declSub(1, "bench/pong"), transport.SendOptions{Reliable: true, Block: true}))
	deadline := time.Now().Add(30 * time.Second)
	for countSubs(r) < 2 {
		require.True(b, time.Now().Before(deadline))
		time.Sleep(time.Millisecond)
	}
	ping := &wire.Push{WireExpr: wireKey("bench/ping"), NetExt: wire.NetExt{QoS: qos, HasQoS: true}, Body: &wire.Put{Payload: make([]byte, forwardPayload)}}
	stall := time.NewTimer(time.Hour) // reused: the loop itself allocates nothing
	round := func() {
		if err := pinger.Send(ping, o); err != nil {
			b.Fatal(err)
		}
		stall.Reset(30 * time.Second)
		select {
		case <-got:
		case <-stall.C:
			b.Fatal("no pong in 30 s")
		}
	}
	round()
	inl := inlineBatches(r)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if gap > 0 {
			b.StopTimer()
			time.Sleep(gap)
			b.StartTimer()
		}
		round()
	}
	b.StopTimer()
	// Batches the router wrote from its read goroutines (two forwards per
	// round trip; the rest woke a writer goroutine).
	b.ReportMetric(float64(inlineBatches(r)-inl)/float64(b.N), "inline/op")
}
