package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestStatusRoutesNone: with no DDS endpoint discovered (a replay ended),
// status --routes says so instead of printing an empty table.
func TestStatusRoutesNone(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/devicez", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"supervisor":{"mode":"NORMAL","health":{"queue_occupancy":0},"transitions_total":0},"devices":[]}`))
	})
	mux.HandleFunc("/routez", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"dds":true,"domain":7,"routes":[],"faces":[]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var out bytes.Buffer
	require.NoError(t, runStatus(context.Background(), &out, statusOptions{addr: srv.URL, routes: true}))
	require.Equal(t, `supervisor: NORMAL (queue occupancy 0.00, 0 transitions)
no devices attached (a device is a session whose zid is in devices.list or whose probe responder announced a name)

DDS domain 7 routes:
(none: a route lives while DDS has a writer or reader of an allowed topic on this domain; none is discovered now, e.g. a bag replay has ended)
`, out.String())
}

// startRouterCmd runs `picobridge router` (runRouter) with --metrics on a
// free loopback port and returns that address and the router's endpoints.
func startRouterCmd(t *testing.T, o routerOptions) (string, []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	o.metrics = addr
	if o.listen == nil {
		o.listen = []string{"tcp/127.0.0.1:0"}
	}
	o.lease, o.batch, o.maxMsg, o.logLevel = 10*time.Second, 65535, 1<<20, "error"
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan []string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runRouter(ctx, o, io.Discard, func(_ *zenohpath.Router, eps []string) { ready <- eps })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case eps := <-ready:
		return addr, eps
	case err := <-done:
		t.Fatalf("router exited: %v", err)
	}
	return "", nil
}

// TestStatusAtRouter: `status --addr` pointed at a plain `picobridge
// router` says it is a router, not a gateway, and prints its /routerz
// summary with status 0 (it said "GET …/devicez: 404 Not Found", status 1).
func TestStatusAtRouter(t *testing.T) {
	addr, eps := startRouterCmd(t, routerOptions{id: "abc123"})
	zid, err := wire.NewZID([]byte{0x01, 0xd1})
	require.NoError(t, err)
	s, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: eps, ZID: zid})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.DeclareSubscriberChan("a/**", 1)
	require.NoError(t, err)
	var out string
	require.Eventually(t, func() bool {
		out, err = run(t, "status", "--addr", addr)
		return err == nil && strings.Contains(out, " 1 subscriber,")
	}, 10*time.Second, 20*time.Millisecond, "%v\n%s", err, out)
	require.Equal(t, addr+` is a plain Zenoh router (picobridge router), not a gateway: it has no devices, lanes or DDS routes. Its /routerz:
zid: abc123
listen: `+eps[0]+`
faces: 1 (1 client), 1 subscriber, 1 queryable, 0 tokens

FACE  ZID   WHATAMI  UPSTREAM  SUBSCRIBERS  QUERYABLES  TOKENS  AUTH
2     d101  client   no        1            0           0       -
`, out)
	// (the queryable is the router's admin space, @/<zid>/router)
	// --device at a router: the same sentence, status 1
	_, err = run(t, "status", "--addr", addr, "--device", "x")
	require.EqualError(t, err, `--device "x": `+addr+` is a plain Zenoh router (picobridge router), not a gateway: it has no devices`)
	require.Equal(t, 1, exitCode(err))
}
