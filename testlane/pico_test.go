package testlane_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/internal/picotest"
	"github.com/picobridge/picobridge/testlane"
)

// The zenoh-pico examples of ZENOH_PICO_EXAMPLES (the GNUmakefile POSIX
// build: batch 65535, Z_FRAG_MAX_SIZE 300000) and ZENOH_PICO_EXAMPLES_2048
// (the CMake default: batch 2048, Z_FRAG_MAX_SIZE 4096) run under a lane
// each. The posix profile says batch 65535 and frag_max_size 65535: the
// expectations put the build's sizes on the env rung, as a project's
// prj.conf or build environment would (buildKnobs).

// buildKnobs is the expectations' knobs block for a build: the linux-host
// board with the build's batch and frag_max_size.
func buildKnobs(batch, frag int) string {
	return fmt.Sprintf(`
knobs:
  board: linux-host
  env: {NROS_ZENOH_BATCH_UNICAST_SIZE: "%d", NROS_ZENOH_FRAG_MAX_SIZE: "%d"}
`, batch, frag)
}

// forBuilds runs f once per zenoh-pico build (a subtest named after it);
// it skips, naming the variables, when neither is set.
func forBuilds(t *testing.T, f func(t *testing.T, b picotest.Build)) {
	for _, b := range picotest.Builds(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b) })
	}
}

// picoLane runs a lane whose device is <dir>/<example> args... and logs
// the summary.
func picoLane(t *testing.T, yamlText, dir, example string, args ...string) *testlane.Report {
	t.Helper()
	e := parse(t, yamlText)
	cmd := append([]string{filepath.Join(dir, example), "-e", testlane.EndpointPlaceholder}, args...)
	rep := run(t, e, cmd, nil)
	var b bytes.Buffer
	require.NoError(t, testlane.WriteSummary(&b, rep))
	t.Logf("summary:\n%s", b.String())
	return rep
}

func requireAllPass(t *testing.T, rep *testlane.Report) {
	t.Helper()
	for _, r := range rep.Results {
		require.NotEqual(t, testlane.Fail, r.Status, "%s: %s (observed: %s)", r.Name, r.Summary, r.Observed)
	}
}

const envBatch = "(set by env NROS_ZENOH_BATCH_UNICAST_SIZE (lane.yaml knobs.env))"

// TestLanePicoPub: z_pub publishes once a second; it survives a read
// stall, and it reconnects and declares again after a router restart.
func TestLanePicoPub(t *testing.T) {
	forBuilds(t, func(t *testing.T, b picotest.Build) {
		rep := picoLane(t, `device: z_pub`+buildKnobs(b.Batch, b.FragMax)+`
duration: 14s
declares:
  publishers: [demo/example/zenoh-pico-pub]
faults:
  - {kind: stall_reads, at: 1500ms, for: 1s}
  - {kind: restart_router, at: 4s, within: 9s}   # z_pub took 4-6.5 s here
`, b.Dir, "z_pub")
		requireAllPass(t, rep)
		require.Equal(t, "within the knob-derived ceiling: one PUSH per batch (zenoh.tx.batch false)", result(t, rep, testlane.CheckSends).Summary)
		require.Equal(t, fmt.Sprintf("the device proposed batch size %d B in INIT, as zenoh.wire.batch_unicast_size %d %s", b.Batch, b.Batch, envBatch),
			result(t, rep, testlane.CheckSession).Summary)
	})
}

// TestLanePicoSub: z_sub is idle: its keep-alives keep it within lease /
// factor.
func TestLanePicoSub(t *testing.T) {
	forBuilds(t, func(t *testing.T, b picotest.Build) {
		rep := picoLane(t, `device: z_sub`+buildKnobs(b.Batch, b.FragMax)+`
duration: 5s
declares:
  subscribers: ["demo/example/**"]
`, b.Dir, "z_sub")
		requireAllPass(t, rep)
		require.Equal(t, testlane.Skip, result(t, rep, testlane.CheckSends).Status)
		ka := result(t, rep, testlane.CheckKeepAlive)
		require.Equal(t, "the device was never silent longer than its keep-alive period: zenoh.link.lease_ms 10000 / zenoh.link.lease_expire_factor 3 = 3.333s, + 500ms tolerance", ka.Summary)
		require.NotContains(t, ka.Observed, "; 0 keep-alives")
	})
}

// TestLanePicoWrongBatch: expectations whose knobs claim the other build's
// batch size: the session check rejects them from z_sub's INIT.
func TestLanePicoWrongBatch(t *testing.T) {
	forBuilds(t, func(t *testing.T, b picotest.Build) {
		claim := 2048
		if b.Batch == 2048 {
			claim = 65535
		}
		rep := picoLane(t, `device: z_sub`+buildKnobs(claim, b.FragMax)+`
duration: 2s
`, b.Dir, "z_sub")
		s := result(t, rep, testlane.CheckSession)
		require.Equal(t, testlane.Fail, s.Status)
		require.Equal(t, fmt.Sprintf("the device proposed batch size %d B in INIT, its knobs give %d: zenoh.wire.batch_unicast_size %d %s; "+
			"the device was built with other knobs, or the lane names the wrong ones", b.Batch, claim, claim, envBatch), s.Summary)
		require.Regexp(t, fmt.Sprintf(`^session 0 \(zid [0-9a-f]+, client\): INIT batch %d B, router \d+ B, negotiated %d B$`, b.Batch, b.Batch), s.Observed)
	})
}

