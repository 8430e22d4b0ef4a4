package transport

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// These tests run the real Rust Zenoh (eclipse-zenoh 1.10.2 via Python,
// internal/interop). They skip with a hint when Python Zenoh is missing
// (and fail in CI).

// TestRustRouterDial: our Dial (client role) opens a session with a Rust
// router, keeps it alive with a 1 s lease for several seconds, publishes
// to a Rust subscriber and receives a PUSH the router forwards after our
// DeclareSubscriber.
func TestRustRouterDial(t *testing.T) {
	interop.FindPython(t)
	ep := interop.FreeEndpoint(t)
	interop.StartReady(t, "router", "--listen", ep)
	sub := interop.StartReady(t, "sub", "demo/rust/**", "--connect", ep)

	cfg := testConfig()
	cfg.WhatAmI = wire.WhatAmIClient
	cfg.Lease = time.Second // Rust expires us after 1 s of silence: keep-alives every 250 ms
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
	require.NoError(t, s.Send(push("demo/rust/a", []byte("from go")), SendOptions{Reliable: true}))
	ev := sub.WaitEvent("sample", interop.Scale(10*time.Second))
	require.Contains(t, ev.String(), `"key":"demo/rust/a"`)

	// A Rust client publishes to our subscription, through the router.
	time.Sleep(200 * time.Millisecond)
	interop.StartReady(t, "put", "demo/go/b", "--connect", ep, "--payload", "from rust")
	deadline := time.After(interop.Scale(10 * time.Second))
	for got := false; !got; {
		select {
		case m := <-rec.msgs:
			if m.id == wire.IDPush && m.key == "demo/go/b" {
				require.Equal(t, "from rust", string(m.payload))
				got = true
			}
		case <-deadline:
			t.Fatal("no PUSH forwarded by the Rust router")
		}
	}

	// Stay open for 4 lease periods: nobody may close.
	select {
	case err := <-rec.closed:
		t.Fatalf("session closed: %v", err)
	case <-time.After(4 * time.Second):
	}
	st := s.Stats()
	require.GreaterOrEqual(t, st.KeepAlivesTx, uint64(8), "keep-alive every lease/4")
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
	require.NoError(t, s.Send(push("demo/rust/big", big), SendOptions{Reliable: true}))
	ev := sub.WaitEvent("sample", interop.Scale(10*time.Second))
	var sample struct {
		Key        string `json:"key"`
		PayloadLen int    `json:"payload_len"`
	}
	require.NoError(t, ev.Decode(&sample))
	require.Equal(t, "demo/rust/big", sample.Key)
	require.Equal(t, size, sample.PayloadLen)

	time.Sleep(200 * time.Millisecond)
	interop.StartReady(t, "put", "demo/go/big", "--connect", ep, "--size", "200000")
	deadline := time.After(interop.Scale(10 * time.Second))
	for {
		select {
		case m := <-rec.msgs:
			if m.id != wire.IDPush {
				continue
			}
			require.Equal(t, "demo/go/big", m.key)
			require.Len(t, m.payload, size)
			require.Equal(t, "zpq1", string(m.payload[:4]))
			require.Empty(t, s.Stats().Dropped)
			return
		case <-deadline:
			t.Fatal("no 200 kB PUSH from the Rust side")
		}
	}
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
	require.NoError(t, s.Send(push("demo/udp/a", []byte("over udp")), SendOptions{Reliable: true}))
	require.NoError(t, s.Send(push("demo/udp/b", make([]byte, 20000)), SendOptions{Reliable: true}))
	var sample struct {
		Key        string `json:"key"`
		PayloadLen int    `json:"payload_len"`
	}
	require.NoError(t, sub.WaitEvent("sample", interop.Scale(10*time.Second)).Decode(&sample))
	require.Equal(t, "demo/udp/a", sample.Key)
	require.NoError(t, sub.WaitEvent("sample", interop.Scale(10*time.Second)).Decode(&sample))
	require.Equal(t, "demo/udp/b", sample.Key)
	require.Equal(t, 20000, sample.PayloadLen)
}
