package ros2

import (
	"math"
	"time"
)

// Time is builtin_interfaces/msg/Time: seconds and nanoseconds since the UNIX epoch
// (int32 sec, uint32 nanosec < 1e9).
type Time struct {
	Sec     int32
	Nanosec uint32
}

// TimeOf converts a Go time to a ROS 2 Time. Seconds outside the int32 range (before 1901
// or after January 2038) are clamped to it.
func TimeOf(t time.Time) Time {
	sec := t.Unix()
	switch {
	case sec > math.MaxInt32:
		return Time{Sec: math.MaxInt32, Nanosec: 999_999_999}
	case sec < math.MinInt32:
		return Time{Sec: math.MinInt32}
	}
	return Time{Sec: int32(sec), Nanosec: uint32(t.Nanosecond())}
}

// Time converts to a Go time (UTC).
func (t Time) Time() time.Time { return time.Unix(int64(t.Sec), int64(t.Nanosec)).UTC() }

// UnixNano returns nanoseconds since the epoch.
func (t Time) UnixNano() int64 { return int64(t.Sec)*1e9 + int64(t.Nanosec) }

// Validate reports ErrInvalidTime when Nanosec is not below one second.
func (t Time) Validate() error {
	if t.Nanosec >= 1e9 {
		return ErrInvalidTime
	}
	return nil
}

// ROSType returns TimeType.
func (t *Time) ROSType() string { return TimeType }

// CDRLen is the serialized size with the encapsulation header: 4 + 8.
func (t *Time) CDRLen() int { return EncapsulationSize + 8 }

// AppendCDR appends t as a complete serialized builtin_interfaces/msg/Time.
func (t *Time) AppendCDR(b []byte, e Endianness) []byte {
	enc := newEncoder(b, e)
	t.encode(enc)
	return enc.b
}

func (t *Time) encode(e *encoder) {
	e.i32(t.Sec)
	e.u32(t.Nanosec)
}

func (t *Time) decode(d *decoder, field string) {
	t.Sec = d.i32(field + ".sec")
	t.Nanosec = d.u32(field + ".nanosec")
}

// DecodeTime decodes a serialized builtin_interfaces/msg/Time.
func DecodeTime(cdr []byte) (Time, error) {
	d := newDecoder(cdr, TimeType)
	var t Time
	t.decode(d, "stamp")
	return t, d.finish()
}
