package zenohpath

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// bytesLink records a copy of the shared bytes it is handed and where
// they were (the buffer goes back to its pool after the fan-out).
type bytesLink struct {
	fakeLink
	got [][]byte
	at  []*byte
}

func (l *bytesLink) sendShared(s *shared, o sendOptions) error {
	b := s.bytes()
	l.got = append(l.got, append([]byte(nil), b...))
	l.at = append(l.at, &b[0])
	return l.fakeLink.sendShared(s, o)
}

// TestFanoutEncodesOnce: a PUSH bound for three faces is encoded once; each
// face's link gets the same backing bytes, and they are the routed PUSH
// (scope 0, full key), not the publisher's (scope 1, M).
func TestFanoutEncodesOnce(t *testing.T) {
	r, m := newTestRouter(t)
	var links []*bytesLink
	for i := range 3 {
		l := &bytesLink{}
		f, ok := r.addFace(l, RandomZID(), wire.WhatAmIClient, false)
		require.True(t, ok)
		r.handle(f, declSub(uint32(i+1), "fan/**"))
		links = append(links, l)
	}
	pub, pubL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(pub, declSub(9, "fan/**")) // the sender's own subscriber: no echo
	r.handle(pub, &wire.Declare{Body: &wire.DeclareKeyExpr{ID: 1, WireExpr: wireKey("fan/a")}})
	r.handle(pub, &wire.Push{WireExpr: wire.WireExpr{Scope: 1, Mapping: wire.MappingSender}, Body: &wire.Put{Payload: []byte("x")}})
	want := (&wire.Push{WireExpr: wireKey("fan/a"), Body: &wire.Put{Payload: []byte("x")}}).Append(nil)
	for _, l := range links {
		require.Len(t, l.got, 1)
		require.Equal(t, want, l.got[0])
		require.Same(t, links[0].at[0], l.at[0], "one encoding shared by all faces")
		require.Equal(t, []string{`PUSH key=fan/a PUT "x"`}, describeAll(l.take()))
	}
	require.Empty(t, pubL.take())
	require.Equal(t, 3.0, testutil.ToFloat64(m.routed.WithLabelValues("push")))
}

// TestFanoutDivert: a diverted face (the gateway's device lanes) gets the
// decoded PUT from the shared path and nothing reaches its transport; what
// the divert function declines, and DELs, go to the transport as shared
// bytes.
func TestFanoutDivert(t *testing.T) {
	inner := &fakeLink{}
	ol := &observedLink{inner: inner}
	var gotKey, gotPayload string
	take := true
	fn := DivertFunc(func(key string, payload []byte) bool {
		gotKey, gotPayload = key, string(payload)
		return take
	})
	ol.divert.Store(&fn)
	put := &shared{m: &wire.Push{WireExpr: wireKey("d/a"), Body: &wire.Put{Payload: []byte("p")}}}
	require.NoError(t, ol.sendShared(put, sendOptions{}))
	require.Equal(t, "d/a", gotKey)
	require.Equal(t, "p", gotPayload)
	require.Empty(t, inner.take())
	require.Nil(t, put.enc, "a diverted sample is never encoded")

	take = false
	require.NoError(t, ol.sendShared(put, sendOptions{}))
	require.NoError(t, ol.sendShared(&shared{m: &wire.Push{WireExpr: wireKey("d/a"), Body: &wire.Del{}}}, sendOptions{}))
	require.Equal(t, []string{`PUSH key=d/a PUT "p"`, "PUSH key=d/a DEL"}, describeAll(inner.take()))
	require.Equal(t, 2, inner.shared)
}
