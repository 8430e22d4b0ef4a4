package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire/zvec"
)

func runWireCLI(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errb bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errb.String(), err
}

func TestWireDecodeTranscripts(t *testing.T) {
	dir, err := zvec.FindTestdata()
	if err != nil {
		t.Skip("zenoh-pico transcripts not found: " + err.Error())
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.zvec"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			out, stderr, err := runWireCLI(t, "", "wire", "decode", "--check", path)
			require.NoError(t, err, stderr)
			fh, err := os.Open(path)
			require.NoError(t, err)
			defer fh.Close()
			f, err := zvec.Parse(fh)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			require.Len(t, lines, len(f.Lines))
			for i, l := range f.Lines {
				require.True(t, strings.HasSuffix(lines[i], " "+l.Expect), "line %d: %s", l.N, lines[i])
				require.True(t, strings.HasPrefix(lines[i], strconv.Itoa(l.Ms)+" "+string(l.Dir)+" "))
			}
		})
	}
}

func TestWireDecodeStdin(t *testing.T) {
	in := "# comment\n04\n2500 fc01000f64656d6f2f6578616d706c652f2a2aa10d26904e2302\n\n2305\n"
	out, _, err := runWireCLI(t, in, "wire", "decode", "-")
	require.NoError(t, err)
	require.Equal(t, `1 KEEP_ALIVE
2 FRAME R sn=0: REQUEST rid=1 key="demo/example/**" (scope 0, N, M) QoS=0x0d(prio 5,block) Timeout=10000ms QUERY consolidation=2
3 CLOSE session reason=5(EXPIRED)
`, out)
}

func TestWireDecodeErrors(t *testing.T) {
	// batch 2 is a PUSH cut inside its PUT payload
	in := "04\n25025d01011505\n0a\n"
	out, stderr, err := runWireCLI(t, in, "wire", "decode", "-")
	require.Error(t, err)
	require.Equal(t, exitDecodeError, exitCode(err))
	require.Contains(t, stderr, "batch 2 (input line 2, 7 bytes) offset 5")
	require.Contains(t, stderr, "PUSH.payload")
	require.Contains(t, stderr, "batch 3 (input line 3, 1 bytes) offset 0")
	require.Contains(t, stderr, "unknown message id")
	require.Contains(t, out, "1 KEEP_ALIVE\n")
	require.Contains(t, err.Error(), "2 of 3 batches did not decode")

	// not hex: undecodable input, status 2 like a batch that does not decode
	_, _, err = runWireCLI(t, "zz\n", "wire", "decode", "-")
	require.ErrorContains(t, err, "stdin: neither a .zvec transcript nor hex lines")
	require.Equal(t, exitDecodeError, exitCode(err))

	// --check reports a difference with exit status 3
	tmp := filepath.Join(t.TempDir(), "x.zvec")
	require.NoError(t, os.WriteFile(tmp, []byte("# expect: D>G line 1 = KEEP_ALIVE\n# expect: D>G line 2 = CLOSE session reason=0(GENERIC)\n0 D>G 04\n1 D>G 2305\n"), 0o644))
	_, stderr, err = runWireCLI(t, "", "wire", "decode", "--check", tmp)
	require.Error(t, err)
	require.Equal(t, exitExpectMismatch, exitCode(err))
	require.Contains(t, stderr, "line 2: got    CLOSE session reason=5(EXPIRED)")

	// missing file
	_, _, err = runWireCLI(t, "", "wire", "decode", filepath.Join(t.TempDir(), "nope.zvec"))
	require.Error(t, err)

	// an empty input has no batches
	_, _, err = runWireCLI(t, "# only a comment\n", "wire", "decode", "-")
	require.ErrorContains(t, err, "stdin: no batches")
	require.Equal(t, exitDecodeError, exitCode(err))

	// a malformed data line names its direction, not a hex error
	_, _, err = runWireCLI(t, "0 X>Y 0000\n", "wire", "decode", "-")
	require.ErrorContains(t, err, `line 1: direction "X>Y" (want D>G or G>D)`)
	require.Equal(t, exitDecodeError, exitCode(err))

	// a batch longer than a u16 length prefix allows
	_, stderr, err = runWireCLI(t, strings.Repeat("04", 70000)+"\n", "wire", "decode", "-")
	require.Equal(t, exitDecodeError, exitCode(err))
	require.Contains(t, stderr, "70000 bytes > 65535")
}

func TestWireDecodeCheck(t *testing.T) {
	write := func(s string) string {
		p := filepath.Join(t.TempDir(), "x.zvec")
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	good := "# expect: D>G line 1 = KEEP_ALIVE\n# expect: G>D line 2 = CLOSE session reason=5(EXPIRED)\n0 D>G 04\n1 G>D 2305\n"
	_, stderr, err := runWireCLI(t, "", "wire", "decode", "--check", write(good))
	require.NoError(t, err)
	require.Contains(t, stderr, "2/2 lines match their # expect:")

	bad := map[string]string{
		"no such data line": good + "# expect: D>G line 9 = KEEP_ALIVE\n",
		"wrong direction":   "# expect: G>D line 1 = KEEP_ALIVE\n0 D>G 04\n",
		"unparsable":        "# expect: D>G line x = KEEP_ALIVE\n0 D>G 04\n",
		"mismatch":          "# expect: D>G line 1 = CLOSE\n0 D>G 04\n",
	}
	want := map[string]string{
		"no such data line": "line 5: # expect: data line 9 does not exist (the file has 2 data lines)",
		"wrong direction":   "line 1: # expect: data line 1 is D>G, the expect says G>D",
		"unparsable":        `line 1: # expect: data line number "x"`,
		"mismatch":          "line 1: expect CLOSE",
	}
	for name, in := range bad {
		// a path and stdin behave the same
		for _, args := range [][]string{{"wire", "decode", "--check", write(in)}, {"wire", "decode", "--check", "-"}} {
			_, stderr, err := runWireCLI(t, in, args...)
			require.Error(t, err, name)
			require.Equal(t, exitExpectMismatch, exitCode(err), name)
			require.Contains(t, stderr, want[name], name)
		}
		// without --check the expect lines are not looked at
		_, _, err := runWireCLI(t, in, "wire", "decode", "-")
		require.NoError(t, err, name)
	}

	// --check without any expect line
	_, _, err = runWireCLI(t, "0 D>G 04\n", "wire", "decode", "--check", "-")
	require.Equal(t, exitExpectMismatch, exitCode(err))
	require.ErrorContains(t, err, "no # expect: lines")
}
