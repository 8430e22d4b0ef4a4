package ros2

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateTopicName(t *testing.T) {
	valid := []string{"/scan", "/robot1/scan", "/a_b/C9/_x", "/imu_data", "/" + strings.Repeat("a", MaxTopicNameLength-1)}
	for _, n := range valid {
		require.NoError(t, ValidateTopicName(n), n)
	}
	invalid := []struct {
		name  string
		index int
	}{
		{"", -1},
		{"scan", 0},
		{"/", 0},
		{"/scan/", 5},
		{"//scan", 1},
		{"/a//b", 3},
		{"/9scan", 1},
		{"/a/9b", 3},
		{"/sc an", 3},
		{"/sc-an", 3},
		{"/scän", 3},
		{"/~/scan", 1},
		{"/{node}", 1},
		{"/" + strings.Repeat("a", MaxTopicNameLength), MaxTopicNameLength},
	}
	for _, c := range invalid {
		err := ValidateTopicName(c.name)
		require.Error(t, err, c.name)
		require.ErrorIs(t, err, ErrInvalidName)
		var ne *NameError
		require.True(t, errors.As(err, &ne))
		require.Equal(t, c.index, ne.Index, "%q: %v", c.name, err)
	}
}

func TestValidateNodeAndNamespace(t *testing.T) {
	require.NoError(t, ValidateNamespace("/"))
	require.NoError(t, ValidateNamespace("/robot1"))
	require.Error(t, ValidateNamespace("robot1"))
	require.Error(t, ValidateNamespace("/robot1/"))
	require.NoError(t, ValidateNodeName("rplidar_node"))
	for _, n := range []string{"", "1node", "a/b", "a-b", strings.Repeat("n", MaxNodeNameLength+1)} {
		require.ErrorIs(t, ValidateNodeName(n), ErrInvalidName, n)
	}
}

func TestExpandTopicName(t *testing.T) {
	cases := []struct{ ns, node, name, want string }{
		{"/", "", "/scan", "/scan"},
		{"/", "", "scan", "/scan"},
		{"/robot1", "", "scan", "/robot1/scan"},
		{"/robot1", "", "/scan", "/scan"},
		{"/robot1", "lidar", "~", "/robot1/lidar"},
		{"/robot1", "lidar", "~/scan", "/robot1/lidar/scan"},
		{"/", "lidar", "~/scan", "/lidar/scan"},
		{"/a/b", "", "c/d", "/a/b/c/d"},
	}
	for _, c := range cases {
		got, err := ExpandTopicName(c.ns, c.node, c.name)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c.want, got)
	}
	bad := []struct{ ns, node, name string }{
		{"robot1", "", "scan"},
		{"/", "", ""},
		{"/", "", "~scan"},
		{"/", "", "~/scan"}, // no node name
		{"/", "n", "{node}/scan"},
		{"/", "", "9scan"},
		{"/", "", "scan/"},
	}
	for _, c := range bad {
		_, err := ExpandTopicName(c.ns, c.node, c.name)
		require.ErrorIs(t, err, ErrInvalidName, "%+v", c)
	}
}

func TestTopicMangling(t *testing.T) {
	cases := map[string]string{
		"/scan":                    "rt/scan",
		"/imu_data":                "rt/imu_data",
		"/robot1/scan":             "rt/robot1/scan",
		"/ns/a/b/parameter_events": "rt/ns/a/b/parameter_events",
	}
	for ros, dds := range cases {
		got, err := TopicToDDS(ros)
		require.NoError(t, err)
		require.Equal(t, dds, got)
		back, err := TopicFromDDS(dds)
		require.NoError(t, err)
		require.Equal(t, ros, back)
		name, kind, err := ParseDDSTopic(dds)
		require.NoError(t, err)
		require.Equal(t, ros, name)
		require.Equal(t, KindTopic, kind)
	}
	_, err := TopicToDDS("scan")
	require.ErrorIs(t, err, ErrInvalidName)
	for _, dds := range []string{"scan", "xx/scan", "DCPSPublication", "rq/addRequest"} {
		_, err := TopicFromDDS(dds)
		require.ErrorIs(t, err, ErrNotROS, dds)
	}
	_, err = TopicFromDDS("rt//scan")
	require.ErrorIs(t, err, ErrInvalidName)
	_, err = TopicFromDDS("rt/")
	require.ErrorIs(t, err, ErrInvalidName)
}

