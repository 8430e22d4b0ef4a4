// Command picobridge is the gateway between ROS 2 (DDS) and zenoh-pico devices.
//
// The binary is thin: each subcommand lives in its own file of this package
// and calls into the library packages (zenohpath, ddspath, knobs, bridge).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set with -ldflags "-X main.version=..." by release builds.
var version = "dev"

// subcommands registers each subcommand's constructor; files of this package
// append to it from init so that they do not edit one another.
var subcommands []func() *cobra.Command

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "picobridge",
		Short:         "Gateway between ROS 2 (DDS) and zenoh-pico device fleets",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, mk := range subcommands {
		root.AddCommand(mk())
	}
	return root
}

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "picobridge:", err)
		os.Exit(exitCode(err))
	}
}

// exitCoder lets a subcommand choose its process exit status.
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	if ec, ok := err.(exitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}
