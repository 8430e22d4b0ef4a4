package bridge_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

func TestRoutesAllowDenyCriticality(t *testing.T) {
	r := bridge.NewRoutes(testConfig(t, `
routes:
  allow: ["/scan", "/cmd_.*", "/tf.*", "/diag"]
  deny: ["/tf_static"]
  critical: ["/cmd_vel"]
`))
	for topic, want := range map[string]bool{
		"/scan": true, "/scan2": false, "/cmd_vel": true, "/tf": true, "/tf_static": false, "/chatter": false,
	} {
		require.Equal(t, want, r.Allowed(topic), topic)
	}
	require.Equal(t, bridge.Critical, r.CriticalityOf("/cmd_vel"))
	require.Equal(t, bridge.Noncritical, r.CriticalityOf("/scan"))
	_, ok := r.Resolve("/tf_static", "tf2_msgs/msg/TFMessage", "")
	require.False(t, ok)
	rt, ok := r.Resolve("/cmd_vel", "geometry_msgs/msg/Twist", "")
	require.True(t, ok)
	require.Equal(t, bridge.Route{Topic: "/cmd_vel", Type: "geometry_msgs/msg/Twist", Key: "cmd_vel", Criticality: bridge.Critical}, rt)
	require.True(t, r.AutoBridge())
}

func TestRouteKeys(t *testing.T) {
	plain := bridge.NewRoutes(testConfig(t, ""))
	require.Equal(t, "scan", plain.KeyOf("/scan", "", ""))
	require.Equal(t, "robot/arm/joint_states", plain.KeyOf("/robot/arm/joint_states", "", ""))
	topic, ok := plain.TopicOf("robot/arm/joint_states")
	require.True(t, ok)
	require.Equal(t, "/robot/arm/joint_states", topic)

	ns := bridge.NewRoutes(testConfig(t, "dds: {namespace: /bot1}\n"))
	require.Equal(t, "bot1/scan", ns.KeyOf("/scan", "", ""))
	topic, ok = ns.TopicOf("bot1/scan")
	require.True(t, ok)
	require.Equal(t, "/scan", topic)
	_, ok = ns.TopicOf("bot2/scan")
	require.False(t, ok)

	rz := bridge.NewRoutes(testConfig(t, "dds: {domain: 3}\nroutes: {key_style: rmw_zenoh}\n"))
	require.Equal(t, "3/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_abc", rz.KeyOf("/scan", "sensor_msgs/msg/LaserScan", "RIHS01_abc"))
	require.Equal(t, "3/a/b/std_msgs::msg::dds_::String_/TypeHashNotSupported", rz.KeyOf("/a/b", "std_msgs/msg/String", ""))
	topic, ok = rz.TopicOf("3/a/b/std_msgs::msg::dds_::String_/TypeHashNotSupported")
	require.True(t, ok)
	require.Equal(t, "/a/b", topic)
	_, ok = rz.TopicOf("0/a/t/h")
	require.False(t, ok)
	require.Equal(t, "odd", bridge.DDSTypeName("odd"))
}

func TestKeyIncludes(t *testing.T) {
	for _, tc := range []struct {
		sub, key string
		want     bool
	}{
		{"scan", "scan", true},
		{"scan", "scan2", false},
		{"*", "scan", true},
		{"*", "a/b", false},
		{"**", "a/b/c", true},
		{"a/**", "a", true},
		{"a/**/c", "a/b/x/c", true},
		{"a/**/c", "a/b/x/d", false},
		{"a/*/c", "a/b/c", true},
		{"sc$*", "scan", true},
		{"s$*n", "scan", true},
		{"s$*x", "scan", false},
		{"$*an", "scan", true},
		{"**", "@picobridge/probe/a/ping", false},
		{"*/probe/a/ping", "@picobridge/probe/a/ping", false},
		{"@picobridge/probe/*/pong", "@picobridge/probe/a/pong", true},
		{"a/**", "a/@x", false},
	} {
		require.Equal(t, tc.want, bridge.KeyIncludes(tc.sub, tc.key), "%s includes %s", tc.sub, tc.key)
	}
}

func TestRouteForKey(t *testing.T) {
	g := newGateway(t, testConfig(t, twoDevices), nil)
	require.Equal(t, bridge.Route{Key: "cmd_vel", Topic: "/cmd_vel", Criticality: bridge.Critical}, g.RouteForKey("cmd_vel"))
	require.Equal(t, bridge.Route{Key: "telemetry/imu", Topic: "/telemetry/imu", Criticality: bridge.Noncritical}, g.RouteForKey("telemetry/imu"))
}
