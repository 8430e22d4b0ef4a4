// Command devcheck measures real zenoh-pico (under the zephyrfd shim) and
// devsim side by side on loopback against picobridge's Go router: receive
// latency per sample and the device's TX rate, at socket timeouts of 100 and
// 5 ms, with and without a 30 Hz inbound stream. See docs/devsim.md,
// "devsim against real zenoh-pico".
//
//	ZENOH_PICO_DIR=/path/to/zenoh-pico/build devcheck [--duration 10s] [--targets pico,devsim] [--json] [--out FILE.md]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/picobridge/picobridge/eval/devcheck"
	"github.com/picobridge/picobridge/firmware/responder"
)

func main() {
	duration := flag.Duration("duration", 10*time.Second, "measured phase of each cell")
	warmup := flag.Duration("warmup", time.Second, "warm-up before each measured phase")
	windows := flag.String("windows", "100ms,5ms", "socket timeouts (zenoh-pico tout, devsim socket_timeout_ms)")
	modes := flag.String("modes", "rx,tx,rx+tx", "cells: rx (30 Hz in), tx (tight-loop publish), rx+tx")
	targets := flag.String("targets", "pico,devsim", "pico (needs "+responder.DirEnv+"), devsim")
	hz := flag.Float64("hz", 30, "inbound stream rate, Hz")
	size := flag.Int("size", 64, "sample size, bytes (24..65536)")
	asJSON := flag.Bool("json", false, "print the report as JSON instead of Markdown")
	out := flag.String("out", "", "also write the Markdown table to this file")
	flag.Parse()
	o := devcheck.Options{
		PicoDir: os.Getenv(responder.DirEnv), PicoSrc: os.Getenv(responder.SrcEnv),
		Duration: *duration, Warmup: *warmup, InboundHz: *hz, Size: *size,
		Modes: strings.Split(*modes, ","), Targets: strings.Split(*targets, ","), Log: os.Stderr,
	}
	for _, w := range strings.Split(*windows, ",") {
		d, err := time.ParseDuration(w)
		if err != nil || d < time.Millisecond {
			fmt.Fprintf(os.Stderr, "devcheck: --windows %q: want durations of at least 1ms\n", w)
			os.Exit(2)
		}
		o.Windows = append(o.Windows, d)
	}
	if *size < 24 || *size > 65536 || *hz <= 0 {
		fmt.Fprintln(os.Stderr, "devcheck: --size wants 24..65536 and --hz > 0")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := devcheck.Run(ctx, o)
	if rep != nil {
		if *asJSON {
			b, _ := json.MarshalIndent(rep, "", "  ")
			fmt.Println(string(b))
		} else {
			fmt.Println(rep.Header() + "\n\n" + rep.Markdown())
		}
		if *out != "" {
			if werr := os.WriteFile(*out, []byte(rep.Header()+"\n\n"+rep.Markdown()+"\n"), 0o644); werr != nil {
				fmt.Fprintln(os.Stderr, "devcheck:", werr)
				os.Exit(1)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devcheck:", err)
		os.Exit(1)
	}
}
