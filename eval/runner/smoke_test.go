package runner

import (
	"bufio"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/eval/measure"
	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/sim/linkemu"
)

// TestSmokeQuick runs the quick profile of every runnable experiment at one impaired level
// with 3 s runs and checks invariants only (no latency thresholds): files written, counts
// consistent, and in split and bridge modes the critical consumer got every /scan exactly
// once in order. The picobridge experiment (exp3) joins when $PICOBRIDGE_BIN names a built
// `picobridge` (building it here would not fit the time budget).
func TestSmokeQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts DDS and Zenoh processes")
	}
	if _, err := os.Stat(DefaultBag); err != nil {
		t.Skipf("bag %s missing: %v", DefaultBag, err)
	}
	out := t.TempDir()
	cfg := Config{Out: out, Quick: true, Duration: 3 * time.Second, Levels: []string{"strong"}, Log: t.Logf,
		Only: []string{"exp1", "exp2", "exp5"}}
	if os.Getenv("PICOBRIDGE_BIN") != "" {
		cfg.Only = append(cfg.Only, "exp3")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	results, err := Run(ctx, cfg)
	require.NoError(t, err)
	require.NotEmpty(t, results)

	ran := 0
	for _, r := range results {
		if r.Missing != "" {
			t.Logf("%s not run: %s", r.Run, r.Missing)
			continue
		}
		require.NoError(t, r.Err, r.Run)
		ran++
		// Files: raw samples with one row per sample, publication attempts.
		require.Equal(t, len(r.Samples)+1, countLines(t, filepath.Join(out, r.Run+".csv")), r.Run)
		require.Equal(t, len(r.Attempts)+1, countLines(t, filepath.Join(out, r.Run+".pub.csv")), r.Run)
		// Counts: every attempt has a sequence number; successes are the published set.
		ps := measure.Publish(r.Attempts, r.StartNs, r.EndNs)
		require.Equal(t, len(r.Attempts), len(r.Published)+ps.Errors, r.Run)
		require.Positive(t, len(r.Published), r.Run)
		for c, n := range r.Unknown {
			require.Zero(t, n, "%s: %s got samples never published", r.Run, c)
		}
		by := measure.ByConsumer(r.Samples)
		for c, ss := range by {
			d := measure.CheckDelivery(r.Published, ss)
			require.LessOrEqual(t, d.Unique, d.Published, "%s %s", r.Run, c)
			require.Zero(t, d.Duplicates, "%s %s", r.Run, c)
			for _, s := range ss {
				require.GreaterOrEqual(t, s.RecvNs, s.SendNs, "%s %s: received before sent", r.Run, c)
			}
		}
		require.NotEmpty(t, by[Critical], r.Run)
		if r.System == "split" || r.System == "picobridge" {
			d := measure.CheckDelivery(r.Published, by[Critical])
			require.True(t, d.Complete(), "%s: critical consumer must get every /scan once, in order: %+v", r.Run, d)
			require.NotNil(t, r.Gateway, r.Run)
			require.Positive(t, r.Gateway.PeakRSS)
		}
		require.False(t, math.IsNaN(r.ProducedLoss), "%s: produced loss not measured", r.Run)
	}
	require.Positive(t, ran, "nothing was runnable")

	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	for _, r := range results {
		if r.Missing == "" {
			require.Contains(t, string(sum), "| "+r.Run+" |")
		} else {
			require.Contains(t, string(sum), r.Run+": not run (missing ")
		}
	}
	for _, p := range []string{"cdf-critical-strong.png", "p95-critical.png", "publisher-rate.png"} {
		b, err := os.ReadFile(filepath.Join(out, p))
		require.NoError(t, err, p)
		require.True(t, strings.HasPrefix(string(b), "\x89PNG"), p)
		require.Contains(t, string(sum), "("+p+")")
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	require.NoError(t, sc.Err())
	return n
}

// TestSmokeMW runs the middleware comparison in quick mode on one link class (wifi: delay,
// jitter and Gilbert–Elliott loss that TCP repairs) with two payload sizes, TLS on and off,
// and checks exact counts: every system is reliable over TCP, so each run delivers every
// message it sent, once; the publisher sent exactly the planned number; CSVs have one row
// per sample and per send; broker CPU is measured where there is a broker. No latency
// thresholds. picobridge joins when $PICOBRIDGE_BIN names a built `picobridge` (building
// it here would not fit the time budget); a missing Mosquitto or Python Zenoh turns its
// runs into "not run" lines locally, and fails the test in CI (CI=true), where
// scripts/setup.sh installs both; only Cyclone's TLS runs (no DDS Security in Debian's
// Cyclone) are never run.
func TestSmokeMW(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts DDS, Zenoh and MQTT processes")
	}
	out := t.TempDir()
	systems := []string{MWCyclone, MWZenoh, MWMosquitto}
	if os.Getenv("PICOBRIDGE_BIN") != "" {
		systems = append(systems, MWPicobridge)
	}
	cfg := Config{Out: out, Quick: true, Only: []string{MWExp}, Log: t.Logf,
		MWProfiles: []string{"wifi"}, MWSizes: []int{64, 16 << 10}, MWSystems: systems}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	t0 := time.Now()
	results, err := Run(ctx, cfg)
	require.NoError(t, err)
	t.Logf("mw smoke: %d runs in %v", len(results), time.Since(t0).Round(time.Second))
	require.Len(t, results, len(systems)*2*2) // systems × TLS off/on × sizes

	prof, err := linkemu.LookupProfile("wifi")
	require.NoError(t, err)
	ran := map[string]int{}
	for _, r := range results {
		if r.Missing != "" {
			t.Logf("%s not run: %s", r.Run, r.Missing)
			if interop.InCI() && !strings.HasPrefix(r.Missing, "DDS Security:") {
				t.Errorf("%s not run in CI, where scripts/setup.sh installs what it needs: %s", r.Run, r.Missing)
			}
			continue
		}
		require.NoError(t, r.Err, r.Run)
		ran[r.System]++
		want := mwMessages(mwRate(r.MW.Size, prof.ToDevice.Rate), cfg.mwPhaseDuration())
		require.Len(t, r.Attempts, want, r.Run)
		require.Len(t, r.Published, want, "%s: every publication returned without error", r.Run)
		d := measure.CheckDelivery(r.Published, measure.ByConsumer(r.Samples)[mwConsumer])
		require.Equal(t, want, d.Unique, "%s: delivered/sent", r.Run)
		require.Zero(t, d.Duplicates, r.Run)
		require.Zero(t, r.Unknown[mwConsumer], r.Run)
		for _, s := range r.Samples {
			require.GreaterOrEqual(t, s.RecvNs, s.SendNs, "%s: received before sent", r.Run)
		}
		require.Equal(t, len(r.Samples)+1, countLines(t, filepath.Join(out, r.Run+".csv")), r.Run)
		require.Equal(t, len(r.Attempts)+1, countLines(t, filepath.Join(out, r.Run+".pub.csv")), r.Run)
		if r.System == MWCyclone {
			require.Nil(t, r.Gateway, r.Run)
		} else {
			require.NotNil(t, r.Gateway, "%s: broker CPU", r.Run)
		}
		require.False(t, math.IsNaN(r.ProducedLoss), r.Run)
		row := SummarizeMW(r)
		require.Positive(t, row.MsgsPerS, r.Run)
	}
	require.Positive(t, ran[MWCyclone]+ran[MWZenoh]+ran[MWMosquitto], "nothing was runnable")
	if ddsMissing() == "" {
		require.Equal(t, 2, ran[MWCyclone], "Cyclone without TLS at both sizes (no DDS Security variant)")
	}

	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(sum), "## Middleware comparison")
	require.Contains(t, string(sum), "- **wifi**: ")
	for _, r := range results {
		if r.Missing == "" {
			require.Contains(t, string(sum), "| "+r.Run+" |")
		}
	}
	for _, p := range []string{"mw-latency-p50-wifi.png", "mw-latency-p95-wifi.png", "mw-throughput-wifi.png"} {
		b, err := os.ReadFile(filepath.Join(out, p))
		require.NoError(t, err, p)
		require.True(t, strings.HasPrefix(string(b), "\x89PNG"), p)
	}
}
