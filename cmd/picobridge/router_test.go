package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/routing"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

func TestParseZID(t *testing.T) {
	z, err := parseZID("1234abcd")
	require.NoError(t, err)
	require.Equal(t, "1234abcd", z.String())
	require.Equal(t, "cdab3412", z.Hex())
	_, err = parseZID("0")
	require.Error(t, err)
	_, err = parseZID("xyz")
	require.Error(t, err)
}

// TestRouterCommand runs `picobridge router` on a free port, routes a sample
// between two client sessions, and stops on context cancellation (what
// SIGINT/SIGTERM do), closing the sessions' links.
func TestRouterCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs interop.SyncBuffer
	readyCh := make(chan []string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runRouter(ctx, routerOptions{listen: []string{"tcp/127.0.0.1:0"}, id: "abc123", lease: 10 * time.Second, batch: 65535, maxMsg: 3 << 20, logLevel: "debug"},
			&logs, func(r *zenohpath.Router, eps []string) {
				if r.MaxMessageSize() != 3<<20 {
					eps = nil // fails below: --max-message-size did not reach the router
				}
				readyCh <- eps
			})
	}()
	var eps []string
	select {
	case eps = <-readyCh:
	case err := <-done:
		t.Fatalf("router exited: %v", err)
	}
	require.NotEmpty(t, eps, "the router got MaxMessageSize 3 MiB from the options")
	s1, err := zenohpath.Open(ctx, zenohpath.Config{Connect: eps})
	require.NoError(t, err)
	defer s1.Close()
	sub, err := s1.DeclareSubscriberChan("a/**", 4)
	require.NoError(t, err)
	s2, err := zenohpath.Open(ctx, zenohpath.Config{Connect: eps})
	require.NoError(t, err)
	defer s2.Close()
	pub, err := s2.DeclarePublisher("a/b", zenohpath.PublisherOptions{})
	require.NoError(t, err)
	for !pub.HasMatchingSubscribers() {
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, pub.Put([]byte("hi"), nil))
	select {
	case smp := <-sub.Samples():
		require.Equal(t, "hi", string(smp.Payload()))
	case <-time.After(5 * time.Second):
		t.Fatal("no sample")
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("router did not stop")
	}
	require.Contains(t, logs.String(), "zid=abc123")
	require.True(t, strings.Contains(logs.String(), "stopped"))
}

func TestRouterCommandFlags(t *testing.T) {
	cmd := newRouterCommand()
	require.NoError(t, cmd.ParseFlags([]string{"-l", "tcp/127.0.0.1:7447", "-l", "udp/127.0.0.1:7447", "-e", "tcp/10.0.0.1:7447", "--lease", "3s"}))
	l, _ := cmd.Flags().GetStringArray("listen")
	require.Equal(t, []string{"tcp/127.0.0.1:7447", "udp/127.0.0.1:7447"}, l)
	e, _ := cmd.Flags().GetStringArray("connect")
	require.Equal(t, []string{"tcp/10.0.0.1:7447"}, e)
	mm, _ := cmd.Flags().GetInt("max-message-size")
	require.Equal(t, 8<<20, mm, "default: transport.DefaultMaxMessageSize")
	require.NoError(t, cmd.ParseFlags([]string{"--max-message-size", "2097152"}))
	mm, _ = cmd.Flags().GetInt("max-message-size")
	require.Equal(t, 2<<20, mm)
	err := runRouter(context.Background(), routerOptions{logLevel: "loud"}, &interop.SyncBuffer{}, nil)
	require.ErrorContains(t, err, "--log-level")
}

