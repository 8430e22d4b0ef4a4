// Command picoeval runs the evaluation (evaluation.md experiments 1–6) and writes raw CSVs,
// summary.md and PNG plots. See docs/eval.md.
//
//	picoeval [--quick] [--out DIR] [--only exp1,exp5] [--duration 30s] [--seed N] [--bag DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/picobridge/picobridge/eval/runner"
)

func main() {
	runner.MaybeChild() // re-executed consumers and gateways
	var cfg runner.Config
	var only string
	flag.BoolVar(&cfg.Quick, "quick", false, "short runs (10 s per level) for smoke tests and CI")
	flag.StringVar(&cfg.Out, "out", "picoeval-out", "output directory (CSVs, summary.md, PNGs)")
	flag.StringVar(&only, "only", "", "comma-separated experiments to run (exp1,…,exp6); default all")
	flag.DurationVar(&cfg.Duration, "duration", 0, "publication time per run (default: 40 s clean, 60 s impaired, 240 s toggle; --quick 10 s)")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed")
	flag.StringVar(&cfg.Bag, "bag", runner.DefaultBag, "rosbag2 directory to replay")
	flag.Parse()
	cfg.Only = runner.ParseOnly(only)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := runner.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "picoeval:", err)
		os.Exit(1)
	}
	fmt.Println(cfg.Out + "/summary.md")
}
