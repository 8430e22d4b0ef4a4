package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/sim/devsim"
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

// TestStatusOversizeBySlot (issue 31 item 1): the devsim --help example
// device (zephyr nucleo_f429zi, 1024 B subscriber slot) subscribed to scan
// is sent 1504 B scans. The gateway refuses them as oversize (the
// subscription is not in large_subscriptions), counts them, and `status`
// says so on the device's line; the device receives nothing and drops
// nothing in its slot. Listed as large, the same scans are forwarded and
// delivered.
func TestStatusOversizeBySlot(t *testing.T) {
	for _, large := range []bool{false, true} {
		t.Run(fmt.Sprintf("large=%v", large), func(t *testing.T) {
			list := "    - {name: zephyr1, platform: zephyr, board: nucleo_f429zi}\n"
			if large {
				list = "    - {name: zephyr1, platform: zephyr, board: nucleo_f429zi, large_subscriptions: [scan]}\n"
			}
			cfg, err := bridge.ParseConfig("gw.yaml", []byte("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: 127.0.0.1:0\ndevices:\n  list:\n"+list))
			require.NoError(t, err)
			s, err := server.Start(context.Background(), server.Options{Config: cfg, DisableDDS: true})
			require.NoError(t, err)
			defer s.Close()
			dev, err := devsim.NewDevice(devsim.DeviceConfig{Name: "zephyr1", Platform: "zephyr", Board: "nucleo_f429zi", Endpoint: s.Endpoints()[0],
				Subscriptions: []devsim.Subscription{{Key: "scan", Large: large}}}, devsim.Options{})
			require.NoError(t, err)
			require.NoError(t, dev.Start(context.Background()))
			defer dev.Stop()
			require.Eventually(t, func() bool {
				d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "zephyr1"}).Devices
				return len(d) == 1 && len(d[0].Subscriptions) == 1
			}, 20*time.Second, 10*time.Millisecond)
			pub, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
			require.NoError(t, err)
			defer pub.Close()
			const n = 5
			for range n {
				require.NoError(t, pub.Put("scan", make([]byte, 1504), nil))
				time.Sleep(50 * time.Millisecond)
			}
			lanes := func() (fwd, oversize, all uint64) {
				for _, l := range s.Gateway().Devicez(bridge.DevicezOptions{Device: "zephyr1"}).Devices[0].Lanes {
					fwd += l.Forwarded
					oversize += l.Dropped["oversize"]
					all += l.Forwarded
					for _, v := range l.Dropped {
						all += v
					}
				}
				return fwd, oversize, all
			}
			require.Eventually(t, func() bool { _, _, a := lanes(); return a == n }, 20*time.Second, 10*time.Millisecond)
			fwd, oversize, _ := lanes()
			out, err := run(t, "status", "--addr", s.HTTPAddr())
			require.NoError(t, err)
			var line string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "zephyr1") {
					line = l
				}
			}
			st := dev.Stats().Subscriptions["scan"]
			if !large {
				require.Equal(t, uint64(n), oversize)
				require.Contains(t, line, "oversize=5", "status:\n%s", out)
				require.Zero(t, st.Received)
				require.Zero(t, st.SlotDrops, "nothing reached the device to be dropped there")
				return
			}
			require.Zero(t, oversize)
			require.Positive(t, fwd)
			require.NotContains(t, line, "oversize", "status:\n%s", out)
			require.Eventually(t, func() bool { return dev.Stats().Subscriptions["scan"].Delivered == fwd }, 10*time.Second, 10*time.Millisecond)
			require.Zero(t, dev.Stats().Subscriptions["scan"].SlotDrops)
		})
	}
}
