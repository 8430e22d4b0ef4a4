package ros2

import (
	"fmt"
	"strings"
)

// ROS 2 type names of the messages this package encodes and decodes.
const (
	TimeType      = "builtin_interfaces/msg/Time"
	HeaderType    = "std_msgs/msg/Header"
	LaserScanType = "sensor_msgs/msg/LaserScan"
	ImuType       = "sensor_msgs/msg/Imu"
)

// Interface kinds of a ROS 2 type name ("pkg/<kind>/Name").
const (
	InterfaceMsg    = "msg"
	InterfaceSrv    = "srv"
	InterfaceAction = "action"
)

// TypeName is a parsed ROS 2 interface type name "package/kind/Name".
type TypeName struct {
	Package string // e.g. "sensor_msgs"
	Kind    string // "msg", "srv" or "action"
	Name    string // e.g. "LaserScan", "AddTwoInts_Request"
}

// String returns "package/kind/Name".
func (t TypeName) String() string { return t.Package + "/" + t.Kind + "/" + t.Name }

// DDS returns the DDS type name "package::kind::dds_::Name_".
func (t TypeName) DDS() string { return t.Package + "::" + t.Kind + "::dds_::" + t.Name + "_" }

func typeErr(name, reason string) error {
	return fmt.Errorf("%w: %q: %s", ErrInvalidType, name, reason)
}

// ParseTypeName parses and validates "package/kind/Name": the package is
// [a-z][a-z0-9_]*, the kind msg, srv or action, the name [A-Za-z][A-Za-z0-9_]* (derived
// names such as AddTwoInts_Request contain underscores).
func ParseTypeName(s string) (TypeName, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return TypeName{}, typeErr(s, `want "package/msg|srv|action/Name"`)
	}
	t := TypeName{Package: parts[0], Kind: parts[1], Name: parts[2]}
	if err := t.validate(s); err != nil {
		return TypeName{}, err
	}
	return t, nil
}

func (t TypeName) validate(orig string) error {
	if !validPackage(t.Package) {
		return typeErr(orig, fmt.Sprintf("package %q must match [a-z][a-z0-9_]*", t.Package))
	}
	switch t.Kind {
	case InterfaceMsg, InterfaceSrv, InterfaceAction:
	default:
		return typeErr(orig, fmt.Sprintf("kind %q must be msg, srv or action", t.Kind))
	}
	if !validTypeIdent(t.Name) {
		return typeErr(orig, fmt.Sprintf("name %q must match [A-Za-z][A-Za-z0-9_]*", t.Name))
	}
	return nil
}

func validPackage(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

func validTypeIdent(s string) bool {
	if s == "" || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// TypeToDDS maps a ROS 2 type name to its DDS type name:
// "sensor_msgs/msg/LaserScan" -> "sensor_msgs::msg::dds_::LaserScan_".
func TypeToDDS(rosType string) (string, error) {
	t, err := ParseTypeName(rosType)
	if err != nil {
		return "", err
	}
	return t.DDS(), nil
}

// TypeFromDDS maps a DDS type name back to the ROS 2 type name:
// "sensor_msgs::msg::dds_::LaserScan_" -> "sensor_msgs/msg/LaserScan",
// "example_interfaces::srv::dds_::AddTwoInts_Request_" ->
// "example_interfaces/srv/AddTwoInts_Request".
func TypeFromDDS(ddsType string) (string, error) {
	t, err := ParseDDSTypeName(ddsType)
	if err != nil {
		return "", err
	}
	return t.String(), nil
}

// ParseDDSTypeName parses and validates "package::kind::dds_::Name_".
func ParseDDSTypeName(ddsType string) (TypeName, error) {
	parts := strings.Split(ddsType, "::")
	if len(parts) != 4 || parts[2] != "dds_" {
		return TypeName{}, typeErr(ddsType, `want "package::msg|srv|action::dds_::Name_"`)
	}
	name, ok := strings.CutSuffix(parts[3], "_")
	if !ok {
		return TypeName{}, typeErr(ddsType, "DDS type name must end with '_'")
	}
	t := TypeName{Package: parts[0], Kind: parts[1], Name: name}
	if err := t.validate(ddsType); err != nil {
		return TypeName{}, err
	}
	return t, nil
}

// ServiceTypeToDDS maps a service type to the DDS types of its request and response:
// "example_interfaces/srv/AddTwoInts" -> ("example_interfaces::srv::dds_::AddTwoInts_Request_",
// "example_interfaces::srv::dds_::AddTwoInts_Response_").
func ServiceTypeToDDS(srvType string) (request, response string, err error) {
	t, err := ParseTypeName(srvType)
	if err != nil {
		return "", "", err
	}
	if t.Kind != InterfaceSrv {
		return "", "", typeErr(srvType, "not a service type (kind must be srv)")
	}
	req, resp := t, t
	req.Name += "_Request"
	resp.Name += "_Response"
	return req.DDS(), resp.DDS(), nil
}

// stampedTypes lists common ROS 2 message types whose first field is a std_msgs/Header,
// so that HeaderStamp and SetHeaderStamp apply to their serialized form.
var stampedTypes = map[string]bool{
	HeaderType:                                     true,
	"sensor_msgs/msg/LaserScan":                    true,
	"sensor_msgs/msg/MultiEchoLaserScan":           true,
	"sensor_msgs/msg/Imu":                          true,
	"sensor_msgs/msg/PointCloud2":                  true,
	"sensor_msgs/msg/PointCloud":                   true,
	"sensor_msgs/msg/Image":                        true,
	"sensor_msgs/msg/CompressedImage":              true,
	"sensor_msgs/msg/CameraInfo":                   true,
	"sensor_msgs/msg/JointState":                   true,
	"sensor_msgs/msg/NavSatFix":                    true,
	"sensor_msgs/msg/MagneticField":                true,
	"sensor_msgs/msg/Range":                        true,
	"sensor_msgs/msg/Temperature":                  true,
	"sensor_msgs/msg/FluidPressure":                true,
	"sensor_msgs/msg/RelativeHumidity":             true,
	"sensor_msgs/msg/Illuminance":                  true,
	"sensor_msgs/msg/BatteryState":                 true,
	"sensor_msgs/msg/Joy":                          true,
	"nav_msgs/msg/Odometry":                        true,
	"nav_msgs/msg/Path":                            true,
	"nav_msgs/msg/OccupancyGrid":                   true,
	"nav_msgs/msg/GridCells":                       true,
	"geometry_msgs/msg/PoseStamped":                true,
	"geometry_msgs/msg/PoseWithCovarianceStamped":  true,
	"geometry_msgs/msg/TwistStamped":               true,
	"geometry_msgs/msg/TwistWithCovarianceStamped": true,
	"geometry_msgs/msg/TransformStamped":           true,
	"geometry_msgs/msg/PointStamped":               true,
	"geometry_msgs/msg/Vector3Stamped":             true,
	"geometry_msgs/msg/QuaternionStamped":          true,
	"geometry_msgs/msg/AccelStamped":               true,
	"geometry_msgs/msg/WrenchStamped":              true,
	"geometry_msgs/msg/PolygonStamped":             true,
	"geometry_msgs/msg/InertiaStamped":             true,
	"stereo_msgs/msg/DisparityImage":               true,
}

// HasHeader reports whether messages of the ROS 2 type rosType are known to start with a
// std_msgs/Header (so their stamp can be read and rewritten in place). Unknown types give
// false.
func HasHeader(rosType string) bool { return stampedTypes[rosType] }
