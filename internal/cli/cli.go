// Package cli is what picobridge's commands (picobridge, picodemo, devsim,
// linkemu, picoeval) share so that they behave alike: one flag style (cobra
// and pflag: --long and -x flags, help with usage, flags and examples) and one
// set of exit statuses.
//
// Exit statuses (docs/run.md "Exit status"):
//
//	0  success
//	1  the command ran and failed (a listen address in use, a peer unreachable, ...)
//	2  usage or configuration error, found before anything starts: an unknown
//	   flag or command, a bad flag value, a bad configuration file or key
//
// picodemo adds 3 for a run that failed for a reason other than its invariants
// (docs/demo.md); 1 there means an invariant did not hold.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses of every command.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// UsageError marks an error in the command line or the configuration: the
// input is wrong, not the program. Its exit status is ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ExitCode is ExitUsage.
func (e *UsageError) ExitCode() int { return ExitUsage }

// Usage wraps err as a UsageError; nil stays nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	var u *UsageError
	if errors.As(err, &u) {
		return err
	}
	return &UsageError{Err: err}
}

// Usagef is Usage(fmt.Errorf(format, args...)).
func Usagef(format string, args ...any) error { return &UsageError{Err: fmt.Errorf(format, args...)} }

// ExitCode is the exit status for err: 0 for nil, the status of the first
// error in its chain with an ExitCode() int method (UsageError,
// knobs.ConfigError, ...), else ExitFailure.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return ExitFailure
}

// Setup prepares root and all its subcommands: errors and usage are not
// printed by cobra (Main prints the error once), and flag errors and
// argument count errors become UsageErrors.
func Setup(root *cobra.Command) {
	root.SilenceUsage = true
	root.SilenceErrors = true
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
			return Usagef("%w (see %s --help)", err, c.CommandPath())
		})
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					if strings.Contains(err.Error(), c.CommandPath()) {
						return Usagef("%w (see %s --help)", err, c.CommandPath())
					}
					return Usagef("%s: %w (see %s --help)", c.CommandPath(), err, c.CommandPath())
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// unknownCommand is the error for a word under group c that names none of
// its subcommands, worded as cobra words it for root: `unknown command "x"
// for "tool group" (see tool group --help)`, then cobra's suggestions.
func unknownCommand(c *cobra.Command, word string) error {
	var sb strings.Builder
	if !c.DisableSuggestions {
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2
		}
		if s := c.SuggestionsFor(word); len(s) > 0 {
			sb.WriteString("\n\nDid you mean this?")
			for _, x := range s {
				sb.WriteString("\n\t" + x)
			}
		}
	}
	return Usagef("unknown command %q for %q (see %s --help)%s", word, c.CommandPath(), c.CommandPath(), sb.String())
}

// unknownInGroup is the UsageError for the first word of rest (the
// arguments root.Find left after cmd's path) when cmd is a group below root,
// a command that only holds subcommands; nil otherwise. The value of a
// flag of cmd that takes one ("--gateway ADDR") is not a word.
func unknownInGroup(cmd *cobra.Command, rest []string) error {
	if !cmd.HasParent() || !cmd.HasSubCommands() || cmd.Runnable() {
		return nil
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			if i+1 < len(rest) {
				return unknownCommand(cmd, rest[i+1])
			}
			return nil
		case strings.HasPrefix(a, "--"):
			if f := cmd.Flags().Lookup(a[2:]); f != nil && f.NoOptDefVal == "" {
				i++ // its value
			}
		case strings.HasPrefix(a, "-") && len(a) == 2:
			if f := cmd.Flags().ShorthandLookup(a[1:]); f != nil && f.NoOptDefVal == "" {
				i++
			}
		case strings.HasPrefix(a, "-"):
		default:
			return unknownCommand(cmd, a)
		}
	}
	return nil
}

// helpCommand replaces cobra's `help [command]`, which prints root's usage
// with status 0 for a topic it does not know: here an unknown topic is the
// UsageError an unknown command is (`tool help rn` says what `tool rn` says).
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: " + root.Name() + " help [command] is " + root.Name() + " [command] --help.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil {
				return unknownFromFind(c.Root(), err)
			}
			if err := unknownInGroup(cmd, rest); err != nil {
				return err
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// unknownFromFind is root.Find's error for an unknown subcommand of root
// as a UsageError, "(see tool --help)" after its first line.
func unknownFromFind(root *cobra.Command, err error) error {
	first, rest, _ := strings.Cut(strings.TrimRight(err.Error(), "\n"), "\n")
	if rest != "" {
		rest = "\n" + rest
	}
	return Usagef("%s (see %s --help)%s", first, root.Name(), rest)
}

// Execute runs root with args (without the program name) like
// root.Execute, after Setup, and returns its error with usage errors marked
// as UsageErrors: an unknown subcommand and a missing required flag, which
// cobra reports without its flag error hook, are UsageErrors too, and so is
// a word under a group that names none of its subcommands (`picobridge
// knobs explian`: cobra checks that for root only and prints the group's
// help with status 0, so a typo in a script passed). The
// commands cobra adds itself (help, completion and the hidden __complete
// that completion scripts call) are added first, so that they run.
func Execute(root *cobra.Command, args []string) error {
	root.SetArgs(args)
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		// a completion script asking for candidates: cobra's own command
		return root.Execute()
	}
	if root.HasSubCommands() {
		root.SetHelpCommand(helpCommand(root))
		root.InitDefaultHelpCmd()
	}
	root.InitDefaultCompletionCmd(args...)
	Setup(root)
	cmd, rest, err := root.Find(args)
	if err != nil {
		// an unknown subcommand, reported before any flag or argument check
		return unknownFromFind(root, err)
	}
	if err := unknownInGroup(cmd, rest); err != nil {
		return err
	}
	if err := singleDashLong(cmd, args); err != nil {
		return err
	}
	err = root.Execute()
	if err != nil && strings.HasPrefix(err.Error(), "required flag(s) ") {
		return Usage(err)
	}
	return err
}

// Main is Execute with the command's output on stdout and stderr; it returns
// the exit status and prints an error once to stderr as "<name>: <error>".
func Main(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := Execute(root, args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", root.Name(), strings.TrimRight(err.Error(), "\n"))
	}
	return ExitCode(err)
}

// singleDashLong refuses a long flag written with one dash (-duration, the
// style of Go's flag package), which pflag would read as the shorthands
// -d uration, with a message that names the right spelling.
func singleDashLong(cmd *cobra.Command, args []string) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if len(name) < 2 {
			continue
		}
		if cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil {
			return Usagef("%s: a long flag takes two dashes: --%s (see %s --help)", a, a[1:], cmd.CommandPath())
		}
	}
	return nil
}
