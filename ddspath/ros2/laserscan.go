package ros2

// LaserScan is sensor_msgs/msg/LaserScan: one planar scan of a range finder.
// Angles are in radians, times in seconds, ranges in metres.
//
// Wire layout (XCDR1, body offsets for a frame id of n bytes): header (stamp 8, string
// 4+n+1), pad to 4, seven float32 (angle_min, angle_max, angle_increment, time_increment,
// scan_time, range_min, range_max), sequence<float> ranges, sequence<float> intensities.
type LaserScan struct {
	Header         Header
	AngleMin       float32
	AngleMax       float32
	AngleIncrement float32
	TimeIncrement  float32
	ScanTime       float32
	RangeMin       float32
	RangeMax       float32
	Ranges         []float32
	Intensities    []float32
}

// ROSType returns LaserScanType.
func (m *LaserScan) ROSType() string { return LaserScanType }

// CDRLen is the serialized size with the encapsulation header.
func (m *LaserScan) CDRLen() int {
	pos := m.Header.bodyLen(0)
	pos = alignUp(pos, 4) + 7*4
	pos += 4 + 4*len(m.Ranges)
	pos += 4 + 4*len(m.Intensities)
	return EncapsulationSize + pos
}

// AppendCDR appends m as a complete serialized message (encapsulation header included).
func (m *LaserScan) AppendCDR(b []byte, e Endianness) []byte {
	enc := newEncoder(b, e)
	m.Header.encode(enc)
	enc.f32(m.AngleMin)
	enc.f32(m.AngleMax)
	enc.f32(m.AngleIncrement)
	enc.f32(m.TimeIncrement)
	enc.f32(m.ScanTime)
	enc.f32(m.RangeMin)
	enc.f32(m.RangeMax)
	enc.f32seq(m.Ranges)
	enc.f32seq(m.Intensities)
	return enc.b
}

// DecodeLaserScan decodes a serialized sensor_msgs/msg/LaserScan. The result does not
// alias cdr. Errors are *DecodeError wrapping ErrTruncated, ErrEncapsulation or ErrMalformed.
func DecodeLaserScan(cdr []byte) (LaserScan, error) {
	d := newDecoder(cdr, LaserScanType)
	var m LaserScan
	m.Header.decode(d)
	m.AngleMin = d.f32("angle_min")
	m.AngleMax = d.f32("angle_max")
	m.AngleIncrement = d.f32("angle_increment")
	m.TimeIncrement = d.f32("time_increment")
	m.ScanTime = d.f32("scan_time")
	m.RangeMin = d.f32("range_min")
	m.RangeMax = d.f32("range_max")
	m.Ranges = d.f32seq("ranges")
	m.Intensities = d.f32seq("intensities")
	if err := d.finish(); err != nil {
		return LaserScan{}, err
	}
	return m, nil
}
