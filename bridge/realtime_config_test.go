package bridge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/knobs"
)

// policy.express.realtime: off by default; off, nice and fifo accepted; a
// bad value names the file, line, column, key and the allowed values, and a
// flag or the environment names its source instead of a position.
func TestConfigExpressRealtime(t *testing.T) {
	require.Equal(t, bridge.RealtimeOff, bridge.DefaultConfig().Policy.Express.Realtime)
	for _, m := range []bridge.RealtimeMode{bridge.RealtimeOff, bridge.RealtimeNice, bridge.RealtimeFIFO} {
		c, err := bridge.ParseConfig("pb.yaml", []byte("policy:\n  express:\n    realtime: "+string(m)+"\n"))
		require.NoError(t, err)
		require.NoError(t, c.Validate())
		require.Equal(t, m, c.Policy.Express.Realtime)
	}

	_, err := bridge.ParseConfig("pb.yaml", []byte("policy:\n  express:\n    realtime: rr\n"))
	require.ErrorIs(t, err, knobs.ErrBadValue)
	require.EqualError(t, err, `pb.yaml:3:15: policy.express.realtime: unknown value "rr" (allowed: off, nice, fifo)`)
	_, err = bridge.ParseConfig("pb.yaml", []byte("policy:\n  express:\n    realtime: 10\n"))
	require.EqualError(t, err, `pb.yaml:3:15: policy.express.realtime: unknown value "10" (allowed: off, nice, fifo)`)

	c := bridge.DefaultConfig()
	require.NoError(t, c.OverrideFrom("environment: PICOBRIDGE_EXPRESS_REALTIME", "policy.express.realtime", "fifo"))
	require.Equal(t, bridge.RealtimeFIFO, c.Policy.Express.Realtime)
	require.EqualError(t, c.OverrideFrom("environment: PICOBRIDGE_EXPRESS_REALTIME", "policy.express.realtime", "FIFO"),
		`environment: PICOBRIDGE_EXPRESS_REALTIME: policy.express.realtime: unknown value "FIFO" (allowed: off, nice, fifo)`)
	require.EqualError(t, c.OverrideFrom("--cfg", "policy.express.realtime", "yes"),
		`--cfg: policy.express.realtime: unknown value "yes" (allowed: off, nice, fifo)`)

	// set in code: Validate names the key and the allowed values (at the
	// line that set it last, here the embedded default's)
	c = bridge.DefaultConfig()
	c.Policy.Express.Realtime = "rt"
	err = c.Validate()
	require.ErrorIs(t, err, knobs.ErrBadValue)
	line := 0 // the embedded default's line of the key, wherever other keys move it
	for i, l := range strings.Split(string(bridge.DefaultYAML), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "realtime:") {
			line = i + 1
		}
	}
	require.NotZero(t, line, "default.yaml has no realtime key")
	require.EqualError(t, err, fmt.Sprintf(`<default>:%d:15: policy.express.realtime: unknown value "rt" (allowed: off, nice, fifo)`, line))
}
