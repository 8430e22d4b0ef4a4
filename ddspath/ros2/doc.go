// Package ros2 holds the pure-Go ROS 2 helpers of ddspath: name and type mangling between
// ROS 2 and DDS (rmw_cyclonedds / rmw_fastrtps conventions), rmw_zenoh key expressions, and
// XCDR1 codecs for the few message types the gateway inspects (builtin_interfaces/Time,
// std_msgs/Header, sensor_msgs/LaserScan, sensor_msgs/Imu), including in-place rewriting of
// a header stamp in serialized bytes.
//
// Sources: ../shared/design/dds-cyclone.md §1 (naming), zenoh-wire.md §16 (rmw_zenoh key
// expressions), the ROS 2 design article "Topic and Service name mapping to DDS", the OMG
// DDS-XTypes 1.3 data representation chapter (XCDR1, "classic CDR") and the sensor_msgs IDL.
//
// The package does no I/O and must not import "C".
//
// Serialized messages ("CDR" in names) always include the 4-byte encapsulation header
// (representation identifier, then two option bytes): 00 01 00 00 for little-endian CDR,
// 00 00 00 00 for big-endian CDR. Alignment of primitives is relative to the first byte after
// that header. Decoders never panic on hostile input and never allocate from a length they
// have not checked against the bytes remaining.
package ros2
