package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

type coded struct{}

func (coded) Error() string { return "coded" }
func (coded) ExitCode() int { return 3 }

func TestExitCode(t *testing.T) {
	require.Equal(t, 0, ExitCode(nil))
	require.Equal(t, 1, ExitCode(errors.New("x")))
	require.Equal(t, 2, ExitCode(Usagef("bad %d", 1)))
	require.Equal(t, 2, ExitCode(fmt.Errorf("wrapped: %w", Usage(errors.New("x")))))
	require.Equal(t, 3, ExitCode(fmt.Errorf("wrapped: %w", coded{})))
	require.Nil(t, Usage(nil))
	u := Usage(errors.New("x"))
	require.Same(t, u, Usage(u), "not wrapped twice")
}

func TestMainStatus(t *testing.T) {
	mk := func() *cobra.Command {
		root := &cobra.Command{Use: "tool"}
		sub := &cobra.Command{Use: "do", Args: cobra.ExactArgs(1), RunE: func(*cobra.Command, []string) error { return errors.New("failed") }}
		sub.Flags().Int("count", 1, "how many")
		grp := &cobra.Command{Use: "grp", Short: "a group"}
		grp.PersistentFlags().String("addr", "", "an address")
		grp.AddCommand(&cobra.Command{Use: "one", RunE: func(*cobra.Command, []string) error { return nil }})
		root.AddCommand(sub, grp)
		return root
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"do", "x"}, 1, "tool: failed\n"},
		{[]string{"do"}, 2, "tool: tool do: accepts 1 arg(s), received 0 (see tool do --help)\n"},
		{[]string{"do", "--count", "many", "x"}, 2, `tool: invalid argument "many" for "--count" flag: strconv.ParseInt: parsing "many": invalid syntax (see tool do --help)` + "\n"},
		{[]string{"do", "-count", "3", "x"}, 2, "tool: -count: a long flag takes two dashes: --count (see tool do --help)\n"},
		{[]string{"od"}, 2, "tool: unknown command \"od\" for \"tool\" (see tool --help)\n\nDid you mean this?\n\tdo\n"},
		// a typo under a group is refused as at the top level, not answered with the group's help and 0
		{[]string{"grp", "oen"}, 2, "tool: unknown command \"oen\" for \"tool grp\" (see tool grp --help)\n\nDid you mean this?\n\tone\n"},
		{[]string{"grp", "--addr", "x", "zzz"}, 2, "tool: unknown command \"zzz\" for \"tool grp\" (see tool grp --help)\n"},
		{[]string{"grp", "--addr", "x"}, 0, ""},
		{[]string{"grp", "one"}, 0, ""},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, tc.code, Main(mk(), tc.args, &out, &errb), "%v", tc.args)
		require.Equal(t, tc.want, errb.String(), "%v", tc.args)
	}
}

// TestHelpAndCompletion: the help and completion commands that --help
// lists run (before, the unknown-command check ran before cobra added
// them: exit 2), an unknown help topic is the usage error an unknown
// command is, and the hidden __complete that completion scripts call works.
func TestHelpAndCompletion(t *testing.T) {
	mk := func() *cobra.Command {
		root := &cobra.Command{Use: "tool"}
		do := &cobra.Command{Use: "do", Short: "does", RunE: func(*cobra.Command, []string) error { return nil }}
		do.Flags().Int("count", 1, "how many")
		grp := &cobra.Command{Use: "grp", Short: "a group"}
		grp.AddCommand(&cobra.Command{Use: "one", RunE: func(*cobra.Command, []string) error { return nil }})
		root.AddCommand(do, grp)
		return root
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(mk(), args, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, help, stderr := run("--help")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, help, "  help        Help about any command\n")
	require.Contains(t, help, "  completion  Generate the autocompletion script for the specified shell\n")
	for _, tc := range [][2][]string{{{"help"}, {"--help"}}, {{"help", "do"}, {"do", "--help"}}, {{"help", "grp", "one"}, {"grp", "one", "--help"}}} {
		code, got, stderr := run(tc[0]...)
		require.Equal(t, 0, code, "%v: %s", tc[0], stderr)
		_, want, _ := run(tc[1]...)
		require.Equal(t, want, got, "%v", tc[0])
	}
	code, script, stderr := run("completion", "bash")
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(script, "# bash completion V2 for tool"), script[:min(80, len(script))])
	code, cands, stderr := run("__complete", "do", "--co")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "--count\thow many\n:4\n", cands)
	code, _, stderr = run("help", "od")
	require.Equal(t, 2, code)
	require.Equal(t, "tool: unknown command \"od\" for \"tool\" (see tool --help)\n\nDid you mean this?\n\tdo\n", stderr)
	code, _, stderr = run("help", "grp", "oen")
	require.Equal(t, 2, code)
	require.Equal(t, "tool: unknown command \"oen\" for \"tool grp\" (see tool grp --help)\n\nDid you mean this?\n\tone\n", stderr)
	code, _, stderr = run("completion", "bsh")
	require.Equal(t, 2, code)
	require.Equal(t, "tool: unknown command \"bsh\" for \"tool completion\" (see tool completion --help)\n\nDid you mean this?\n\tbash\n\tfish\n\tzsh\n", stderr)
}
