package ros2

import "fmt"

// Message is implemented by the message types of this package (*Time, *Header,
// *LaserScan, *Imu).
type Message interface {
	// ROSType is the ROS 2 type name, e.g. "sensor_msgs/msg/LaserScan".
	ROSType() string
	// AppendCDR appends the complete serialized message, encapsulation header included,
	// with alignment relative to the byte after that header.
	AppendCDR(b []byte, e Endianness) []byte
	// CDRLen is len(AppendCDR(nil, e)) for either byte order.
	CDRLen() int
}

var (
	_ Message = (*Time)(nil)
	_ Message = (*Header)(nil)
	_ Message = (*LaserScan)(nil)
	_ Message = (*Imu)(nil)
)

// Marshal returns m serialized as little-endian CDR (what ROS 2 sends).
func Marshal(m Message) []byte { return m.AppendCDR(make([]byte, 0, m.CDRLen()), LittleEndian) }

// DecodeMessage decodes a serialized message of one of this package's types, chosen by
// its ROS 2 type name (TimeType, HeaderType, LaserScanType, ImuType). Other types give
// ErrInvalidType; decode failures are *DecodeError.
func DecodeMessage(rosType string, cdr []byte) (Message, error) {
	switch rosType {
	case TimeType:
		m, err := DecodeTime(cdr)
		if err != nil {
			return nil, err
		}
		return &m, nil
	case HeaderType:
		m, err := DecodeHeader(cdr)
		if err != nil {
			return nil, err
		}
		return &m, nil
	case LaserScanType:
		m, err := DecodeLaserScan(cdr)
		if err != nil {
			return nil, err
		}
		return &m, nil
	case ImuType:
		m, err := DecodeImu(cdr)
		if err != nil {
			return nil, err
		}
		return &m, nil
	}
	return nil, fmt.Errorf("%w: no codec for %q", ErrInvalidType, rosType)
}
