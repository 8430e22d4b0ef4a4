package lane_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/devsim"
	"github.com/picobridge/picobridge/lane"
)

// runLane runs a lane with the expectations text against a devsim device
// started once the lane listens (on 127.0.0.1:0).
func runLane(t *testing.T, yamlText string, dev devsim.DeviceConfig) *lane.Report {
	t.Helper()
	e, err := lane.ParseExpectations("lane.yaml", []byte(yamlText))
	require.NoError(t, err)
	r, err := lane.Resolve(e, nil)
	require.NoError(t, err)
	var d *devsim.Device
	cfg := lane.Config{Expect: e, Resolved: r, Listen: "127.0.0.1:0", Ready: func(ep string) {
		dev.Endpoint = ep
		var err error
		d, err = devsim.NewDevice(dev, devsim.Options{})
		require.NoError(t, err)
		require.NoError(t, d.Start(context.Background()))
	}}
	rep, err := lane.Run(context.Background(), cfg)
	if d != nil {
		d.Stop()
	}
	require.NoError(t, err)
	var sum bytes.Buffer
	require.NoError(t, lane.WriteSummary(&sum, rep))
	t.Logf("summary:\n%s", sum.String())
	return rep
}

func result(t *testing.T, rep *lane.Report, name string) lane.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no check %q in the report", name)
	return lane.Result{}
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
			{Key: "lane/a/imu", RateHz: 5, Size: 64},
			{Key: "lane/a/big", RateHz: 2, Size: 1500},
		},
	})
	for _, r := range rep.Results {
		require.Equal(t, lane.Pass, r.Status, "%s: %s (observed: %s)", r.Name, r.Summary, r.Observed)
	}
	require.Equal(t, "the device proposed batch size 1024 B in INIT, as zenoh.wire.batch_unicast_size 1024 (set by builtin)",
		result(t, rep, lane.CheckSession).Summary)
	require.True(t, strings.HasPrefix(result(t, rep, lane.CheckSends).Summary, "within the knob-derived ceiling: one send per 100ms socket window"))
}
