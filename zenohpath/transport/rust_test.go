package transport

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// These tests run the real Rust Zenoh (eclipse-zenoh 1.10.2 via Python,
// internal/interop). They skip with a hint when Python Zenoh is missing
// (and fail in CI).

// publishUntil sends m every 100 ms until the Rust subscriber reports a
// sample (its declaration may reach the router after our first PUSH).
func publishUntil(t *testing.T, s *Session, m wire.NetworkMessage, sub *interop.Proc) interop.Event {
	t.Helper()
	deadline := time.Now().Add(interop.Scale(10 * time.Second))
	for time.Now().Before(deadline) {
		require.NoError(t, s.Send(m, SendOptions{Reliable: true}))
		if ev, err := sub.Next(100*time.Millisecond, func(e interop.Event) bool { return e.Ev == "sample" }); err == nil {
			return ev
		}
	}
	t.Fatalf("the Rust subscriber got nothing\n%s", sub.Output())
	return interop.Event{}
}

// waitPushKey waits for a PUSH on key.
func waitPushKey(t *testing.T, rec *recorder, key string) rxMsg {
	t.Helper()
	deadline := time.After(interop.Scale(10 * time.Second))
	for {
		select {
		case m := <-rec.msgs:
			if m.id == wire.IDPush && m.key == key {
				return m
			}
		case err := <-rec.closed:
			t.Fatalf("session closed: %v", err)
		case <-deadline:
			t.Fatalf("no PUSH on %s", key)
		}
	}
}

// TestRustRouterDial: our Dial (client role) opens a session with a Rust
// router, keeps it alive with a 2 s lease for several seconds, publishes
// to a Rust subscriber and receives a PUSH the router forwards after our
// DeclareSubscriber.
func TestRustRouterDial(t *testing.T) {
	interop.FindPython(t)
	ep := interop.FreeEndpoint(t)
	interop.StartReady(t, "router", "--listen", ep)
	sub := interop.StartReady(t, "sub", "demo/rust/**", "--connect", ep)

	cfg := testConfig()
	cfg.WhatAmI = wire.WhatAmIClient
	cfg.Lease = 2 * time.Second // Rust expires us after 2 s of silence: keep-alives every 500 ms
	rec := newRecorder()
	s, err := Dial(context.Background(), ep, cfg, rec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(ReasonShutdown); <-s.Done() })
	require.Equal(t, wire.WhatAmIRouter, s.PeerWhatAmI())
	require.LessOrEqual(t, s.BatchSize(), 65535)
	t.Logf("negotiated batch with the Rust router: %d", s.BatchSize())
	require.EqualValues(t, 1, s.Patch())

	// Declare a subscriber so the router pushes to us.
	require.NoError(t, s.Send(&wire.Declare{Body: &wire.DeclareSubscriber{ID: 1, WireExpr: wire.WireExpr{Suffix: "demo/go/**"}}},
		SendOptions{Reliable: true}))

	// Publish to the Rust subscriber.
	ev := publishUntil(t, s, push("demo/rust/a", []byte("from go")), sub)
	require.Contains(t, ev.String(), `"key":"demo/rust/a"`)

	// A Rust client publishes (10 Hz, until stopped) to our subscription, through the router.
	pub := interop.StartReady(t, "pub", "demo/go/b", "--connect", ep, "--count", "1000", "--rate", "10")
	m := waitPushKey(t, rec, "demo/go/b")
	require.Equal(t, "zpq1", string(m.payload[:4]))
	pub.Stop()
	sub.Stop()

	// Stay idle for 2 of our lease periods: nobody may close.
	ka0 := s.Stats().KeepAlivesTx
	select {
	case err := <-rec.closed:
		t.Fatalf("session closed: %v", err)
	case <-time.After(4 * time.Second):
	}
	st := s.Stats()
	require.GreaterOrEqual(t, st.KeepAlivesTx-ka0, uint64(6), "keep-alive every lease/4 = 500 ms (8 expected)")
	require.GreaterOrEqual(t, st.KeepAlivesRx, uint64(1), "Rust sends KEEP_ALIVE every 2.5 s")
	require.Empty(t, st.Dropped)
}

