package ros2

import (
	"encoding/hex"
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func sampleScan() *LaserScan {
	return &LaserScan{
		Header:         Header{Stamp: Time{Sec: 1742407985, Nanosec: 964824579}, FrameID: "laser_frame"},
		AngleMin:       0,
		AngleMax:       6.2831855,
		AngleIncrement: 0.017453292,
		RangeMin:       0.1,
		RangeMax:       12,
		Ranges:         []float32{6.0605, 5.99250, 5.2267},
	}
}

func sampleImu() *Imu {
	return &Imu{
		Header:                    Header{Stamp: Time{Sec: 1742407985, Nanosec: 967560171}, FrameID: "imu_link"},
		Orientation:               Quaternion{W: 1},
		AngularVelocity:           Vector3{X: 0.5, Y: -1.25, Z: 177.9},
		AngularVelocityCovariance: Covariance3{1, 0, 0, 0, 1, 0, 0, 0, 1},
		LinearAcceleration:        Vector3{X: 12, Y: -3, Z: 993},
	}
}

func TestLaserScanKnownBytes(t *testing.T) {
	// First 32 bytes of the first /scan of hallway_room_loop (SOURCE.md of the data set).
	want, err := hex.DecodeString("000100003109db67030e82390c0000006c617365725f6672616d650000000000")
	require.NoError(t, err)
	m := sampleScan()
	b := m.AppendCDR(nil, LittleEndian)
	require.Equal(t, want, b[:32])
	require.Len(t, b, m.CDRLen())
	// header 4 + stamp 8 + string 4+12 = 28 (body 24, aligned), 7 floats, 2 seq headers, 3 ranges
	require.Equal(t, 4+24+28+4+12+4, len(b))

	got, err := DecodeLaserScan(b)
	require.NoError(t, err)
	require.Equal(t, *m, got)
}

func TestCDRLenMatchesAppend(t *testing.T) {
	for _, frame := range []string{"", "a", "ab", "abc", "abcd", "laser_frame", "imu_link", "0123456789abcdef"} {
		for _, n := range []int{0, 1, 2, 360} {
			s := sampleScan()
			s.Header.FrameID = frame
			s.Ranges = make([]float32, n)
			s.Intensities = make([]float32, n/2)
			imu := sampleImu()
			imu.Header.FrameID = frame
			h := Header{FrameID: frame}
			tm := Time{Sec: 1}
			for _, m := range []Message{s, imu, &h, &tm} {
				for _, e := range []Endianness{LittleEndian, BigEndian} {
					b := m.AppendCDR([]byte{0xAA, 0xBB, 0xCC}, e) // unaligned prefix must not matter
					require.Equal(t, m.CDRLen(), len(b)-3, "%s frame %q n %d", m.ROSType(), frame, n)
					require.Equal(t, m.AppendCDR(nil, e), b[3:])
				}
			}
		}
	}
}

func TestRoundTripBothEndian(t *testing.T) {
	scan := sampleScan()
	scan.Intensities = []float32{1, 2, float32(math.Inf(1))}
	imu := sampleImu()
	for _, e := range []Endianness{LittleEndian, BigEndian} {
		b := scan.AppendCDR(nil, e)
		got, err := DecodeLaserScan(b)
		require.NoError(t, err)
		require.Equal(t, *scan, got)
		pe, err := ParseEncapsulation(b)
		require.NoError(t, err)
		require.Equal(t, e, pe)

		b = imu.AppendCDR(nil, e)
		gi, err := DecodeImu(b)
		require.NoError(t, err)
		require.Equal(t, *imu, gi)

		h := scan.Header
		b = h.AppendCDR(nil, e)
		gh, err := DecodeHeader(b)
		require.NoError(t, err)
		require.Equal(t, h, gh)

		tm := h.Stamp
		b = tm.AppendCDR(nil, e)
		gt, err := DecodeTime(b)
		require.NoError(t, err)
		require.Equal(t, tm, gt)
	}
}

func TestImuAlignment(t *testing.T) {
	// frame "imu_link": body = 8 stamp + 4 len + 9 chars = 21, padded to 24 for float64.
	m := sampleImu()
	for _, e := range []Endianness{LittleEndian, BigEndian} {
		b := m.AppendCDR(nil, e)
		require.Len(t, b, 324)
		require.Equal(t, []byte{0, 0, 0}, b[4+21:4+24])
		// orientation.w = 1.0 at body 24+24
		w := b[4+48 : 4+56]
		if e == LittleEndian {
			require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, w)
		} else {
			require.Equal(t, []byte{0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, w)
		}
	}
	// Big-endian header bytes.
	b := m.AppendCDR(nil, BigEndian)
	require.Equal(t, []byte{0, 0, 0, 0}, b[:4])
	require.Equal(t, []byte{0x67, 0xdb, 0x09, 0x31}, b[4:8])
}

func TestDecodeTruncatedEverywhere(t *testing.T) {
	scan := sampleScan().AppendCDR(nil, LittleEndian)
	imu := sampleImu().AppendCDR(nil, BigEndian)
	hdr := (&Header{FrameID: "x"}).AppendCDR(nil, LittleEndian)
	tm := (&Time{}).AppendCDR(nil, LittleEndian)
	check := func(name string, b []byte, dec func([]byte) error) {
		for i := range len(b) {
			err := dec(b[:i])
			require.Error(t, err, "%s cut at %d", name, i)
			// Cuts into the trailing padding-free end are truncations, never panics.
			require.True(t, errors.Is(err, ErrTruncated) || errors.Is(err, ErrMalformed), "%s cut at %d: %v", name, i, err)
			var de *DecodeError
			require.True(t, errors.As(err, &de), "%s cut at %d: %T", name, i, err)
		}
		require.NoError(t, dec(b))
	}
	check("scan", scan, func(b []byte) error { _, err := DecodeLaserScan(b); return err })
	check("imu", imu, func(b []byte) error { _, err := DecodeImu(b); return err })
	check("header", hdr, func(b []byte) error { _, err := DecodeHeader(b); return err })
	check("time", tm, func(b []byte) error { _, err := DecodeTime(b); return err })
}

func TestDecodeRejects(t *testing.T) {
	good := sampleScan().AppendCDR(nil, LittleEndian)

	xcdr2 := append([]byte(nil), good...)
	xcdr2[1] = 0x07
	_, err := DecodeLaserScan(xcdr2)
	require.ErrorIs(t, err, ErrEncapsulation)

	// Huge sequence count must fail before allocating.
	huge := append([]byte(nil), good...)
	off := 4 + 24 + 28 // ranges count
	huge[off], huge[off+1], huge[off+2], huge[off+3] = 0xff, 0xff, 0xff, 0x7f
	_, err = DecodeLaserScan(huge)
	require.ErrorIs(t, err, ErrTruncated)
	// The count claims 8 GiB of ranges: the decoder must not allocate from
	// it. Bytes (not allocation counts, which the race detector inflates)
	// over 10 decodes stay far below one claimed sequence.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		_, _ = DecodeLaserScan(huge)
	}
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20))

	// String without NUL.
	nonul := append([]byte(nil), good...)
	nonul[4+8+4+11] = 'x'
	_, err = DecodeLaserScan(nonul)
	require.ErrorIs(t, err, ErrMalformed)

	// Zero-length string.
	zero := (&Header{}).AppendCDR(nil, LittleEndian)
	zero[12] = 0
	_, err = DecodeHeader(zero)
	require.ErrorIs(t, err, ErrMalformed)

	// Up to 3 bytes of trailing padding are fine, 4 are not.
	_, err = DecodeLaserScan(append(append([]byte(nil), good...), 0, 0, 0))
	require.NoError(t, err)
	_, err = DecodeLaserScan(append(append([]byte(nil), good...), 0, 0, 0, 0))
	require.ErrorIs(t, err, ErrMalformed)

	_, err = ParseEncapsulation([]byte{0, 1})
	require.ErrorIs(t, err, ErrTruncated)
}

