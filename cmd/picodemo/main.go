// Command picodemo is picobridge's demo (the README's main job, `bash
// scripts/run.sh`): the mumble hallway_room_loop bag replayed onto DDS, the
// gateway in-process, a small simulated zenoh-pico fleet with one device on
// an impaired Wi-Fi-like link; live status, a summary, plots. It exits 0
// when the invariants hold (docs/demo.md). The scenario is package eval/demo.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/picobridge/picobridge/eval/demo"
)

func main() {
	os.Exit(run())
}

func run() int {
	var cfg demo.Config
	var plain, tty bool
	flag.DurationVar(&cfg.Duration, "duration", 60*time.Second, "replay duration")
	flag.Float64Var(&cfg.ScanHz, "scan-hz", 30, "fixed rate /scan is replayed at")
	flag.StringVar(&cfg.Profile, "profile", "moderate", "linkemu profile of the impaired device's link (clean, mild, moderate, strong)")
	flag.Uint64Var(&cfg.Seed, "seed", 7, "seed of the impaired link")
	flag.IntVar(&cfg.Domain, "domain", 0, "DDS domain (0: random in 220..230)")
	flag.StringVar(&cfg.Out, "out", "", "output folder (default out/demo-<timestamp>)")
	flag.StringVar(&cfg.BagDir, "bag", "", "bag directory (default: shared/data/mumble_rplidar_imu/hallway_room_loop via $PICOBRIDGE_SHARED or walking up)")
	flag.StringVar(&cfg.Metrics, "metrics", "127.0.0.1:0", "gateway HTTP address (/devicez, /metrics); \"\" = off")
	flag.DurationVar(&cfg.Drain, "drain", 3*time.Second, "wait after the replay for the lanes to drain")
	flag.BoolVar(&cfg.PinCritical, "pin-critical", false, "pin zephyr1's class to CRITICAL (devices.list class: critical) instead of letting the classifier decide")
	flag.BoolVar(&plain, "plain", false, "plain status lines even on a terminal")
	flag.BoolVar(&tty, "tty", false, "refreshing table even when stdout is not a terminal")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "picodemo: unexpected arguments %v\n", flag.Args())
		return 2
	}
	if cfg.Out == "" {
		cfg.Out = filepath.Join("out", "demo-"+time.Now().Format("20060102-150405"))
	}
	cfg.Progress = os.Stdout
	cfg.Terminal = tty || (!plain && isTerminal(os.Stdout))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := demo.Run(ctx, cfg)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, demo.ErrInvariant):
		fmt.Fprintf(os.Stderr, "picodemo: %v\n", err)
		return 1
	default:
		fmt.Fprintf(os.Stderr, "picodemo: %v\n", err)
		return 3
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