// largeValue is a z_put value larger than one batch of the build, so that
// it leaves in fragments, and within its frag_max_size: 70000 B for the
// 65535 build, 3072 B for the 2048 one.
func largeValue(b picotest.Build) string {
	return strings.Repeat("x", min(b.Batch+4465, (b.Batch+b.FragMax)/2))
}

// putLane runs a z_put lane until z_put's value left the device (sends not
// skipped), at most 3 times: the 2048 build's z_put sometimes exits with
// status 0 having sent no data at all (1 run in ~10 here; the lane reports
// it as "sends: the device published nothing").
func putLane(t *testing.T, yamlText string, b picotest.Build, value string) *testlane.Report {
	t.Helper()
	var rep *testlane.Report
	for attempt := 1; attempt <= 3; attempt++ {
		rep = picoLane(t, yamlText, b.Dir, "z_put", "-v", value)
		if s := result(t, rep, testlane.CheckSends); s.Status != testlane.Skip {
			return rep
		}
		t.Logf("attempt %d: z_put sent nothing (%s); again", attempt, result(t, rep, testlane.CheckDeviceExit).Observed)
	}
	t.Fatalf("z_put sent nothing in 3 runs")
	return rep
}

var largest = regexp.MustCompile(`^\d+ fragments from the device, 1 messages reassembled, largest (\d+) B in 2 fragments$`)

// TestLanePicoPutLarge: z_put of a value larger than a batch fragments it;
// with the build's frag_max_size the lane passes, with a frag_max_size of
// one batch (smaller than the message) the fragmentation check rejects the
// configuration.
func TestLanePicoPutLarge(t *testing.T) {
	forBuilds(t, func(t *testing.T, b picotest.Build) {
		v := largeValue(b)
		t.Run("build knobs", func(t *testing.T) {
			rep := putLane(t, `device: z_put`+buildKnobs(b.Batch, b.FragMax)+`
duration: 5s
declares:
  publishers: [demo/example/zenoh-pico-put]
`, b, v)
			requireAllPass(t, rep)
			f := result(t, rep, testlane.CheckFragmentation)
			require.Equal(t, fmt.Sprintf("fragmented messages within zenoh.wire.frag_max_size %d (set by env NROS_ZENOH_FRAG_MAX_SIZE (lane.yaml knobs.env))", b.FragMax), f.Summary)
			m := largest.FindStringSubmatch(f.Observed)
			require.NotNil(t, m, f.Observed)
			n, _ := strconv.Atoi(m[1])
			require.True(t, n > len(v) && n < len(v)+64, "largest message %d B for a %d B value", n, len(v))
			require.Equal(t, "the device exited with status 0", result(t, rep, testlane.CheckDeviceExit).Summary)
		})
		t.Run("frag_max_size one batch", func(t *testing.T) {
			rep := putLane(t, `device: z_put`+buildKnobs(b.Batch, b.Batch)+`
duration: 5s
`, b, v)
			f := result(t, rep, testlane.CheckFragmentation)
			require.Equal(t, testlane.Fail, f.Status)
			require.Regexp(t, fmt.Sprintf(`^the device sent a %d\d\d B message in 2 fragments, over zenoh.wire.frag_max_size %d \(set by env NROS_ZENOH_FRAG_MAX_SIZE \(lane.yaml knobs.env\)\): a device built with these knobs drops it$`,
				len(v)/100, b.Batch), f.Summary)
		})
	})
}

// TestLanePicoResponder: the C probe responder (firmware/responder/c) on a
// real zenoh-pico build answers the lane's probes and announces the
// build's knobs, which match the expectations' knobs (the build's
// config.h). Needs ZENOH_PICO_DIR.
func TestLanePicoResponder(t *testing.T) {
	p, err := responder.PicoFromEnv()
	if err != nil {
		t.Skipf("SKIP: set %s to a zenoh-pico build (include/, lib/) to build the C responder: %v", responder.DirEnv, err)
	}
	batch, frag := p.Macros["Z_BATCH_UNICAST_SIZE"], p.Macros["Z_FRAG_MAX_SIZE"]
	require.NotZero(t, batch, "Z_BATCH_UNICAST_SIZE in %s", p.Include[0])
	require.NotZero(t, frag, "Z_FRAG_MAX_SIZE in %s", p.Include[0])
	bin, err := responder.Build(context.Background(), p, t.TempDir())
	require.NoError(t, err)
	e := parse(t, `device: pico-r`+buildKnobs(batch, frag)+`
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
	rep := run(t, e, []string{bin, "-m", "client", "-e", testlane.EndpointPlaceholder, "-n", "pico-r"}, nil)
	var b bytes.Buffer
	require.NoError(t, testlane.WriteSummary(&b, rep))
	t.Logf("summary:\n%s", b.String())
	requireAllPass(t, rep)
	require.Equal(t, "5 of 5 pings on @picobridge/probe/pico-r/ping answered, each within 1s", result(t, rep, testlane.CheckProbes).Summary)
	require.Equal(t, "the device announced the knobs the lane resolved", result(t, rep, testlane.CheckAnnouncement).Summary)
}