func TestHeaderStamp(t *testing.T) {
	for _, e := range []Endianness{LittleEndian, BigEndian} {
		scan := sampleScan()
		b := scan.AppendCDR(nil, e)
		st, err := HeaderStamp(b)
		require.NoError(t, err)
		require.Equal(t, scan.Header.Stamp, st)

		now := TimeOf(time.Date(2026, 11, 29, 19, 0, 0, 123456789, time.UTC))
		require.NoError(t, SetHeaderStamp(b, now))
		st, err = HeaderStamp(b)
		require.NoError(t, err)
		require.Equal(t, now, st)
		// Only the stamp changed.
		scan.Header.Stamp = now
		require.Equal(t, scan.AppendCDR(nil, e), b)

		imu := sampleImu()
		b = imu.AppendCDR(nil, e)
		require.NoError(t, SetHeaderStamp(b, now))
		got, err := DecodeImu(b)
		require.NoError(t, err)
		require.Equal(t, now, got.Header.Stamp)
	}
	require.ErrorIs(t, SetHeaderStamp([]byte{0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, Time{}), ErrEncapsulation)
	require.ErrorIs(t, SetHeaderStamp([]byte{0, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7}, Time{}), ErrTruncated)
	require.ErrorIs(t, SetHeaderStamp(sampleScan().AppendCDR(nil, LittleEndian), Time{Nanosec: 1e9}), ErrInvalidTime)
	_, err := HeaderStamp([]byte{0, 1, 0})
	require.ErrorIs(t, err, ErrTruncated)
	allocs := testing.AllocsPerRun(100, func() {
		b := [16]byte{0, 1}
		_ = SetHeaderStamp(b[:], Time{Sec: 5})
	})
	require.Zero(t, allocs)
}

func TestTimeConversions(t *testing.T) {
	gt := time.Date(2025, 3, 19, 18, 13, 5, 964824579, time.UTC)
	rt := TimeOf(gt)
	require.Equal(t, Time{Sec: 1742407985, Nanosec: 964824579}, rt)
	require.True(t, gt.Equal(rt.Time()))
	require.Equal(t, gt.UnixNano(), rt.UnixNano())
	require.Equal(t, int32(math.MaxInt32), TimeOf(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)).Sec)
	require.Equal(t, int32(math.MinInt32), TimeOf(time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC)).Sec)
	require.NoError(t, rt.Validate())
	require.ErrorIs(t, Time{Nanosec: 1e9}.Validate(), ErrInvalidTime)
}

