package ros2

import (
	"encoding/binary"
	"fmt"
)

// Header is std_msgs/msg/Header: a stamp and a coordinate frame id.
type Header struct {
	Stamp   Time
	FrameID string
}

// ROSType returns HeaderType.
func (h *Header) ROSType() string { return HeaderType }

// CDRLen is the serialized size with the encapsulation header.
func (h *Header) CDRLen() int { return EncapsulationSize + h.bodyLen(0) }

func (h *Header) bodyLen(pos int) int { return strLen(alignUp(pos, 4)+8, h.FrameID) }

// AppendCDR appends h as a complete serialized std_msgs/msg/Header.
func (h *Header) AppendCDR(b []byte, e Endianness) []byte {
	enc := newEncoder(b, e)
	h.encode(enc)
	return enc.b
}

func (h *Header) encode(e *encoder) {
	h.Stamp.encode(e)
	e.str(h.FrameID)
}

func (h *Header) decode(d *decoder) {
	h.Stamp.decode(d, "header.stamp")
	h.FrameID = d.str("header.frame_id")
}

// DecodeHeader decodes a serialized std_msgs/msg/Header.
func DecodeHeader(cdr []byte) (Header, error) {
	d := newDecoder(cdr, HeaderType)
	var h Header
	h.decode(d)
	return h, d.finish()
}

// stampSize is the room a stamp takes right after the encapsulation header.
const stampSize = EncapsulationSize + 8

// HeaderStamp reads the stamp of a serialized message whose first field is a
// std_msgs/Header (or that is a builtin_interfaces/Time), without decoding the rest.
// The stamp sits at body offset 0 (sec) and 4 (nanosec), so no padding precedes it.
func HeaderStamp(cdr []byte) (Time, error) {
	e, err := ParseEncapsulation(cdr)
	if err != nil {
		return Time{}, &DecodeError{Type: HeaderType, Field: "encapsulation", Err: err}
	}
	if len(cdr) < stampSize {
		return Time{}, &DecodeError{Type: HeaderType, Field: "header.stamp", Offset: EncapsulationSize, Err: ErrTruncated}
	}
	o := e.order()
	return Time{
		Sec:     int32(o.Uint32(cdr[EncapsulationSize:])),
		Nanosec: o.Uint32(cdr[EncapsulationSize+4:]),
	}, nil
}

// SetHeaderStamp overwrites, in place and in the message's own byte order, the stamp of a
// serialized message whose first field is a std_msgs/Header. Nothing else is touched and
// nothing is re-encoded, so it costs the same for a 1.6 MB point cloud as for an Imu.
func SetHeaderStamp(cdr []byte, t Time) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("set header stamp: %w", err)
	}
	e, err := ParseEncapsulation(cdr)
	if err != nil {
		return &DecodeError{Type: HeaderType, Field: "encapsulation", Err: err}
	}
	if len(cdr) < stampSize {
		return &DecodeError{Type: HeaderType, Field: "header.stamp", Offset: EncapsulationSize, Err: ErrTruncated}
	}
	// Concrete byte orders (not the interface) keep this allocation-free.
	if e == BigEndian {
		binary.BigEndian.PutUint32(cdr[EncapsulationSize:], uint32(t.Sec))
		binary.BigEndian.PutUint32(cdr[EncapsulationSize+4:], t.Nanosec)
	} else {
		binary.LittleEndian.PutUint32(cdr[EncapsulationSize:], uint32(t.Sec))
		binary.LittleEndian.PutUint32(cdr[EncapsulationSize+4:], t.Nanosec)
	}
	return nil
}
