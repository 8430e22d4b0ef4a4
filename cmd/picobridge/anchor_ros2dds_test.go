//go:build cgo && cyclonedds

package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
	"github.com/picobridge/picobridge/internal/netns"
	"github.com/picobridge/picobridge/zenohpath"
)

// needAnchors returns the folder of the anchor build (scripts/anchors.sh):
// $PICOBRIDGE_ANCHORS with bin/zenohd and lib/libzenoh_plugin_ros2dds.so, or
// skips the test saying what is missing.
func needAnchors(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PICOBRIDGE_ANCHORS")
	if dir == "" {
		t.Skip("SKIP: PICOBRIDGE_ANCHORS is unset: build zenohd and zenoh-plugin-ros2dds 1.10.2 with scripts/anchors.sh and export PICOBRIDGE_ANCHORS=$(bash scripts/anchors.sh --print)")
	}
	for _, f := range []string{"bin/zenohd", "lib/libzenoh_plugin_ros2dds.so"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Skipf("SKIP: %s missing in PICOBRIDGE_ANCHORS=%s (run scripts/anchors.sh)", f, dir)
		}
	}
	return dir
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var replayedRE = regexp.MustCompile(`replayed (\d+) messages`)

// lockedBuffer collects a child process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// anchorPlugin is a running zenohd with the ros2dds plugin and a Go Zenoh
// client counting the samples the plugin publishes on "scan".
type anchorPlugin struct {
	log *lockedBuffer
	got atomic.Int64
}

// startAnchorPlugin starts zenohd with zenoh-plugin-ros2dds on DDS domain
// domain, ROS_DISTRO=distro ("" leaves it unset: the plugin assumes iron),
// and the plugin's Cyclone on our loopback-unicast configuration
// (CYCLONEDDS_URI); killed in t.Cleanup, its output logged on failure.
func startAnchorPlugin(t *testing.T, anchors string, domain int, distro string) *anchorPlugin {
	t.Helper()
	port := freeTCPPort(t)
	a := &anchorPlugin{log: &lockedBuffer{}}
	zenohd := exec.Command(filepath.Join(anchors, "bin/zenohd"), "--plugin-search-dir", filepath.Join(anchors, "lib"),
		"-l", fmt.Sprintf("tcp/127.0.0.1:%d", port), "--no-multicast-scouting",
		"--cfg", fmt.Sprintf("plugins/ros2dds/domain:%d", domain))
	env := []string{"CYCLONEDDS_URI=" + ddspath.Config{DomainID: uint32(domain)}.XML(), "RUST_LOG=info,zenoh_plugin_ros2dds=debug"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ROS_DISTRO=") && !strings.HasPrefix(e, "CYCLONEDDS_URI=") {
			env = append(env, e)
		}
	}
	if distro != "" {
		env = append(env, "ROS_DISTRO="+distro)
	}
	zenohd.Env = env
	zenohd.Stdout, zenohd.Stderr = a.log, a.log
	require.NoError(t, zenohd.Start())
	t.Cleanup(func() {
		_ = zenohd.Process.Kill()
		_ = zenohd.Wait()
		if t.Failed() {
			t.Logf("zenohd output:\n%s", a.log.String())
		}
	})
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(a.log.String(), "Successfully started plugin ros2dds"); {
		out := a.log.String()
		if i := strings.Index(out, "Plugin load failure"); i >= 0 {
			require.FailNow(t, "zenohd could not load the ros2dds plugin (built by another rustc or zenoh version?)", "%s", out[i:])
		}
		require.True(t, time.Now().Before(deadline), "zenohd did not start the ros2dds plugin within 15 s")
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var sess *zenohpath.Session
	require.Eventually(t, func() bool {
		var err error
		sess, err = zenohpath.Open(ctx, zenohpath.Config{Connect: []string{fmt.Sprintf("tcp/127.0.0.1:%d", port)}})
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
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
	var out []string
	for _, l := range strings.Split(ansi.ReplaceAllString(a.log.String(), ""), "\n") {
		if strings.Contains(l, "ROS Node") || strings.Contains(l, "Route Publisher") || strings.Contains(l, "ros_discovery_info") {
			out = append(out, l)
		}
	}
	return out
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
	anchors := needAnchors(t)
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
	anchors := needAnchors(t)
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
