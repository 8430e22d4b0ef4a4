package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestBagInfo(t *testing.T) {
	dir := rosbagtest.MumbleBag(t, "hallway_room_loop")
	out, _, err := runCLI(t, "bag", "info", dir)
	require.NoError(t, err)
	for _, want := range []string{
		"Files:             my_data_bag_0.db3",
		"Bag size:          3.4 MiB (3575808 bytes)",
		"schema 3, ROS distro humble",
		"Duration:          123.227530798s",
		"(1742407985.965670153)",
		"Messages:          4594",
	} {
		require.Contains(t, out, want)
	}
	lines := strings.Split(out, "\n")
	var scan, imu string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "/scan" {
			scan = l
		}
		if len(f) > 0 && f[0] == "/imu_data" {
			imu = l
		}
	}
	require.Equal(t, []string{"/scan", "sensor_msgs/msg/LaserScan", "cdr", "896", "7.27", "Hz", "1347584", "1504", "B", "reliable", "volatile", "history=unknown(3)"}, strings.Fields(scan))
	require.Equal(t, []string{"/imu_data", "sensor_msgs/msg/Imu", "cdr", "3698", "30.00", "Hz", "1198152", "324", "B", "reliable", "volatile", "history=unknown(3)"}, strings.Fields(imu))

	_, _, err = runCLI(t, "bag", "info", t.TempDir())
	require.Error(t, err)
	_, _, err = runCLI(t, "bag", "info")
	require.Error(t, err)
}

func TestBagReplayDryRun(t *testing.T) {
	dir := rosbagtest.MumbleBag(t, "no_loop_room")
	out, errOut, err := runCLI(t, "bag", "replay", "--dry-run", "--topics", "/scan", "--rate", "10", dir)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 1+508)
	require.True(t, strings.HasPrefix(lines[0], "declare /scan type sensor_msgs/msg/LaserScan"))
	require.True(t, strings.HasPrefix(lines[1], "+0.000000s /scan sensor_msgs/msg/LaserScan 1504 B stamp="))
	require.Contains(t, errOut, "replayed 508 messages")
	// 70.57 s of scans at 10x: the last one is due at ~7.057 s.
	require.True(t, strings.HasPrefix(lines[508], "+7.05"), lines[508])

	out, errOut, err = runCLI(t, "bag", "replay", "--dry-run", "--fixed-rate", "/scan=30", "--topics", "/scan", "--duration", "2s", dir)
	require.NoError(t, err)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 1+60)
	require.True(t, strings.HasPrefix(lines[60], "+1.966667s /scan"), lines[60])
	require.Contains(t, errOut, "/scan: sent 60, errors 0")

	// Fixed-rate /scan with recorded /imu_data, keep stamps: ends with the IMU stream.
	out, errOut, err = runCLI(t, "bag", "replay", "--dry-run", "--fixed-rate", "/scan=30", "--keep-stamps", dir)
	require.NoError(t, err)
	require.Contains(t, errOut, "/imu_data: sent 2122")
	require.Contains(t, out, "stamp=1742407443.")

	// Endless dry run without --duration stops after 10 s of virtual time.
	_, errOut, err = runCLI(t, "bag", "replay", "--dry-run", "--loop", "--topics", "/imu_data", dir)
	require.NoError(t, err)
	require.Contains(t, errOut, "stopping after --duration 10s")
	require.Contains(t, errOut, "replayed 300 messages")
}

