package e2e

// End-to-end egress tests of issue 10 item 7 for the scenarios of item 6 (a) and (b): a
// Zenoh-only picobridge binary (no cgo, no DDS) runs as a child process, Go zenohpath
// publishers and a Go device behind sim/linkemu drive it through eval/egress — the same
// code as cmd/egressbench, at CI size. They assert counts, order and memory bounds, never
// wall-clock latency. Run: go test -race -run 'TestEgress' ./test/e2e/ (about 1 min).

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/eval/egress"
	"github.com/picobridge/picobridge/zenohpath"
)

// buildZenohOnly builds `picobridge` without the cyclonedds tag (Zenoh side only) into dir.
func buildZenohOnly(t *testing.T, dir string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(dir, "picobridge")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/picobridge")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// droppedFor sums the drop counters of the run that can hit a stream to dev: the bridge's
// drops on lane (all reasons; "" = any lane), the transport's and the router's (all
// reasons). No other traffic can be dropped in these runs: the classifier is off (no
// probes), and only the stream under test may be dropped.
// droppedFor counts each dropped sample once: the gateway counts a sample its
// lanes drop, or the device's transport refuses (congestion), under the bridge's
// reasons; the plain router counts it in the transport (the router's own
// queue_full for it is the same sample again).
func droppedFor(m benchkit.Metrics, sys egress.System, lane string) float64 {
	if sys != egress.Gateway {
		return m.Sum("picobridge_transport_dropped_total", nil)
	}
	where := map[string]string{"device": "dev"}
	if lane != "" {
		where["lane"] = lane
	}
	return m.Sum("picobridge_bridge_samples_dropped_total", where)
}

func row(t *testing.T, rows []egress.Row, stream string) egress.Row {
	t.Helper()
	for _, r := range rows {
		if r.Stream == stream {
			return r
		}
	}
	t.Fatalf("no row for stream %q in %+v", stream, rows)
	return egress.Row{}
}

func logRows(t *testing.T, rows []egress.Row) {
	t.Helper()
	for _, r := range rows {
		t.Logf("%s %s → %s: sent %d delivered %d dup %d reordered %d, drops %.0f (%s), RSS %d → +%d B, p50 %.1f ms p99 %.1f ms (not asserted)",
			r.System, r.Stream, r.Device, r.Sent, r.Delivered, r.Duplicates, r.OutOfOrder, r.Drops, r.DropReasons, r.RSSBase, r.RSSGrowth, r.P50, r.P99)
	}
}

// TestEgressSmallBesideBulk — issue 10 item 7 for item 6 (a), and item 1 (priority queues,
// congestion control applied and counted at enqueue): 48 B express samples (RealTime,
// reliable, BLOCK) at 50 Hz beside 100 kB best-effort bulk (Data, DROP) at 10 Hz to one
// device behind linkemu at 10 Mbit/s (issue: 1 MB at 100 Mbit/s; sizes and the rate are
// divided by 10, the ratio kept), through `picobridge router` and `picobridge run`.
// Asserts: every 48 B sample arrives exactly once and in order; every bulk sample is
// delivered or counted as dropped in /metrics (delivered + dropped = sent, exactly).
// On main (627a990) it passes on a quiet machine; under load the gateway's express lane
// can drop 48 B samples as `congestion` (its per-key FIFO of 4 fills while a 100 kB bulk
// sample holds the link for 80 ms: 15 of 100 in a smoke run at load 13) — the head-of-line
// blocking that item 1's priority scheduler removes.
func TestEgressSmallBesideBulk(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	dir := t.TempDir()
	bin := buildZenohOnly(t, dir)
	sc := egress.Scenario{
		ID: "a", Title: "48 B express + 100 kB bulk, 10 Mbit/s (CI size)",
		Duration: 3 * time.Second, Drain: 10 * time.Second, Link: 10e6,
		Streams: []egress.Stream{
			{Name: "small", Key: "e2e/small", Size: 48, RateHz: 50, Express: true,
				Priority: zenohpath.PriorityRealTime, Block: true, Critical: true},
			{Name: "bulk", Key: "e2e/bulk", Size: 100_000, RateHz: 10, Priority: zenohpath.PriorityData, BestEffort: true},
		},
		Devices: []egress.Device{{Name: "dev", Impaired: true, Subs: []string{"e2e/small", "e2e/bulk"},
			Env: map[string]string{"NROS_ZENOH_FRAG_MAX_SIZE": "4194304", "NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE": "4194304", "NROS_ZENOH_SUBSCRIBER_RING_DEPTH": "16"}}},
		// No probes (they are best effort and could be dropped beside the bulk); a starved
		// CI machine must not suspend lanes on housekeeping lag.
		GatewayYAML: "classifier:\n  enabled: false\nsupervisor:\n  degraded: {lag: 5s}\n  emergency: {lag: 10s}\n",
	}
	for _, sys := range []egress.System{egress.GoRouter, egress.Gateway} {
		t.Run(string(sys), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rows, err := egress.RunScenario(ctx, egress.Options{Picobridge: bin, KeepSeqs: true, Log: testLog{t}}, sc, sys, t.TempDir())
			require.NoError(t, err)
			logRows(t, rows)
			small, bulk := row(t, rows, "small"), row(t, rows, "bulk")
			require.Empty(t, small.Err)
			require.Positive(t, small.Sent)
			require.Equal(t, small.Sent, small.Delivered, "every 48 B sample delivered")
			require.Zero(t, small.Duplicates)
			require.Len(t, small.Seqs, small.Sent)
			for i, s := range small.Seqs {
				require.Equal(t, uint32(i), s, "48 B samples in order")
			}
			require.Positive(t, bulk.Sent)
			require.Zero(t, bulk.Duplicates)
			lane := ""
			if sys == egress.Gateway {
				lane = "batched" // the bulk route is noncritical
			}
			dropped := droppedFor(bulk.Metrics, sys, lane)
			require.Equal(t, float64(bulk.Sent), float64(bulk.Delivered)+dropped,
				"bulk: delivered %d + dropped %.0f (%s) = sent %d", bulk.Delivered, dropped, bulk.DropReasons, bulk.Sent)
		})
	}
}

