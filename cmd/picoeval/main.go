// Command picoeval runs the evaluation (evaluation.md experiments 1–6) and writes raw CSVs,
// summary.md and PNG plots. See docs/eval.md.
//
//	picoeval [--quick] [--out DIR] [--only exp1,exp5,mw] [--duration 30s] [--seed N | --seeds A,B,C] [--bag DIR] [--cotenant N]
//	         [--gateway-cfg KEY:VALUE]... [--harness-realtime nice|fifo]
//	         [--mw-sizes 64,1KiB] [--mw-profiles ethernet,wifi,4g] [--mw-systems cyclone,mosquitto] [--mw-no-tls]
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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
	"github.com/picobridge/picobridge/eval/runner"
	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/sim/linkemu"
)

// experiments are the ids --only accepts.
var experiments = []string{"exp1", "exp2", "exp3", "exp4", "exp5", "exp6", runner.ZenohdExp, runner.ROS2DDSExp, runner.MWExp}

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
	var only, levels, seeds, profile, mwSizes, mwProfiles, mwSystems, busyLevels, devices, picoLevels string
	cmd := &cobra.Command{
		Use:   "picoeval",
		Short: "Run the Adaptive Bridge evaluation: baseline DDS, the stock Rust router, picobridge",
		Long: `picoeval reproduces the Adaptive Bridge paper's experiments (exp1 … exp6) on loopback:
the robot bag's /scan replayed at 30 Hz, consumers behind emulated impaired links, and
baseline DDS, the stock Rust Zenoh router and picobridge in between. Experiment mw is the
middleware comparison (Cyclone DDS, the Rust Zenoh router, Mosquitto MQTT and picobridge's
router over emulated Ethernet, Wi-Fi and 4G links, payloads 64 B to 1 MiB, TLS on and off).
Experiment ros2dds puts zenohd + zenoh-plugin-ros2dds 1.10.2 ($PICOBRIDGE_ANCHORS,
scripts/anchors.sh) where exp3 has picobridge: same publisher, same devices, same links;
experiment zenohd is that router alone with a Zenoh client publisher.
It writes raw CSVs, summary.md and PNG plots to --out and prints the path of summary.md
(docs/eval.md).`,
		Example: `  picoeval --quick --out /tmp/eval
  picoeval --only exp3,exp5 --duration 30s
  picoeval --only exp3,zenohd,ros2dds --levels clean,mild,moderate,strong --duration 20s
  picoeval --only exp3,zenohd --levels mild,strong --seeds 1,2,3 --duration 120s
  picoeval --profile full --out docs/evaluation   # the third edition: 3 seeds × 120 s, quiet and busy host (hours)
  picoeval --only mw --mw-profiles wifi --mw-sizes 64,16KiB --cotenant 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Only = runner.ParseOnly(only)
			cfg.Levels = runner.ParseOnly(levels)
			cfg.BusyLevels = runner.ParseOnly(busyLevels)
			cfg.Devices = runner.ParseOnly(devices)
			cfg.PicoLevels = runner.ParseOnly(picoLevels)
			var err error
			if cfg.MWSizes, err = parseSizes(mwSizes); err != nil {
				return cli.Usage(err)
			}
			cfg.MWProfiles = runner.ParseOnly(mwProfiles)
			cfg.MWSystems = runner.ParseOnly(mwSystems)
			if cfg.Seeds, err = parseSeeds(seeds, cmd.Flags().Changed("seed")); err != nil {
				return cli.Usage(err)
			}
			if err := applyProfile(&cfg, profile, cmd.Flags().Changed); err != nil {
				return cli.Usage(err)
			}
			if err := checkEvalConfig(&cfg); err != nil {
				return cli.Usage(err)
			}
			cfg.Profile = profile
			cfg.Command = commandLine(cmd)
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
	f.StringVar(&profile, "profile", "standard", "quick (= --quick), standard (one seed, 40 s clean / 60 s impaired), or full (the third edition: --seeds 1,2,3 --duration 120s --busy-variant 2 --mw-duration 3s unless given)")
	f.IntVar(&cfg.BusyVariant, "busy-variant", 0, "run every run of exp1–6, zenohd and ros2dds again with this many CPU busy loops beside it (names end in -busy); 0 = not")
	f.StringVar(&busyLevels, "busy-levels", "", "with --busy-variant: the levels the busy variant runs (default: all that run)")
	f.StringVar(&devices, "devices", "", "device programs behind exp3's picobridge, zenohd and ros2dds: devsim, pico (real zenoh-pico from $ZENOH_PICO_DIR; systems named …-pico) or both, comma-separated (default devsim)")
	f.StringVar(&picoLevels, "pico-levels", "", "the levels of the zenoh-pico device series (default: all that run)")
	f.StringVar(&cfg.Out, "out", "picoeval-out", "output directory (CSVs, summary.md, PNGs)")
	f.StringVar(&only, "only", "", "comma-separated experiments to run ("+strings.Join(experiments, ",")+"); default all")
	f.StringVar(&levels, "levels", "", "comma-separated impairment levels to run ("+strings.Join(allLevels(), ",")+"); default all (mw has its own --mw-profiles)")
	f.DurationVar(&cfg.Duration, "duration", 0, "publication time per run (default: 40 s clean, 60 s impaired, 240 s toggle; --quick 10 s)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed")
	f.StringVar(&seeds, "seeds", "", "comma-separated impairment seeds: every run once per seed, and an across-seed table (median, min–max); instead of --seed")
	f.IntVar(&cfg.Cotenant, "cotenant", 0, "CPU busy loops (separate processes) to run beside the systems during every run (busy host)")
	f.StringVar(&mwSizes, "mw-sizes", "", "mw: payload sizes, bytes or with KiB/MiB (default 64,1KiB,16KiB,256KiB,1MiB)")
	f.StringVar(&mwProfiles, "mw-profiles", "", "mw: link profiles (default "+strings.Join(runner.MWProfiles, ",")+")")
	f.StringVar(&mwSystems, "mw-systems", "", "mw: systems (default "+strings.Join(runner.MWSystems, ",")+")")
	f.BoolVar(&cfg.MWNoTLS, "mw-no-tls", false, "mw: skip the TLS variants")
	f.DurationVar(&cfg.MWDuration, "mw-duration", 0, "mw: publication time per (link, payload) phase (default: --duration, else 3 s; --quick 1 s)")
	f.StringArrayVar(&cfg.GatewayCfg, "gateway-cfg", nil, "exp3/4/6: a picobridge configuration setting KEY:YAML_VALUE laid over the gateway's (picobridge run --cfg; repeatable), e.g. policy.express.realtime:fifo")
	f.StringVar(&cfg.HarnessRealtime, "harness-realtime", "", "exp3/4/6: raise picoeval's own threads (publisher, devices) once the gateway runs: nice or fifo (as policy.express.realtime; children keep their priority), so that only the gateway meets the --cotenant busy loops")
	f.StringVar(&cfg.Bag, "bag", "", "rosbag2 directory to replay (default: shared/data/mumble_rplidar_imu/hallway_room_loop via $PICOBRIDGE_SHARED or walking up)")
	return cmd
}

// commandLine is "picoeval" and the flags given, in the order pflag sorts them.
func commandLine(cmd *cobra.Command) string {
	parts := []string{"picoeval"}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				parts = append(parts, "--"+f.Name, v)
			}
			return
		}
		parts = append(parts, "--"+f.Name, f.Value.String())
	})
	return strings.Join(parts, " ")
}

// applyProfile lays --profile over cfg; changed says whether a flag was given (an
// explicit flag wins over the profile).
func applyProfile(cfg *runner.Config, profile string, changed func(string) bool) error {
	switch profile {
	case "standard":
	case "quick":
		cfg.Quick = true
	case "full":
		if cfg.Quick {
			return fmt.Errorf("--profile full and --quick: give one of them")
		}
		if !changed("seeds") && !changed("seed") {
			cfg.Seeds = []uint64{1, 2, 3}
		}
		if !changed("duration") {
			cfg.Duration = 120 * time.Second
		}
		if !changed("busy-variant") {
			cfg.BusyVariant = 2
		}
		if !changed("mw-duration") {
			cfg.MWDuration = 3 * time.Second // the middleware phases keep their length
		}
	default:
		return fmt.Errorf("--profile %s: want quick, standard or full", profile)
	}
	if cfg.BusyVariant < 0 || cfg.BusyVariant > 64 {
		return fmt.Errorf("--busy-variant %d: want 0 to 64", cfg.BusyVariant)
	}
	return nil
}

// parseSeeds reads --seeds ("1,2,3": distinct positive integers); nil when empty.
// seedSet says whether --seed was given too, which is an error with --seeds.
func parseSeeds(s string, seedSet bool) ([]uint64, error) {
	if s == "" {
		return nil, nil
	}
	if seedSet {
		return nil, fmt.Errorf("--seeds and --seed: give one of them")
	}
	var out []uint64
	for _, item := range runner.ParseOnly(s) {
		n, err := strconv.ParseUint(item, 10, 64)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("--seeds %s: want positive integers, comma-separated", item)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("--seeds %s: given twice", item)
		}
		out = append(out, n)
	}
	return out, nil
}

// allLevels are the levels --levels accepts: the impairment levels and exp3's toggle run.
func allLevels() []string { return append(slices.Clone(runner.Levels), "toggle") }

// parseSizes reads "64,1KiB,1MiB,1500" into bytes (each ≥ 12 and ≤ 64 MiB).
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, item := range runner.ParseOnly(s) {
		num, mul := item, 1
		switch {
		case strings.HasSuffix(item, "KiB"):
			num, mul = strings.TrimSuffix(item, "KiB"), 1<<10
		case strings.HasSuffix(item, "MiB"):
			num, mul = strings.TrimSuffix(item, "MiB"), 1<<20
		case strings.HasSuffix(item, "B"):
			num = strings.TrimSuffix(item, "B")
		}
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--mw-sizes %s: want a positive number of bytes, KiB or MiB", item)
		}
		if n > (64<<20)/mul || n*mul < 12 { // n checked before the product can overflow
			return nil, fmt.Errorf("--mw-sizes %s: want 12 B to 64 MiB (a payload holds a 4-byte header and an 8-byte stamp)", item)
		}
		out = append(out, n*mul)
	}
	return out, nil
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
	for _, l := range cfg.Levels {
		if !slices.Contains(allLevels(), l) {
			return fmt.Errorf("--levels %s: unknown level (want %s)", l, strings.Join(allLevels(), ", "))
		}
	}
	for _, flag := range []struct {
		name string
		vals []string
	}{{"--busy-levels", cfg.BusyLevels}, {"--pico-levels", cfg.PicoLevels}} {
		for _, l := range flag.vals {
			if !slices.Contains(runner.Levels, l) {
				return fmt.Errorf("%s %s: unknown level (want %s)", flag.name, l, strings.Join(runner.Levels, ", "))
			}
		}
	}
	for _, d := range cfg.Devices {
		if d != runner.DevicesDevsim && d != runner.DevicesPico {
			return fmt.Errorf("--devices %s: want %s or %s", d, runner.DevicesDevsim, runner.DevicesPico)
		}
	}
	if cfg.Duration < 0 {
		return fmt.Errorf("--duration %v: must be ≥ 0 (0: the defaults)", cfg.Duration)
	}
	if cfg.MWDuration < 0 {
		return fmt.Errorf("--mw-duration %v: must be ≥ 0 (0: the default)", cfg.MWDuration)
	}
	switch cfg.HarnessRealtime {
	case "", "off", "nice", "fifo":
	default:
		return fmt.Errorf("--harness-realtime %s: want off, nice or fifo", cfg.HarnessRealtime)
	}
	if cfg.Cotenant < 0 || cfg.Cotenant > 64 {
		return fmt.Errorf("--cotenant %d: want 0 to 64", cfg.Cotenant)
	}
	for _, p := range cfg.MWProfiles {
		if !slices.Contains(runner.MWProfiles, p) {
			if _, err := linkemu.LookupProfile(p); err != nil {
				return fmt.Errorf("--mw-profiles: %w", err)
			}
		}
	}
	for _, s := range cfg.MWSystems {
		if !slices.Contains(runner.MWSystems, s) {
			return fmt.Errorf("--mw-systems %s: unknown system (want %s)", s, strings.Join(runner.MWSystems, ", "))
		}
	}
	if len(cfg.Only) > 0 && !slices.ContainsFunc(cfg.Only, func(e string) bool { return e != runner.MWExp }) {
		return nil // the middleware comparison does not replay the bag
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
