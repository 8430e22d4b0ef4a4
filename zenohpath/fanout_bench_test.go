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

// fanoutPayload is the sample size of the fan-out benchmarks (issue 11: 1500 B).
const fanoutPayload = 1500

// BenchmarkFanout measures the router's PUSH fan-out: one in-process
// publisher, N faces subscribed to its key, 1500 B samples. ns/delivery is
// the wall time per (sample, face) pair (deliveries/s its inverse), allocs/op
// are per sample.
//
//   - link=count: faces whose link only counts what it is handed (the
//     routing path alone: matching, encoding, hand-off);
//   - link=tcp: real transport sessions over loopback TCP, each with a
//     client that counts the PUSHes it receives; an op ends when every
//     face received the sample, so the transport's writers are included.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("link=count/N=%d", n), func(b *testing.B) { benchFanoutCount(b, n) })
	}
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("link=tcp/N=%d", n), func(b *testing.B) { benchFanoutTCP(b, n) })
	}
}

func benchFanoutCount(b *testing.B, n int) {
	met, err := NewMetrics(nil)
	require.NoError(b, err)
	r := NewRouter(RouterConfig{Metrics: met})
	defer r.Close()
	links := make([]*countLink, n)
	for i := range links {
		links[i] = &countLink{}
		f, ok := r.addFace(links[i], RandomZID(), wire.WhatAmIClient, false)
		require.True(b, ok)
		r.handle(f, declSub(1, "bench/fan"))
	}
	pub, ok := r.addFace(&countLink{}, RandomZID(), wire.WhatAmIClient, false)
	require.True(b, ok)
	m := &wire.Push{WireExpr: wireKey("bench/fan"), Body: &wire.Put{Payload: make([]byte, fanoutPayload)}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.handle(pub, m)
	}
	b.StopTimer()
	var got int64
	for _, l := range links {
		got += l.n.Load()
	}
	require.Equal(b, int64(b.N)*int64(n), got)
	reportDeliveries(b, int64(b.N)*int64(n))
}

// reportDeliveries reports ns/delivery and deliveries/s for want deliveries.
func reportDeliveries(b *testing.B, want int64) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(want), "ns/delivery")
	b.ReportMetric(float64(want)/b.Elapsed().Seconds(), "deliveries/s")
}

func benchFanoutTCP(b *testing.B, n int) {
	met, err := NewMetrics(nil)
	require.NoError(b, err)
	r := NewRouter(RouterConfig{Metrics: met, Transport: transport.Config{TxQueue: 4096}})
	defer r.Close()
	ctx := context.Background()
	ln, err := r.Listen(ctx, "tcp/127.0.0.1:0")
	require.NoError(b, err)
	var delivered atomic.Int64
	h := transport.HandlerFuncs{Network: func(_ *transport.Session, m wire.NetworkMessage) {
		if _, ok := m.(*wire.Push); ok {
			delivered.Add(1)
		}
	}}
	clients := make([]*transport.Session, n)
	for i := range clients {
		s, err := transport.Dial(ctx, ln.Endpoint(), transport.Config{ZID: RandomZID(), WhatAmI: wire.WhatAmIClient}, h)
		require.NoError(b, err)
		clients[i] = s
		require.NoError(b, s.Send(declSub(1, "bench/fan"), transport.SendOptions{Reliable: true, Block: true}))
	}
	defer func() {
		for _, s := range clients {
			_ = s.Close(transport.ReasonShutdown)
		}
	}()
	s, err := Open(ctx, Config{Router: r})
	require.NoError(b, err)
	defer s.Close()
	p, err := s.DeclarePublisher("bench/fan", PublisherOptions{CongestionControl: CongestionControlBlock})
	require.NoError(b, err)
	deadline := time.Now().Add(30 * time.Second)
	for countSubs(r) < n {
		require.True(b, time.Now().Before(deadline), "subscribers declared: %d of %d", countSubs(r), n)
		time.Sleep(time.Millisecond)
	}
	payload := make([]byte, fanoutPayload)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		require.NoError(b, p.Put(payload, nil))
	}
	want := int64(b.N) * int64(n)
	// Fail only on a stall (no delivery for 30 s), never on slowness.
	last, lastAt := int64(-1), time.Now()
	for got := delivered.Load(); got < want; got = delivered.Load() {
		if got != last {
			last, lastAt = got, time.Now()
		}
		require.Less(b, time.Since(lastAt), 30*time.Second, "stalled at %d of %d deliveries", got, want)
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	reportDeliveries(b, want)
}

// countSubs counts the subscribers the router knows.
func countSubs(r *Router) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ents[kindSub])
}

// countLink counts the messages handed to it; like a transport session it
// encodes what Send gets (and takes shared bytes as they are).
type countLink struct {
	n   atomic.Int64
	buf []byte
}

func (l *countLink) send(m wire.NetworkMessage, _ sendOptions) error {
	l.buf = m.Append(l.buf[:0])
	l.n.Add(1)
	return nil
}

func (l *countLink) sendShared(s *shared, _ sendOptions) error {
	_ = s.bytes()
	l.n.Add(1)
	return nil
}

func (l *countLink) close() {}
