package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExitStatus: picodemo's usage and configuration errors exit 2 with one
// line naming the flag, before anything starts; --help is picobridge's style.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `picodemo: unknown command "extra" for "picodemo" (see picodemo --help)`},
		{[]string{"-duration", "1s"}, `picodemo: -duration: a long flag takes two dashes: --duration (see picodemo --help)`},
		{[]string{"--duration", "0s"}, `picodemo: --duration 0s: must be > 0`},
		{[]string{"--scan-hz", "0"}, `picodemo: --scan-hz 0: want a rate in (0, 1000] Hz`},
		{[]string{"--profile", "awful"}, `picodemo: --profile "awful": want one of clean, mild, moderate, strong, ethernet, wifi, 4g`},
		{[]string{"--domain", "233"}, `picodemo: --domain 233: want 0..232 (0: random in 220..230)`},
		{[]string{"--metrics", "127.0.0.1:99999"}, `picodemo: --metrics "127.0.0.1:99999": want HOST:PORT with a port 0 to 65535, or off`},
		{[]string{"--bag", "/nonexistent/bag"}, `picodemo: --bag /nonexistent/bag: not a bag directory`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), tc.args, &stdout, &stderr)
			require.Equal(t, tc.want+"\n", stderr.String())
			require.Equal(t, 2, code)
			require.Empty(t, stdout.String())
		})
	}
	var stdout bytes.Buffer
	require.Equal(t, 0, realMain(context.Background(), []string{"--help"}, &stdout, &bytes.Buffer{}))
	require.Contains(t, stdout.String(), "Usage:\n  picodemo [flags]\n\nExamples:\n  picodemo\n")
	require.Contains(t, stdout.String(), "      --scan-hz float       fixed rate /scan is replayed at, Hz (on a busy host: 10) (default 30)\n")
}

// TestExitStatusBadShared: a PICOBRIDGE_SHARED without the recording is a
// configuration error (exit 2) naming the variable, not a silent fallback
// to the embedded slice.
func TestExitStatusBadShared(t *testing.T) {
	bad := t.TempDir()
	t.Setenv("PICOBRIDGE_SHARED", bad)
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), nil, &stdout, &stderr)
	require.Equal(t, "picodemo: PICOBRIDGE_SHARED="+bad+": no data/mumble_rplidar_imu/hallway_room_loop there; unset it to replay the embedded slice, or pass --bag DIR\n", stderr.String())
	require.Equal(t, 2, code)
	require.Empty(t, stdout.String())
}
