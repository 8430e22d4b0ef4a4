package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/sim/devsim"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

func router(t *testing.T) string {
	t.Helper()
	ln, err := transport.Listen(context.Background(), "tcp/127.0.0.1:0", transport.Config{ZID: wire.MustZID([]byte{1, 2, 3})},
		func(*transport.Session) transport.Handler { return transport.HandlerFuncs{} })
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Endpoint()
}

func TestRunJSON(t *testing.T) {
	ep := router(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-e", ep, "--device", "name=a,board=linux-host,sub=scan,pub=tele/a:10",
		"--device", "name=z,platform=zephyr,board=native_sim,NROS_ZENOH_SUBSCRIBER_RING_DEPTH=8", "--stats", "100ms", "--duration", "1s", "--json"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	var last struct {
		Final   bool `json:"final"`
		Devices []struct {
			Name     string `json:"name"`
			Connects int    `json:"connects"`
			Model    struct {
				Ring int `json:"subscriber_ring_depth"`
			} `json:"model"`
		} `json:"devices"`
		Totals struct {
			Devices int `json:"devices"`
		} `json:"totals"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	require.True(t, last.Final)
	require.Equal(t, 2, last.Totals.Devices)
	require.Equal(t, "a", last.Devices[0].Name)
	require.Equal(t, 1, last.Devices[0].Connects)
	require.Equal(t, 8, last.Devices[1].Model.Ring)
}

// pushRouter is a router-role endpoint that pushes n stamped samples on key
// to every session after its subscriber declaration arrives.
func pushRouter(t *testing.T, key string, n int) string {
	t.Helper()
	ln, err := transport.Listen(context.Background(), "tcp/127.0.0.1:0", transport.Config{ZID: wire.MustZID([]byte{1, 2, 3})},
		func(*transport.Session) transport.Handler {
			return transport.HandlerFuncs{Network: func(s *transport.Session, m wire.NetworkMessage) {
				d, ok := m.(*wire.Declare)
				if !ok {
					return
				}
				if ds, ok := d.Body.(*wire.DeclareSubscriber); ok && ds.WireExpr.Suffix == key {
					for range n {
						h := ros2.Header{Stamp: ros2.TimeOf(time.Now()), FrameID: "gw"}
						_ = s.Send(&wire.Push{WireExpr: wire.WireExpr{Suffix: key}, Body: &wire.Put{Payload: ros2.Marshal(&h)}}, transport.SendOptions{Reliable: true})
					}
				}
			}}
		})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Endpoint()
}

func TestRunSamplesCSV(t *testing.T) {
	ep := pushRouter(t, "scan", 10)
	f := filepath.Join(t.TempDir(), "samples.csv")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-e", ep, "--device", "name=h,board=linux-host,sub=scan,spin=50ms", "--stats", "0", "--duration", "1s", "--samples", f}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, "device", recs[0][0])
	require.Len(t, recs, 11, string(b))
	outcomes := map[string]int{}
	for _, r := range recs[1:] {
		outcomes[r[9]]++
		require.Equal(t, "scan", r[1])
		require.NotEmpty(t, r[5], "stamp")
	}
	require.Equal(t, map[string]int{"delivered": 4, "ring_full": 6}, outcomes, "ring 4, one burst of 10")
}

func TestRunTableAndConfig(t *testing.T) {
	ep := router(t)
	f := filepath.Join(t.TempDir(), "fleet.yaml")
	require.NoError(t, os.WriteFile(f, []byte("devices:\n  - name: h\n    board: linux-host\n    replicas: 2\n    subscriptions: [{key: scan}]\n"), 0o644))
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-e", ep, "--config", f, "--stats", "0", "--duration", "300ms"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "== summary")
	require.Contains(t, out.String(), "h-1")
	require.Contains(t, out.String(), "RING_FULL")
}

// TestRunErrors: every usage or configuration error exits 2 with one line
// naming the flag or file, before any device connects.
func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "devsim: no device (use --device or --config)"},
		{[]string{"--device", "name=a,platform=nope", "-e", "tcp/127.0.0.1:1"},
			`devsim: knobs of platform "nope" board "": platform: no platform named "nope" (known: baremetal, freertos, generic, nuttx, posix, threadx, zephyr)`},
		{[]string{"--device", "name=a,board=linux-host"}, `devsim: device "a": no endpoint`},
		{[]string{"--device", "name=a,board=linux-host,bogus=1", "-e", "tcp/127.0.0.1:1"},
			`devsim: --device: device spec "name=a,board=linux-host,bogus=1": unknown key "bogus" (name, platform, board, endpoint, spin, sub, pub, noprobe, pong, NROS_*/ZPICO_*/CONFIG_NROS_*)`},
		{[]string{"--config", "/nonexistent.yaml"}, "devsim: open /nonexistent.yaml: no such file or directory"},
		{[]string{"--bogus"}, "devsim: unknown flag: --bogus (see devsim --help)"},
		{[]string{"--device", "name=a,board=linux-host", "-e", "tcp/127.0.0.1:99999"}, `devsim: device "a": transport: endpoint "tcp/127.0.0.1:99999": port "99999": want 0 to 65535`},
		{[]string{"extra"}, `devsim: unknown command "extra" for "devsim" (see devsim --help)`},
		{[]string{"-stats", "1s", "--device", "name=a,board=linux-host", "-e", "tcp/127.0.0.1:1"}, "devsim: -stats: a long flag takes two dashes: --stats (see devsim --help)"},
		{[]string{"--stats", "-1s", "--device", "name=a,board=linux-host", "-e", "tcp/127.0.0.1:1"}, "devsim: --stats -1s: must be ≥ 0 (0: only the summary)"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 2, run(context.Background(), tc.args, &out, &errb), "%v", tc.args)
		require.Equal(t, tc.want+"\n", errb.String(), "%v", tc.args)
		require.Empty(t, out.String())
	}
}

// TestTuningCommand: `devsim tuning` prints every case of the page beside
// its figure (the ratios are TestTuningTable's, in synthetic time).
func TestTuningCommand(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"tuning", "--duration", "0s"}, &out, &errb))
	out.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"tuning", "--duration", "50ms"}, &out, &errb), errb.String())
	for _, c := range devsim.TuningCases {
		require.Contains(t, out.String(), "| "+c.Name+" |")
	}
}
