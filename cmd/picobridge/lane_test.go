package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLaneBadExpectations: a bad file is exit status 2 with file, line,
// column, key and allowed values, before anything listens.
func TestLaneBadExpectations(t *testing.T) {
	f := filepath.Join(t.TempDir(), "lane.yaml")
	require.NoError(t, os.WriteFile(f, []byte("knobs: {platform: zephyr}\nfaults:\n  - {kind: unplug}\n"), 0o644))
	_, err := run(t, "lane", "--expect", f)
	require.Error(t, err)
	require.Equal(t, 2, exitCode(err))
	require.Equal(t, f+`:3:12: faults[0].kind: unknown fault "unplug" (allowed: stall_reads, close_mid_fragment, restart_router)`, err.Error())

	require.NoError(t, os.WriteFile(f, []byte("knobs: {platform: zephyrr}\n"), 0o644))
	_, err = run(t, "lane", "--expect", f)
	require.Equal(t, 2, exitCode(err))
	require.Equal(t, f+`: knobs.platform: no platform named "zephyrr" (known: baremetal, freertos, generic, nuttx, posix, threadx, zephyr)`, err.Error())
}

// TestLaneNoDeviceExit1: nothing connects: exit status 1, the summary on
// stdout and a JUnit file.
func TestLaneNoDeviceExit1(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "lane.yaml")
	require.NoError(t, os.WriteFile(f, []byte("device: nobody\nknobs: {board: native_sim}\nwait: 100ms\n"), 0o644))
	junit := filepath.Join(dir, "lane.xml")
	out, err := run(t, "lane", "--expect", f, "--listen", "127.0.0.1:0", "--junit", junit)
	require.Error(t, err)
	require.Equal(t, 1, exitCode(err))
	require.Equal(t, "lane: 1 check(s) failed (summary above)", err.Error())
	require.Contains(t, out, "FAIL session ")
	require.True(t, strings.HasSuffix(out, "lane: 0 passed, 1 failed, 8 skipped\n"), out)
	x, err := os.ReadFile(junit)
	require.NoError(t, err)
	require.Contains(t, string(x), `<testsuite name="picobridge lane nobody" tests="9" failures="1" errors="0" skipped="8"`)
}
