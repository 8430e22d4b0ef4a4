//go:build cgo && cyclonedds

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
	"github.com/picobridge/picobridge/internal/anchortest"
	"github.com/picobridge/picobridge/internal/netns"
	"github.com/picobridge/picobridge/zenohpath"
)

var replayedRE = regexp.MustCompile(`replayed (\d+) messages`)

// anchorPlugin is a running zenohd with the ros2dds plugin and a Go Zenoh
// client counting the samples the plugin publishes on "scan".
type anchorPlugin struct {
	log *anchortest.Log
	got atomic.Int64
}

// startAnchorPlugin starts zenohd with zenoh-plugin-ros2dds on DDS domain
// domain, ROS_DISTRO=distro ("" leaves it unset: the plugin assumes iron),
// and the plugin's Cyclone on our loopback-unicast configuration
// (CYCLONEDDS_URI) through internal/anchortest, then a Zenoh client on it
// counting "scan".
func startAnchorPlugin(t *testing.T, anchors string, domain int, distro string) *anchorPlugin {
	t.Helper()
	z := anchortest.StartROS2DDS(t, anchortest.Options{Anchors: anchors, Domain: domain, Distro: distro,
		CycloneURI: ddspath.Config{DomainID: uint32(domain)}.XML()})
	a := &anchorPlugin{log: z.Log}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var sess *zenohpath.Session
	require.Eventually(t, func() bool {
		var err error
		sess, err = zenohpath.Open(ctx, zenohpath.Config{Connect: []string{z.Endpoint()}})
		return err == nil
	}, 15*time.Second, 100*time.Millisecond, "zenohd does not accept")
	t.Cleanup(func() { _ = sess.Close() })
	_, err := sess.DeclareSubscriber("scan", func(s zenohpath.Sample) {
		if s.Kind() == zenohpath.SampleKindPut {
			a.got.Add(1)
		}
	})
	require.NoError(t, err)
	time.Sleep(2 * time.Second) // the plugin's participant is up and has found ours (SPDP)
	return a
}

// pluginLines are the plugin's log lines about nodes and routes.
func (a *anchorPlugin) pluginLines() []string {
	return a.log.Lines("ROS Node", "Route Publisher", "ros_discovery_info")
}

// TestAnchorROS2DDSRoutesBagReplay (opt-in: PICOBRIDGE_ANCHORS): zenohd
// 1.10.2 with zenoh-plugin-ros2dds 1.10.2 on DDS domain N,
// `picobridge bag replay --fixed-rate /scan=50 --duration 2s` on domain N, a
// Go Zenoh client subscribed to "scan" on zenohd, counting:
//
//   - plugin ROS_DISTRO=humble: without a node on ros_discovery_info
//     (--node "") the plugin discovers the writer and routes nothing (0);
//     with the default node /picobridge_bag_replay it routes every sample;
//   - plugin ROS_DISTRO=jazzy, replay --ros-distro jazzy (16-byte GIDs):
//     every sample;
//   - plugin without ROS_DISTRO (it assumes iron), replay humble: the plugin
//     misreads our 24-byte GIDs and routes nothing (0) — why dds.ros_distro
//     must match.
//
// The whole test runs in a network namespace of its own (only lo), and the
// plugin's Cyclone gets our loopback-unicast configuration through
// CYCLONEDDS_URI: no multicast on any interface.
func TestAnchorROS2DDSRoutesBagReplay(t *testing.T) {
	anchors := anchortest.Dir(t)
	bag := rosbagtest.MumbleBag(t, "no_loop_room")
	if !netns.Run(t) {
		return
	}
	replay := func(a *anchorPlugin, domain int, node, distro string) (sent, received int64) {
		a.got.Store(0)
		_, stderr, err := runCLI(t, "bag", "replay", "--domain", strconv.Itoa(domain), "--topics", "/scan",
			"--fixed-rate", "/scan=50", "--duration", "2s", "--progress", "0", "--node", node, "--ros-distro", distro, bag)
		require.NoError(t, err, stderr)
		m := replayedRE.FindStringSubmatch(stderr)
		require.NotNil(t, m, stderr)
		sent, _ = strconv.ParseInt(m[1], 10, 64)
		// what is on its way arrives within a second; nothing more comes after
		time.Sleep(time.Second)
		return sent, a.got.Load()
	}
	for _, tc := range []struct {
		name                       string
		pluginDistro, replayDistro string
		node                       string
		routed                     bool
	}{
		{"humble, no node", "humble", "humble", "", false},
		{"humble", "humble", "humble", DefaultReplayNode, true},
		{"jazzy", "jazzy", "jazzy", DefaultReplayNode, true},
		{"plugin assumes iron, replay humble", "", "humble", DefaultReplayNode, false},
	} {
		domain := 100 + rand.IntN(100)
		a := startAnchorPlugin(t, anchors, domain, tc.pluginDistro)
		sent, got := replay(a, domain, tc.node, tc.replayDistro)
		for _, l := range a.pluginLines() {
			t.Logf("%s: zenohd: %s", tc.name, l)
		}
		t.Logf("%s: zenoh-plugin-ros2dds (ROS_DISTRO=%q) routed %d of %d /scan samples of bag replay --node %q --ros-distro %s",
			tc.name, tc.pluginDistro, got, sent, tc.node, tc.replayDistro)
		require.GreaterOrEqual(t, sent, int64(90), tc.name)
		if tc.routed {
			require.Equal(t, sent, got, "%s: every replayed sample reaches the Zenoh subscriber through the plugin", tc.name)
		} else {
			require.Zero(t, got, "%s: the plugin routes nothing", tc.name)
		}
	}
}

// TestAnchorROS2DDSSeesGatewayNode (opt-in: PICOBRIDGE_ANCHORS): beside
// zenohd + zenoh-plugin-ros2dds (ROS_DISTRO=humble) on DDS domain N, a
// gateway (dds.nodename pico_gw in /robot1) bridges the /scan of a bag replay
// on domain N: the plugin discovers the ROS node /robot1/pico_gw and that it
// declares the reader on rt/scan (the gateway's DDS → Zenoh route). The
// gateway's Zenoh side is not connected to zenohd (the two bridges would
// loop /scan through each other).
func TestAnchorROS2DDSSeesGatewayNode(t *testing.T) {
	anchors := anchortest.Dir(t)
	bag := rosbagtest.MumbleBag(t, "no_loop_room")
	if !netns.Run(t) {
		return
	}
	domain := 100 + rand.IntN(100)
	a := startAnchorPlugin(t, anchors, domain, "humble")
	cfg, err := bridge.ParseConfig("test.yaml", []byte(fmt.Sprintf(
		"zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\n  namespace: /robot1\n  nodename: pico_gw\n", domain)))
	require.NoError(t, err)
	s, err := server.Start(context.Background(), server.Options{Config: cfg})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	_, stderr, err := runCLI(t, "bag", "replay", "--domain", strconv.Itoa(domain), "--topics", "/scan",
		"--fixed-rate", "/scan=50", "--duration", "2s", "--progress", "0", bag)
	require.NoError(t, err, stderr)
	var lines []string
	for _, l := range a.pluginLines() {
		if strings.Contains(l, "pico_gw") {
			lines = append(lines, l)
			t.Log("zenohd: " + l)
		}
	}
	all := strings.Join(lines, "\n")
	require.Contains(t, all, "Discovered ROS Node /robot1/pico_gw")
	require.Contains(t, all, "ROS Node /robot1/pico_gw declares a new Reader on rt/scan")
}
