package ros2

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const stringHash = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"

func TestZenohKeyExpr(t *testing.T) {
	// The example of zenoh-wire.md §16.1.
	k, err := ZenohKeyExpr(0, "/chatter", "std_msgs/msg/String", stringHash)
	require.NoError(t, err)
	require.Equal(t, "0/chatter/std_msgs::msg::dds_::String_/"+stringHash, k)

	k, err = ZenohKeyExpr(42, "/robot1/scan", LaserScanType, "")
	require.NoError(t, err)
	require.Equal(t, "42/robot1/scan/sensor_msgs::msg::dds_::LaserScan_/TypeHashNotSupported", k)

	zk, err := ParseZenohKeyExpr(k)
	require.NoError(t, err)
	require.Equal(t, ZenohKey{Domain: 42, Topic: "/robot1/scan", Type: LaserScanType, TypeHash: TypeHashNotSupported}, zk)
	require.Equal(t, k, zk.String())

	k, err = ZenohKeyExpr(0, "/add_two_ints", "example_interfaces/srv/AddTwoInts", "")
	require.NoError(t, err)
	require.Equal(t, "0/add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/TypeHashNotSupported", k)

	_, err = ZenohKeyExpr(0, "chatter", "std_msgs/msg/String", "")
	require.ErrorIs(t, err, ErrInvalidName)
	_, err = ZenohKeyExpr(0, "/chatter", "std_msgs/String", "")
	require.ErrorIs(t, err, ErrInvalidType)
	_, err = ZenohKeyExpr(0, "/chatter", "std_msgs/msg/String", "RIHS01_abc")
	require.ErrorIs(t, err, ErrInvalidType)
	_, err = ZenohKeyExpr(0, "/chatter", "std_msgs/msg/String", strings.ToUpper(stringHash))
	require.ErrorIs(t, err, ErrInvalidType)

	for _, bad := range []string{"", "0/chatter", "x/chatter/std_msgs::msg::dds_::String_/" + stringHash,
		"0//std_msgs::msg::dds_::String_/" + stringHash, "0/chatter/std_msgs/msg/String/" + stringHash,
		"0/chatter/std_msgs::msg::dds_::String_/RIHS02_x", "99999999999/chatter/std_msgs::msg::dds_::String_/" + stringHash} {
		_, err := ParseZenohKeyExpr(bad)
		require.Error(t, err, bad)
	}
}

func TestTypeHashFromUserData(t *testing.T) {
	h, ok := TypeHashFromUserData([]byte("typehash=" + stringHash + ";"))
	require.True(t, ok)
	require.Equal(t, stringHash, h)
	h, ok = TypeHashFromUserData([]byte("foo=bar;typehash=" + stringHash + ";x=y"))
	require.True(t, ok)
	require.Equal(t, stringHash, h)
	_, ok = TypeHashFromUserData([]byte("foo=bar;"))
	require.False(t, ok)
	_, ok = TypeHashFromUserData(nil)
	require.False(t, ok)
}

func TestLivelinessMangling(t *testing.T) {
	require.Equal(t, "%", MangleLiveliness(""))
	require.Equal(t, "%chatter", MangleLiveliness("/chatter"))
	require.Equal(t, "%robot1%chatter", MangleLiveliness("/robot1/chatter"))
	require.Equal(t, "std_msgs::msg::dds_::String_", MangleLiveliness("std_msgs::msg::dds_::String_"))
	require.Equal(t, "/robot1/chatter", DemangleLiveliness("%robot1%chatter"))
	require.Equal(t, "", DemangleLiveliness("%"))
}