// TestRustClientListen: a Rust client connects to our Listener (router
// role); the handshake completes and its PUT arrives.
func TestRustClientListen(t *testing.T) {
	interop.FindPython(t)
	cfg := testConfig()
	ln, acc, rec := startListener(t, cfg)
	interop.StartReady(t, "put", "demo/x", "--connect", ln.Endpoint(), "--payload", "hello from rust", "--linger", "3")
	var s *Session
	select {
	case s = <-acc:
	case <-time.After(interop.Scale(10 * time.Second)):
		t.Fatal("no session")
	}
	require.Equal(t, wire.WhatAmIClient, s.PeerWhatAmI())
	deadline := time.After(interop.Scale(10 * time.Second))
	for got := false; !got; {
		select {
		case m := <-rec.msgs:
			if m.id == wire.IDPush {
				require.Equal(t, "demo/x", m.key)
				require.Equal(t, "hello from rust", string(m.payload))
				got = true
			}
		case <-deadline:
			t.Fatal("no PUSH from the Rust client")
		}
	}
	ce := rec.waitClose(t, interop.Scale(15*time.Second))
	require.Contains(t, []CloseReason{ReasonRemoteClose, ReasonEOF}, ce.Reason, "Rust closes on exit")
}

// TestRustFragmentsBothWays: 200 kB messages go through a Rust router in
// both directions, as FRAGMENTs (Rust's batch is smaller than 200 kB):
// ours reassembled by Rust, Rust's reassembled by us.
func TestRustFragmentsBothWays(t *testing.T) {
	interop.FindPython(t)
	ep := interop.FreeEndpoint(t)
	interop.StartReady(t, "router", "--listen", ep)
	sub := interop.StartReady(t, "sub", "demo/rust/**", "--connect", ep)

	cfg := testConfig()
	cfg.WhatAmI = wire.WhatAmIClient
	rec := newRecorder()
	s, err := Dial(context.Background(), ep, cfg, rec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(ReasonShutdown); <-s.Done() })
	require.NoError(t, s.Send(&wire.Declare{Body: &wire.DeclareSubscriber{ID: 1, WireExpr: wire.WireExpr{Suffix: "demo/go/**"}}},
		SendOptions{Reliable: true}))

	const size = 200000
	big := make([]byte, size)
	for i := range big {
		big[i] = byte(i)
	}
	ev := publishUntil(t, s, push("demo/rust/big", big), sub)
	var sample struct {
		Key        string `json:"key"`
		PayloadLen int    `json:"payload_len"`
	}
	require.NoError(t, ev.Decode(&sample))
	require.Equal(t, "demo/rust/big", sample.Key)
	require.Equal(t, size, sample.PayloadLen)

	interop.StartReady(t, "pub", "demo/go/big", "--connect", ep, "--size", "200000", "--count", "1000", "--rate", "5")
	m := waitPushKey(t, rec, "demo/go/big")
	require.Len(t, m.payload, size)
	require.Equal(t, "zpq1", string(m.payload[:4]))
	require.Empty(t, s.Stats().Dropped)
}

// TestRustRouterUDP: our Dial over udp/ to a Rust router listening on UDP;
// a Rust subscriber (on TCP) receives what we publish, including a message
// fragmented to the UDP batch size.
func TestRustRouterUDP(t *testing.T) {
	interop.FindPython(t)
	tcpEP := interop.FreeEndpoint(t)
	udpEP := "udp/127.0.0.1:" + tcpEP[len("tcp/127.0.0.1:"):]
	interop.StartReady(t, "router", "--listen", tcpEP, "--listen", udpEP)
	sub := interop.StartReady(t, "sub", "demo/udp/**", "--connect", tcpEP)

	cfg := testConfig()
	cfg.WhatAmI = wire.WhatAmIClient
	s, err := Dial(context.Background(), udpEP, cfg, newRecorder())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(ReasonShutdown); <-s.Done() })
	t.Logf("UDP batch with the Rust router: %d", s.BatchSize())
	var sample struct {
		Key        string `json:"key"`
		PayloadLen int    `json:"payload_len"`
	}
	require.NoError(t, publishUntil(t, s, push("demo/udp/a", []byte("over udp")), sub).Decode(&sample))
	require.Equal(t, "demo/udp/a", sample.Key)
	require.NoError(t, s.Send(push("demo/udp/b", make([]byte, 20000)), SendOptions{Reliable: true}))
	require.NoError(t, sub.WaitFor("demo/udp/b", interop.Scale(10*time.Second), func(e interop.Event) bool {
		return e.Ev == "sample" && strings.Contains(e.String(), "demo/udp/b")
	}).Decode(&sample))
	require.Equal(t, "demo/udp/b", sample.Key)
	require.Equal(t, 20000, sample.PayloadLen)
}
