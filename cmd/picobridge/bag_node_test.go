package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
)

func TestSplitNodeName(t *testing.T) {
	for in, want := range map[string][2]string{
		"/picobridge_bag_replay": {"/", "picobridge_bag_replay"},
		"replay":                 {"/", "replay"},
		"/robot1/arm/replay":     {"/robot1/arm", "replay"},
	} {
		ns, name, err := splitNodeName(in)
		require.NoError(t, err, in)
		require.Equal(t, want, [2]string{ns, name}, in)
	}
	for _, bad := range []string{"/", "/bag-replay", "/robot1/", "robot1//x", "/9lives"} {
		_, _, err := splitNodeName(bad)
		require.Error(t, err, bad)
	}
}

// --node and --ros-distro are checked before anything is opened.
func TestBagReplayNodeFlags(t *testing.T) {
	dir := rosbagtest.MumbleBag(t, "no_loop_room")
	_, _, err := runCLI(t, "bag", "replay", "--dry-run", "--node", "/bag-replay", dir)
	require.ErrorContains(t, err, `--node "/bag-replay": invalid ROS 2 name "bag-replay" at index 3`)
	_, _, err = runCLI(t, "bag", "replay", "--dry-run", "--ros-distro", "lunar", dir)
	require.ErrorContains(t, err, `--ros-distro: unknown ROS 2 distro "lunar": want one of foxy, galactic, humble, iron, jazzy, kilted, rolling`)
	_, _, err = runCLI(t, "bag", "replay", "--dry-run", "--duration", "10ms", "--node", "", "--ros-distro", "jazzy", dir)
	require.NoError(t, err)
}
