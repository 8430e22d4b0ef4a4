package lane_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/picotest"
	"github.com/picobridge/picobridge/lane"
)

// The zenoh-pico examples of ZENOH_PICO_EXAMPLES are a GNUmakefile POSIX
// build: batch 65535, Z_FRAG_MAX_SIZE 300000 (the posix profile says 65535:
// the expectations below correct it on the env rung, as a project's
// prj.conf or build environment would).

// picoLane runs a lane whose device is <examples>/<example> args... and
// logs the summary.
func picoLane(t *testing.T, yamlText, example string, args ...string) *lane.Report {
	t.Helper()
	dir := picotest.Examples(t)
	e := parse(t, yamlText)
	cmd := append([]string{filepath.Join(dir, example), "-e", lane.EndpointPlaceholder}, args...)
	rep := run(t, e, cmd, nil)
	var b bytes.Buffer
	require.NoError(t, lane.WriteSummary(&b, rep))
	t.Logf("summary:\n%s", b.String())
	return rep
}

func requireAllPass(t *testing.T, rep *lane.Report) {
	t.Helper()
	for _, r := range rep.Results {
		require.NotEqual(t, lane.Fail, r.Status, "%s: %s (observed: %s)", r.Name, r.Summary, r.Observed)
	}
}

const picoKnobs = `
knobs:
  board: linux-host
  env: {NROS_ZENOH_FRAG_MAX_SIZE: "300000"}
`

// TestLanePicoPub: z_pub publishes once a second; it survives a read
// stall, and it reconnects and declares again after a router restart.
func TestLanePicoPub(t *testing.T) {
	rep := picoLane(t, `device: z_pub`+picoKnobs+`
duration: 14s
declares:
  publishers: [demo/example/zenoh-pico-pub]
faults:
  - {kind: stall_reads, at: 1500ms, for: 1s}
  - {kind: restart_router, at: 4s, within: 9s}   # z_pub took 4-6.5 s here
`, "z_pub")
	requireAllPass(t, rep)
	require.Equal(t, "within the knob-derived ceiling: one PUSH per batch (zenoh.tx.batch false)", result(t, rep, lane.CheckSends).Summary)
	require.Equal(t, "the device proposed batch size 65535 B in INIT, as zenoh.wire.batch_unicast_size 65535 (set by platform posix (firmware/platforms/posix.toml:8))",
		result(t, rep, lane.CheckSession).Summary)
}

// TestLanePicoSub: z_sub is idle: its keep-alives keep it within lease /
// factor.
func TestLanePicoSub(t *testing.T) {
	rep := picoLane(t, `device: z_sub`+picoKnobs+`
duration: 5s
declares:
  subscribers: ["demo/example/**"]
`, "z_sub")
	requireAllPass(t, rep)
	require.Equal(t, lane.Skip, result(t, rep, lane.CheckSends).Status)
	ka := result(t, rep, lane.CheckKeepAlive)
	require.Equal(t, "the device was never silent longer than its keep-alive period: zenoh.link.lease_ms 10000 / zenoh.link.lease_expire_factor 3 = 3.333s, + 500ms tolerance", ka.Summary)
	require.NotContains(t, ka.Observed, "; 0 keep-alives")
}

// bigValue is z_put's value: larger than one 65535 B batch, so it leaves
// in fragments.
var bigValue = strings.Repeat("x", 70000)

// TestLanePicoPutLarge: z_put of a 70 kB value fragments it; with the
// build's frag_max_size the lane passes, with the posix profile's default
// (65535) the fragmentation check rejects the configuration.
func TestLanePicoPutLarge(t *testing.T) {
	t.Run("build knobs", func(t *testing.T) {
		rep := picoLane(t, `device: z_put`+picoKnobs+`
duration: 5s
declares:
  publishers: [demo/example/zenoh-pico-put]
`, "z_put", "-v", bigValue)
		requireAllPass(t, rep)
		f := result(t, rep, lane.CheckFragmentation)
		require.Equal(t, "fragmented messages within zenoh.wire.frag_max_size 300000 (set by env NROS_ZENOH_FRAG_MAX_SIZE (lane.yaml knobs.env))", f.Summary)
		require.Regexp(t, `^\d+ fragments from the device, 1 messages reassembled, largest 700\d\d B in 2 fragments$`, f.Observed)
		require.Equal(t, "the device exited with status 0", result(t, rep, lane.CheckDeviceExit).Summary)
	})
	t.Run("profile default", func(t *testing.T) {
		rep := picoLane(t, `device: z_put
knobs: {board: linux-host}
duration: 5s
`, "z_put", "-v", bigValue)
		f := result(t, rep, lane.CheckFragmentation)
		require.Equal(t, lane.Fail, f.Status)
		require.Regexp(t, `^the device sent a 700\d\d B message in 2 fragments, over zenoh.wire.frag_max_size 65535 \(set by platform posix \(firmware/platforms/posix.toml:10\)\): a device built with these knobs drops it$`, f.Summary)
	})
}
