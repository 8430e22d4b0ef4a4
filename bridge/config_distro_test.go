package bridge_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

// dds.ros_distro picks the ros_discovery_info Gid size; the default is humble
// and a bad value is named with the allowed ones and its position.
func TestConfigROSDistro(t *testing.T) {
	require.Equal(t, "humble", bridge.DefaultConfig().DDS.ROSDistro)
	dir := t.TempDir()
	p := filepath.Join(dir, "pb.yaml")
	require.NoError(t, os.WriteFile(p, []byte("dds:\n  ros_distro: iron\n"), 0o600))
	c, err := bridge.LoadConfig(p)
	require.NoError(t, err)
	require.Equal(t, "iron", c.DDS.ROSDistro)

	require.NoError(t, os.WriteFile(p, []byte("dds:\n  ros_distro: Humble\n"), 0o600))
	_, err = bridge.LoadConfig(p)
	require.EqualError(t, err, p+`:2:15: dds.ros_distro: want one of foxy, galactic, humble, iron, jazzy, kilted, rolling (got "Humble")`)

	c = bridge.DefaultConfig()
	require.NoError(t, c.OverrideFrom("--ros-distro", "dds.ros_distro", "jazzy"))
	require.NoError(t, c.Validate())
	require.NoError(t, c.OverrideFrom("--ros-distro", "dds.ros_distro", `""`))
	require.EqualError(t, c.Validate(), `--ros-distro: dds.ros_distro: want one of foxy, galactic, humble, iron, jazzy, kilted, rolling (got "")`)
}
