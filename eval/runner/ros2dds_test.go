package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/eval/measure"
)

// The zenohd configuration of a ros2dds run, byte for byte: loopback listener only, no
// multicast scouting, the plugin required and loaded from the anchor's lib/, on the run's
// DDS domain, /scan at priority 1 with express (the critical topic as a ros2dds user
// configures it); quotes and backslashes in the folder are escaped.
func TestROS2DDSConfig(t *testing.T) {
	require.Equal(t, `{
  mode: "router",
  listen: { endpoints: ["tcp/127.0.0.1:7447"] },
  scouting: { multicast: { enabled: false } },
  plugins_loading: { enabled: true, search_dirs: ["/cache/anchors/lib"] },
  plugins: {
    ros2dds: {
      __required__: true,
      domain: 42,
      pub_priorities: ["^/scan$=1:express"],
    },
  },
}
`, ros2ddsConfig("/cache/anchors/lib", 7447, 42))
	require.Contains(t, ros2ddsConfig(`/a "b"\c`, 1, 0), `search_dirs: ["/a \"b\"\\c"]`)
	require.Equal(t, `{
  mode: "router",
  listen: { endpoints: ["tcp/127.0.0.1:7447"] },
  scouting: { multicast: { enabled: false } },
}
`, zenohdConfig(7447))
}

// zenohd's environment: the parent's DDS, ROS and log variables are replaced (a stale
// ROS_DOMAIN_ID or CYCLONEDDS_URI would move the plugin off the run's domain), the rest
// is kept in order.
func TestROS2DDSEnv(t *testing.T) {
	env := ros2ddsEnv([]string{"PATH=/bin", "ROS_DISTRO=jazzy", "ROS_DOMAIN_ID=3", "CYCLONEDDS_URI=x", "RUST_LOG=trace", "HOME=/h", "ROS_LOCALHOST_ONLY=1"}, 42)
	require.Equal(t, []string{"PATH=/bin", "HOME=/h", "ROS_DISTRO=humble", "CYCLONEDDS_URI=" + ddspath.Config{DomainID: 42}.XML(),
		"RUST_LOG=info,zenoh_plugin_ros2dds::route_publisher=debug", "NO_COLOR=1"}, env)
}

// zenohd's log: ready on "Zenoh can be reached at", the plugin's route line kept for the
// notes (as zenohd 1.10.2 prints it with NO_COLOR), every line consumed.
func TestZenohdLog(t *testing.T) {
	var z zenohdLog
	require.True(t, z.handleLine(`2026-12-03T14:22:07.805310Z  INFO main ThreadId(01) zenoh::api::loader: Successfully started plugin ros2dds from "/x/lib/libzenoh_plugin_ros2dds.so"`))
	ready, failed, _ := z.state()
	require.False(t, ready)
	require.Empty(t, failed)
	z.handleLine(`2026-12-03T14:22:07.805574Z  INFO main ThreadId(01) zenoh::net::runtime::orchestrator: Zenoh can be reached at: tcp/127.0.0.1:17447`)
	z.handleLine(`2026-12-03T14:23:30.1Z DEBUG tokio-rt-worker ThreadId(05) zenoh_plugin_ros2dds::route_publisher: Route Publisher (/scan -> scan): congestion_ctrl Block, priority RealTime, express:true`)
	ready, failed, routes := z.state()
	require.True(t, ready)
	require.Empty(t, failed)
	require.Equal(t, []string{"Route Publisher (/scan -> scan): congestion_ctrl Block, priority RealTime, express:true"}, routes)
}

// The per-device line: delivered/attempted counts against every attempt (a failed write
// is a sample the device missed), the devices' own drops, the names of those that missed.
func TestDeviceDeliveryNote(t *testing.T) {
	res := &Result{
		Attempts:  []measure.Attempt{{Seq: 0}, {Seq: 1}, {Seq: 2}, {Seq: 3, Err: true}},
		Published: []uint64{0, 1, 2},
		Samples: []measure.Sample{
			{Consumer: Critical, Seq: 0}, {Consumer: Critical, Seq: 1}, {Consumer: Critical, Seq: 2},
			{Consumer: Impaired, Seq: 0}, {Consumer: Impaired, Seq: 0},
		},
	}
	drops := map[string]map[string]int{"slow": {"slot": 2, "ring_full": 1}}
	require.Equal(t, "delivered/attempted: crit 3/4 (dropped in the device: none), slow 1/4 (dropped in the device: ring_full 1, slot 2); devices that missed samples: crit, slow",
		deviceDeliveryNote(res, func(dev string) string { return fmtDrops(drops[dev]) }))
	res.Attempts[3].Err = false
	res.Attempts = res.Attempts[:3]
	require.Equal(t, "delivered/attempted: crit 3/3 (dropped in the device: none), slow 1/3 (dropped in the device: none); devices that missed samples: slow",
		deviceDeliveryNote(res, func(string) string { return fmtDrops(nil) }))
}

