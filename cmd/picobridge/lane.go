package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/testlane"
)

func init() { subcommands = append(subcommands, newLaneCommand) }

func newLaneCommand() *cobra.Command {
	var (
		expect, listen, junit string
		processEnv, verbose   bool
	)
	cmd := &cobra.Command{
		Use:   "lane --expect FILE [--listen HOST:PORT] [--junit FILE] [--process-env] [-v] [-- DEVICE COMMAND...]",
		Short: "Test lane for one CI job: a router that checks a zenoh-pico device against its knobs",
		Long: `Runs a Zenoh router for one device under test (a Zephyr native_sim image, a POSIX
build), waits for it, or starts it (everything after --; {endpoint} in an argument
becomes the lane's endpoint with its tcp/ prefix, e.g. tcp/127.0.0.1:7447, also given
in $PICOBRIDGE_LANE_ENDPOINT), observes its
session for the expectations file's duration and checks it against its resolved
knobs (docs/lane.md): INIT batch size, OPEN lease, keep-alives, declarations,
sends within the knob-derived ceiling, batch sizes, fragmentation, probe
answers, recovery after injected faults.

Prints a summary; --junit writes a JUnit XML report. Exit status: 0 every check
passed, 1 a check failed, 2 a bad expectations file, knob selection or flag.`,
		Example: `  picobridge lane --expect lane.yaml --junit lane.xml -- ./build/zephyr/zephyr.exe
  picobridge lane --expect lane.yaml --listen 127.0.0.1:7461 -- ./z_pub -m client -e {endpoint}
  picobridge lane --expect lane.yaml --listen 127.0.0.1:7447     # device started elsewhere`,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() > 0 {
				return cli.Usagef("lane: unexpected argument %q before --", args[0])
			}
			data, err := os.ReadFile(expect)
			if err != nil {
				return readError(expect, "--expect", "expectations file", err)
			}
			e, err := testlane.ParseExpectations(expect, data)
			if err != nil {
				return err
			}
			var extra *knobs.Env
			if processEnv {
				extra = knobs.ProcessEnv(os.Environ())
			}
			r, err := testlane.Resolve(e, extra)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelInfo
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			cfg := testlane.Config{Expect: e, Resolved: r, Listen: listen, Command: args, Logger: log}
			if verbose {
				cfg.DeviceOutput = cmd.ErrOrStderr()
			}
			rep, err := testlane.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if err := testlane.WriteSummary(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
			if junit != "" {
				f, err := os.Create(junit)
				if err != nil {
					return err
				}
				if err := testlane.WriteJUnit(f, rep); err != nil {
					_ = f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			if _, failed, _ := rep.Counts(); failed > 0 {
				return fmt.Errorf("lane: %d check(s) failed (summary above)", failed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&expect, "expect", "", "expectations YAML file (docs/lane.md)")
	cmd.Flags().StringVar(&listen, "listen", testlane.DefaultListen, "host:port the device connects to (TCP)")
	cmd.Flags().StringVar(&junit, "junit", "", "write a JUnit XML report to this file")
	cmd.Flags().BoolVar(&processEnv, "process-env", false, "also read NROS_*, ZPICO_* and CONFIG_NROS_* knobs from the process environment (env rung, after the file's)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log progress and copy the device's output to stderr")
	_ = cmd.MarkFlagRequired("expect")
	return cmd
}
