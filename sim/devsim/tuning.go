package devsim

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TuningCase is one row of nano-ros tx-tuning.md's "Measured effect" table
// (Zephyr native_sim, 64 B messages, 100 ms socket timeout), replayed on
// the simulator's TX model (fdLock + txPath): a native_sim device with Env
// on its env rung publishes for the run.
type TuningCase struct {
	Name string
	// Page is the page's figure, msg/s.
	Page float64
	// Env are the knob overrides of the case (on top of TuningEnv).
	Env map[string]string
	// TiersHz are timer-paced publishers (one goroutine each, a Go ticker:
	// a tick missed while the put blocks fires once, late); empty = one
	// tight-loop publisher (TuningPutCost per put).
	TiersHz []float64
	// Asserted marks the rows whose ratio to the first row TestTuningTable
	// holds within 20 % of the page's.
	Asserted bool
}

// TuningEnv is what every case shares: the 2 KB batch of the page's Zephyr
// build (nano-ros phase-282, promotion notes: "split lock allocates a
// second wbuf (Z_BATCH_UNICAST_SIZE, zephyr default 2 KB)"; our catalog's
// Zephyr default is the newer 1024).
var TuningEnv = map[string]string{"NROS_ZENOH_BATCH_UNICAST_SIZE": "2048"}

// TuningPutCost is the CPU time of one put in the tight loop: nano-ros
// phase-279 W3.c, 5000 puts in 13 ms unbatched on native (2.6 µs each).
const TuningPutCost = 2600 * time.Nanosecond

// TuningSampleSize is the page's message size, bytes.
const TuningSampleSize = 64

// TuningCtrlCeilingHz is the rate the page's 100 Hz control tier actually
// generated on its native_sim harness: nano-ros phase-282 W1.d, "ctrl
// NEVER exceeds ~44/s in ANY configuration — 33.4 at 5 ms no-batch, 43.6
// at 5 ms batch+thread, 34.4 at 100 ms batch+split"; on native the same
// tier publishes 99.5/s (W1.d follow-up). A workload figure of that
// harness, not of the device's TX path (docs/devsim.md).
const TuningCtrlCeilingHz = 40

// TuningCases are the page's rows: the timer-paced tiers (100 Hz control +
// 10 Hz telemetry, one session: defaults 8.6 → batch + flush thread 34.1 →
// + split lock 43.2), once as written and once with the control tier at the
// rate it reached on the page's harness (TuningCtrlCeilingHz), and
// tight-loop streaming (~9 → ~136 → ~181). Every ratio is to the first row.
var TuningCases = []TuningCase{
	{Name: "tiers 100+10 Hz, defaults (no batch)", Page: 8.6, Env: map[string]string{"NROS_ZENOH_TX_BATCH": "0"}, TiersHz: []float64{100, 10}},
	{Name: "tiers 100+10 Hz, TX batch + flush thread", Page: 34.1, Env: map[string]string{"NROS_ZENOH_TX_SPLIT_LOCK": "0"}, TiersHz: []float64{100, 10}},
	{Name: "tiers 100+10 Hz, TX batch + flush thread + split lock", Page: 43.2, TiersHz: []float64{100, 10}},
	{Name: "tiers 40+10 Hz (harness ctrl ceiling), defaults", Page: 8.6, Env: map[string]string{"NROS_ZENOH_TX_BATCH": "0"}, TiersHz: []float64{TuningCtrlCeilingHz, 10}},
	{Name: "tiers 40+10 Hz, TX batch + flush thread", Page: 34.1, Env: map[string]string{"NROS_ZENOH_TX_SPLIT_LOCK": "0"}, TiersHz: []float64{TuningCtrlCeilingHz, 10}, Asserted: true},
	{Name: "tiers 40+10 Hz, TX batch + flush thread + split lock", Page: 43.2, TiersHz: []float64{TuningCtrlCeilingHz, 10}, Asserted: true},
	{Name: "tight loop, defaults (no batch)", Page: 9, Env: map[string]string{"NROS_ZENOH_TX_BATCH": "0"}},
	{Name: "tight loop, TX batch + flush thread", Page: 136, Env: map[string]string{"NROS_ZENOH_TX_SPLIT_LOCK": "0"}},
	{Name: "tight loop, TX batch + split lock", Page: 181, Asserted: true},
}