// Without the anchor the ros2dds runs are "not run" with the reason, and picoeval says so
// in one line for the experiment.
func TestROS2DDSSkippedWithoutAnchors(t *testing.T) {
	t.Setenv("PICOBRIDGE_ANCHORS", "")
	require.True(t, strings.HasPrefix(anchorsMissing(), "PICOBRIDGE_ANCHORS unset"), anchorsMissing())
	dir := t.TempDir()
	t.Setenv("PICOBRIDGE_ANCHORS", dir)
	require.Equal(t, "bin/zenohd in PICOBRIDGE_ANCHORS="+dir+" (run scripts/anchors.sh)", anchorsMissing())
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "zenohd"), nil, 0o755))
	require.Empty(t, zenohdMissing())
	require.Equal(t, "lib/libzenoh_plugin_ros2dds.so in PICOBRIDGE_ANCHORS="+dir+" (run scripts/anchors.sh)", anchorsMissing())

	t.Setenv("PICOBRIDGE_ANCHORS", "")
	var logs []string
	cfg := Config{Out: t.TempDir(), Only: []string{ZenohdExp, ROS2DDSExp}, Log: func(f string, a ...any) { logs = append(logs, strings.TrimSpace(fmt.Sprintf(f, a...))) }}
	results, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, results, 2*len(ROS2DDSLevels))
	for i, r := range results {
		exp := []string{ZenohdExp, ROS2DDSExp}[i%2]
		require.Equal(t, exp+"-"+ROS2DDSLevels[i/2], r.Run)
		require.Equal(t, exp, r.System)
		require.Equal(t, anchorsMissing(), r.Missing)
	}
	require.Equal(t, []string{"picoeval: zenohd: skipped, " + anchorsMissing(), "picoeval: ros2dds: skipped, " + anchorsMissing()}, logs)
}

// TestSmokeROS2DDS (opt-in: PICOBRIDGE_ANCHORS, the anchor build of scripts/anchors.sh):
// a 3 s zenohd and a 3 s ros2dds run at the strong level through the runner. The plugin
// routes /scan express at priority 1; in both every publication reaches the critical
// device once, in order (delivered, or dropped by the device itself and counted); zenohd's CPU and RSS are measured; the impaired device's link lost
// packets; the side-by-side table is written.
func TestSmokeROS2DDS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts zenohd and DDS")
	}
	if m := anchorsMissing(); m != "" {
		t.Skip("SKIP: " + m)
	}
	if _, err := os.Stat(DefaultBag); err != nil {
		t.Skipf("bag %s missing: %v", DefaultBag, err)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	results, err := Run(ctx, Config{Out: out, Duration: 3 * time.Second, Only: []string{ZenohdExp, ROS2DDSExp}, Levels: []string{"strong"}, Log: t.Logf})
	require.NoError(t, err)
	require.Len(t, results, 2)
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	for i, r := range results {
		require.NoError(t, r.Err)
		require.Equal(t, []string{"zenohd-strong", "ros2dds-strong"}[i], r.Run)
		by := measure.ByConsumer(r.Samples)
		d := measure.CheckDelivery(r.Published, by[Critical])
		require.Equal(t, len(r.Attempts), len(r.Published), "%s: the blocking writer never fails", r.Run)
		// The router loses nothing on the direct link (reliable, BLOCK): every /scan reached
		// the critical device once, in order; what the device did not deliver it dropped
		// itself and counted (ring_full when a starved host left its application behind).
		ownDrops := 0
		for _, n := range r.DeviceDrops["crit"] {
			ownDrops += n
		}
		require.Equal(t, len(r.Published), d.Unique+ownDrops, "%s: critical device: delivered + own drops = published (%+v, drops %v)", r.Run, d, r.DeviceDrops["crit"])
		require.Zero(t, d.Duplicates+d.Reordered, "%s: %+v", r.Run, d)
		require.NotNil(t, r.Gateway, r.Run)
		require.Positive(t, r.Gateway.PeakRSS, r.Run)
		require.Positive(t, r.ProducedLoss, r.Run)
		require.Contains(t, string(sum), "| "+r.Run+" | "+r.System+" | strong |")
	}
	require.True(t, slices.ContainsFunc(results[1].Notes, func(n string) bool {
		return strings.Contains(n, "Route Publisher (/scan -> scan): congestion_ctrl Block, priority RealTime, express:true")
	}), "the plugin's route line: %v", results[1].Notes)
	require.Contains(t, string(sum), "## Side by side: same publisher, same devices")
}

