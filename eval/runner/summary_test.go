package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/eval/measure"
)

// synthetic builds a result: 30 Hz for 10 s, the critical consumer 1 ms behind, the
// impaired one dropping every other sample.
func synthetic(run, system, level string) *Result {
	r := &Result{Run: run, Exp: "exp9", System: system, Level: level, StartNs: 0, EndNs: int64(10 * time.Second), ProducedLoss: 0.05, ExpectedLoss: 0.054}
	rec := NewRecorder(run)
	for i := range 300 {
		st := int64(i) * int64(time.Second) / 30
		seq := rec.Sent(st)
		rec.Written(seq, st, 10*time.Microsecond, false)
		rec.Received(Critical, st, st+int64(time.Millisecond))
		if i%2 == 0 {
			rec.Received(Impaired, st, st+int64(50*time.Millisecond))
		}
	}
	rec.Received(Impaired, 12345, 99999) // never published
	rec.Toggle(0, true)
	rec.Toggle(int64(5*time.Second), false)
	rec.Transition(measure.Transition{AtNs: int64(2 * time.Second), Device: Impaired, From: "CRITICAL", To: "NONCRITICAL"})
	rec.Transition(measure.Transition{AtNs: int64(8 * time.Second), Device: Impaired, From: "NONCRITICAL", To: "CRITICAL"})
	rec.fill(r)
	return r
}

func TestSummarizeSynthetic(t *testing.T) {
	row := Summarize(synthetic("x", "picobridge", "toggle"))
	require.InDelta(t, 30, row.Pub.Rate, 1e-9)
	require.Zero(t, row.Pub.RateStd)
	require.InDelta(t, 1, row.Crit.P50, 1e-9)
	require.InDelta(t, 1, row.Crit.P99, 1e-9)
	require.True(t, row.CritDelivery.Complete())
	require.Equal(t, 150, row.ImpDelivery.Unique)
	require.Equal(t, 150, row.ImpDelivery.Missing)
	require.InDelta(t, 15, row.ImpRate, 0.2)
	require.True(t, row.HasDetect)
	require.Equal(t, 2*time.Second, row.Detect)
	require.Equal(t, 3*time.Second, row.Recover)
	require.Equal(t, 1, row.Res.Unknown[Impaired])

	missing := Summarize(&Result{Run: "m", Missing: "x"})
	require.Zero(t, missing.Pub.Attempts)
}

// TestCritDeliveredCountsFailedWrites: the Fast DDS case of the second edition (a write
// that failed was not counted as lost): 10 attempts, 3 writes failed, 6 of the 7 written
// delivered, one of them twice: 6/10, 4 lost with both causes.
func TestCritDeliveredCountsFailedWrites(t *testing.T) {
	r := &Result{Run: "f", Exp: "exp1", System: "fastdds", Level: "strong", EndNs: int64(time.Second)}
	rec := NewRecorder("f")
	for i := range 10 {
		st := int64(i) * int64(time.Second) / 10
		seq := rec.Sent(st)
		failed := i == 2 || i == 5 || i == 8
		rec.Written(seq, st, time.Microsecond, failed)
		if !failed && i != 9 {
			rec.Received(Critical, st, st+int64(time.Millisecond))
		}
		if i == 0 {
			rec.Received(Critical, st, st+int64(2*time.Millisecond))
		}
	}
	rec.fill(r)
	row := Summarize(r)
	delivered, lost := critDelivered(row)
	require.Equal(t, "6/10", delivered)
	require.Equal(t, "4 (writes failed 3; written, not delivered 1; reordered 0, duplicates 1)", lost)
	delivered, lost = critDelivered(Summarize(synthetic("s", "picobridge", "clean")))
	require.Equal(t, "300/300", delivered)
	require.Equal(t, "0", lost)
}

