package benchkit

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSystems(t *testing.T) {
	s, err := ParseSystems(" router, run,gateway,,rust ")
	require.NoError(t, err)
	require.Equal(t, []System{GoRouter, Gateway, Gateway, RustRouter}, s)
	s, err = ParseSystems("")
	require.NoError(t, err)
	require.Empty(t, s)
	_, err = ParseSystems("router,zenohd")
	require.EqualError(t, err, `--systems: unknown system "zenohd" (allowed: router, run, rust)`)
}

func TestSplitListAndRepeated(t *testing.T) {
	require.Equal(t, []string{"a", "b c", "d"}, SplitList(" a,,b c , d,"))
	require.Nil(t, SplitList(" , "))
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var r Repeated
	fs.Var(&r, "arg", "")
	require.NoError(t, fs.Parse([]string{"--arg=--cfg", "--arg", "a:1"}))
	require.Equal(t, Repeated{"--cfg", "a:1"}, r)
	require.Equal(t, "--cfg a:1", r.String())
}

func TestEmitWritesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.md")
	require.NoError(t, Emit("| a |\n", p))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "| a |\n", string(b))
	require.Error(t, Emit("x", filepath.Join(t.TempDir(), "no", "such", "dir.md")))
}
