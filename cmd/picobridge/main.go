// Command picobridge is the gateway between ROS 2 (DDS) and zenoh-pico devices.
//
// The binary is thin: each subcommand lives in its own file of this package
// and calls into the library packages (zenohpath, ddspath, knobs, bridge).
package main

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/internal/cli"
)

// subcommands registers each subcommand's constructor; files of this package
// append to it from init so that they do not edit one another.
var subcommands []func() *cobra.Command

func newRootCommand() *cobra.Command {
	_, long := buildVersion()
	root := &cobra.Command{
		Use:   "picobridge",
		Short: "Gateway between ROS 2 (DDS) and zenoh-pico device fleets",
		Long: `picobridge is a gateway between ROS 2 robots (DDS) and fleets of zenoh-pico devices
(docs/run.md), with the tools around it: a plain Zenoh router, bag inspection and replay,
knob explanation, the Zenoh wire decoder.

Exit status (every subcommand): 0 success; 1 the command ran and failed; 2 a usage or
configuration error, found before anything starts (wire decode and --check add their own).`,
		Version:       long,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, mk := range subcommands {
		root.AddCommand(mk())
	}
	return root
}

func main() {
	os.Exit(realMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs the command line args and returns the exit status: 0, 1 when
// the command failed, 2 for a usage or configuration error (package
// internal/cli; wire decode --check has its own, docs/run.md).
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetContext(ctx)
	return cli.Main(root, args, stdout, stderr)
}

// exitCode is the exit status of err (cli.ExitCode).
func exitCode(err error) int { return cli.ExitCode(err) }
