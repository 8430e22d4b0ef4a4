package testlane_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/sim/devsim"
	"github.com/picobridge/picobridge/testlane"
)

// runLane runs a lane with the expectations text against a devsim device
// started once the lane listens (on 127.0.0.1:0).
func runLane(t *testing.T, yamlText string, dev devsim.DeviceConfig) *testlane.Report {
	t.Helper()
	e, err := testlane.ParseExpectations("lane.yaml", []byte(yamlText))
	require.NoError(t, err)
	r, err := testlane.Resolve(e, nil)
	require.NoError(t, err)
	var d *devsim.Device
	cfg := testlane.Config{Expect: e, Resolved: r, Listen: "127.0.0.1:0", Ready: func(ep string) {
		dev.Endpoint = ep
		var err error
		d, err = devsim.NewDevice(dev, devsim.Options{})
		require.NoError(t, err)
		require.NoError(t, d.Start(context.Background()))
	}}
	rep, err := testlane.Run(context.Background(), cfg)
	if d != nil {
		d.Stop()
	}
	require.NoError(t, err)
	var sum bytes.Buffer
	require.NoError(t, testlane.WriteSummary(&sum, rep))
	t.Logf("summary:\n%s", sum.String())
	return rep
}

func result(t *testing.T, rep *testlane.Report, name string) testlane.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no check %q in the report", name)
	return testlane.Result{}
}

// TestLaneDevsimPasses: a devsim Zephyr native_sim device that matches its
// expectations passes every check, faults included.
func TestLaneDevsimPasses(t *testing.T) {
	rep := runLane(t, `
device: sim-a
knobs:
  platform: zephyr
  board: native_sim
  env: {NROS_ZENOH_LEASE_MS: "2000"}
duration: 8s
declares:
  subscribers: [lane/a/cmd, "@picobridge/probe/sim-a/ping"]
  publishers: [lane/a/imu, lane/a/big]
responder: true
probes: 3
tolerance: {keepalive: 1s}   # devsim under -race on a shared host
faults:
  - {kind: stall_reads, at: 2s, for: 300ms}
  - {kind: close_mid_fragment, at: 3s, within: 3s}
  - {kind: restart_router, at: 5500ms, within: 2s}
`, devsim.DeviceConfig{
		Name: "sim-a", Platform: "zephyr", Board: "native_sim",
		Env:               map[string]string{"NROS_ZENOH_LEASE_MS": "2000"},
		ReconnectInterval: 200 * time.Millisecond,
		Subscriptions:     []devsim.Subscription{{Key: "lane/a/cmd"}},
		Publications: []devsim.Publication{
			// Well below the ~9 sends/s of a 100 ms window, so that pongs
			// do not queue behind publications for a send slot.
			{Key: "lane/a/imu", RateHz: 5, Size: 64},
			{Key: "lane/a/big", RateHz: 1, Size: 1500},
		},
	})
	for _, r := range rep.Results {
		require.Equal(t, testlane.Pass, r.Status, "%s: %s (observed: %s)", r.Name, r.Summary, r.Observed)
	}
	require.Equal(t, "the device proposed batch size 1024 B in INIT, as zenoh.wire.batch_unicast_size 1024 (set by builtin)",
		result(t, rep, testlane.CheckSession).Summary)
	require.True(t, strings.HasPrefix(result(t, rep, testlane.CheckSends).Summary, "within the knob-derived ceiling: one send per 100ms socket window"))
	require.Equal(t, "the device announced the knobs the lane resolved", result(t, rep, testlane.CheckAnnouncement).Summary)
}

