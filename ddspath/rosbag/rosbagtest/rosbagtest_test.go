package rosbagtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFindMumbleDirFromEnv(t *testing.T) {
	shared := t.TempDir()
	want := filepath.Join(shared, "data", "mumble_rplidar_imu")
	require.NoError(t, os.MkdirAll(want, 0o755))
	t.Setenv("PICOBRIDGE_SHARED", shared)
	got, ok := FindMumbleDir()
	require.True(t, ok)
	require.Equal(t, want, got)
}

func TestFindMumbleDirByWalkingUp(t *testing.T) {
	root := t.TempDir()
	want := filepath.Join(root, MumbleRel)
	require.NoError(t, os.MkdirAll(want, 0o755))
	deep := filepath.Join(root, "a", "b", "c")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	t.Setenv("PICOBRIDGE_SHARED", filepath.Join(root, "nowhere"))
	t.Chdir(deep)
	got, ok := FindMumbleDir()
	require.True(t, ok)
	require.Equal(t, want, got)
}

func TestFindMumbleDirMissing(t *testing.T) {
	t.Setenv("PICOBRIDGE_SHARED", "")
	t.Chdir(t.TempDir())
	if _, ok := FindMumbleDir(); ok {
		t.Skip("a shared/data/mumble_rplidar_imu exists above the temp dir")
	}
}
