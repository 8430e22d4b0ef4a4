package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/zenohpath"
)

// TestKnobsExplainGateway: `knobs explain --gateway --device` prints the
// ladder of a connected device, the knobs it announced on the device rung.
func TestKnobsExplainGateway(t *testing.T) {
	cfg, err := bridge.ParseConfig("gw.yaml", []byte(`
zenoh:
  listen: [tcp/127.0.0.1:0]
metrics:
  listen: 127.0.0.1:0
devices:
  list:
    - {name: imu1, board: native_sim}
`))
	require.NoError(t, err)
	s, err := server.Start(context.Background(), server.Options{Config: cfg, DisableDDS: true})
	require.NoError(t, err)
	defer s.Close()
	dev, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	defer dev.Close()
	_, err = server.DeclareProbeResponder(dev, "imu1")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Gateway().Device("imu1") != nil }, 10*time.Second, 10*time.Millisecond)
	a := knobs.AnnouncementOf(s.Gateway().Device("imu1").Resolved())
	a.FragMaxSize = 4096
	require.NoError(t, dev.Put(bridge.KnobsKey("imu1"), a.Append(nil), nil))
	require.Eventually(t, func() bool { return s.Gateway().Device("imu1").Announced() }, 10*time.Second, 10*time.Millisecond)

	out, err := run(t, "knobs", "explain", "--gateway", s.HTTPAddr(), "--device", "imu1")
	require.NoError(t, err)
	require.Contains(t, out, "platform: zephyr (firmware/platforms/zephyr.toml), inherits generic\nboard:    native_sim (firmware/boards/zephyr/native_sim.toml)\n")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "zenoh.wire.frag_max_size ") {
			line = strings.Join(strings.Fields(l), " ")
		}
	}
	require.Equal(t, "zenoh.wire.frag_max_size 4096 bytes device imu1 (announced)", line)

	_, err = run(t, "knobs", "explain", "--gateway", s.HTTPAddr(), "--device", "nobody")
	require.ErrorContains(t, err, "404 Not Found")
	_, err = run(t, "knobs", "explain", "--gateway", s.HTTPAddr())
	require.Equal(t, 2, exitCode(err))
}
