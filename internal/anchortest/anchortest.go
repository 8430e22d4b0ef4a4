// Package anchortest starts the anchor build (scripts/anchors.sh: zenohd and
// zenoh-plugin-ros2dds 1.10.2) for opt-in interop tests: the folder comes
// from $PICOBRIDGE_ANCHORS, a missing build is a skip that says what to run,
// zenohd's output is logged when the test fails, and it is killed in
// t.Cleanup.
package anchortest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Env names the folder of the anchor build.
const Env = "PICOBRIDGE_ANCHORS"

// Dir returns $PICOBRIDGE_ANCHORS holding bin/zenohd and
// lib/libzenoh_plugin_ros2dds.so, or skips the test saying what is missing.
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(Env)
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

// FreeTCPPort is a loopback TCP port free at the time of the call.
func FreeTCPPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Log collects a child process's output while the test reads it.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Lines are the output's lines (colour codes removed) that contain any of
// words.
func (l *Log) Lines(words ...string) []string {
	var out []string
	for _, line := range strings.Split(ansi.ReplaceAllString(l.String(), ""), "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

// Options of a zenohd with the ros2dds plugin.
type Options struct {
	Anchors string // Dir's result
	Domain  int    // plugins/ros2dds/domain
	// Distro is ROS_DISTRO for the plugin ("" leaves it unset: it assumes iron).
	Distro string
	// CycloneURI is the plugin's CYCLONEDDS_URI (our loopback configuration).
	CycloneURI string
	// Connect are endpoints zenohd dials (-e), besides listening on Port.
	Connect []string
	// Namespace is plugins/ros2dds/namespace ("" = "/").
	Namespace string
}

// ROS2DDS is a running zenohd with the ros2dds plugin.
type ROS2DDS struct {
	Port int // zenohd listens on tcp/127.0.0.1:Port
	Log  *Log
}

// Endpoint is zenohd's listening endpoint.
func (z *ROS2DDS) Endpoint() string { return fmt.Sprintf("tcp/127.0.0.1:%d", z.Port) }

// StartROS2DDS starts zenohd with zenoh-plugin-ros2dds and returns once the
// plugin has started (at most 15 s); debug logs of the plugin on.
func StartROS2DDS(t testing.TB, o Options) *ROS2DDS {
	t.Helper()
	z := &ROS2DDS{Port: FreeTCPPort(t), Log: &Log{}}
	args := []string{"--plugin-search-dir", filepath.Join(o.Anchors, "lib"), "-l", z.Endpoint(), "--no-multicast-scouting",
		"--cfg", fmt.Sprintf("plugins/ros2dds/domain:%d", o.Domain)}
	if o.Namespace != "" {
		args = append(args, "--cfg", fmt.Sprintf("plugins/ros2dds/namespace:%q", o.Namespace))
	}
	for _, e := range o.Connect {
		args = append(args, "-e", e)
	}
	cmd := exec.Command(filepath.Join(o.Anchors, "bin/zenohd"), args...)
	env := []string{"RUST_LOG=info,zenoh_plugin_ros2dds=debug"}
	if o.CycloneURI != "" {
		env = append(env, "CYCLONEDDS_URI="+o.CycloneURI)
	}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ROS_DISTRO=") && !strings.HasPrefix(e, "CYCLONEDDS_URI=") && !strings.HasPrefix(e, "RUST_LOG=") {
			env = append(env, e)
		}
	}
	if o.Distro != "" {
		env = append(env, "ROS_DISTRO="+o.Distro)
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = z.Log, z.Log
	if err := cmd.Start(); err != nil {
		t.Fatalf("zenohd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("zenohd output:\n%s", z.Log.String())
		}
	})
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(z.Log.String(), "Successfully started plugin ros2dds"); {
		out := z.Log.String()
		if i := strings.Index(out, "Plugin load failure"); i >= 0 {
			t.Fatalf("zenohd could not load the ros2dds plugin (built by another rustc or zenoh version?): %s", out[i:])
		}
		if time.Now().After(deadline) {
			t.Fatalf("zenohd did not start the ros2dds plugin within 15 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return z
}
