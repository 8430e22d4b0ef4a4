package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/knobs"
)

func init() { subcommands = append(subcommands, newKnobsCommand) }

// knobsFlags are the device-selection flags shared by explain and advise.
type knobsFlags struct {
	platform   string
	board      string
	envFiles   []string
	processEnv bool
}

func (f *knobsFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.platform, "platform", "", "platform name or alias (zephyr, freertos, nuttx, threadx, posix, baremetal); optional with --board")
	cmd.Flags().StringVar(&f.board, "board", "", "board name or alias, or the path of a board TOML file")
	cmd.Flags().StringArrayVar(&f.envFiles, "env", nil, "env file: KEY=VALUE lines, or a Zephyr prj.conf/.config (repeatable)")
	cmd.Flags().BoolVar(&f.processEnv, "process-env", true, "also read NROS_*, ZPICO_* and CONFIG_NROS_* from the process environment (it wins over --env files)")
}

// resolve runs the ladder for the selected device.
func (f *knobsFlags) resolve() (*knobs.Resolved, error) {
	cat, err := firmware.Catalog()
	if err != nil {
		return nil, err
	}
	env := &knobs.Env{}
	for _, name := range f.envFiles {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, readError(name, "--env", "env file", err)
		}
		e, err := knobs.ParseEnvFile(name, data)
		if err != nil {
			return nil, err
		}
		env.Add(e)
	}
	if f.processEnv {
		env.Add(knobs.ProcessEnv(os.Environ()))
	}
	return cat.Resolve(knobs.Options{Platform: f.platform, Board: f.board, Env: env})
}

func newKnobsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "knobs",
		Short: "Device knobs: the registry, a device's resolved values (explain) and TX tuning advice (advise)",
		Long: `Model the compile-time knobs of a zenoh-pico / nano-ros device.

Values resolve through the ladder builtin < platform < board < env/Kconfig;
every value carries the rung (and file and line, or variable) that set it.`,
	}
	cmd.AddCommand(newKnobsListCommand(), newKnobsExplainCommand(), newKnobsAdviseCommand())
	return cmd
}

func newKnobsListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "Print the knob registry (type, unit, range, default, environment names, meaning)",
		Args:  cobra.NoArgs,
		// Use already shows the flags.
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return knobs.WriteRegistryJSON(cmd.OutOrStdout())
			}
			return knobs.WriteRegistry(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}

func newKnobsExplainCommand() *cobra.Command {
	var f knobsFlags
	var g gatewayFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain --platform P [--board B|FILE] [--env FILE] [--json] | --gateway ADDR --device NAME [--json]",
		Short: "Print every knob of a device with its value, unit and the rung that set it, then warnings",
		Args:  cobra.NoArgs,
		// Use already shows the flags.
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.addr != "" || g.device != "" {
				return explainFromGateway(cmd, g, asJSON)
			}
			r, err := f.resolve()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return knobs.WriteExplainJSON(out, r)
			}
			return knobs.WriteExplain(out, r)
		},
	}
	f.register(cmd)
	g.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}

func newKnobsAdviseCommand() *cobra.Command {
	var f knobsFlags
	var g gatewayFlags
	var traffic string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "advise --platform P [--board B] --traffic FILE [--json] | --gateway ADDR [--device NAME] [--json]",
		Short: "Recommend knob settings (TX tuning, RX sizes and ring depth) for a device's traffic: from a traffic file, or as a running gateway observes it",
		Args:  cobra.NoArgs,
		// Use already shows the flags.
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.addr != "" || g.device != "" {
				return adviseFromGateway(cmd, g, asJSON)
			}
			if traffic == "" {
				return cli.Usagef("knobs advise: want --traffic FILE, or --gateway ADDR for the traffic a running gateway observes")
			}
			r, err := f.resolve()
			if err != nil {
				return err
			}
			t, err := readTraffic(traffic)
			if err != nil {
				return err
			}
			a := knobs.Advise(r, t)
			if asJSON {
				return knobs.WriteAdviceJSON(cmd.OutOrStdout(), a)
			}
			return knobs.WriteAdvice(cmd.OutOrStdout(), a)
		},
	}
	f.register(cmd)
	g.register(cmd)
	cmd.Flags().Lookup("device").Usage = "with --gateway: the connected device's name (optional when only one is attached)"
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of tables")
	cmd.Flags().StringVar(&traffic, "traffic", "", "traffic TOML file: [[topic]] name, direction (pub|sub), rate_hz, size_bytes, latency_budget_ms")
	return cmd
}

func readTraffic(name string) (*knobs.Traffic, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, readError(name, "--traffic", "traffic file", err)
	}
	return knobs.ParseTraffic(name, data)
}

// readError reports an unreadable input file like any other configuration
// problem (exit status 2).
func readError(name, flag, what string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &knobs.ConfigError{Problems: []*knobs.Problem{{File: name, Key: flag,
		Msg: fmt.Sprintf("cannot read %s: %v", what, err), Err: knobs.ErrSyntax}}}
}