func TestMarshal(t *testing.T) {
	s := sampleScan()
	b := Marshal(s)
	require.Equal(t, s.AppendCDR(nil, LittleEndian), b)
	require.Equal(t, len(b), cap(b))
	require.Equal(t, "CDR_LE", LittleEndian.String())
	require.Equal(t, "CDR_BE", BigEndian.String())
}

func BenchmarkDecodeLaserScan(b *testing.B) {
	s := sampleScan()
	s.Ranges = make([]float32, 360)
	buf := s.AppendCDR(nil, LittleEndian)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, err := DecodeLaserScan(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendLaserScan(b *testing.B) {
	s := sampleScan()
	s.Ranges = make([]float32, 360)
	buf := make([]byte, 0, s.CDRLen())
	b.ReportAllocs()
	for b.Loop() {
		buf = s.AppendCDR(buf[:0], LittleEndian)
	}
}

func BenchmarkSetHeaderStamp(b *testing.B) {
	buf := sampleScan().AppendCDR(nil, LittleEndian)
	b.ReportAllocs()
	for b.Loop() {
		if err := SetHeaderStamp(buf, Time{Sec: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecodeMessage(t *testing.T) {
	for _, m := range []Message{sampleScan(), sampleImu(), &Header{FrameID: "f"}, &Time{Sec: 3}} {
		got, err := DecodeMessage(m.ROSType(), m.AppendCDR(nil, BigEndian))
		require.NoError(t, err)
		require.Equal(t, m, got)
		_, err = DecodeMessage(m.ROSType(), []byte{0, 1})
		require.ErrorIs(t, err, ErrTruncated)
	}
	_, err := DecodeMessage("std_msgs/msg/String", []byte{0, 1, 0, 0})
	require.ErrorIs(t, err, ErrInvalidType)
}
