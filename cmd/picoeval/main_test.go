package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/eval/runner"
)

// TestExitStatus: picoeval's usage errors exit 2 with one line naming the
// flag, before anything starts.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `picoeval: unknown command "extra" for "picoeval" (see picoeval --help)`},
		{[]string{"--quick=maybe"}, `picoeval: invalid argument "maybe" for "--quick" flag: strconv.ParseBool: parsing "maybe": invalid syntax (see picoeval --help)`},
		{[]string{"--only", "exp1,exp9"}, `picoeval: --only exp9: unknown experiment (want exp1, exp2, exp3, exp4, exp5, exp6, zenohd, ros2dds, mw)`},
		{[]string{"--levels", "clean,bad"}, `picoeval: --levels bad: unknown level (want clean, mild, moderate, strong, toggle)`},
		{[]string{"--cotenant", "-1"}, `picoeval: --cotenant -1: want 0 to 64`},
		{[]string{"--harness-realtime", "rr"}, `picoeval: --harness-realtime rr: want off, nice or fifo`},
		{[]string{"--only", "mw", "--mw-sizes", "64,10"}, `picoeval: --mw-sizes 10: want 12 B to 64 MiB (a payload holds a 4-byte header and an 8-byte stamp)`},
		{[]string{"--only", "mw", "--mw-sizes", "1GiB"}, `picoeval: --mw-sizes 1GiB: want a positive number of bytes, KiB or MiB`},
		{[]string{"--only", "mw", "--mw-profiles", "wifi,5g"}, `picoeval: --mw-profiles: unknown profile "5g" (allowed: clean, mild, moderate, strong, ethernet, wifi, 4g)`},
		{[]string{"--only", "mw", "--mw-systems", "kafka"}, `picoeval: --mw-systems kafka: unknown system (want cyclone, zenoh-rust, mosquitto, picobridge)`},
		{[]string{"--duration", "-1s"}, `picoeval: --duration -1s: must be ≥ 0 (0: the defaults)`},
		{[]string{"--bag", "/nonexistent/bag"}, `picoeval: --bag /nonexistent/bag: not a bag directory`},
		{[]string{"--seeds", "1,x"}, `picoeval: --seeds x: want positive integers, comma-separated`},
		{[]string{"--seeds", "1,0"}, `picoeval: --seeds 0: want positive integers, comma-separated`},
		{[]string{"--seeds", "1,2,1"}, `picoeval: --seeds 1: given twice`},
		{[]string{"--seeds", "1,2", "--seed", "3"}, `picoeval: --seeds and --seed: give one of them`},
		{[]string{"--profile", "huge"}, `picoeval: --profile huge: want quick, standard or full`},
		{[]string{"--profile", "full", "--quick"}, `picoeval: --profile full and --quick: give one of them`},
		{[]string{"--busy-variant", "-2"}, `picoeval: --busy-variant -2: want 0 to 64`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), tc.args, &stdout, &stderr)
			require.Equal(t, tc.want+"\n", stderr.String())
			require.Equal(t, 2, code)
			require.Empty(t, stdout.String())
		})
	}
}

func TestApplyProfile(t *testing.T) {
	none := func(string) bool { return false }
	var cfg runner.Config
	require.NoError(t, applyProfile(&cfg, "full", none))
	require.Equal(t, []uint64{1, 2, 3}, cfg.Seeds)
	require.Equal(t, 120*time.Second, cfg.Duration)
	require.Equal(t, 2, cfg.BusyVariant)
	require.Equal(t, 3*time.Second, cfg.MWDuration)
	// Explicit flags win.
	cfg = runner.Config{Seeds: []uint64{7}, Duration: time.Minute}
	require.NoError(t, applyProfile(&cfg, "full", func(f string) bool { return f == "seeds" || f == "duration" || f == "busy-variant" }))
	require.Equal(t, []uint64{7}, cfg.Seeds)
	require.Equal(t, time.Minute, cfg.Duration)
	require.Zero(t, cfg.BusyVariant)
	cfg = runner.Config{}
	require.NoError(t, applyProfile(&cfg, "quick", none))
	require.True(t, cfg.Quick)
}

func TestParseSeeds(t *testing.T) {
	got, err := parseSeeds("3, 1,2", false)
	require.NoError(t, err)
	require.Equal(t, []uint64{3, 1, 2}, got)
	got, err = parseSeeds("", true)
	require.NoError(t, err)
	require.Nil(t, got)
}

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("64, 1KiB,16KiB ,256KiB,1MiB,1500B,12")
	require.NoError(t, err)
	require.Equal(t, []int{64, 1024, 16384, 262144, 1048576, 1500, 12}, got)
	_, err = parseSizes("17592186044428MiB") // (2^44 + 12) MiB wraps to 12 B in 64 bits
	require.ErrorContains(t, err, "want 12 B to 64 MiB")
	got, err = parseSizes("")
	require.NoError(t, err)
	require.Empty(t, got)
}

// FuzzParseSizes: a list either parses into sizes within 12 B–64 MiB or is an error that
// names --mw-sizes; nothing panics.
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"64,1KiB,16KiB,256KiB,1MiB", "", "1500B", "0", "-1", "99999999999999999999MiB", "12", "64MiB", "65MiB", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSizes(s)
		if err != nil {
			require.Contains(t, err.Error(), "--mw-sizes ")
			return
		}
		for _, n := range got {
			require.GreaterOrEqual(t, n, 12)
			require.LessOrEqual(t, n, 64<<20)
		}
	})
}

// The summary's header quotes the flags given, so the page can be regenerated.
func TestCommandLine(t *testing.T) {
	cmd := newCommand(io.Discard)
	require.NoError(t, cmd.ParseFlags([]string{"--seeds", "1,2,3", "--only", "exp3,mw", "--gateway-cfg", "a:1", "--gateway-cfg", "b:2", "--duration", "60s"}))
	require.Equal(t, "picoeval --duration 1m0s --gateway-cfg a:1 --gateway-cfg b:2 --only exp3,mw --seeds 1,2,3", commandLine(cmd))
}
