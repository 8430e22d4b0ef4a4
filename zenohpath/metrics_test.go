package zenohpath

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestMetricsPreinitialised: a fresh registry already exposes every kind of
// routed_total and every reason of dropped_total, at 0.
func TestMetricsPreinitialised(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	require.Equal(t, len(routedKinds), testutil.CollectAndCount(m.routed))
	require.Equal(t, len(dropReasons), testutil.CollectAndCount(m.dropped))
	require.Zero(t, testutil.ToFloat64(m.dropped.WithLabelValues(dropInvalidKey)))
	n, err := testutil.GatherAndCount(reg, "picobridge_router_routed_total", "picobridge_router_dropped_total")
	require.NoError(t, err)
	require.Equal(t, len(routedKinds)+len(dropReasons), n)
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInvalidKeyDeclaration: a declaration with an empty or malformed key is
// refused, counted as invalid_key (an unknown scope id as unresolved_key) and
// logged at WARN once per face, declaration kind and cause, naming both.
func TestInvalidKeyDeclaration(t *testing.T) {
	var logs lockedBuf
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	r := NewRouter(RouterConfig{Metrics: m, QueryTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	t.Cleanup(func() { _ = r.Close() })
	f, _ := addTestFace(t, r, wire.WhatAmIClient)

	r.handle(f, declSub(1, "a//b"))
	r.handle(f, declSub(2, ""))
	r.handle(f, declQbl(3, "a//b", false))
	r.handle(f, declTok(4, "x/**/**/"))
	r.handle(f, &wire.Declare{Body: &wire.DeclareKeyExpr{ID: 5, WireExpr: wireKey("")}})
	r.handle(f, &wire.Declare{Body: &wire.DeclareSubscriber{ID: 6, WireExpr: wire.WireExpr{Scope: 9, Suffix: "/x", Mapping: wire.MappingSender}}})
	require.Equal(t, 5.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropInvalidKey)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropUnresolved)))
	r.mu.Lock()
	require.Empty(t, f.ents[kindSub])
	r.mu.Unlock()

	out := logs.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out) // subscriber/invalid once, queryable, token, keyexpr, subscriber/unresolved
	for _, l := range lines {
		require.Contains(t, l, "level=WARN")
	}
	require.Contains(t, lines[0], "declaration=subscriber")
	require.Contains(t, lines[0], "key=a//b")
	require.Contains(t, lines[0], "reason=invalid_key")
	require.Contains(t, lines[1], "declaration=queryable")
	require.Contains(t, lines[2], "declaration=token")
	require.Contains(t, lines[3], "declaration=keyexpr")
	require.Contains(t, lines[4], "reason=unresolved_key")
}