func TestWriteReportSynthetic(t *testing.T) {
	out := t.TempDir()
	results := []*Result{
		synthetic("exp9-picobridge-clean", "picobridge", "clean"),
		synthetic("exp9-split-clean", "split", "clean"),
		synthetic("exp9-picobridge-toggle", "picobridge", "toggle"),
		{Run: "exp9-x-mild", System: "x", Level: "mild", Missing: "something"},
		{Run: "exp9-y-mild", System: "y", Level: "mild", Err: os.ErrDeadlineExceeded, ProducedLoss: math.NaN()},
	}
	for _, r := range results[:3] {
		require.NoError(t, WriteCSV(out, r))
	}
	results[2].Cotenant = 2
	results[0].DeviceRecvP95Ms, results[0].HasDeviceRecv = 0.05, true
	require.NoError(t, WriteReport(Config{Out: out, Cotenant: 2}, results))
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	s := string(sum)
	require.Contains(t, s, "| exp9-picobridge-clean | picobridge | clean | 10 | 30.0 Hz (0.0) | 0 |")
	// Critical p50/p95/p99, recv/pub, lost; class changes listed per run; the busy host in
	// the header and per run.
	require.Contains(t, s, "| 1.00 ms | 1.00 ms | 1.00 ms | — | 300/300 | 0 | 150 (15.0 Hz) |")
	// The device's own receive share beside the critical latency (devsim runs).
	require.Contains(t, s, "| exp9-picobridge-clean | picobridge | clean | 10 | 30.0 Hz (0.0) | 0 | 0 (0.0 s, max 0.01 ms) | 1.00 ms | 1.00 ms | 1.00 ms | 0.05 ms | 300/300 |")
	require.Contains(t, s, "class changes: impaired CRITICAL→NONCRITICAL at +2.0 s, impaired NONCRITICAL→CRITICAL at +8.0 s; 2 CPU busy loops beside it")
	require.Contains(t, s, "**Busy host**: 2 CPU busy loops")
	require.Contains(t, s, "exp9-x-mild: not run (missing something)")
	require.Contains(t, s, "exp9-y-mild: failed")
	require.Contains(t, s, "2s / 3s")
	for _, p := range []string{"cdf-critical-clean.png", "p95-critical.png", "publisher-rate.png", "classifier-exp9-picobridge-toggle.png"} {
		_, err := os.Stat(filepath.Join(out, p))
		require.NoError(t, err, p)
		require.Contains(t, s, "("+p+")")
	}
	require.Equal(t, 451, countLines(t, filepath.Join(out, "exp9-split-clean.csv")))
}

func TestPlanAndConfig(t *testing.T) {
	all := plan(Config{})
	var names []string
	for _, s := range all {
		names = append(names, s.run)
	}
	require.Contains(t, names, "exp1-dds-fastdds-strong")
	require.Contains(t, names, "exp3-picobridge-toggle")
	require.Contains(t, names, "exp6-hop-clean")
	only := plan(Config{Only: ParseOnly("exp5, exp2"), Levels: []string{"mild"}})
	require.Len(t, only, 2)
	require.Equal(t, []string{"exp1", "exp3"}, ParseOnly("exp1,,exp3"))
	require.Equal(t, 10*time.Second, Config{Quick: true}.runDuration("strong"))
	require.Equal(t, 60*time.Second, Config{}.runDuration("strong"))
	require.Equal(t, 5*time.Second, Config{Duration: 5 * time.Second}.runDuration("toggle"))
}

func TestSlowConsumerModel(t *testing.T) {
	c, err := newSlowConsumer("clean", 1, true)
	require.NoError(t, err)
	d, drop := c.service(3000)
	require.Zero(t, d)
	require.False(t, drop)

	a, _ := newSlowConsumer("moderate", 7, true)
	b, _ := newSlowConsumer("moderate", 7, true)
	be, _ := newSlowConsumer("moderate", 7, false)
	var total time.Duration
	drops := 0
	for range 20000 {
		da, _ := a.service(2940)
		db, _ := b.service(2940)
		require.Equal(t, da, db, "same seed, same service times")
		total += da
		if _, dr := be.service(2940); dr {
			drops++
		}
	}
	// Mean ≈ 4.7 ms serialization + 40 ms delay + 5.4 % × 180 ms stall ≈ 54 ms.
	mean := total / 20000
	require.InDelta(t, 54, float64(mean)/1e6, 4)
	require.InDelta(t, 0.054, a.producedLoss(), 0.015)
	require.InDelta(t, 0.054, float64(drops)/20000, 0.015)
}

// TestBagLabel: the summary names the bag without this machine's absolute paths.
func TestBagLabel(t *testing.T) {
	require.Equal(t, "../shared/data/mumble_rplidar_imu/hallway_room_loop", bagLabel("/home/someone/shared/data/mumble_rplidar_imu/hallway_room_loop"))
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, "testdata/bag", bagLabel(filepath.Join(wd, "testdata", "bag")))
	require.Equal(t, "bag1", bagLabel("/elsewhere/bag1"))
}

// seeded is synthetic's critical stream for one seed, latency lat for every sample and
// the first `lost` attempts never received.
func seeded(system, level string, seed uint64, lat time.Duration, lost int) *Result {
	r := &Result{Run: fmt.Sprintf("exp3-%s-%s-s%d", system, level, seed), Exp: "exp3", System: system, Level: level, Seed: seed,
		EndNs: int64(10 * time.Second), ProducedLoss: math.NaN()}
	rec := NewRecorder(r.Run)
	for i := range 300 {
		st := int64(i) * int64(time.Second) / 30
		seq := rec.Sent(st)
		rec.Written(seq, st, time.Microsecond, false)
		if i >= lost {
			rec.Received(Critical, st, st+int64(lat))
		}
	}
	rec.fill(r)
	return r
}