// TestRouterFlagValidation: bad flags fail at start with an error naming the
// flag and the allowed range, before anything listens or dials.
func TestRouterFlagValidation(t *testing.T) {
	ok := routerOptions{listen: []string{"tcp/127.0.0.1:0"}, lease: 10 * time.Second, batch: 65535, maxMsg: 8 << 20, logLevel: "info"}
	for _, tc := range []struct {
		name string
		mod  func(*routerOptions)
		want string
	}{
		{"lease zero", func(o *routerOptions) { o.lease = 0 }, "--lease 0s: want 1s to 1h0m0s"},
		{"lease negative", func(o *routerOptions) { o.lease = -5 * time.Second }, "--lease -5s"},
		{"lease 1ms", func(o *routerOptions) { o.lease = time.Millisecond }, "--lease 1ms: want 1s"},
		{"lease huge", func(o *routerOptions) { o.lease = 2 * time.Hour }, "--lease 2h0m0s"},
		{"batch small", func(o *routerOptions) { o.batch = 10 }, "--batch-size 10: want 64 to 65535"},
		{"connect bogus", func(o *routerOptions) { o.connect = []string{"bogus"} }, `--connect: transport: endpoint "bogus"`},
		{"connect no port", func(o *routerOptions) { o.connect = []string{"tcp/host"} }, "missing port"},
		{"connect bad port", func(o *routerOptions) { o.connect = []string{"tcp/host:99999"} }, "want 0 to 65535"},
		{"listen bogus", func(o *routerOptions) { o.listen = []string{"quic/x:1"} }, "--listen:"},
		{"id", func(o *routerOptions) { o.id = "xyz" }, `--id "xyz": want 1 to 32 hex digits`},
		{"id zero", func(o *routerOptions) { o.id = "0x000" }, `--id "0x000"`},
		{"max message size small", func(o *routerOptions) { o.maxMsg = 100 }, "--max-message-size 100: want 1024 to 1073741824 bytes"},
		{"max message size huge", func(o *routerOptions) { o.maxMsg = 2 << 30 }, "--max-message-size 2147483648"},
		{"weights not JSON", func(o *routerOptions) { o.cfg = []string{"routing/router/linkstate/transport_weights:[{dst_zid: a5}]"} },
			`--cfg routing/router/linkstate/transport_weights: "[{dst_zid: a5}]": want a JSON list of {"dst_zid": "<zid hex>", "weight": 1..65535}`},
		{"weights unknown field", func(o *routerOptions) {
			o.cfg = []string{`routing/router/linkstate/transport_weights:[{"dst_zid":"a5","wieght":3}]`}
		}, `unknown field "wieght"`},
		{"weight zero", func(o *routerOptions) {
			o.cfg = []string{`routing.router.linkstate.transport_weights:[{"dst_zid":"a5","weight":0}]`}
		}, "--cfg routing.router.linkstate.transport_weights[0].weight: must be in 1..65535 (got 0)"},
		{"weight zid", func(o *routerOptions) {
			o.cfg = []string{`routing/router/linkstate/transport_weights:[{"dst_zid":"a5","weight":1},{"dst_zid":"g","weight":2}]`}
		}, `--cfg routing.router.linkstate.transport_weights[1].dst_zid: want a zid as zenohd prints it: 1..32 hex digits (1..16 bytes), not all zero (got "g")`},
		{"cfg unknown key lists weights", func(o *routerOptions) { o.cfg = []string{"routing/router/peer/mode:x"} },
			`, routing/router/linkstate/transport_weights, connect/endpoints, id, listen/endpoints, mode, transport/link/rx/max_message_size, transport/link/tx/batch_size, transport/link/tx/lease)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.mod(&o)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := runRouter(ctx, o, &interop.SyncBuffer{}, func(*zenohpath.Router, []string) { t.Fatal("router started") })
			require.ErrorContains(t, err, tc.want)
		})
	}
	o := ok
	o.lease, o.batch = time.Second, 64
	require.NoError(t, o.validate())
}

// TestRouterCommandTransportWeights: --cfg
// routing/router/linkstate/transport_weights reaches the router and the
// wire: a Go router with the configured zid dials `picobridge router` as a
// router, and both admin summaries show the weight on their session (ours
// as src_weight there, dst_weight here) and the edge cost 500 × the tie
// factor, truncated.
func TestRouterCommandTransportWeights(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peer, err := wire.ParseZID("1a2b")
	require.NoError(t, err)
	readyCh := make(chan *zenohpath.Router, 1)
	eps := make(chan []string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runRouter(ctx, routerOptions{listen: []string{"tcp/127.0.0.1:0"}, id: "abc123", lease: 10 * time.Second, batch: 65535, maxMsg: 8 << 20, logLevel: "info",
			cfg: []string{`routing/router/linkstate/transport_weights:[{"dst_zid":"1a2b","weight":500},{"dst_zid":"ff","weight":7}]`}},
			&interop.SyncBuffer{}, func(r *zenohpath.Router, e []string) { readyCh <- r; eps <- e })
	}()
	var cmdRouter *zenohpath.Router
	select {
	case cmdRouter = <-readyCh:
	case err := <-done:
		t.Fatalf("router exited: %v", err)
	}
	r2 := zenohpath.NewRouter(zenohpath.RouterConfig{ZID: peer, DialAsRouter: true})
	defer r2.Close()
	adm, err := r2.ServeAdminSpace(zenohpath.AdminConfig{})
	require.NoError(t, err)
	defer adm.Close()
	require.NoError(t, r2.Connect(ctx, (<-eps)[0], true))
	s, err := zenohpath.Open(ctx, zenohpath.Config{Router: r2})
	require.NoError(t, err)
	defer s.Close()
	want := uint16(routing.EdgeCost(cmdRouter.ZID(), peer, 500, 0))
	weightAt := func(node, peer string) *zenohpath.AdminWeight {
		ch, err := s.Get("@/"+node+"/router", nil)
		require.NoError(t, err)
		for rep := range ch {
			if smp, ok := rep.Ok(); ok {
				var sum zenohpath.AdminSummary
				require.NoError(t, json.Unmarshal(smp.Payload(), &sum))
				for _, ss := range sum.Sessions {
					if ss.Peer == peer {
						return ss.Weight
					}
				}
			}
		}
		return nil
	}
	u := func(v uint16) *uint16 { return &v }
	for _, tc := range []struct {
		node, peer string
		want       zenohpath.AdminWeight
	}{
		{"abc123", "1a2b", zenohpath.AdminWeight{SrcWeight: u(500), ActualWeight: want}},
		{"1a2b", "abc123", zenohpath.AdminWeight{DstWeight: u(500), ActualWeight: want}},
	} {
		deadline := time.Now().Add(interop.Scale(10 * time.Second))
		for {
			w := weightAt(tc.node, tc.peer)
			if w != nil && reflect.DeepEqual(*w, tc.want) {
				break
			}
			if time.Now().After(deadline) {
				got, _ := json.Marshal(w)
				exp, _ := json.Marshal(tc.want)
				t.Fatalf("%s: weight of session %s: got %s, want %s", tc.node, tc.peer, got, exp)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cancel()
	require.NoError(t, <-done)
}

// routerUp runs runRouter with --metrics on a free loopback port until the
// test ends; it returns the router, its endpoints and the metrics address.
func routerUp(t *testing.T, o routerOptions) (*zenohpath.Router, []string, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	o.metrics = addr
	if o.logLevel == "" {
		o.logLevel = "error"
	}
	ctx, cancel := context.WithCancel(context.Background())
	type up struct {
		r   *zenohpath.Router
		eps []string
	}
	ready := make(chan up, 1)
	done := make(chan error, 1)
	go func() {
		done <- runRouter(ctx, o, io.Discard, func(r *zenohpath.Router, eps []string) { ready <- up{r, eps} })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case u := <-ready:
		return u.r, u.eps, addr
	case err := <-done:
		t.Fatalf("router exited: %v", err)
	}
	return nil, nil, ""
}

// TestRouterConfigFile: `router -c FILE` reads zenohd's JSON5 configuration
// (comments, unquoted keys, trailing commas, zenohd's key names); a flag
// given on the command line wins over the file, and --cfg over both, as in
// zenohd; /healthz answers as `run`'s does. Before: unknown shorthand flag 'c'.
func TestRouterConfigFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "zenohd.json5")
	require.NoError(t, os.WriteFile(f, []byte(`{
  // zenohd's configuration
  mode: "router",
  id: "abc123",
  listen: { endpoints: { router: ["tcp/127.0.0.1:0"], peer: ["tcp/[::]:0"] }, },
  connect: { endpoints: [], },
  scouting: { multicast: { enabled: false, address: "224.0.0.224:7446", }, },
  transport: {
    link: { tx: { lease: 5000, batch_size: 4096, }, rx: { max_message_size: 2097152 }, },
  },
  adminspace: null,
  plugins: {},
  downsampling: [],
}`), 0o644))
	o := routerOptions{configFile: f, lease: 10 * time.Second, batch: 65535, maxMsg: 8 << 20,
		listen: []string{"tcp/0.0.0.0:7447"}, changed: func(string) bool { return false }}
	r, eps, addr := routerUp(t, o)
	require.Equal(t, "abc123", r.ZID().String())
	require.Equal(t, 2097152, r.MaxMessageSize())
	require.Len(t, eps, 1)
	require.Regexp(t, `^tcp/127\.0\.0\.1:\d+$`, eps[0])

	resp, err := http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	var h routerHealthzResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", h.Status)
	require.Equal(t, "abc123", h.ZID)

	// -i on the command line wins over the file's id; --cfg id over -i
	o.id, o.changed = "def456", func(f string) bool { return f == "id" }
	r, _, _ = routerUp(t, o)
	require.Equal(t, "def456", r.ZID().String())
	o.cfg = []string{`id:"0a0b"`}
	r, _, _ = routerUp(t, o)
	require.Equal(t, "a0b", r.ZID().String())
}

// TestRouterConfigFlags: -i is --id, --no-multicast-scouting turns off
// what --cfg turned on, and the file's problems exit 2 naming the file,
// line and column or key.
func TestRouterConfigFlags(t *testing.T) {
	cmd := newRouterCommand()
	require.NoError(t, cmd.ParseFlags([]string{"-i", "1234abcd", "-c", "z.json5", "--no-multicast-scouting"}))
	id, _ := cmd.Flags().GetString("id")
	require.Equal(t, "1234abcd", id)
	c, _ := cmd.Flags().GetString("config")
	require.Equal(t, "z.json5", c)

	o := routerOptions{cfg: []string{"scouting/multicast/enabled:true", "scouting/multicast/interface:lo"}, noMulticast: true}
	require.NoError(t, o.applyConfig())
	sc, err := o.scouting()
	require.NoError(t, err)
	require.False(t, sc.Multicast.Enabled)

	dir := t.TempDir()
	for _, tc := range []struct{ name, doc, want string }{
		{"syntax", "{\n  mode: \"router\",\n  id: abc\n}\n", `:3:7: invalid character 'a' looking for beginning of value`},
		{"unknown", `{ plugins: { rest: { http_port: 8000 } } }`, `: unknown key "plugins/rest/http_port" (allowed: scouting/multicast/address, `},
		{"mode", `{ mode: "peer" }`, `: mode: "peer": picobridge router runs in router mode (picobridge run -m peer|client for the others)`},
		{"lease", `{ transport: { link: { tx: { lease: "10s" } } } }`, `: transport/link/tx/lease: "10s": want a whole number of milliseconds`},
		{"scouting", `{ scouting: { multicast: { enabled: true } } }`, `: scouting/multicast/interface: required when scouting.multicast.enabled is true`},
		{"top", `["tcp/127.0.0.1:7447"]`, `: want a JSON5 object at the top, as zenohd's configuration (got ["tcp/127.0.0.1:7447"])`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, tc.name+".json5")
			require.NoError(t, os.WriteFile(f, []byte(tc.doc), 0o644))
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), []string{"router", "-c", f}, &stdout, &stderr)
			require.Equal(t, 2, code, stderr.String())
			require.True(t, strings.HasPrefix(stderr.String(), "picobridge: --config "+f+tc.want), stderr.String())
		})
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, realMain(context.Background(), []string{"router", "-c", "/nonexistent/z.json5"}, &stdout, &stderr))
	require.Equal(t, "picobridge: --config /nonexistent/z.json5: open /nonexistent/z.json5: no such file or directory\n", stderr.String())
}