// TestLaneDevsimFailsIdle: an idle devsim device built with other knobs
// than the lane is told fails session, lease, keepalive, declarations,
// probes and every fault, each with its exact text.
func TestLaneDevsimFailsIdle(t *testing.T) {
	rep := runLane(t, `
device: sim-b
knobs:
  platform: zephyr
  board: native_sim
  env: {NROS_ZENOH_BATCH_UNICAST_SIZE: "2048", NROS_ZENOH_LEASE_MS: "1000"}
duration: 6s
declares:
  subscribers: [lane/b/cmd, lane/b/missing]
  publishers: [lane/b/odom]
responder: true
probes: 2
tolerance: {keepalive: 0s}
faults:
  - {kind: stall_reads, at: 500ms, for: 4s}      # the device's lease is 3 s: the router expires it
  - {kind: close_mid_fragment, at: 1s}           # it sends no fragments
  - {kind: restart_router, at: 5s, within: 500ms} # it reconnects only after 20 s
`, devsim.DeviceConfig{
		Name: "sim-b", Platform: "zephyr", Board: "native_sim",
		Env:               map[string]string{"NROS_ZENOH_LEASE_MS": "3000"},
		NoProbeResponder:  true,
		ReconnectInterval: 20 * time.Second,
		Subscriptions:     []devsim.Subscription{{Key: "lane/b/cmd"}},
	})
	want := map[string]string{
		testlane.CheckSession:         "the device proposed batch size 1024 B in INIT, its knobs give 2048: zenoh.wire.batch_unicast_size 2048 (set by env NROS_ZENOH_BATCH_UNICAST_SIZE (lane.yaml knobs.env)); the device was built with other knobs, or the lane names the wrong ones",
		testlane.CheckLease:           "the device announced lease 3s in OPEN, its knobs give 1s: zenoh.link.lease_ms 1000 (set by env NROS_ZENOH_LEASE_MS (lane.yaml knobs.env))",
		testlane.CheckKeepAlive:       "the device was silent longer than its keep-alive period: zenoh.link.lease_ms 1000 / zenoh.link.lease_expire_factor 3 = 333ms, + 0s tolerance",
		testlane.CheckDeclarations:    "not declared: subscriber lane/b/missing, publisher lane/b/odom",
		testlane.CheckProbes:          "the device never declared a subscriber on @picobridge/probe/sim-b/ping: it does not run the probe responder under the name sim-b",
		"fault[0] stall_reads":        "the session did not survive a 4s read stall",
		"fault[1] close_mid_fragment": "close_mid_fragment was not injected: no fragmented message passed between +1s and the end of the observation",
		"fault[2] restart_router":     "the device did not open a new session within 500ms of restart_router",
	}
	for name, text := range want {
		r := result(t, rep, name)
		require.Equal(t, testlane.Fail, r.Status, name)
		require.Equal(t, text, r.Summary, name)
	}
	require.Equal(t, testlane.Skip, result(t, rep, testlane.CheckSends).Status)
	require.Equal(t, "the device published nothing", result(t, rep, testlane.CheckSends).Summary)
	require.Equal(t, testlane.Skip, result(t, rep, testlane.CheckAnnouncement).Status)
	require.Regexp(t, `^longest silence [0-9.]+m?s, ended at \+[0-9.]+m?s \(session 0\); \d+ keep-alives$`, result(t, rep, testlane.CheckKeepAlive).Observed)
	require.True(t, rep.Failed())
}

// TestLaneDevsimFailsSends: a publishing devsim device sends more often
// than the socket window the lane is told allows, and fragments although
// the lane's knobs say fragmentation is off.
func TestLaneDevsimFailsSends(t *testing.T) {
	rep := runLane(t, `
device: sim-c
knobs:
  platform: zephyr
  board: native_sim
  env: {NROS_ZENOH_SOCKET_TIMEOUT_MS: "500", NROS_ZENOH_FRAGMENTATION: "0"}
duration: 3s
declares:
  publishers: [lane/c/imu]
`, devsim.DeviceConfig{
		Name: "sim-c", Platform: "zephyr", Board: "native_sim",
		Publications: []devsim.Publication{
			{Key: "lane/c/imu", RateHz: 20, Size: 64, Express: true},
			{Key: "lane/c/big", RateHz: 2, Size: 1500},
		},
	})
	want := map[string]string{
		testlane.CheckSends:         "more sends than the socket window allows: zenoh.link.socket_timeout_ms 500 (set by env NROS_ZENOH_SOCKET_TIMEOUT_MS (lane.yaml knobs.env)) gives one send per 500ms on a platform with capability per_fd_tx_ceiling true (set by platform zephyr (firmware/platforms/zephyr.toml:11)), + 10%",
		testlane.CheckFragmentation: "the device fragmented a message, but zenoh.wire.fragmentation false (set by env NROS_ZENOH_FRAGMENTATION (lane.yaml knobs.env))",
		testlane.CheckAnnouncement: "the device announced other knobs than the lane resolved: " +
			"zenoh.link.socket_timeout_ms: the device announced 100, the configuration says 500 (set by env NROS_ZENOH_SOCKET_TIMEOUT_MS (lane.yaml knobs.env)); " +
			"zenoh.wire.fragmentation: the device announced true, the configuration says false (set by env NROS_ZENOH_FRAGMENTATION (lane.yaml knobs.env))",
	}
	for name, text := range want {
		r := result(t, rep, name)
		require.Equal(t, testlane.Fail, r.Status, name)
		require.Equal(t, text, r.Summary, name)
	}
	require.Equal(t, testlane.Pass, result(t, rep, testlane.CheckDeclarations).Status)
	require.Regexp(t, `^\d+ data batches \(\d+ partial\) over [0-9.]+m?s; at most \d+ PUSH per batch; the socket window allows \d+`, result(t, rep, testlane.CheckSends).Observed)
}
