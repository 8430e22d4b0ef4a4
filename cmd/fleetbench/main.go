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
	stormDrain := flag.Duration("storm-drain", time.Second, "storm: after the after-window, wait this long for samples in flight before counting the rest missed")
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
	mode := flag.String("mode", "bench", "bench (the fan-out table), storm (reconnect storm, issue 29 item 1), churn (churn soak, item 2) or partition (item 3); docs/fleetbench.md")
	cut := flag.Duration("cut", 2*time.Minute, "partition: how long the zenohd–zenohd link stays cut")
	zenohd := flag.String("zenohd", "", "partition: zenohd binary (default $PICOBRIDGE_ANCHORS/bin/zenohd, scripts/anchors.sh)")
	gateway := flag.String("gateway", "run", "storm/churn: the system under test, run (picobridge run --no-dds --devices-all-clients) or router")
	faults := flag.String("faults", "gateway,upstream", "storm: faults in order: gateway (SIGKILL + restart the gateway), upstream (SIGKILL + restart the upstream router)")
	down := flag.Duration("down", time.Second, "storm: between the kill and the restart")
	after := flag.Duration("after", 10*time.Second, "storm: watch the critical stream this long after every device is back")
	stormBudget := flag.Duration("budget", 120*time.Second, "storm: the longest a fault may take to settle")
	jitter := flag.Duration("jitter", 0, "storm: extra uniform jitter per reconnect attempt (0 = zenoh-pico as it is: 1 s between reopens, no jitter)")
	seed := flag.Uint64("seed", 1, "storm/churn: seed of the devices' keep-alive phases and the churn's choices")
	joins := flag.Float64("joins", 10, "churn: sessions joining per second")
	leaves := flag.Float64("leaves", 10, "churn: sessions leaving per second")
	soak := flag.Duration("soak", 30*time.Minute, "churn: duration of the soak")
	critical := flag.Int("critical-sessions", 100, "churn: sessions that never leave and whose critical samples are checked")
	sample := flag.Duration("sample", 5*time.Second, "churn: sampling period of RSS, goroutines, fds and route tables")
	profile := flag.String("profile", "", "profile the picobridge systems into this folder during the fan-out window: fleet-<n>-sessions-<system>.cpu, .allocs (pprof) and .trace (go tool trace) (docs/perf.md)")
	flag.Parse()
	if *mode == "storm" || *mode == "churn" || *mode == "partition" {
		gw := map[string]fleet.System{"run": fleet.Gateway, "router": fleet.GoRouter}[*gateway]
		if gw == "" {
			benchkit.Fail(cmd, 2, fmt.Errorf("--gateway %q: want run or router", *gateway))
		}
		faultSize := 0 // the fault runs' own default (64 B) unless --size was given
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "size" {
				faultSize = *size
			}
		})
		runFault(*mode, fleet.FaultOptions{Picobridge: *bin, Gateway: gw, RateHz: *rate, Batch: *batch, Size: faultSize,
			Sources: *sources, Dials: *dials, GatewayArgs: gatewayArgs, LoadgenCPUs: *loadgenCPUs, RouterCPUs: *routerCPUs,
			Jitter: *jitter, Seed: *seed, Log: os.Stderr}, *sessions, *out,
			fleet.StormOptions{Down: *down, After: *after, Budget: *stormBudget, Faults: benchkit.SplitList(*faults), Idle: *idle, Drain: *stormDrain},
			fleet.ChurnOptions{JoinHz: *joins, LeaveHz: *leaves, Duration: *soak, Critical: *critical, Sample: *sample},
			fleet.PartitionOptions{Zenohd: *zenohd, Cut: *cut, After: *after, Budget: *stormBudget})
		return
	}
	if *mode != "bench" {
		benchkit.Fail(cmd, 2, fmt.Errorf("--mode %q: want bench, storm, churn or partition", *mode))
	}

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

// runFault runs the storm or the churn soak for each --sessions row and prints its tables.
func runFault(mode string, fo fleet.FaultOptions, sessions, out string, so fleet.StormOptions, co fleet.ChurnOptions, po fleet.PartitionOptions) {
	ctx, stop := benchkit.SignalContext()
	defer stop()
	var md string
	for _, f := range benchkit.SplitList(sessions) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			benchkit.Fail(cmd, 2, fmt.Errorf("--sessions: %q is not a positive number", f))
		}
		fo.Sessions = n
		if mode == "partition" {
			po.FaultOptions = fo
			rep, err := fleet.Partition(ctx, po)
			if rep != nil {
				md += rep.Markdown() + "\n"
			}
			if err != nil {
				benchkit.Fail(cmd, 1, err)
			}
		} else if mode == "storm" {
			so.FaultOptions = fo
			rep, err := fleet.Storm(ctx, so)
			if rep != nil {
				md += rep.Markdown() + "\n"
			}
			if err != nil {
				benchkit.Fail(cmd, 1, err)
			}
		} else {
			co.FaultOptions = fo
			rep, err := fleet.Churn(ctx, co)
			if rep != nil {
				md += rep.Markdown() + "\n"
			}
			if err != nil {
				benchkit.Fail(cmd, 1, err)
			}
		}
	}
	upstream := "the upstream `picobridge router`"
	if mode == "partition" {
		upstream = "zenohd Z1"
	}
	md += fmt.Sprintf("picobridge: %s. Devices: raw Zenoh client sessions as zenoh-pico opens them (subscriber on fleet/fan and a liveliness token each, lease 10 s, zenoh-pico's auto-reconnect: eval/fleet/reconnect.go). Critical stream: %.0f Hz from a raw Zenoh session on %s; gateway: %s.\n", fo.Picobridge, fo.RateHz, upstream, fo.Gateway)
	if err := benchkit.Emit(md, out); err != nil {
		benchkit.Fail(cmd, 1, err)
	}
}
