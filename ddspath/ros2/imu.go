package ros2

// Vector3 is geometry_msgs/msg/Vector3.
type Vector3 struct{ X, Y, Z float64 }

// Quaternion is geometry_msgs/msg/Quaternion.
type Quaternion struct{ X, Y, Z, W float64 }

// Covariance3 is a row-major 3x3 covariance matrix (float64[9] in the IDL).
type Covariance3 [9]float64

// Imu is sensor_msgs/msg/Imu. Per the message definition angular velocity is in rad/s and
// linear acceleration in m/s² (the Mumble bags break this; see SOURCE.md of the data set).
//
// Wire layout (XCDR1): header, pad to 8, orientation (4 float64), 9 float64,
// angular_velocity (3 float64), 9 float64, linear_acceleration (3 float64), 9 float64.
type Imu struct {
	Header                       Header
	Orientation                  Quaternion
	OrientationCovariance        Covariance3
	AngularVelocity              Vector3
	AngularVelocityCovariance    Covariance3
	LinearAcceleration           Vector3
	LinearAccelerationCovariance Covariance3
}

// ROSType returns ImuType.
func (m *Imu) ROSType() string { return ImuType }

// imuDoubles is the number of float64 after the header: 4+9+3+9+3+9.
const imuDoubles = 37

// CDRLen is the serialized size with the encapsulation header.
func (m *Imu) CDRLen() int {
	return EncapsulationSize + alignUp(m.Header.bodyLen(0), 8) + imuDoubles*8
}

// AppendCDR appends m as a complete serialized message (encapsulation header included).
func (m *Imu) AppendCDR(b []byte, e Endianness) []byte {
	enc := newEncoder(b, e)
	m.Header.encode(enc)
	q := m.Orientation
	for _, v := range [4]float64{q.X, q.Y, q.Z, q.W} {
		enc.f64(v)
	}
	for _, v := range m.OrientationCovariance {
		enc.f64(v)
	}
	appendVec3(enc, m.AngularVelocity)
	for _, v := range m.AngularVelocityCovariance {
		enc.f64(v)
	}
	appendVec3(enc, m.LinearAcceleration)
	for _, v := range m.LinearAccelerationCovariance {
		enc.f64(v)
	}
	return enc.b
}

func appendVec3(e *encoder, v Vector3) {
	e.f64(v.X)
	e.f64(v.Y)
	e.f64(v.Z)
}

func decodeVec3(d *decoder, field string) Vector3 {
	return Vector3{X: d.f64(field + ".x"), Y: d.f64(field + ".y"), Z: d.f64(field + ".z")}
}

func decodeCov(d *decoder, field string) (c Covariance3) {
	for i := range c {
		c[i] = d.f64(field)
	}
	return c
}

// DecodeImu decodes a serialized sensor_msgs/msg/Imu. Errors are *DecodeError wrapping
// ErrTruncated, ErrEncapsulation or ErrMalformed.
func DecodeImu(cdr []byte) (Imu, error) {
	d := newDecoder(cdr, ImuType)
	var m Imu
	m.Header.decode(d)
	m.Orientation = Quaternion{
		X: d.f64("orientation.x"), Y: d.f64("orientation.y"),
		Z: d.f64("orientation.z"), W: d.f64("orientation.w"),
	}
	m.OrientationCovariance = decodeCov(d, "orientation_covariance")
	m.AngularVelocity = decodeVec3(d, "angular_velocity")
	m.AngularVelocityCovariance = decodeCov(d, "angular_velocity_covariance")
	m.LinearAcceleration = decodeVec3(d, "linear_acceleration")
	m.LinearAccelerationCovariance = decodeCov(d, "linear_acceleration_covariance")
	if err := d.finish(); err != nil {
		return Imu{}, err
	}
	return m, nil
}
