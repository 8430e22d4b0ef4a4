package zenohpath

import (
	"bytes"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestPutTooLarge: a local Put or Publisher.Put above the router's max
// message size returns ErrTooLarge (never nil) and is counted; the
// in-process link refuses a routed message above it too.
func TestPutTooLarge(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	r := NewRouter(RouterConfig{Metrics: m, Transport: transport.Config{MaxMessageSize: 1000}})
	t.Cleanup(func() { _ = r.Close() })
	require.Equal(t, 1000, r.MaxMessageSize())
	require.Equal(t, transport.DefaultMaxMessageSize, NewRouter(RouterConfig{}).MaxMessageSize())

	s := openInProcess(t, r)
	sub := openInProcess(t, r)
	got := make(chan Sample, 4)
	_, err = sub.DeclareSubscriber("big/**", func(smp Sample) { got <- smp })
	require.NoError(t, err)

	err = s.Put("big/x", bytes.Repeat([]byte("x"), 2000), nil)
	require.ErrorIs(t, err, ErrTooLarge)
	require.True(t, errors.Is(err, transport.ErrTooLarge))
	pub, err := s.DeclarePublisher("big/y", PublisherOptions{})
	require.NoError(t, err)
	require.ErrorIs(t, pub.Put(bytes.Repeat([]byte("y"), 1001), nil), ErrTooLarge)
	require.Equal(t, 2.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropTooLarge)))

	require.NoError(t, pub.Put(bytes.Repeat([]byte("z"), 900), nil))
	require.Len(t, recv(t, got).Payload(), 900)

	// A message from another face above the limit: the local link refuses
	// it and the router counts it.
	f, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.route(f, &wire.Push{WireExpr: wireKey("big/w"), Body: &wire.Put{Payload: make([]byte, 1500)}}, true)
	require.Equal(t, 3.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropTooLarge)))
	require.NoError(t, pub.Put([]byte("after"), nil))
	require.Equal(t, "after", string(recv(t, got).Payload()), "the oversized sample was not delivered")
	require.ErrorIs(t, newLocalLink(10).send(&wire.Push{WireExpr: wireKey("k"), Body: &wire.Put{Payload: make([]byte, 10)}}, sendOptions{}), ErrTooLarge)
}
