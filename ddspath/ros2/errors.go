package ros2

import (
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrInvalidName is wrapped by every NameError.
	ErrInvalidName = errors.New("invalid ROS 2 name")
	// ErrInvalidType is returned for a malformed ROS 2 or DDS type name.
	ErrInvalidType = errors.New("invalid ROS 2 type name")
	// ErrNotROS is returned when a DDS topic name does not carry a ROS 2 prefix
	// (rt/, rq/, rr/) or a service topic lacks its Request/Reply suffix.
	ErrNotROS = errors.New("not a ROS 2 DDS topic name")
	// ErrTruncated means the serialized message ends before a field does.
	ErrTruncated = errors.New("cdr: truncated")
	// ErrEncapsulation means the 4-byte encapsulation header is missing or names a
	// representation other than plain CDR (XCDR1) big- or little-endian.
	ErrEncapsulation = errors.New("cdr: unsupported encapsulation")
	// ErrMalformed means a field value is impossible (string without its NUL terminator,
	// zero-length string, bytes left over after the message).
	ErrMalformed = errors.New("cdr: malformed")
	// ErrInvalidTime is returned for a Time whose nanoseconds are not below one second.
	ErrInvalidTime = errors.New("invalid time: nanosec must be < 1e9")
)

// NameError describes why a ROS 2 name was rejected. Index is the byte offset of the first
// offending character (or -1 when the whole name is at fault).
type NameError struct {
	Name   string
	Index  int
	Reason string
}

func (e *NameError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("invalid ROS 2 name %q at index %d: %s", e.Name, e.Index, e.Reason)
	}
	return fmt.Sprintf("invalid ROS 2 name %q: %s", e.Name, e.Reason)
}

// Unwrap lets errors.Is(err, ErrInvalidName) match.
func (e *NameError) Unwrap() error { return ErrInvalidName }

// DecodeError records which field of which message failed to decode and at what offset
// (counted from the start of the serialized bytes, encapsulation header included).
type DecodeError struct {
	Type   string // ROS 2 type, e.g. "sensor_msgs/msg/LaserScan"
	Field  string
	Offset int
	Err    error // one of ErrTruncated, ErrEncapsulation, ErrMalformed
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode %s: field %s at offset %d: %v", e.Type, e.Field, e.Offset, e.Err)
}

// Unwrap returns the sentinel cause.
func (e *DecodeError) Unwrap() error { return e.Err }
