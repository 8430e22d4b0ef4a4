package devcheck_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/eval/devcheck"
	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/sim/devsim"
)

func TestSummarizeNearestRank(t *testing.T) {
	v := make([]float64, 0, 200)
	for i := 200; i >= 1; i-- {
		v = append(v, float64(i))
	}
	require.Equal(t, devcheck.Latency{Count: 200, P50: 100, P95: 190, P99: 198, Max: 200}, devcheck.Summarize(v))
	require.Equal(t, devcheck.Latency{Count: 1, P50: 7, P95: 7, P99: 7, Max: 7}, devcheck.Summarize([]float64{7}))
	require.Equal(t, devcheck.Latency{}, devcheck.Summarize(nil))
}

// The payload carries the stamp where ros2.HeaderStamp (devsim) and rxtx.c
// (bytes 4-11, LE) read it, and has the requested size.
func TestPayloadStamp(t *testing.T) {
	now := time.Unix(1764720000, 123456789)
	p := devcheck.Payload(now, 64)
	require.Len(t, p, 64)
	require.Equal(t, []byte{0, 1, 0, 0}, p[:4])
	st, err := ros2.HeaderStamp(p)
	require.NoError(t, err)
	require.True(t, now.Equal(st.Time()), "%v != %v", now, st.Time())
}

func TestPicoArgs(t *testing.T) {
	o := devcheck.Options{Duration: 10 * time.Second, Warmup: time.Second, Size: 64}
	require.Equal(t, "-e tcp/127.0.0.1:7447#tout=5 -z 64 -d 10.000 -w 1.000 -s devcheck/in -p devcheck/out/pico",
		strings.Join(devcheck.PicoArgs("tcp/127.0.0.1:7447", 5*time.Millisecond, devcheck.ModeRxTx, o), " "))
	require.Equal(t, "-e tcp/h:1#tout=100 -z 64 -d 10.000 -w 1.000 -p devcheck/out/pico",
		strings.Join(devcheck.PicoArgs("tcp/h:1", 100*time.Millisecond, devcheck.ModeTx, o), " "))
}

// The devsim device resolves to the knobs of the pico build it is compared
// with: per-fd lock, the window, no TX batch, no split lock, 2048/4096.
func TestDevsimConfigMatchesPicoBuild(t *testing.T) {
	d, err := devsim.NewDevice(devcheck.DevsimConfig(5*time.Millisecond, devcheck.ModeRxTx, 64), devsim.Options{Endpoint: "tcp/127.0.0.1:1"})
	require.NoError(t, err)
	r := d.Resolved()
	require.True(t, r.Cap(knobs.CapPerFdTxCeiling))
	require.Equal(t, int64(5), r.Int(knobs.SocketTimeoutMs))
	require.False(t, r.Bool(knobs.TxBatch))
	require.False(t, r.Bool(knobs.TxSplitLock))
	require.Equal(t, int64(2048), r.Int(knobs.BatchUnicastSize))
	require.Equal(t, int64(4096), r.Int(knobs.FragMaxSize))
}

func TestMarkdownSideBySide(t *testing.T) {
	rep := &devcheck.Report{Cells: []devcheck.Cell{
		{Target: "pico", WindowMs: 100, Mode: devcheck.ModeRx, Rx: devcheck.Latency{Count: 300, P50: 0.19, P95: 0.26, P99: 3.72}},
		{Target: "devsim", WindowMs: 100, Mode: devcheck.ModeRx, Rx: devcheck.Latency{Count: 290, P50: 0.1, P95: 0.2, P99: 0.3}, RxApp: &devcheck.Latency{Count: 290, P50: 1.5}},
		{Target: "pico", WindowMs: 100, Mode: devcheck.ModeTx, TxRate: 10.3},
		{Target: "devsim", WindowMs: 100, Mode: devcheck.ModeTx, Err: "devsim device never connected"},
	}}
	want := "| window | mode | pico rx p50 / p95 / p99 ms (n) | devsim rx p50 / p95 / p99 ms (n) | devsim app p50 ms | pico TX msg/s | devsim TX msg/s |\n" +
		"|---|---|---|---|---|---|---|\n" +
		"| 100 ms | 30 Hz in, no TX | 0.19 / 0.26 / 3.72 (300) | 0.10 / 0.20 / 0.30 (290) | 1.50 | – | – |\n" +
		"| 100 ms | tight-loop TX, nothing in | – | – | – | 10.3 | n/a |\n" +
		"\ndevsim, 100 ms, tx: devsim device never connected"
	require.Equal(t, want, rep.Markdown())
}

// TestRealPicoLane runs every cell once, short, against real zenoh-pico
// (ZENOH_PICO_DIR) and devsim. It asserts what the shim and the wiring
// guarantee, not timings: every cell measured, the shim loaded (rxtx
// checks), samples received in every rx cell, the device published in every
// tx cell, and the pico sends waited for the read task.
func TestRealPicoLane(t *testing.T) {
	dir := os.Getenv(responder.DirEnv)
	if dir == "" {
		t.Skip("SKIP: set ZENOH_PICO_DIR=<zenoh-pico build dir> to run real zenoh-pico under the zephyrfd shim beside devsim")
	}
	if testing.Short() {
		t.Skip("SKIP: -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log strings.Builder
	rep, err := devcheck.Run(ctx, devcheck.Options{PicoDir: dir, PicoSrc: os.Getenv(responder.SrcEnv),
		Duration: 2 * time.Second, WorkDir: t.TempDir(), Log: &log})
	require.NoError(t, err, log.String())
	t.Logf("\n%s", rep.Markdown())
	require.Len(t, rep.Cells, 12)
	for _, c := range rep.Cells {
		require.Empty(t, c.Err, "%+v", c)
		if c.Mode != devcheck.ModeTx {
			require.Positive(t, c.Rx.Count, "%+v", c)
		}
		if c.Mode != devcheck.ModeRx {
			require.Positive(t, c.TxRate, "%+v", c)
		}
		if c.Target == devcheck.TargetPico && c.Mode == devcheck.ModeTx {
			require.Positive(t, c.SendsWaited, "%+v", c)
		}
	}
}

func TestHeader(t *testing.T) {
	rep := &devcheck.Report{Started: time.Date(2026, 12, 3, 8, 25, 0, 0, time.UTC), LoadStart: "0.35 0.73 0.71", Commit: "1647d06"}
	rep.Options.DurationS, rep.Options.InboundHz, rep.Options.Size = 10, 30, 64
	require.Equal(t, "Measured 2026-12-03 08:25 UTC, picobridge 1647d06, zenoh-pico unknown, load average 0.35 0.73 0.71 at the start and unknown at the end; 10 s per cell, 30 Hz inbound, 64 B samples.", rep.Header())
}
