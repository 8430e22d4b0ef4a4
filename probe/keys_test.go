package probe_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/probe"
)

func TestKeys(t *testing.T) {
	require.Equal(t, "@picobridge/probe/imu-1/ping", probe.PingKey("imu-1"))
	require.Equal(t, "@picobridge/probe/imu-1/pong", probe.PongKey("imu-1"))
	for key, want := range map[string]struct {
		dev  string
		kind probe.Kind
		ok   bool
	}{
		"@picobridge/probe/imu-1/ping":   {"imu-1", probe.Ping, true},
		"@picobridge/probe/imu-1/pong":   {"imu-1", probe.Pong, true},
		"@picobridge/probe/imu-1/other":  {},
		"@picobridge/probe/a/b/ping":     {},
		"@picobridge/probe//ping":        {},
		"@picobridge/probe/*/pong":       {},
		"picobridge/probe/imu-1/ping":    {},
		"@picobridge/probe/imu-1":        {},
		"@picobridge/probe/imu-1/ping/x": {},
	} {
		dev, kind, ok := probe.ParseKey(key)
		require.Equal(t, want.ok, ok, key)
		require.Equal(t, want.dev, dev, key)
		require.Equal(t, want.kind, kind, key)
	}
}

func TestKnobsKey(t *testing.T) {
	require.Equal(t, "@picobridge/probe/imu-1/knobs", probe.KnobsKey("imu-1"))
	for key, want := range map[string]string{
		"@picobridge/probe/imu-1/knobs": "imu-1",
		"@picobridge/probe/imu-1/ping":  "",
		"@picobridge/probe/*/knobs":     "",
		"@picobridge/probe/a/b/knobs":   "",
		"picobridge/probe/imu-1/knobs":  "",
	} {
		dev, ok := probe.ParseKnobsKey(key)
		require.Equal(t, want != "", ok, key)
		if ok {
			require.Equal(t, want, dev, key)
		}
	}
}

func TestValidDeviceName(t *testing.T) {
	require.True(t, probe.ValidDeviceName("zephyr_1.a-b"))
	require.True(t, probe.ValidDeviceName(strings.Repeat("a", 64)))
	for _, bad := range []string{"", "a/b", "*", "a b", strings.Repeat("a", 65)} {
		require.False(t, probe.ValidDeviceName(bad), "%q", bad)
	}
}