// TestEgressByteBound — issue 10 item 7 for item 6 (b), and items 1 and 5 (TX queues
// bounded in bytes, every drop counted): 20 kB samples at 50 Hz (8 Mbit/s offered) into a
// device behind linkemu at 2 Mbit/s for 10 s through `picobridge run` (issue: 200 kB into
// 20 Mbit/s; sizes and rate divided by 10). Asserts: the gateway's RSS grows by at most
// 20 MB while the link is overloaded (the bound), and every sample is delivered or
// counted as dropped in /metrics once the backlog drained (delivered + dropped = sent).
// On main at 627a990 the transport queue is bounded by count (1024 messages) and drops
// nothing early, so the backlog needs ≈ 30 s to drain and the sum falls short within the
// test's drain time: this test is expected to fail until the byte-bounded TX queues land.
func TestEgressByteBound(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	dir := t.TempDir()
	bin := buildZenohOnly(t, dir)
	sc := egress.Scenario{
		ID: "b", Title: "20 kB at 50 Hz into 2 Mbit/s (CI size)",
		Duration: 10 * time.Second, Drain: 15 * time.Second, Link: 2e6,
		Streams: []egress.Stream{{Name: "big", Key: "e2e/big", Size: 20_000, RateHz: 50, Priority: zenohpath.PriorityData, Critical: true}},
		Devices: []egress.Device{{Name: "dev", Impaired: true, Subs: []string{"e2e/big"},
			Env: map[string]string{"NROS_ZENOH_FRAG_MAX_SIZE": "4194304", "NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE": "4194304", "NROS_ZENOH_SUBSCRIBER_RING_DEPTH": "16"}}},
		GatewayYAML: "classifier:\n  enabled: false\nsupervisor:\n  degraded: {lag: 5s}\n  emergency: {lag: 10s}\n",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rows, err := egress.RunScenario(ctx, egress.Options{Picobridge: bin, KeepSeqs: true, Log: testLog{t}}, sc, egress.Gateway, t.TempDir())
	require.NoError(t, err)
	logRows(t, rows)
	big := row(t, rows, "big")
	require.Empty(t, big.Err)
	require.Positive(t, big.Sent)
	require.Zero(t, big.Duplicates)
	for i := 1; i < len(big.Seqs); i++ {
		require.Greater(t, big.Seqs[i], big.Seqs[i-1], "in order, no duplicate")
	}
	require.LessOrEqual(t, big.RSSGrowth, int64(20e6), "gateway RSS growth while overloading the link")
	dropped := droppedFor(big.Metrics, egress.Gateway, "")
	require.Positive(t, dropped, "an overloaded link drops early, and counts it")
	require.Equal(t, float64(big.Sent), float64(big.Delivered)+dropped,
		"delivered %d + dropped %.0f (%s) = sent %d", big.Delivered, dropped, big.DropReasons, big.Sent)
}

type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// TestEgressOverloadedDevice — issue 10 item 7 for item 6 (c), and items 2 and 3 (a link
// budget per device shared by both lanes, critical first; an overloaded device keeps its
// critical routes; at most one class change per dwell time): critical 1.5 kB at 30 Hz
// (express) plus 10 bulk keys × 10 Hz × 5 kB (best effort, one wildcard subscription)
// through `picobridge run` to device A behind linkemu at 2 Mbit/s (4.4 Mbit/s offered) and
// to device B on a clean path, for 8 s (issue: 3 min), with a fast classifier (50 ms probes,
// 20-probe window). Asserts: B gets every critical sample once and in order (invariant 6);
// A gets ≥ 99 % of its critical samples, in order, with at most one class change; every
// bulk sample to A is delivered or counted as dropped by the bridge or the transport.
// On main (627a990) A's critical route is demoted to the 3 Hz batched lane by congestion the
// gateway's own bulk causes (issue 10 "Why"), so the 99 % assertion is expected to fail until
// the bridge work lands.
func TestEgressOverloadedDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	dir := t.TempDir()
	bin := buildZenohOnly(t, dir)
	big := map[string]string{"NROS_ZENOH_FRAG_MAX_SIZE": "4194304", "NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE": "4194304", "NROS_ZENOH_SUBSCRIBER_RING_DEPTH": "16"}
	streams := []egress.Stream{{Name: "critical", Key: "e2e/crit", Size: 1500, RateHz: 30, Express: true,
		Priority: zenohpath.PriorityRealTime, Block: true, Critical: true}}
	for i := range 10 {
		streams = append(streams, egress.Stream{Name: "bulk" + string(rune('0'+i)), Key: "e2e/bulk/" + string(rune('0'+i)),
			Size: 5000, RateHz: 10, Priority: zenohpath.PriorityData, BestEffort: true, Group: "bulk"})
	}
	sc := egress.Scenario{
		ID: "c", Title: "overloaded device A + healthy device B (CI size)",
		Duration: 8 * time.Second, Settle: 10 * time.Second, Drain: 5 * time.Second, Link: 2e6,
		Streams: streams,
		Devices: []egress.Device{
			{Name: "A", Impaired: true, Subs: []string{"e2e/crit", "e2e/bulk/**"}, Env: big, LinkBudget: true},
			{Name: "B", Subs: []string{"e2e/crit", "e2e/bulk/**"}, Env: big},
		},
		GatewayYAML: "classifier:\n  probe_interval: 50ms\n  window: 20\n  min_samples: 20\n  evaluation_interval: 250ms\n" +
			"supervisor:\n  degraded: {lag: 5s}\n  emergency: {lag: 10s}\n",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rows, err := egress.RunScenario(ctx, egress.Options{Picobridge: bin, KeepSeqs: true, Log: testLog{t}}, sc, egress.Gateway, t.TempDir())
	require.NoError(t, err)
	logRows(t, rows)
	var critA, critB, bulkA egress.Row
	for _, r := range rows {
		switch {
		case r.Stream == "critical" && r.Device == "A":
			critA = r
		case r.Stream == "critical" && r.Device == "B":
			critB = r
		case r.Stream == "bulk" && r.Device == "A":
			bulkA = r
		}
	}
	require.Positive(t, critB.Sent)
	require.Equal(t, critB.Sent, critB.Delivered, "B: every critical sample")
	for i, s := range critB.Seqs {
		require.Equal(t, uint32(i), s, "B: critical in order")
	}
	for i := 1; i < len(critA.Seqs); i++ {
		require.Greater(t, critA.Seqs[i], critA.Seqs[i-1], "A: critical in order, no duplicate")
	}
	m := bulkA.Metrics
	bulkDropped := m.Sum("picobridge_bridge_samples_dropped_total", map[string]string{"device": "A", "lane": "batched"})
	require.GreaterOrEqual(t, float64(bulkA.Delivered)+bulkDropped, float64(bulkA.Sent),
		"A bulk: delivered %d + dropped ≥ sent %d (%s)", bulkA.Delivered, bulkA.Sent, bulkA.DropReasons)
	require.LessOrEqual(t, critA.ClassChanges, 1, "A: class changes while publishing")
	require.GreaterOrEqual(t, float64(critA.Delivered), 0.99*float64(critA.Sent),
		"A: critical delivered %d of %d (drops: %s)", critA.Delivered, critA.Sent, critA.DropReasons)
}
