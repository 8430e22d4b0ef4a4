package ddssink_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/replay/ddssink"
	"github.com/picobridge/picobridge/ddspath/rosbag"
)

func TestRecordedQoS(t *testing.T) {
	humble := rosbag.QoSProfile{History: rosbag.HistoryUnknown, Reliability: rosbag.ReliabilityReliable,
		Durability: rosbag.DurabilityVolatile} // what hallway_room_loop recorded
	sensor := rosbag.QoSProfile{History: rosbag.HistoryKeepLast, Depth: 5, Reliability: rosbag.ReliabilityBestEffort,
		Durability: rosbag.DurabilityVolatile}
	latched := rosbag.QoSProfile{History: rosbag.HistoryKeepLast, Depth: 1, Reliability: rosbag.ReliabilityReliable,
		Durability: rosbag.DurabilityTransientLocal}
	for _, tc := range []struct {
		name string
		qos  []rosbag.QoSProfile
		mb   time.Duration
		want ddspath.QoS
	}{
		{"humble-unknown-history", []rosbag.QoSProfile{humble}, 0,
			ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: replay.DefaultDepth,
				Durability: ddspath.Volatile, MaxBlocking: ddssink.DefaultMaxBlocking}},
		{"no-recorded-qos", nil, -1,
			ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: replay.DefaultDepth,
				Durability: ddspath.Volatile, MaxBlocking: -1}},
		{"one-best-effort-publisher", []rosbag.QoSProfile{humble, sensor}, time.Second,
			ddspath.QoS{Reliability: ddspath.BestEffort, History: ddspath.KeepLast, Depth: 5,
				Durability: ddspath.Volatile, MaxBlocking: time.Second}},
		{"transient-local", []rosbag.QoSProfile{latched}, 0,
			ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 1,
				Durability: ddspath.TransientLocal, MaxBlocking: ddssink.DefaultMaxBlocking}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ddssink.RecordedQoS(replay.TopicInfo{Name: "/x", Type: "std_msgs/msg/String", QoS: tc.qos}, tc.mb)
			require.Equal(t, tc.want, got)
		})
	}
}
