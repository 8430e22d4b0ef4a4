package demo

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
	"github.com/picobridge/picobridge/eval/demo/demobag"
)

// Where the demo's bag came from (BagChoice.From), in FindBag's order.
const (
	BagFromFlag     = "--bag"
	BagFromEnv      = "$PICOBRIDGE_SHARED"
	BagFromWorkDir  = "shared/ above the working directory"
	BagFromExe      = "shared/ above the executable"
	BagFromEmbedded = "embedded slice"
)

// BagChoice is the bag the demo replays and where it was found.
type BagChoice struct {
	Dir  string // bag directory (metadata.yaml + .db3)
	From string // one of the BagFrom constants
}

// Embedded reports whether the choice is the slice carried by the binary.
func (c BagChoice) Embedded() bool { return c.From == BagFromEmbedded }

// FindBag picks the bag the demo replays when --bag is not given, first
// found wins:
//
//  1. $PICOBRIDGE_SHARED/data/mumble_rplidar_imu/hallway_room_loop when the
//     variable is set; set but without the bag is an error (an explicit
//     choice that cannot be honoured is not replaced silently);
//  2. shared/data/mumble_rplidar_imu/hallway_room_loop in the working
//     directory or a parent (../shared beside a checkout), as the tests'
//     rosbagtest does;
//  3. the same above the executable's folder;
//  4. the embedded slice (eval/demo/demobag: the first 62 s of the same
//     recording), written to the user's cache folder on first use.
//
// Steps 1-3 give the full 123 s recording; the demo's default 60 s runs the
// same on both. The error is the environment variable's, or the file
// system's when the slice cannot be written.
func FindBag() (BagChoice, error) {
	if s := os.Getenv("PICOBRIDGE_SHARED"); s != "" {
		p := filepath.Join(s, "data", "mumble_rplidar_imu", Bag)
		if !isDir(p) {
			return BagChoice{}, fmt.Errorf("PICOBRIDGE_SHARED=%s: no %s there; unset it to replay the embedded slice, or pass --bag DIR", s, filepath.Join("data", "mumble_rplidar_imu", Bag))
		}
		return BagChoice{Dir: p, From: BagFromEnv}, nil
	}
	if wd, err := os.Getwd(); err == nil {
		if p, ok := walkUp(wd); ok {
			return BagChoice{Dir: p, From: BagFromWorkDir}, nil
		}
	}
	if exe, err := os.Executable(); err == nil {
		if p, ok := walkUp(filepath.Dir(exe)); ok {
			return BagChoice{Dir: p, From: BagFromExe}, nil
		}
	}
	dir, err := demobag.Materialize("")
	if err != nil {
		return BagChoice{}, fmt.Errorf("the embedded bag: %w (pass --bag DIR)", err)
	}
	return BagChoice{Dir: dir, From: BagFromEmbedded}, nil
}

// walkUp looks for shared/data/mumble_rplidar_imu/<Bag> in d and its parents.
func walkUp(d string) (string, bool) {
	for {
		if p := filepath.Join(d, rosbagtest.MumbleRel, Bag); isDir(p) {
			return p, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// describeBag is the demo's first line about its data.
func describeBag(dir, from string) string {
	if from == BagFromEmbedded {
		return fmt.Sprintf("%s (%s: the first %.0f s of %s; %s)", dir, from, demobag.Span.Seconds(), demobag.Source, demobag.Notice)
	}
	return fmt.Sprintf("%s (%s)", dir, from)
}
