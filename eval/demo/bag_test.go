package demo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/rosbag"
	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
	"github.com/picobridge/picobridge/eval/demo/demobag"
)

// noSharedAbove skips when a shared/ recording sits above dir (the test
// would then find it, as the demo does).
func noSharedAbove(t *testing.T, dir string) {
	t.Helper()
	if p, ok := walkUp(dir); ok {
		t.Skipf("a recording exists above %s: %s", dir, p)
	}
}

// TestFindBagEmbeddedWithoutShared: a clone with no shared/ folder anywhere
// (working directory and executable) and PICOBRIDGE_SHARED unset replays the
// embedded slice, written to the user's cache folder; no network, no
// shared data.
func TestFindBagEmbeddedWithoutShared(t *testing.T) {
	wd := t.TempDir()
	cache := t.TempDir()
	t.Setenv("PICOBRIDGE_SHARED", "")
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Chdir(wd)
	noSharedAbove(t, wd)
	exe, err := os.Executable()
	require.NoError(t, err)
	noSharedAbove(t, filepath.Dir(exe))

	ch, err := FindBag()
	require.NoError(t, err)
	require.Equal(t, BagChoice{Dir: filepath.Join(cache, "picobridge", "demobag-"+demobag.Hash(), demobag.Name), From: BagFromEmbedded}, ch)
	require.True(t, ch.Embedded())
	b, err := rosbag.Open(ch.Dir)
	require.NoError(t, err)
	defer b.Close()
	scan, ok := b.Topic(ScanTopic)
	require.True(t, ok)
	imu, ok := b.Topic(IMUTopic)
	require.True(t, ok)
	require.Equal(t, [2]int64{451, 1861}, [2]int64{scan.MessageCount, imu.MessageCount})
	require.FileExists(t, filepath.Join(filepath.Dir(ch.Dir), "LICENSE"))
	require.Contains(t, describeBag(ch.Dir, ch.From), "embedded slice: the first 62 s of mumble_rplidar_imu/hallway_room_loop; BSD-2-Clause")
}

// makeShared creates root/shared/data/mumble_rplidar_imu/hallway_room_loop
// (an empty folder: FindBag looks for the folder only) and returns it.
func makeShared(t *testing.T, root string) string {
	t.Helper()
	p := filepath.Join(root, rosbagtest.MumbleRel, Bag)
	require.NoError(t, os.MkdirAll(p, 0o755))
	return p
}

// TestFindBagPrecedence: $PICOBRIDGE_SHARED, then shared/ above the working
// directory, then the embedded slice; a PICOBRIDGE_SHARED without the bag is
// an error, not a silent fallback.
func TestFindBagPrecedence(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	walk := t.TempDir()
	inWalk := makeShared(t, walk)
	deep := filepath.Join(walk, "clone", "cmd")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	t.Chdir(deep)

	env := t.TempDir()
	inEnv := makeShared(t, env)
	t.Setenv("PICOBRIDGE_SHARED", filepath.Join(env, "shared"))
	ch, err := FindBag()
	require.NoError(t, err)
	require.Equal(t, BagChoice{Dir: inEnv, From: BagFromEnv}, ch, "the variable wins over walking up")

	t.Setenv("PICOBRIDGE_SHARED", "")
	ch, err = FindBag()
	require.NoError(t, err)
	require.Equal(t, BagChoice{Dir: inWalk, From: BagFromWorkDir}, ch, "../shared beside the clone")

	bad := t.TempDir()
	t.Setenv("PICOBRIDGE_SHARED", bad)
	_, err = FindBag()
	require.EqualError(t, err, "PICOBRIDGE_SHARED="+bad+": no data/mumble_rplidar_imu/hallway_room_loop there; unset it to replay the embedded slice, or pass --bag DIR")
}

// TestConfigDefaultsBagFrom: a BagDir given without its origin is --bag's.
func TestConfigDefaultsBagFrom(t *testing.T) {
	c := Config{BagDir: t.TempDir()}
	require.NoError(t, c.defaults())
	require.Equal(t, BagFromFlag, c.BagFrom)
}
