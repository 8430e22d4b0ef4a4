package ros2_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/ddspath/rosbag"
	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
)

// TestRealBagRoundTrip decodes every /scan and /imu_data message of the shared Mumble bags
// and re-encodes it to the exact same bytes; it also checks the data set's documented facts.
func TestRealBagRoundTrip(t *testing.T) {
	for _, name := range rosbagtest.MumbleBags {
		t.Run(name, func(t *testing.T) {
			b, err := rosbag.Open(rosbagtest.MumbleBag(t, name))
			require.NoError(t, err)
			defer b.Close()
			c, err := b.Messages(context.Background(), rosbag.ReadOptions{})
			require.NoError(t, err)
			defer c.Close()
			counts := map[string]int{}
			var buf []byte
			for c.Next() {
				m := c.Message()
				stamp, err := ros2.HeaderStamp(m.Data)
				require.NoError(t, err)
				switch m.Topic.Type {
				case ros2.LaserScanType:
					s, err := ros2.DecodeLaserScan(m.Data)
					require.NoError(t, err)
					require.Equal(t, "laser_frame", s.Header.FrameID)
					require.Len(t, s.Ranges, 360)
					require.Empty(t, s.Intensities)
					require.Equal(t, stamp, s.Header.Stamp)
					require.Equal(t, len(m.Data), s.CDRLen())
					buf = s.AppendCDR(buf[:0], ros2.LittleEndian)
				case ros2.ImuType:
					s, err := ros2.DecodeImu(m.Data)
					require.NoError(t, err)
					require.Equal(t, "imu_link", s.Header.FrameID)
					require.Equal(t, ros2.Quaternion{W: 1}, s.Orientation)
					require.Equal(t, stamp, s.Header.Stamp)
					require.Equal(t, len(m.Data), s.CDRLen())
					buf = s.AppendCDR(buf[:0], ros2.LittleEndian)
				default:
					t.Fatalf("unexpected type %s", m.Topic.Type)
				}
				require.True(t, bytes.Equal(m.Data, buf), "%s message %d re-encodes differently", m.Topic.Name, counts[m.Topic.Name])
				// The same message in big-endian CDR decodes to the same value and has the
				// same size (alignment is relative to the encapsulation header, not the order).
				le, err := ros2.DecodeMessage(m.Topic.Type, m.Data)
				require.NoError(t, err)
				be := le.AppendCDR(nil, ros2.BigEndian)
				require.Len(t, be, len(m.Data))
				back, err := ros2.DecodeMessage(m.Topic.Type, be)
				require.NoError(t, err)
				require.Equal(t, le, back)
				require.Equal(t, m.Data, back.AppendCDR(nil, ros2.LittleEndian))
				// Stamp rewriting leaves everything else intact.
				cp := append([]byte(nil), m.Data...)
				require.NoError(t, ros2.SetHeaderStamp(cp, ros2.Time{Sec: 7, Nanosec: 8}))
				require.Equal(t, m.Data[12:], cp[12:])
				counts[m.Topic.Name]++
			}
			require.NoError(t, c.Err())
			for _, tp := range b.Topics() {
				require.Equal(t, int(tp.MessageCount), counts[tp.Name], tp.Name)
			}
		})
	}
}