func TestBagReplayErrors(t *testing.T) {
	dir := rosbagtest.MumbleBag(t, "no_loop_room")
	// The DDS sink (bag_dds.go) is replaced by one that fails, as in a build without DDS.
	prev := newReplaySink
	newReplaySink = func(context.Context, bagReplayOptions) (replay.Sink, io.Closer, error) {
		return nil, nil, errors.New("DDS output unavailable; use --dry-run")
	}
	t.Cleanup(func() { newReplaySink = prev })
	cases := map[string][]string{
		"no DDS output":    {"bag", "replay", dir},
		"bad fixed rate":   {"bag", "replay", "--dry-run", "--fixed-rate", "/scan", dir},
		"zero fixed rate":  {"bag", "replay", "--dry-run", "--fixed-rate", "/scan=0", dir},
		"bad topic name":   {"bag", "replay", "--dry-run", "--fixed-rate", "scan=3", dir},
		"duplicate":        {"bag", "replay", "--dry-run", "--fixed-rate", "/scan=3", "--fixed-rate", "/scan=4", dir},
		"unknown topic":    {"bag", "replay", "--dry-run", "--topics", "/odom", dir},
		"unknown fixed":    {"bag", "replay", "--dry-run", "--fixed-rate", "/odom=3", dir},
		"fixed not in sel": {"bag", "replay", "--dry-run", "--topics", "/imu_data", "--fixed-rate", "/scan=3", dir},
		"negative speed":   {"bag", "replay", "--dry-run", "--rate", "-1", dir},
		"realtime no dry":  {"bag", "replay", "--realtime", dir},
		"missing bag":      {"bag", "replay", "--dry-run", dir + "/nope"},
	}
	for name, args := range cases {
		_, _, err := runCLI(t, args...)
		require.Error(t, err, name)
	}
	_, _, err := runCLI(t, "bag", "replay", dir)
	require.ErrorContains(t, err, "--dry-run")

	_, _, err = runCLI(t, "bag", "replay", "--dry-run", "--duration", "-1s", dir)
	require.ErrorContains(t, err, "--duration -1s must not be negative")
	_, _, err = runCLI(t, "bag", "replay", "--dry-run", "--rate", "-2", dir)
	require.ErrorContains(t, err, "--rate -2")
	_, _, err = runCLI(t, "bag", "replay", "--dry-run", "--fixed-rate", "/nope=10", dir)
	require.ErrorContains(t, err, `--fixed-rate: rosbag: unknown topic: "/nope" (the bag has `)
	require.ErrorContains(t, err, "/scan")
}

// pipeWriter fails with EPIPE after n writes, like stdout piped into head.
type pipeWriter struct{ n int }

func (p *pipeWriter) Write(b []byte) (int, error) {
	if p.n == 0 {
		return 0, syscall.EPIPE
	}
	p.n--
	return len(b), nil
}

func TestBagReplayBrokenPipe(t *testing.T) {
	dir := rosbagtest.MumbleBag(t, "no_loop_room")
	var errOut bytes.Buffer
	err := runBagReplay(context.Background(), &pipeWriter{n: 10}, &errOut, bagReplayOptions{Bag: dir, Speed: 1, DryRun: true})
	require.NoError(t, err)
	require.Empty(t, errOut.String())
}

// fakeSink stands in for the DDS output the lead plugs into newReplaySink.
type fakeSink struct{ writes int }

func (f *fakeSink) Declare(replay.TopicInfo) error        { return nil }
func (f *fakeSink) Write(string, []byte, time.Time) error { f.writes++; return nil }
func (f *fakeSink) Close() error                          { return nil }

func TestBagReplayPluggedSink(t *testing.T) {
	dir := rosbagtest.MumbleBag(t, "no_loop_room")
	sink := &fakeSink{}
	var got bagReplayOptions
	prev := newReplaySink
	newReplaySink = func(_ context.Context, o bagReplayOptions) (replay.Sink, io.Closer, error) {
		got = o
		return sink, sink, nil
	}
	t.Cleanup(func() { newReplaySink = prev })
	// Real pacing, so keep it short: 0.3 s of /imu_data at 100x.
	_, _, err := runCLI(t, "bag", "replay", "--topics", "/imu_data", "--rate", "100", "--duration", "300ms", "--domain", "7", dir)
	require.NoError(t, err)
	require.Equal(t, uint32(7), got.Domain)
	require.Equal(t, 100.0, got.Speed)
	require.InDelta(t, 900, sink.writes, 5) // 30 Hz x 100 x 0.3 s
}

// TestReplayLength: the first line of a replay says how long it will run.
func TestReplayLength(t *testing.T) {
	rec := 123227530798 * time.Nanosecond
	require.Equal(t, "2m3.2s as recorded (--duration to stop earlier)", replayLength(rec, bagReplayOptions{Speed: 1}, false))
	require.Equal(t, "1m1.6s as recorded (--duration to stop earlier)", replayLength(rec, bagReplayOptions{Speed: 2}, false))
	require.Equal(t, "20s (--duration)", replayLength(rec, bagReplayOptions{Speed: 1, Duration: 20 * time.Second}, false))
	require.Equal(t, "2m3.2s as recorded (--duration to stop earlier)", replayLength(rec, bagReplayOptions{Speed: 1, Duration: time.Hour}, false))
	require.Equal(t, "20s (--duration)", replayLength(rec, bagReplayOptions{Speed: 1, Duration: 20 * time.Second}, true))
	require.Equal(t, "no end (--duration to stop after a time)", replayLength(rec, bagReplayOptions{Speed: 1}, true))
}
