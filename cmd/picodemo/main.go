// Command picodemo is picobridge's demo (the README's main job, `bash
// scripts/run.sh`): the mumble hallway_room_loop bag replayed onto DDS, the
// gateway in-process, a small simulated zenoh-pico fleet with one device on
// an impaired Wi-Fi-like link; live status, a summary, plots. It exits 0
// when every CRITICAL device got its critical streams (docs/demo.md). The
// scenario is package eval/demo.
//
// Flags and help follow picobridge's style (internal/cli). Exit status: 0 the
// criterion holds (PASS), 1 it did not (FAIL), 2 a usage or configuration
// error (found before anything starts), 3 the run failed for another reason.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/eval/demo"
	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/sim/linkemu"
)

// exitRunFailed is the status of a run that failed for a reason other than
// an invariant (a port in use, DDS unavailable, ...).
const exitRunFailed = 3

// runFailed carries exitRunFailed.
type runFailed struct{ err error }

func (e *runFailed) Error() string { return e.err.Error() }
func (e *runFailed) Unwrap() error { return e.err }
func (e *runFailed) ExitCode() int { return exitRunFailed }

func main() {
	os.Exit(realMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand(stdout)
	cmd.SetContext(ctx)
	return cli.Main(cmd, args, stdout, stderr)
}

func newCommand(stdout io.Writer) *cobra.Command {
	var cfg demo.Config
	var plain, tty bool
	cmd := &cobra.Command{
		Use:   "picodemo",
		Short: "picobridge's demo: a robot bag on DDS through the gateway to a simulated zenoh-pico fleet",
		Long: `picodemo replays the mumble hallway_room_loop bag (/scan at a fixed rate, /imu_data as
recorded) onto DDS, runs picobridge in-process on loopback ports, and connects three
simulated zenoh-pico devices: zephyr1 (Zephyr board, /scan and /imu_data critical), sim1
(stock native_sim) and esp1 (ESP32 behind an impaired Wi-Fi-like link, --profile). It
prints live per-device status, then a summary, and writes plots to --out (docs/demo.md).

The bag: --bag DIR, else $PICOBRIDGE_SHARED/data/mumble_rplidar_imu/hallway_room_loop, else
shared/data/mumble_rplidar_imu/hallway_room_loop in the working directory or a parent (or
above the executable), else the first 62 s of that recording embedded in the binary
(BSD-2-Clause, eval/demo/demobag).

Exit status: 0 (PASS) when every CRITICAL device (zephyr1, sim1, and any device CRITICAL
throughout the replay) received at least 99 % of each critical topic written, the gateway
dropped none of their critical samples, and no simulated device dropped a sample on a full
ring or as oversize; 1 (FAIL, naming each device and topic that fell short) otherwise; 2 for
a usage or configuration error; 3 when the run failed for another reason.`,
		Example: `  picodemo
  picodemo --duration 20s --scan-hz 10
  picodemo --profile strong --out /tmp/demo --plain`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDemoConfig(&cfg); err != nil {
				return cli.Usage(err)
			}
			if cfg.Out == "" {
				cfg.Out = filepath.Join("out", "demo-"+time.Now().Format("20060102-150405"))
			}
			cfg.Progress = stdout
			cfg.Terminal = tty || (!plain && isTerminal(stdout))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			_, err := demo.Run(ctx, cfg)
			if err == nil || errors.Is(err, demo.ErrInvariant) {
				return err // nil, or exit status 1
			}
			return &runFailed{err}
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", 60*time.Second, "replay duration")
	f.Float64Var(&cfg.ScanHz, "scan-hz", 30, "fixed rate /scan is replayed at, Hz (on a busy host: 10)")
	f.StringVar(&cfg.Profile, "profile", "moderate", "linkemu profile of the impaired device's link: "+strings.Join(linkemu.ProfileNames(), ", "))
	f.Uint64Var(&cfg.Seed, "seed", 7, "seed of the impaired link")
	f.IntVarP(&cfg.Domain, "domain", "d", 0, "DDS domain id 1..232 (0: random in 220..230)")
	f.StringVar(&cfg.Out, "out", "", "output folder (default out/demo-<timestamp>)")
	f.StringVar(&cfg.BagDir, "bag", "", "bag directory (default: shared/data/mumble_rplidar_imu/hallway_room_loop via $PICOBRIDGE_SHARED or walking up, else the embedded 62 s slice)")
	f.StringVar(&cfg.Metrics, "metrics", "127.0.0.1:0", "gateway HTTP address (/devicez, /metrics); \"off\" disables")
	f.DurationVar(&cfg.Drain, "drain", 3*time.Second, "wait after the replay for the lanes to drain")
	f.BoolVar(&cfg.PinCritical, "pin-critical", false, "pin zephyr1's class to CRITICAL (devices.list class: critical) instead of letting the classifier decide")
	f.BoolVar(&plain, "plain", false, "plain status lines even on a terminal")
	f.BoolVar(&tty, "tty", false, "refreshing table even when stdout is not a terminal")
	return cmd
}

// checkDemoConfig checks the flags before anything starts; each problem
// names its flag and the allowed values.
func checkDemoConfig(cfg *demo.Config) error {
	if cfg.Duration <= 0 {
		return fmt.Errorf("--duration %v: must be > 0", cfg.Duration)
	}
	if cfg.Drain < 0 {
		return fmt.Errorf("--drain %v: must be ≥ 0", cfg.Drain)
	}
	if !(cfg.ScanHz > 0) || cfg.ScanHz > 1000 {
		return fmt.Errorf("--scan-hz %v: want a rate in (0, 1000] Hz", cfg.ScanHz)
	}
	if _, err := linkemu.LookupProfile(cfg.Profile); err != nil {
		return fmt.Errorf("--profile %q: want one of %s", cfg.Profile, strings.Join(linkemu.ProfileNames(), ", "))
	}
	if cfg.Domain < 0 || cfg.Domain > 232 {
		return fmt.Errorf("--domain %d: want 0..232 (0: random in 220..230)", cfg.Domain)
	}
	switch cfg.Metrics {
	case "off", "":
		cfg.Metrics = ""
	default:
		_, port, err := net.SplitHostPort(cfg.Metrics)
		if err == nil {
			_, err = strconv.ParseUint(port, 10, 16)
		}
		if err != nil {
			return fmt.Errorf("--metrics %q: want HOST:PORT with a port 0 to 65535, or off", cfg.Metrics)
		}
	}
	if cfg.BagDir == "" {
		ch, err := demo.FindBag()
		if err != nil {
			return err
		}
		cfg.BagDir, cfg.BagFrom = ch.Dir, ch.From
	} else if st, err := os.Stat(cfg.BagDir); err != nil || !st.IsDir() {
		return fmt.Errorf("--bag %s: not a bag directory", cfg.BagDir)
	} else {
		cfg.BagFrom = demo.BagFromFlag
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