func TestSeedCellsAndTable(t *testing.T) {
	ms := time.Millisecond
	results := []*Result{
		seeded("picobridge", "mild", 1, 2*ms, 0), seeded("zenohd", "mild", 1, 5*ms, 0),
		seeded("picobridge", "mild", 2, 1*ms, 3), seeded("zenohd", "mild", 2, 4*ms, 0),
		seeded("picobridge", "mild", 3, 3*ms, 0), seeded("zenohd", "mild", 3, 6*ms, 0),
		{Run: "exp3-zenohd-mild-s4", Exp: "exp3", System: "zenohd", Level: "mild", Seed: 4, Missing: "zenohd not built"},
	}
	var rows []Row
	for _, r := range results {
		rows = append(rows, Summarize(r))
	}
	cells := SeedCells(rows)
	require.Len(t, cells, 2)
	pb, zd := cells[0], cells[1]
	require.Equal(t, []uint64{1, 2, 3}, pb.Seeds)
	require.Equal(t, []uint64{1, 2, 3}, zd.Seeds, "the run that did not run is left out")
	require.Equal(t, Spread{Median: 2, Min: 1, Max: 3, N: 3}, pb.P95)
	require.Equal(t, Spread{Median: 5, Min: 4, Max: 6, N: 3}, zd.P50)
	require.Equal(t, 897, pb.Delivered)
	require.Equal(t, 900, pb.Attempted)
	require.False(t, pb.P95.Overlaps(zd.P95), "1–3 ms against 4–6 ms")
	require.True(t, pb.P95.Overlaps(Spread{Min: 3, Max: 9, N: 2}), "sharing 3 ms")
	require.Equal(t, Spread{Median: 2.5, Min: 1, Max: 4, N: 4}, SpreadOf([]float64{4, 1, math.NaN(), 3, 2}))
	require.Zero(t, SpreadOf([]float64{math.NaN()}).N)

	out := t.TempDir()
	require.NoError(t, WriteReport(Config{Out: out, Seeds: []uint64{1, 2, 3}, Profile: "full", Command: "picoeval --profile full"}, results))
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	s := string(sum)
	require.Contains(t, s, "(full profile, seeds 1,2,3)")
	require.Contains(t, s, "Command: `picoeval --profile full`.")
	require.Contains(t, s, "## Across seeds")
	require.Contains(t, s, "(here seed 1 of 3)", "the Plots section says which run it draws")
	require.Contains(t, s, "| exp3 | picobridge | mild | 0 | 1,2,3 | 2.00 ms [1.00 ms–3.00 ms] | 2.00 ms [1.00 ms–3.00 ms] | 2.00 ms [1.00 ms–3.00 ms] | 897/900 |")
	require.Contains(t, s, "| exp3 | zenohd | mild | 0 | 1,2,3 | 5.00 ms [4.00 ms–6.00 ms] |")

	// results.json: a record per run (the missing one with its reason) and per cell.
	var rf ResultsFile
	js, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &rf))
	require.Equal(t, []uint64{1, 2, 3}, rf.Seeds)
	require.Len(t, rf.Runs, 7)
	require.Equal(t, "exp3-picobridge-mild-s2", rf.Runs[2].Run)
	require.Equal(t, 297, rf.Runs[2].Delivered)
	require.Equal(t, 300, rf.Runs[2].Attempts)
	require.InDelta(t, 1, *rf.Runs[2].P95, 1e-9)
	require.Equal(t, "missing: zenohd not built", rf.Runs[6].Status)
	require.Nil(t, rf.Runs[6].P50)
	require.Len(t, rf.Cells, 2)
	require.Equal(t, 897, rf.Cells[0].Delivered)
	require.InDelta(t, 3, *rf.Cells[0].P95[2], 1e-9, "max")

	// One seed: no across-seed table.
	out1 := t.TempDir()
	require.NoError(t, WriteReport(Config{Out: out1}, results[:2]))
	sum1, err := os.ReadFile(filepath.Join(out1, "summary.md"))
	require.NoError(t, err)
	require.NotContains(t, string(sum1), "Across seeds")
	require.Contains(t, string(sum1), "(standard profile, seed 1)")
}

// The per-level plots draw the quiet run of the lowest seed, whatever order the runs ran in:
// a busy-variant run or a later seed listed first is not the one drawn.
func TestPlotRowQuietLowestSeed(t *testing.T) {
	mk := func(run string, seed uint64, busy int) Row {
		return Row{Res: &Result{Run: run, System: "zenohd", Level: "moderate", Seed: seed, Cotenant: busy}}
	}
	rows := []Row{
		mk("zenohd-moderate-s2-busy", 2, 2),
		mk("zenohd-moderate-s3", 3, 0),
		mk("zenohd-moderate-s1-busy", 1, 2),
		mk("zenohd-moderate-s2", 2, 0),
		{Res: &Result{Run: "zenohd-moderate-s1", System: "zenohd", Level: "moderate", Seed: 1, Missing: "zenohd"}},
	}
	require.Equal(t, "zenohd-moderate-s2", plotRow(rows, "zenohd", "moderate").Res.Run)
	require.Nil(t, plotRow(rows, "zenohd", "strong"))
}
