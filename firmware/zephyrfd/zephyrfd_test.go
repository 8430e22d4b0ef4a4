package zephyrfd_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/firmware/zephyrfd"
)

// fdcheck builds the shim and testdata/fdcheck.c, and returns a function
// that runs one scenario under LD_PRELOAD and returns its output line and
// its stderr.
func fdcheck(t *testing.T) func(scenario string, env ...string) (string, string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("SKIP: the zephyrfd shim is for Linux (glibc RTLD_NEXT)")
	}
	if _, err := exec.LookPath(responder.CC()); err != nil {
		t.Skipf("SKIP: no C compiler %q (set CC)", responder.CC())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	lib, err := zephyrfd.Build(ctx, dir)
	require.NoError(t, err)
	bin := filepath.Join(dir, "fdcheck")
	out, err := exec.CommandContext(ctx, responder.CC(), "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2",
		"-o", bin, filepath.Join("testdata", "fdcheck.c"), "-lpthread", "-ldl").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return func(scenario string, env ...string) (string, string) {
		cmd := exec.CommandContext(ctx, bin, scenario)
		cmd.Env = append(append(os.Environ(), "LD_PRELOAD="+lib), env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "fdcheck %s: stderr:\n%s", scenario, stderr.String())
		return strings.TrimSpace(string(out)), stderr.String()
	}
}

// A send waits while another thread is in a recv on the same TCP socket,
// is released when that recv times out (SO_RCVTIMEO as set by the program),
// and goes before the reader's next recv (grant order r, s, r: the hand-off).
func TestSendWaitsForRecvTimeout(t *testing.T) {
	run := fdcheck(t)
	require.Equal(t, "timeout trace=rsr r1=-1 eagain=1 r2=-1 send=1 early=0 peer=1", first(run("timeout")))
}

// With no receive timeout the waiting send is released only by data
// arriving: the recv returns the 4 bytes, then the send goes.
func TestSendReleasedByData(t *testing.T) {
	run := fdcheck(t)
	require.Equal(t, "data trace=rs r1=4 send=1 early=0 peer=1", first(run("data")))
}

// ZEPHYRFD_WINDOW_MS gives a socket the program set no timeout on a
// receive window: the recv returns EAGAIN instead of blocking.
func TestWindowEnv(t *testing.T) {
	run := fdcheck(t)
	require.Equal(t, "window r1=-1 eagain=1", first(run("window", zephyrfd.WindowEnv+"=50")))
}

// A socket that is not TCP (here AF_UNIX) is not serialized: the send
// completes while the reader is blocked on the same fd.
func TestUnixSocketNotSerialized(t *testing.T) {
	run := fdcheck(t)
	require.Equal(t, "unix send=1 waiters=0 trace=-1 r1=4", first(run("unix")))
}

// After its recv returns, the reading thread's next turn is held for it for
// ZEPHYRFD_GRACE_MS (the read task runs on into its next recv on a Zephyr
// core): a send that arrives while the reader is away waits for the
// reader's next recv. A reader away longer than the grace loses its turn.
func TestReaderTurnHeldForGrace(t *testing.T) {
	run := fdcheck(t)
	require.Equal(t, "gap trace=rrs r1=-1 r2=-1 send=1", first(run("gap", zephyrfd.GraceEnv+"=5000")))

	out, stderr := run("gap", zephyrfd.GraceEnv+"=20", zephyrfd.StatsEnv+"=1")
	require.Equal(t, "gap trace=rsr r1=-1 r2=-1 send=1", out)
	st, err := zephyrfd.ParseStats([]byte(stderr))
	require.NoError(t, err)
	require.Len(t, st, 1, stderr)
	require.Equal(t, uint64(1), st[0].ResvLapsed)
	require.Equal(t, uint64(2), st[0].ResvMade)
}

func TestParseStats(t *testing.T) {
	in := "log line\nzephyrfd {\"fd\":4,\"recvs\":2,\"recv_timeouts\":2,\"sends\":1,\"sends_waited\":1,\"send_wait_ms\":400.461}\nzephyrfd: dlsym failed\n"
	got, err := zephyrfd.ParseStats([]byte(in))
	require.NoError(t, err)
	require.Equal(t, []zephyrfd.Stats{{FD: 4, Recvs: 2, RecvTimeouts: 2, Sends: 1, SendsWaited: 1, SendWaitMs: 400.461}}, got)
	_, err = zephyrfd.ParseStats([]byte("zephyrfd {\"fd\":\n"))
	require.Error(t, err)
}

// The shim's stats name the socket's sends that waited and for how long.
func TestStatsEnv(t *testing.T) {
	run := fdcheck(t)
	_, stderr := run("timeout", zephyrfd.StatsEnv+"=1")
	st, err := zephyrfd.ParseStats([]byte(stderr))
	require.NoError(t, err)
	require.Len(t, st, 2, "the client and the accepted socket: %s", stderr)
	cli := st[0]
	cli.SendWaitMs = 0 // a duration: not compared
	require.Equal(t, zephyrfd.Stats{FD: cli.FD, Recvs: 2, RecvTimeouts: 2, Sends: 1, SendsWaited: 1, ResvMade: 2}, cli)
	require.Equal(t, uint64(1), st[1].Recvs)
	require.Equal(t, uint64(0), st[1].RecvTimeouts)
}

func first(a, _ string) string { return a }