func TestServiceMangling(t *testing.T) {
	req, rep, err := ServiceToDDS("/add_two_ints")
	require.NoError(t, err)
	require.Equal(t, "rq/add_two_intsRequest", req)
	require.Equal(t, "rr/add_two_intsReply", rep)

	req, rep, err = ServiceToDDS("/robot1/lidar/get_parameters")
	require.NoError(t, err)
	require.Equal(t, "rq/robot1/lidar/get_parametersRequest", req)
	require.Equal(t, "rr/robot1/lidar/get_parametersReply", rep)

	name, kind, err := ServiceFromDDS(req)
	require.NoError(t, err)
	require.Equal(t, "/robot1/lidar/get_parameters", name)
	require.Equal(t, KindServiceRequest, kind)
	name, kind, err = ServiceFromDDS(rep)
	require.NoError(t, err)
	require.Equal(t, "/robot1/lidar/get_parameters", name)
	require.Equal(t, KindServiceReply, kind)

	for _, dds := range []string{"rq/add", "rr/addRequest", "rt/add", "rq/Request"} {
		_, _, err := ServiceFromDDS(dds)
		require.Error(t, err, dds)
	}
	_, _, err = ServiceToDDS("/bad name")
	require.ErrorIs(t, err, ErrInvalidName)
	require.Equal(t, "service reply", KindServiceReply.String())
}

func TestTypeMangling(t *testing.T) {
	cases := map[string]string{
		"sensor_msgs/msg/LaserScan":                                     "sensor_msgs::msg::dds_::LaserScan_",
		"sensor_msgs/msg/Imu":                                           "sensor_msgs::msg::dds_::Imu_",
		"std_msgs/msg/String":                                           "std_msgs::msg::dds_::String_",
		"example_interfaces/srv/AddTwoInts_Request":                     "example_interfaces::srv::dds_::AddTwoInts_Request_",
		"action_tutorials_interfaces/action/Fibonacci_SendGoal_Request": "action_tutorials_interfaces::action::dds_::Fibonacci_SendGoal_Request_",
		"tf2_msgs/msg/TFMessage":                                        "tf2_msgs::msg::dds_::TFMessage_",
	}
	for ros, dds := range cases {
		got, err := TypeToDDS(ros)
		require.NoError(t, err)
		require.Equal(t, dds, got)
		back, err := TypeFromDDS(dds)
		require.NoError(t, err)
		require.Equal(t, ros, back)
	}
	req, resp, err := ServiceTypeToDDS("example_interfaces/srv/AddTwoInts")
	require.NoError(t, err)
	require.Equal(t, "example_interfaces::srv::dds_::AddTwoInts_Request_", req)
	require.Equal(t, "example_interfaces::srv::dds_::AddTwoInts_Response_", resp)
	_, _, err = ServiceTypeToDDS("std_msgs/msg/String")
	require.ErrorIs(t, err, ErrInvalidType)

	for _, bad := range []string{"", "LaserScan", "sensor_msgs/LaserScan", "sensor_msgs/msg/", "Sensor_msgs/msg/LaserScan",
		"sensor_msgs/foo/LaserScan", "sensor_msgs/msg/Laser-Scan", "sensor_msgs/msg/9Scan", "a/b/msg/C"} {
		_, err := TypeToDDS(bad)
		require.ErrorIs(t, err, ErrInvalidType, bad)
	}
	for _, bad := range []string{"sensor_msgs::msg::LaserScan_", "sensor_msgs::msg::dds_::LaserScan", "sensor_msgs::msg::dds::LaserScan_",
		"sensor_msgs::msg::dds_::_", "::msg::dds_::X_"} {
		_, err := TypeFromDDS(bad)
		require.ErrorIs(t, err, ErrInvalidType, bad)
	}
}

func TestHasHeader(t *testing.T) {
	require.True(t, HasHeader(LaserScanType))
	require.True(t, HasHeader(ImuType))
	require.True(t, HasHeader("nav_msgs/msg/Odometry"))
	require.False(t, HasHeader("std_msgs/msg/String"))
	require.False(t, HasHeader("tf2_msgs/msg/TFMessage"))
}
