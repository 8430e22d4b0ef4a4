// Command fleetbench runs the fleet benchmark of issue 11 item 5: N pico-like sessions from
// one load generator process (this binary re-executed) against `picobridge router` and the
// stock Rust router, and prints one Markdown table. See docs/fleetbench.md.
//
//	fleetbench --picobridge ./picobridge [--sessions 100,1000,3000,10000] [--duration 10s] [--systems router,rust] [--out FILE] [--profile DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/eval/fleet"
)

const cmd = "fleetbench"

func main() {
	fleet.RunChildIfRequested() // the load generator re-executes this binary
	bin := flag.String("picobridge", "", "picobridge binary for the \"picobridge router\" / \"picobridge run\" systems")
	sessions := flag.String("sessions", "100,1000,3000,10000", "rows: numbers of sessions, comma-separated")
	systems := flag.String("systems", "router,rust", "comma-separated systems: router, run, rust")
	duration := flag.Duration("duration", 10*time.Second, "fan-out window per row")
	drain := flag.Duration("drain", 5*time.Second, "after the fan-out window, wait at most this long for the last deliveries")
	idle := flag.Duration("idle", 3*time.Second, "wait before reading idle RSS and after the sessions left")
	rate := flag.Float64("rate", 30, "fan-out rate, Hz, below --slow-from sessions")
	slowRate := flag.Float64("slow-rate", 3, "fan-out rate, Hz, from --slow-from sessions on")
	slowFrom := flag.Int("slow-from", 10000, "rows with at least this many sessions use --slow-rate")
	size := flag.Int("size", 1500, "fan-out payload, bytes (must fit --batch)")
	batch := flag.Int("batch", 2048, "batch size the sessions announce in INIT (zenoh-pico's default 2048)")
	sources := flag.Int("sources", 4, "source addresses 127.0.0.1 … 127.0.0.N for the sessions (ephemeral ports)")
	dials := flag.Int("dials", 32, "concurrent dials of the load generator")
	budget := flag.Duration("connect-budget", 180*time.Second, "deadline of a row's connect phase; sessions not open by then count as failed")
	out := flag.String("out", "", "also write the Markdown report to this file")
	routerCPUs := flag.String("router-cpus", "", "pin the router under test to these CPUs (taskset -c LIST, e.g. 0); default unpinned")
	loadgenCPUs := flag.String("loadgen-cpus", "", "pin the load generator to these CPUs (taskset -c LIST, e.g. 1); default unpinned")
	var routerArgs, gatewayArgs benchkit.Repeated
	flag.Var(&routerArgs, "router-arg", "extra argument for `picobridge router` (repeatable)")
	flag.Var(&gatewayArgs, "run-arg", "extra argument for `picobridge run` (repeatable), e.g. --run-arg=--devices-all-clients")
	profile := flag.String("profile", "", "profile the picobridge systems into this folder during the fan-out window: fleet-<n>-sessions-<system>.cpu, .allocs (pprof) and .trace (go tool trace) (docs/perf.md)")
	flag.Parse()

	o := fleet.Options{Picobridge: *bin, Duration: *duration, Drain: *drain, Idle: *idle, Size: *size, Batch: *batch,
		Sources: *sources, Dials: *dials, ConnectBudget: *budget, RouterArgs: routerArgs, GatewayArgs: gatewayArgs, Log: os.Stderr, ProfileDir: *profile,
		RouterCPUs: *routerCPUs, LoadgenCPUs: *loadgenCPUs,
		RateHz: func(n int) float64 {
			if n >= *slowFrom {
				return *slowRate
			}
			return *rate
		}}
	for _, f := range benchkit.SplitList(*sessions) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			benchkit.Fail(cmd, 2, fmt.Errorf("--sessions: %q is not a positive number", f))
		}
		o.Sessions = append(o.Sessions, n)
	}
	var err error
	if o.Systems, err = benchkit.ParseSystems(*systems); err != nil {
		benchkit.Fail(cmd, 2, err)
	}
	if *size+32 > *batch {
		benchkit.Fail(cmd, 2, fmt.Errorf("--size %d does not fit one --batch %d batch", *size, *batch))
	}
	ctx, stop := benchkit.SignalContext()
	defer stop()
	rep, err := fleet.Run(ctx, o)
	if rep != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("picobridge: %s. Sessions: raw Zenoh client sessions (INIT batch %d, OPEN lease 10 s, one DeclareSubscriber on fleet/fan, no INTEREST) from one load generator process over %d source addresses; publisher: one raw session pushing %d B samples stamped with the send time (one clock). CPU from /proc/<pid>/stat over the fan-out window, RSS = VmRSS.", *bin, *batch, *sources, *size))
		if *routerCPUs != "" || *loadgenCPUs != "" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("Pinned with taskset: router on CPUs %q, load generator on CPUs %q (\"\" = unpinned).", *routerCPUs, *loadgenCPUs))
		}
		if werr := benchkit.Emit(rep.Markdown(), *out); werr != nil {
			benchkit.Fail(cmd, 1, werr)
		}
	}
	if err != nil {
		benchkit.Fail(cmd, 1, err)
	}
}
