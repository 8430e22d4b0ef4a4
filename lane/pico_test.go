package lane_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/responder"
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

// TestLanePicoResponder: the C probe responder (firmware/responder/c) on a
// real zenoh-pico build answers the lane's probes and announces the
// build's knobs, which match the expectations' knobs. Needs ZENOH_PICO_DIR.
func TestLanePicoResponder(t *testing.T) {
	p, err := responder.PicoFromEnv()
	if err != nil {
		t.Skipf("SKIP: set %s to a zenoh-pico build (include/, lib/) to build the C responder: %v", responder.DirEnv, err)
	}
	bin, err := responder.Build(context.Background(), p, t.TempDir())
	require.NoError(t, err)
	e := parse(t, `device: pico-r`+picoKnobs+`
duration: 5s
declares:
  subscribers: ["@picobridge/probe/pico-r/ping"]
responder: true
probes: 5
# zenoh-pico's lease task sends a keep-alive only when nothing went out
# during a whole period (lease / factor = 3.333 s): after its last pong the
# responder is silent for up to ~2 periods. This lane found that (4.15 s).
tolerance: {keepalive: 3400ms}
`)
	rep := run(t, e, []string{bin, "-m", "client", "-e", lane.EndpointPlaceholder, "-n", "pico-r"}, nil)
	var b bytes.Buffer
	require.NoError(t, lane.WriteSummary(&b, rep))
	t.Logf("summary:\n%s", b.String())
	requireAllPass(t, rep)
	require.Equal(t, "5 of 5 pings on @picobridge/probe/pico-r/ping answered, each within 1s", result(t, rep, lane.CheckProbes).Summary)
	require.Equal(t, "the device announced the knobs the lane resolved", result(t, rep, lane.CheckAnnouncement).Summary)
}
