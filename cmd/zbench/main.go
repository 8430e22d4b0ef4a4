// Command zbench compares the Go router with the real Rust Zenoh router side by side and
// prints a Markdown table with the Go/Rust ratio per row. See docs/zbench.md.
//
//	zbench [--quick] [--tls] [--duration 5s] [--sizes 8,1024,65536] [--out FILE.md] [--profile DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/picobridge/picobridge/eval/zbench"
)

func main() {
	zbench.RunChildIfRequested() // the Go router child re-executes this binary
	quick := flag.Bool("quick", false, "short run: 1 s windows, sizes 8 and 1024, latency at 64 B")
	duration := flag.Duration("duration", 5*time.Second, "throughput window per measurement (latency rows do 400 round trips per second of it)")
	sizes := flag.String("sizes", "8,1024,65536", "payload sizes of the throughput rows, bytes")
	out := flag.String("out", "", "also write the Markdown report to this file")
	repeat := flag.Int("repeat", 1, "measure each row this many times per router and report the median")
	only := flag.String("only", "", "comma-separated substrings: run only the scenarios whose name contains one")
	useTLS := flag.Bool("tls", false, "run every router and client over tls/ links (certificates made at start; the same listen certificate for the Go and the Rust router)")
	bin := flag.String("picobridge", "", "run the Go router as `BIN router` (a picobridge binary, e.g. an older build) instead of this binary's built-in router")
	profile := flag.String("profile", "", "profile the Go router of every row into this folder: <row>.cpu, .allocs (pprof) and .trace (go tool trace), taken during the measurement window (docs/perf.md)")
	flag.Parse()
	o := zbench.Options{Duration: *duration, PicoDir: os.Getenv(zbench.PicoEnv), Repeat: *repeat, Log: os.Stderr, Picobridge: *bin, TLS: *useTLS, ProfileDir: *profile}
	var err error
	if o.Sizes, err = parseSizes(*sizes); err != nil {
		fmt.Fprintln(os.Stderr, "zbench:", err)
		os.Exit(2)
	}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	if *quick {
		o.Duration = time.Second
		if !isSet("sizes") {
			o.Sizes = []int{8, 1024}
		}
		o.LatencySizes = []int{64}
		o.PicoSizes = []int{8}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := zbench.Run(ctx, o)
	if rep != nil {
		md := rep.Markdown()
		fmt.Print(md)
		if *out != "" {
			if werr := os.WriteFile(*out, []byte(md), 0o644); werr != nil {
				fmt.Fprintln(os.Stderr, "zbench:", werr)
				os.Exit(1)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zbench:", err)
		os.Exit(1)
	}
}

func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--sizes: %q is not a positive size", f)
		}
		out = append(out, n)
	}
	return out, nil
}
