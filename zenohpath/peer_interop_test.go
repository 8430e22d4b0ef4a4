package zenohpath_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
)

// TestInteropPeerMode: a Go session in peer mode listens; real Rust clients
// connect to it and exchange data with it and with each other through it.
func TestInteropPeerMode(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	ep := interop.FreeEndpoint(t)
	p, err := zenohpath.Open(context.Background(), zenohpath.Config{Mode: zenohpath.ModePeer, Listen: []string{ep}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })

	got := make(chan zenohpath.Sample, 16)
	_, err = p.DeclareSubscriber("peer/**", func(s zenohpath.Sample) { got <- s })
	require.NoError(t, err)
	sub := interop.StartReady(t, "sub", "peer/**", "--connect", ep, "--count", "3")
	pub := interop.Start(t, "pub", "peer/py", "--connect", ep, "--count", "3", "--wait-matching")
	pub.WaitEvent("sent", 10*time.Second)
	for range 3 {
		require.Equal(t, "peer/py", recvSample(t, got).KeyExpr())
	}
	var s interop.SubSummary
	require.NoError(t, sub.WaitEvent("done", 10*time.Second).Decode(&s))
	require.True(t, s.Complete)
}

// TestInteropGoPeerToRustPeer: a Go peer-mode session connects to a Rust
// peer (Python zenoh in peer mode) and exchanges samples both ways.
func TestInteropGoPeerToRustPeer(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	ep := interop.FreeEndpoint(t)
	rsub := interop.StartReady(t, "sub", "p2p/go", "--mode", "peer", "--listen", ep, "--count", "2")
	ctx, cancel := context.WithTimeout(context.Background(), interop.Scale(10*time.Second))
	defer cancel()
	p, err := zenohpath.Open(ctx, zenohpath.Config{Mode: zenohpath.ModePeer, Connect: []string{ep}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	pub, err := p.DeclarePublisher("p2p/go", zenohpath.PublisherOptions{})
	require.NoError(t, err)
	eventually(t, "Rust peer's subscriber", 10*time.Second, pub.HasMatchingSubscribers)
	require.NoError(t, pub.Put([]byte("a"), nil))
	require.NoError(t, pub.Put([]byte("b"), nil))
	var s interop.SubSummary
	require.NoError(t, rsub.WaitEvent("done", 10*time.Second).Decode(&s))
	require.True(t, s.Complete)

	// Rust peer → Go peer: the Rust peer learns our subscriber.
	got := make(chan zenohpath.Sample, 4)
	_, err = p.DeclareSubscriber("p2p/rust", func(s zenohpath.Sample) { got <- s })
	require.NoError(t, err)
	ep2 := interop.FreeEndpoint(t)
	rpub := interop.Start(t, "pub", "p2p/rust", "--mode", "peer", "--listen", ep2, "--count", "2", "--wait-matching", "--linger", "2")
	rpub.WaitEvent("ready", 10*time.Second)
	require.NoError(t, p.Router().Connect(ctx, ep2, true))
	rpub.WaitEvent("sent", 10*time.Second)
	require.Equal(t, "p2p/rust", recvSample(t, got).KeyExpr())
	require.Equal(t, "p2p/rust", recvSample(t, got).KeyExpr())
}
