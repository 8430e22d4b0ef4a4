// Command picoeval runs the evaluation (evaluation.md experiments 1–6) and writes raw CSVs,
// summary.md and PNG plots. See docs/eval.md.
//
//	picoeval [--quick] [--out DIR] [--only exp1,exp5] [--duration 30s] [--seed N] [--bag DIR]
//
// Flags and help follow picobridge's style; exit status 0, 1 when the evaluation failed,
// 2 for a usage error (internal/cli).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
	"github.com/picobridge/picobridge/eval/runner"
	"github.com/picobridge/picobridge/internal/cli"
)

// experiments are the ids --only accepts.
var experiments = []string{"exp1", "exp2", "exp3", "exp4", "exp5", "exp6"}

func main() {
	runner.MaybeChild() // re-executed consumers and gateways
	os.Exit(realMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand(stdout)
	cmd.SetContext(ctx)
	return cli.Main(cmd, args, stdout, stderr)
}

func newCommand(stdout io.Writer) *cobra.Command {
	var cfg runner.Config
	var only string
	cmd := &cobra.Command{
		Use:   "picoeval",
		Short: "Run the Adaptive Bridge evaluation: baseline DDS, the stock Rust router, picobridge",
		Long: `picoeval reproduces the Adaptive Bridge paper's experiments (exp1 … exp6) on loopback:
the robot bag's /scan replayed at 30 Hz, consumers behind emulated impaired links, and
baseline DDS, the stock Rust Zenoh router and picobridge in between. It writes raw CSVs,
summary.md and PNG plots to --out and prints the path of summary.md (docs/eval.md).`,
		Example: `  picoeval --quick --out /tmp/eval
  picoeval --only exp3,exp5 --duration 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Only = runner.ParseOnly(only)
			if err := checkEvalConfig(&cfg); err != nil {
				return cli.Usage(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if _, err := runner.Run(ctx, cfg); err != nil {
				return err
			}
			fmt.Fprintln(stdout, filepath.Join(cfg.Out, "summary.md"))
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&cfg.Quick, "quick", false, "short runs (10 s per level) for smoke tests and CI")
	f.StringVar(&cfg.Out, "out", "picoeval-out", "output directory (CSVs, summary.md, PNGs)")
	f.StringVar(&only, "only", "", "comma-separated experiments to run ("+strings.Join(experiments, ",")+"); default all")
	f.DurationVar(&cfg.Duration, "duration", 0, "publication time per run (default: 40 s clean, 60 s impaired, 240 s toggle; --quick 10 s)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed")
	f.StringVar(&cfg.Bag, "bag", "", "rosbag2 directory to replay (default: shared/data/mumble_rplidar_imu/hallway_room_loop via $PICOBRIDGE_SHARED or walking up)")
	return cmd
}

// checkEvalConfig checks the flags before anything starts.
func checkEvalConfig(cfg *runner.Config) error {
	for _, id := range cfg.Only {
		known := false
		for _, e := range experiments {
			known = known || e == id
		}
		if !known {
			return fmt.Errorf("--only %s: unknown experiment (want %s)", id, strings.Join(experiments, ", "))
		}
	}
	if cfg.Duration < 0 {
		return fmt.Errorf("--duration %v: must be ≥ 0 (0: the defaults)", cfg.Duration)
	}
	if cfg.Bag == "" {
		dir, ok := rosbagtest.FindMumbleDir()
		if !ok {
			return fmt.Errorf("--bag: %s/hallway_room_loop not found: set PICOBRIDGE_SHARED to the shared/ folder or pass --bag DIR", rosbagtest.MumbleRel)
		}
		cfg.Bag = filepath.Join(dir, "hallway_room_loop")
	}
	if st, err := os.Stat(cfg.Bag); err != nil || !st.IsDir() {
		return fmt.Errorf("--bag %s: not a bag directory", cfg.Bag)
	}
	return nil
}
