// Package rosbagtest finds the shared real-data bags for tests. It never copies them.
package rosbagtest

import (
	"os"
	"path/filepath"
)

// TB is the part of testing.TB the helpers use. Taking it, not testing.TB,
// keeps the testing package out of the binaries that call FindMumbleDir
// (cmd/picoeval, eval/demo, eval/runner).
type TB interface {
	Helper()
	Skipf(format string, args ...any)
}

// MumbleRel is the data set's path relative to the shared folder's parent.
const MumbleRel = "shared/data/mumble_rplidar_imu"

// MumbleBags are the bag directories of the data set that tests expect.
var MumbleBags = []string{"hallway_room_loop", "no_loop_room"}

// MumbleDir returns the mumble_rplidar_imu folder: $PICOBRIDGE_SHARED/data/mumble_rplidar_imu
// when PICOBRIDGE_SHARED is set, else the first shared/data/mumble_rplidar_imu found walking
// up from the working directory. It skips the test when neither exists.
func MumbleDir(t TB) string {
	t.Helper()
	if dir, ok := FindMumbleDir(); ok {
		return dir
	}
	t.Skipf("real bags not found: set PICOBRIDGE_SHARED to the shared/ folder (want %s)", MumbleRel)
	return ""
}

// FindMumbleDir is MumbleDir without a test.
func FindMumbleDir() (string, bool) {
	if s := os.Getenv("PICOBRIDGE_SHARED"); s != "" {
		dir := filepath.Join(s, "data", "mumble_rplidar_imu")
		if isDir(dir) {
			return dir, true
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := wd; ; {
		if cand := filepath.Join(d, MumbleRel); isDir(cand) {
			return cand, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

// MumbleBag returns the directory of one bag of the data set, skipping like MumbleDir.
func MumbleBag(t TB, name string) string {
	t.Helper()
	dir := filepath.Join(MumbleDir(t), name)
	if !isDir(dir) {
		t.Skipf("bag %s not found in %s", name, filepath.Dir(dir))
	}
	return dir
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
