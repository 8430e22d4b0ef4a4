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

// TestAnchorROS2DDSRoutesBagReplay (opt-in: PICOBRIDGE_ANCHORS): zenohd
// 1.10.2 with zenoh-plugin-ros2dds 1.10.2 (ROS_DISTRO=humble) on DDS domain
// N, `picobridge bag replay --fixed-rate /scan=50` on domain N, a Go Zenoh
// client subscribed to "scan" on zenohd. Without a node on ros_discovery_info
// (--node "") the plugin discovers the writer and routes nothing: 0 samples.
// With the default node /picobridge_bag_replay it routes every sample the
// replay wrote. The whole test runs in a network namespace of its own (only
// lo), and the plugin's Cyclone gets our loopback-unicast configuration
// through CYCLONEDDS_URI: no multicast on any interface.
func TestAnchorROS2DDSRoutesBagReplay(t *testing.T) {
	anchors := needAnchors(t)
	bag := rosbagtest.MumbleBag(t, "no_loop_room")
	if !netns.Run(t) {
		return
	}
	domain := 100 + rand.IntN(100)
	port := freeTCPPort(t)
	var log lockedBuffer
	zenohd := exec.Command(filepath.Join(anchors, "bin/zenohd"), "--plugin-search-dir", filepath.Join(anchors, "lib"),
		"-l", fmt.Sprintf("tcp/127.0.0.1:%d", port), "--no-multicast-scouting",
		"--cfg", fmt.Sprintf("plugins/ros2dds/domain:%d", domain))
	zenohd.Env = append(os.Environ(), "ROS_DISTRO=humble", "CYCLONEDDS_URI="+ddspath.Config{DomainID: uint32(domain)}.XML(),
		"RUST_LOG=info,zenoh_plugin_ros2dds=debug")
	zenohd.Stdout, zenohd.Stderr = &log, &log
	require.NoError(t, zenohd.Start())
	t.Cleanup(func() {
		_ = zenohd.Process.Kill()
		_ = zenohd.Wait()
		if t.Failed() {
			t.Logf("zenohd output:\n%s", log.String())
		}
	})

	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(log.String(), "Successfully started plugin ros2dds"); {
		out := log.String()
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
	var got atomic.Int64
	sub, err := sess.DeclareSubscriber("scan", func(s zenohpath.Sample) {
		if s.Kind() == zenohpath.SampleKindPut {
			got.Add(1)
		}
	})
	require.NoError(t, err)
	defer sub.Undeclare()
	time.Sleep(2 * time.Second) // the plugin's participant is up and has found ours (SPDP)

	replay := func(node string) (sent, received int64) {
		got.Store(0)
		_, stderr, err := runCLI(t, "bag", "replay", "--domain", strconv.Itoa(domain), "--topics", "/scan",
			"--fixed-rate", "/scan=50", "--duration", "2s", "--progress", "0", "--node", node, bag)
		require.NoError(t, err, stderr)
		m := replayedRE.FindStringSubmatch(stderr)
		require.NotNil(t, m, stderr)
		sent, _ = strconv.ParseInt(m[1], 10, 64)
		// what is on its way arrives within a second; nothing more comes after
		time.Sleep(time.Second)
		return sent, got.Load()
	}
	sentBefore, before := replay("")
	sentAfter, after := replay(DefaultReplayNode)
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
	for _, l := range strings.Split(ansi.ReplaceAllString(log.String(), ""), "\n") {
		if strings.Contains(l, "ROS Node") || strings.Contains(l, "Route Publisher") || strings.Contains(l, "Discovered DDS publication") {
			t.Log("zenohd: " + l)
		}
	}
	t.Logf("zenoh-plugin-ros2dds routed /scan: without a node %d of %d samples, with node %s %d of %d", before, sentBefore, DefaultReplayNode, after, sentAfter)
	require.Zero(t, before, "the plugin routes a writer no node claims")
	require.GreaterOrEqual(t, sentAfter, int64(90))
	require.Equal(t, sentAfter, after, "every replayed sample reaches the Zenoh subscriber through the plugin")
}
