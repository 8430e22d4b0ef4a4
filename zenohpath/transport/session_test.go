package transport

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

func TestTCPOpenAndFrameBothWays(t *testing.T) {
	lcfg, dcfg := testConfig(), testConfig()
	client, server, crec, srec := pair(t, "tcp", lcfg, dcfg)

	require.Equal(t, lcfg.ZID, client.PeerZID())
	require.Equal(t, dcfg.ZID, server.PeerZID())
	require.Equal(t, wire.WhatAmIRouter, client.PeerWhatAmI())
	require.Equal(t, wire.WhatAmIClient, server.PeerWhatAmI())
	require.Equal(t, 65535, client.BatchSize())
	require.Equal(t, 65535, server.BatchSize())
	require.Equal(t, DefaultLease, client.PeerLease())
	require.EqualValues(t, 1, server.Patch())

	require.NoError(t, client.Send(push("demo/x", []byte("hello")), SendOptions{Reliable: true}))
	m := srec.next(t, 5*time.Second)
	require.Equal(t, "demo/x", m.key)
	require.Equal(t, "hello", string(m.payload))

	require.NoError(t, server.Send(push("demo/y", []byte("world")), SendOptions{}))
	m = crec.next(t, 5*time.Second)
	require.Equal(t, "demo/y", m.key)
	require.Equal(t, "world", string(m.payload))

	// Close from the client: the server sees a remote CLOSE.
	require.Equal(t, StateOpen, client.State())
	require.NoError(t, client.Close(ReasonShutdown))
	require.NotEqual(t, StateOpen, client.State())
	<-client.Done()
	require.Equal(t, StateClosed, client.State())
	require.Equal(t, "closed", client.State().String())
	var ce0 *CloseError
	require.ErrorAs(t, client.Err(), &ce0)
	ce := srec.waitClose(t, 5*time.Second)
	require.Equal(t, ReasonRemoteClose, ce.Reason)
	require.Equal(t, wire.CloseGeneric, ce.Remote)
	cce := crec.waitClose(t, time.Second)
	require.Equal(t, ReasonShutdown, cce.Reason)
	require.ErrorIs(t, client.Send(push("a", nil), SendOptions{}), ErrClosed)
}

func TestHandlerSendsFromCallback(t *testing.T) {
	lcfg, dcfg := testConfig(), testConfig()
	lcfg.TxQueue = 4
	srec := newRecorder()
	// The server echoes every message from inside HandleNetwork, with Block.
	srec.onMsg = func(s *Session, m wire.NetworkMessage) {
		require.NoError(t, s.Send(m, SendOptions{Reliable: true, Block: true}))
	}
	client, _, crec, _ := pairWith(t, "tcp", lcfg, dcfg, newRecorder(), srec)
	for i := 0; i < 500; i++ {
		require.NoError(t, client.Send(push("k", []byte{byte(i)}), SendOptions{Reliable: true, Block: true}))
	}
	for i := 0; i < 500; i++ {
		m := crec.next(t, 5*time.Second)
		require.True(t, bytes.Equal([]byte{byte(i)}, m.payload))
	}
}

func TestParseEndpointErrors(t *testing.T) {
	for _, s := range []string{"bogus", "tcp/", "tcp/host", "udp/host:port", "tcp/h:70000", "quic/h:1"} {
		_, err := ParseEndpoint(s)
		require.Error(t, err, s)
	}
	for _, s := range []string{"tcp/127.0.0.1:7447", "udp/[::1]:0", "tcp/localhost:7447?x=1"} {
		_, err := ParseEndpoint(s)
		require.NoError(t, err, s)
	}
}

func TestIsInitSyn(t *testing.T) {
	syn := (&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: testZID(), Resolution: wire.DefaultResolution, BatchSize: 2048, HasSize: true}).Append(nil)
	require.True(t, isInitSyn(syn))
	require.False(t, isInitSyn([]byte{0xff, 0x00, 0x13, 0x37}))
	require.False(t, isInitSyn(nil))
	require.False(t, isInitSyn((&wire.KeepAlive{}).Append(nil)))
}

// TestHandleBatchEnd: a BatchEndHandler is told once per received batch,
// after that batch's messages.
func TestHandleBatchEnd(t *testing.T) {
	var mu sync.Mutex
	var events []string
	note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	accepted := make(chan *Session, 1)
	ln, err := Listen(context.Background(), "tcp/127.0.0.1:0", testConfig(), func(s *Session) Handler {
		accepted <- s
		return HandlerFuncs{Network: func(*Session, wire.NetworkMessage) { note("msg") }, BatchEnd: func(*Session) { note("end") }}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	dcfg := testConfig()
	dcfg.WhatAmI = wire.WhatAmIClient
	client, err := Dial(context.Background(), ln.Endpoint(), dcfg, newRecorder())
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close(ReasonShutdown); <-client.Done() })
	server := <-accepted
	for i := range 50 {
		require.NoError(t, client.Send(push("k", []byte{byte(i)}), SendOptions{Reliable: true}))
	}
	require.Eventually(t, func() bool { return server.Stats().RxMessages == 50 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) > 0 && events[len(events)-1] == "end"
	}, 5*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	ends, msgs := 0, 0
	for _, e := range events {
		if e == "end" {
			ends++
		} else {
			msgs++
		}
	}
	require.Equal(t, 50, msgs)
	require.EqualValues(t, server.Stats().RxBatches, ends, "one end per batch read")
}