// TuningResult is one case's outcome.
type TuningResult struct {
	Case TuningCase
	// MsgPerSec is what the device wrote to its socket over the run.
	MsgPerSec float64
	// Sends is the number of socket sends.
	Sends int
	// Model is the device the case ran on.
	Model Model
}

// RunTuning runs one case for dur on the TX model, in the caller's time
// (wall time, or a testing/synctest bubble's synthetic time).
func RunTuning(ctx context.Context, c TuningCase, dur time.Duration) (TuningResult, error) {
	env := map[string]string{}
	for k, v := range TuningEnv {
		env[k] = v
	}
	for k, v := range c.Env {
		env[k] = v
	}
	r, err := Resolve("zephyr", "native_sim", env, "tuning case "+c.Name)
	if err != nil {
		return TuningResult{}, err
	}
	m := ModelOf(r, 0)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var msgs, sends atomic.Int64
	lock := newFDLock(m.SocketWindow)
	if !m.PerFdLock {
		lock = nil
	}
	tx := newTxPath(m.TxBatch, m.SplitLock, m.BatchSize-knobs.StreamPrefixBytes-knobs.FrameHeaderBytes, lock,
		func(ms []pendingMsg, ok, _ bool) {
			if ok {
				msgs.Add(int64(len(ms)))
				sends.Add(1)
			}
		})
	var wg sync.WaitGroup
	goRun := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	if lock != nil {
		goRun(func() { lock.run(ctx) })
	}
	if m.TxBatch && m.FlushThread {
		goRun(func() { tx.flushLoop(ctx, m.FlushInterval) })
	}
	sample := tuningMsg()
	if len(c.TiersHz) == 0 {
		goRun(func() {
			for ctx.Err() == nil {
				tx.publish(ctx, nil, sample, false)
				sleepCtx(ctx, TuningPutCost)
			}
		})
	}
	for _, hz := range c.TiersHz {
		goRun(func() {
			t := time.NewTicker(time.Duration(float64(time.Second) / hz))
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				tx.publish(ctx, nil, sample, false)
			}
		})
	}
	sleepCtx(ctx, dur)
	n, s := msgs.Load(), sends.Load()
	cancel()
	wg.Wait()
	return TuningResult{Case: c, MsgPerSec: float64(n) / dur.Seconds(), Sends: int(s), Model: m}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// tuningMsg is a 64 B sample as a device publishes it (ROS header CDR,
// rmw_zenoh attachment, a declared key id): its wire size decides how many
// share a batch.
func tuningMsg() pendingMsg {
	now := time.Unix(1700000000, 0)
	push := wire.Push{WireExpr: wire.WireExpr{Scope: 5, Mapping: wire.MappingSender}, Body: &wire.Put{
		Payload:    buildSample(nil, now, "native_sim", TuningSampleSize),
		Attachment: buildAttachment(nil, 1, now, [16]byte{1}),
	}}
	return pendingMsg{push: push, size: push.Len(), reliable: true}
}

// WriteTuningTable prints the results beside the page's figures, with
// both ratios to the first row.
func WriteTuningTable(w io.Writer, rs []TuningResult) {
	if len(rs) == 0 {
		return
	}
	base, page := rs[0].MsgPerSec, rs[0].Case.Page
	fmt.Fprintf(w, "| configuration (native_sim, 100 ms window, %d B, %d B batch) | devsim msg/s | page msg/s | devsim ratio | page ratio | sends |\n", TuningSampleSize, rs[0].Model.BatchSize)
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %.1f | %g | %.2f× | %.2f× | %d |\n", r.Case.Name, r.MsgPerSec, r.Case.Page, r.MsgPerSec/base, r.Case.Page/page, r.Sends)
	}
}
