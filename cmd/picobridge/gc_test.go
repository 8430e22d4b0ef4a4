package main

import (
	"bytes"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestResolveGCPrecedence(t *testing.T) {
	s, err := resolveGC(gcOptions{}, env(nil))
	require.NoError(t, err)
	require.Equal(t, gcSetting{percent: defaultGOGC, percentFrom: "default", limit: math.MaxInt64, limitFrom: "default", setPercent: true}, s)

	s, err = resolveGC(gcOptions{}, env(map[string]string{"GOGC": "150"}))
	require.NoError(t, err)
	require.Equal(t, 150, s.percent)
	require.Equal(t, "env", s.percentFrom)
	require.False(t, s.setPercent, "the runtime applied $GOGC already")

	s, err = resolveGC(gcOptions{gogc: "off", memLimit: "64MiB"}, env(map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB"}))
	require.NoError(t, err)
	require.Equal(t, -1, s.percent)
	require.Equal(t, "flag", s.percentFrom)
	require.True(t, s.setPercent)
	require.Equal(t, int64(64<<20), s.limit)
	require.Equal(t, "flag", s.limitFrom)
	require.True(t, s.setLimit)
}

func TestResolveGCErrors(t *testing.T) {
	for _, o := range []gcOptions{{gogc: "-5"}, {gogc: "lots"}, {memLimit: "12XB"}, {memLimit: "0"}, {memLimit: "-1MiB"}} {
		_, err := resolveGC(o, env(nil))
		require.Error(t, err, "%+v", o)
		require.Equal(t, 2, exitCode(err), "a usage error: %+v", o)
	}
	_, err := resolveGC(gcOptions{}, env(map[string]string{"GOGC": "bogus"}))
	require.NoError(t, err, "a bad $GOGC is the runtime's business (it ignores it)")
}

func TestParseMemLimit(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "512B": 512, "4KiB": 4096, "3MiB": 3 << 20, "2GiB": 2 << 30, "1TiB": 1 << 40, "off": math.MaxInt64} {
		got, err := parseMemLimit(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := parseMemLimit("9999999TiB")
	require.Error(t, err, "overflow")
}

func TestApplyGCSetsRuntime(t *testing.T) {
	old := debug.SetGCPercent(100)
	oldLim := debug.SetMemoryLimit(-1)
	defer func() { debug.SetGCPercent(old); debug.SetMemoryLimit(oldLim) }()
	var logs bytes.Buffer
	require.NoError(t, applyGC(gcOptions{gogc: "250", memLimit: "1GiB"}, env(nil), slog.New(slog.NewTextHandler(&logs, nil))))
	require.Equal(t, 250, debug.SetGCPercent(100))
	require.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1))
	require.Contains(t, logs.String(), "level=INFO msg=gc gogc=250 gogc_from=flag memory_limit_bytes=1073741824 memory_limit_from=flag")
	logs.Reset()
	require.NoError(t, applyGC(gcOptions{}, env(nil), slog.New(slog.NewTextHandler(&logs, nil))))
	require.Equal(t, defaultGOGC, debug.SetGCPercent(100))
	require.Empty(t, logs.String(), "the defaults are logged at debug")
}
