package ros2

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// The token strings zenoh-plugin-ros2dds 1.10.2 writes and parses
// (liveliness_mgt.rs: kedefine!, qos_to_key_expr and its test_qos_key_expr).
func TestROS2DDSTokenKeys(t *testing.T) {
	reliable10 := ROS2DDSQoS{HasReliability: true, Reliability: DDSReliable, HasDurability: true, Durability: DDSVolatile,
		HasHistory: true, History: DDSKeepLast, Depth: 10}
	for _, tc := range []struct {
		tok ROS2DDSToken
		key string
	}{
		{ROS2DDSToken{ZID: "a1b2"}, "@/a1b2/@ros2_lv"},
		{ROS2DDSToken{ZID: "a1b2", Kind: ROS2DDSPublisher, Route: "bot1/chatter", Type: "std_msgs/msg/String", QoS: reliable10},
			"@/a1b2/@ros2_lv/MP/bot1§chatter/std_msgs§msg§String/:1:0:0,10"},
		{ROS2DDSToken{ZID: "a1b2", Kind: ROS2DDSSubscriber, Route: "scan", Type: "sensor_msgs/msg/LaserScan",
			QoS: ROS2DDSQoS{HasReliability: true, Reliability: DDSBestEffort, HasHistory: true, History: DDSKeepLast, Depth: 5}},
			"@/a1b2/@ros2_lv/MS/scan/sensor_msgs§msg§LaserScan/:0::0,5"},
		{ROS2DDSToken{ZID: "a1b2", Kind: ROS2DDSPublisher, Route: "st", Type: "std_msgs/msg/String",
			QoS: ROS2DDSQoS{Keyed: true, HasDurability: true, Durability: DDSTransientLocal, UserData: "typehash=RIHS01_00;"}},
			"@/a1b2/@ros2_lv/MP/st/std_msgs§msg§String/K::1::typehash=RIHS01_00;"},
		{ROS2DDSToken{ZID: "a1b2", Kind: ROS2DDSPublisher, Route: "x", Type: "std_msgs/msg/Empty"}, "@/a1b2/@ros2_lv/MP/x/std_msgs§msg§Empty/:::"},
		{ROS2DDSToken{ZID: "a1b2", Kind: ROS2DDSServiceServer, Route: "add_two_ints", Type: "example_interfaces/srv/AddTwoInts"},
			"@/a1b2/@ros2_lv/SS/add_two_ints/example_interfaces§srv§AddTwoInts"},
		{ROS2DDSToken{ZID: "a1b2", Kind: ROS2DDSServiceClient, Route: "add_two_ints", Type: "example_interfaces/srv/AddTwoInts"},
			"@/a1b2/@ros2_lv/SC/add_two_ints/example_interfaces§srv§AddTwoInts"},
		{ROS2DDSToken{ZID: "a1b2", Kind: ROS2DDSActionServer, Route: "bot1/fibonacci", Type: "example_interfaces/action/Fibonacci"},
			"@/a1b2/@ros2_lv/AS/bot1§fibonacci/example_interfaces§action§Fibonacci"},
		{ROS2DDSToken{ZID: "a1b2", Kind: ROS2DDSActionClient, Route: "fibonacci", Type: "example_interfaces/action/Fibonacci"},
			"@/a1b2/@ros2_lv/AC/fibonacci/example_interfaces§action§Fibonacci"},
	} {
		key, err := tc.tok.Key()
		require.NoError(t, err)
		require.Equal(t, tc.key, key)
		back, err := ParseROS2DDSToken(key)
		require.NoError(t, err, key)
		require.Equal(t, tc.tok, back, key)
	}
}

func TestROS2DDSTokenParsesTheirs(t *testing.T) {
	// a token as the plugin writes it for a humble rclcpp publisher, and one
	// with a KEEP_ALL history written with depth -1
	tok, err := ParseROS2DDSToken("@/4c3e9a1f0b2d/@ros2_lv/MP/chatter/std_msgs§msg§String/:1:0:0,7")
	require.NoError(t, err)
	require.Equal(t, ROS2DDSToken{ZID: "4c3e9a1f0b2d", Kind: ROS2DDSPublisher, Route: "chatter", Type: "std_msgs/msg/String",
		QoS: ROS2DDSQoS{HasReliability: true, Reliability: 1, HasDurability: true, HasHistory: true, Depth: 7}}, tok)
	tok, err = ParseROS2DDSToken("@/z/@ros2_lv/MS/a§b/p§msg§T/:::1,-1:typehash=RIHS01_ab:c;")
	require.NoError(t, err)
	require.Equal(t, ROS2DDSQoS{HasHistory: true, History: DDSKeepAll, UserData: "typehash=RIHS01_ab:c;"}, tok.QoS)
	require.Equal(t, "a/b", tok.Route)
}

func TestROS2DDSTokenRejects(t *testing.T) {
	for _, key := range []string{
		"", "@ros2_lv/0/z/0/0/NN/%/%/n", "@/z/@ros2", "@/z/@ros2_lv/XX/a/b", "@/z/@ros2_lv/MP/a/b",
		"@/z/@ros2_lv/SS/a/b/c", "@/z/@ros2_lv/MP/a/b/1:2", "@/z/@ros2_lv/MP/a/b/X:::", "@/z/@ros2_lv/MP/a/b/:x::",
		"@/z/@ros2_lv/MP/a/b/:::0", "@/z/@ros2_lv/MP/a/b/:::0,x", "@//@ros2_lv",
	} {
		_, err := ParseROS2DDSToken(key)
		require.True(t, errors.Is(err, ErrNotROS), "%q: %v", key, err)
	}
	for _, tok := range []ROS2DDSToken{
		{ZID: ""}, {ZID: "a/b"}, {ZID: "z", Kind: "XX", Route: "a", Type: "p/msg/T"}, {ZID: "z", Kind: ROS2DDSPublisher, Type: "p/msg/T"},
		{ZID: "z", Kind: ROS2DDSPublisher, Route: "a*", Type: "p/msg/T"},
		{ZID: "z", Kind: ROS2DDSPublisher, Route: "a", Type: "p/msg/T", QoS: ROS2DDSQoS{UserData: "x#y"}},
	} {
		_, err := tok.Key()
		require.True(t, errors.Is(err, ErrNotROS), "%+v: %v", tok, err)
	}
}

// FuzzParseROS2DDSToken: hostile token keys never panic; a parsed token
// that renders again parses to the same kind, bridge, type and QoS.
func FuzzParseROS2DDSToken(f *testing.F) {
	for _, s := range []string{
		"@/a1b2/@ros2_lv", "@/a1b2/@ros2_lv/MP/bot1§chatter/std_msgs§msg§String/:1::0,10",
		"@/z/@ros2_lv/MS/a§b/p§msg§T/:::1,-1:typehash=RIHS01_ab:c;", "@/z/@ros2_lv/AS/fib/example_interfaces§action§Fibonacci",
		"@/z/@ros2_lv/SC/add/example_interfaces§srv§AddTwoInts", "@/z/@ros2_lv/MP/a/b/K:0:1:0,5",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		tok, err := ParseROS2DDSToken(key)
		if err != nil {
			return
		}
		again, err := tok.Key()
		if err != nil {
			return // e.g. a route chunk that is only '§'
		}
		back, err := ParseROS2DDSToken(again)
		require.NoError(t, err, again)
		require.Equal(t, tok.ZID, back.ZID)
		require.Equal(t, tok.Kind, back.Kind)
		require.Equal(t, tok.Type, back.Type)
		require.Equal(t, tok.QoS, back.QoS)
	})
}