// The side-by-side table: per level, ros2dds before picobridge, delivered/attempted over
// every attempt (a failed write counts against both devices), the devices that missed;
// toggle runs and other systems stay out; no table without a ros2dds run beside another.
func TestSideBySide(t *testing.T) {
	pb := synthetic("exp3-picobridge-clean", "picobridge", "clean")
	rd := synthetic("ros2dds-clean", "ros2dds", "clean")
	rd.Attempts = append(rd.Attempts, measure.Attempt{Seq: 300, Err: true})
	rd.Load = [2]float64{1.5, 2.25}
	rd.Seed, rd.Cotenant = 2, 2
	pico := synthetic("ros2dds-pico-clean", "ros2dds-pico", "clean")
	pico.Seed = 1
	rows := []Row{Summarize(pico), Summarize(pb), Summarize(rd), Summarize(synthetic("exp3-picobridge-toggle", "picobridge", "toggle")),
		Summarize(synthetic("exp1-dds-cyclone-clean", "dds-cyclone", "clean")), Summarize(&Result{Run: "ros2dds-mild", System: "ros2dds", Level: "mild", Missing: "x"})}
	var b strings.Builder
	writeSideBySide(&b, rows)
	lines := strings.Split(b.String(), "\n")
	require.Equal(t, "## Side by side: same publisher, same devices", lines[0])
	var table []string
	for _, l := range lines {
		if strings.HasPrefix(l, "| clean") || strings.HasPrefix(l, "| toggle") || strings.HasPrefix(l, "| mild") {
			table = append(table, l)
		}
	}
	require.Equal(t, []string{
		"| clean | ros2dds | 2 | 2 | 30.1 Hz | 1.00 ms | 1.00 ms | 1.00 ms | 300/301 | 150/301 | crit, slow | — | 1.50–2.25 |",
		"| clean | picobridge | 0 | 0 | 30.0 Hz | 1.00 ms | 1.00 ms | 1.00 ms | 300/300 | 150/300 | slow | — | 0.00–0.00 |",
		"| clean | ros2dds-pico | 1 | 0 | 30.0 Hz | 1.00 ms | 1.00 ms | 1.00 ms | 300/300 | 150/300 | slow | — | 0.00–0.00 |",
	}, table)

	b.Reset()
	writeSideBySide(&b, rows[1:2])
	require.Empty(t, b.String(), "picobridge alone: no table")
	b.Reset()
	writeSideBySide(&b, rows[1:2])
	require.Empty(t, b.String(), "ros2dds alone: no table")
}

// With exp3, each ros2dds run follows exp3's run at its level (both meet the same host
// load); alone, the ros2dds runs in level order; --levels restricts both.
func TestPlanROS2DDSInterleaved(t *testing.T) {
	names := func(cfg Config) []string {
		var out []string
		for _, s := range plan(cfg) {
			out = append(out, s.run)
		}
		return out
	}
	require.Equal(t, []string{"exp3-picobridge-clean", "ros2dds-clean", "exp3-picobridge-mild", "ros2dds-mild",
		"exp3-picobridge-moderate", "ros2dds-moderate", "exp3-picobridge-strong", "ros2dds-strong", "exp3-picobridge-toggle"},
		names(Config{Only: []string{"exp3", ROS2DDSExp}}))
	require.Equal(t, []string{"exp3-picobridge-clean", "zenohd-clean", "ros2dds-clean", "exp3-picobridge-mild", "zenohd-mild", "ros2dds-mild",
		"exp3-picobridge-moderate", "zenohd-moderate", "ros2dds-moderate", "exp3-picobridge-strong", "zenohd-strong", "ros2dds-strong", "exp3-picobridge-toggle"},
		names(Config{Only: []string{"exp3", ZenohdExp, ROS2DDSExp}}))
	require.Equal(t, []string{"zenohd-clean", "ros2dds-clean", "zenohd-strong", "ros2dds-strong"},
		names(Config{Only: []string{ZenohdExp, ROS2DDSExp}, Levels: []string{"clean", "strong"}}))
	require.Equal(t, []string{"ros2dds-clean", "ros2dds-mild", "ros2dds-moderate", "ros2dds-strong"}, names(Config{Only: []string{ROS2DDSExp}}))
	require.Equal(t, []string{"exp2-zenoh-router-strong", "exp3-picobridge-strong", "ros2dds-strong"},
		names(Config{Only: []string{"exp2", "exp3", ROS2DDSExp}, Levels: []string{"strong"}}))
	// The zenoh-pico series follows the devsim runs of its level, PicoLevels only.
	pico := Config{Only: []string{"exp3", ZenohdExp}, Levels: []string{"mild", "moderate"}, Devices: []string{DevicesDevsim, DevicesPico}, PicoLevels: []string{"moderate"}}
	require.Equal(t, []string{"exp3-picobridge-mild", "zenohd-mild", "exp3-picobridge-moderate", "zenohd-moderate",
		"exp3-picobridge-pico-moderate", "zenohd-pico-moderate"}, names(pico))
	// Without ZENOH_PICO_DIR the series is planned and says what is missing.
	t.Setenv("ZENOH_PICO_DIR", "")
	for _, s := range plan(pico) {
		if strings.HasSuffix(s.system, PicoSuffix) {
			require.Contains(t, s.missing, "ZENOH_PICO_DIR not set", s.run)
		}
	}
	// The busy variant: devsim devices only, BusyLevels only; the quiet runs keep all.
	pico.BusyVariant, pico.BusyLevels = 2, []string{"moderate"}
	var busy, quiet []string
	for _, s := range plan(pico) {
		if !pico.busySkips(s, 2) {
			busy = append(busy, s.run)
		}
		if !pico.busySkips(s, 0) {
			quiet = append(quiet, s.run)
		}
	}
	require.Equal(t, []string{"exp3-picobridge-moderate", "zenohd-moderate"}, busy)
	require.Equal(t, names(pico), quiet)
}
