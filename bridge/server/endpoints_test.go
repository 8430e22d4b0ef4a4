package server

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
)

func TestEndpointSetFirstAndLast(t *testing.T) {
	var s endpointSet // the zero value is an empty set
	require.Equal(t, 0, s.len())
	require.True(t, s.remove(ddspath.GUID{1}), "removing from an empty set: none left")

	a, b := ddspath.GUID{0x01, 0x10, 1}, ddspath.GUID{0x01, 0x0f, 2}
	require.True(t, s.add(a), "first one arrived")
	require.False(t, s.add(a), "the same GUID again is not a first")
	require.Equal(t, 1, s.len(), "a GUID counts once")
	require.False(t, s.add(b))
	require.Equal(t, 2, s.len())

	require.False(t, s.remove(ddspath.GUID{9}), "an unknown GUID changes nothing")
	require.Equal(t, 2, s.len())
	require.False(t, s.remove(a), "b is left")
	require.True(t, s.remove(b), "last one gone")
	require.Equal(t, 0, s.len())
	require.True(t, s.add(b), "first again after empty")
}

func TestEndpointSetTrackAndCounts(t *testing.T) {
	var s endpointSet
	real1 := ddspath.Endpoint{GUID: ddspath.GUID{0x01, 0x10, 1}, Alive: true}
	real2 := ddspath.Endpoint{GUID: ddspath.GUID{0x01, 0x0f, 2}, Alive: true}
	tok := ddspath.Endpoint{GUID: tokenGUID("@ros2_lv/0/z/1/2/MS/%/%/t", 1), Alive: true}
	for _, e := range []ddspath.Endpoint{real1, real2, tok, tok} {
		s.track(e)
	}
	dds, tokens := s.counts()
	require.Equal(t, 2, dds)
	require.Equal(t, 1, tokens)
	require.Equal(t, 3, s.len())

	real1.Alive = false
	s.track(real1)
	dds, tokens = s.counts()
	require.Equal(t, []int{1, 1}, []int{dds, tokens})

	tok.Alive = false
	s.track(tok)
	dds, tokens = s.counts()
	require.Equal(t, []int{1, 0}, []int{dds, tokens})
}

func TestRemoveEndpointLastOneRemovesRoute(t *testing.T) {
	b := &ddsBridge{s: &Server{stats: newServerMetrics(prometheus.NewRegistry())},
		out: map[string]*outRoute{}, in: map[string]*inRoute{}}
	g1, g2 := ddspath.GUID{0x01, 0x10, 1}, ddspath.GUID{0x01, 0x10, 2}
	r := &outRoute{}
	r.writers.add(g1)
	r.writers.add(g2)
	b.out["rt/a"] = r
	b.s.stats.routes.WithLabelValues(dirToZenoh).Inc()
	gauge := func(dir string) float64 { return testutil.ToFloat64(b.s.stats.routes.WithLabelValues(dir)) }

	require.Nil(t, removeEndpoint(b, b.out, "rt/none", g1, dirToZenoh), "no route")
	require.Nil(t, removeEndpoint(b, b.out, "rt/a", g1, dirToZenoh), "g2 keeps the route")
	require.Same(t, r, b.out["rt/a"])
	require.Equal(t, 1.0, gauge(dirToZenoh))
	require.Same(t, r, removeEndpoint(b, b.out, "rt/a", g2, dirToZenoh), "last one gone: the route, to close")
	require.Empty(t, b.out)
	require.Equal(t, 0.0, gauge(dirToZenoh))
	require.Nil(t, removeEndpoint(b, b.out, "rt/a", g2, dirToZenoh), "already removed")
	require.Equal(t, 0.0, gauge(dirToZenoh))

	in := &inRoute{}
	in.readers.add(g1)
	b.in["rt/b"] = in
	b.s.stats.routes.WithLabelValues(dirToDDS).Inc()
	require.Same(t, in, removeEndpoint(b, b.in, "rt/b", g1, dirToDDS))
	require.Empty(t, b.in)
	require.Equal(t, 0.0, gauge(dirToDDS))
}
