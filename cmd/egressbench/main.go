// Command egressbench runs the egress scenarios of issue 10 item 6 — (a) 48 B express beside
// 1 MB bulk at 100 Mbit/s, (b) 200 kB at 50 Hz into 20 Mbit/s, (c) an overloaded device
// beside a healthy one — against `picobridge router`, `picobridge run` and the stock Rust
// router, and prints one Markdown table. See docs/egressbench.md.
//
//	egressbench --picobridge ./picobridge [--only a,b,c] [--systems ...] [--a 20s --b 60s --c 3m] [--out FILE]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/eval/egress"
)

const cmd = "egressbench"

func main() {
	bin := flag.String("picobridge", "", "picobridge binary for the \"picobridge router\" and \"picobridge run\" systems (required unless --systems rust)")
	only := flag.String("only", "a,b,c", "scenarios to run, comma-separated: a, b, c, a256, d, e (issue 30, 256 KiB queue), a256b, db, eb (the same with the link rate configured)")
	systems := flag.String("systems", "", "comma-separated systems: router, run, rust (default: each scenario's own: a and b all three, c run)")
	da := flag.Duration("a", 20*time.Second, "publishing time of scenario a")
	db := flag.Duration("b", 60*time.Second, "publishing time of scenario b")
	dc := flag.Duration("c", 3*time.Minute, "publishing time of scenario c")
	dd := flag.Duration("d", 20*time.Second, "publishing time of scenarios d and db (10 Mbit/s, 100 kB bulk)")
	de := flag.Duration("e", 20*time.Second, "publishing time of scenarios e and eb (100 → 10 Mbit/s at half time)")
	sizeDiv := flag.Float64("size-div", 1, "divide every payload size by this (smoke runs)")
	rateDiv := flag.Float64("rate-div", 1, "divide every publication rate by this (smoke runs)")
	linkDiv := flag.Float64("link-div", 1, "divide every link rate by this (smoke runs)")
	queue := flag.Int("link-queue", egress.DefaultLinkQueue, "linkemu queue per direction, bytes (linkemu's own default is 1048576)")
	seed := flag.Uint64("seed", 1, "linkemu seed")
	linkBudget := flag.Bool("link-budget", false, "scenarios a and c: tell picobridge run the impaired device's link rate (devices.list[].link_bytes_per_s; builds from issue 10 on)")
	out := flag.String("out", "", "also write the Markdown report to this file")
	var routerArgs, gatewayArgs benchkit.Repeated
	flag.Var(&routerArgs, "router-arg", "extra argument for `picobridge router` (repeatable)")
	flag.Var(&gatewayArgs, "run-arg", "extra argument for `picobridge run` (repeatable), e.g. --run-arg=--cfg --run-arg=policy.batched.rate_hz:20")
	flag.Parse()

	scs, err := egress.Select(egress.Standard(egress.Scale{A: *da, B: *db, C: *dc, D: *dd, E: *de, SizeDiv: *sizeDiv, RateDiv: *rateDiv, LinkDiv: *linkDiv, LinkBudget: *linkBudget}), benchkit.SplitList(*only))
	if err != nil {
		benchkit.Fail(cmd, 2, err)
	}
	o := egress.Options{Picobridge: *bin, LinkQueue: *queue, Seed: *seed, Log: os.Stderr, RouterArgs: routerArgs, GatewayArgs: gatewayArgs}
	if o.Systems, err = benchkit.ParseSystems(*systems); err != nil {
		benchkit.Fail(cmd, 2, err)
	}
	ctx, stop := benchkit.SignalContext()
	defer stop()
	rep, err := egress.Run(ctx, o, scs)
	if rep != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("picobridge: %s. Devices and publishers: Go zenohpath client sessions in the runner; impaired devices through sim/linkemu (rate both ways, queue %d B per direction, no loss, no delay). Latency = receive − send time in the payload (one clock).", *bin, *queue))
		if werr := benchkit.Emit(rep.Markdown(), *out); werr != nil {
			benchkit.Fail(cmd, 1, werr)
		}
	}
	if err != nil {
		benchkit.Fail(cmd, 1, err)
	}
}
