//go:build cgo && cyclonedds

package main

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
)

// TestBagReplayAnnouncesNode: while `bag replay` runs, a ROS participant on
// the same (private, loopback-only) domain reads the node
// /picobridge_bag_replay from ros_discovery_info, owning exactly the writer
// its DDS discovery reports for rt/scan, no reader; with --ros-distro jazzy the
// GIDs are 16 bytes.
func TestBagReplayAnnouncesNode(t *testing.T) {
	dir := rosbagtest.MumbleBag(t, "no_loop_room")
	for _, tc := range []struct {
		distro string
		size   ros2.GidSize
	}{{"humble", ros2.GidSizeHumble}, {"jazzy", ros2.GidSizeIron}} {
		t.Run(tc.distro, func(t *testing.T) {
			domain := uint32(180 + rand.IntN(40))
			ros, err := ddspath.Open(ddspath.Config{DomainID: domain})
			require.NoError(t, err)
			t.Cleanup(func() { _ = ros.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pubs := make(chan ddspath.Endpoint, 64)
			go func() {
				_ = ros.WatchEndpoints(ctx, func(e ddspath.Endpoint) {
					if e.Kind == ddspath.Publication && e.Topic == "rt/scan" && e.Alive {
						pubs <- e
					}
				})
			}()
			q := ddspath.DiscoveryInfoQoS()
			q.History = ddspath.KeepAll
			info, err := ros.NewReader(ros2.DiscoveryInfoTopic, ros2.ParticipantEntitiesInfoDDSType, q)
			require.NoError(t, err)
			scan, err := ros.NewReader("rt/scan", "sensor_msgs::msg::dds_::LaserScan_", ddspath.SensorDataQoS())
			require.NoError(t, err)

			done := make(chan error, 1)
			go func() {
				_, _, err := runCLI(t, "bag", "replay", "--domain", strconv.Itoa(int(domain)), "--topics", "/scan",
					"--fixed-rate", "/scan=30", "--duration", "1500ms", "--progress", "0", "--ros-distro", tc.distro, dir)
				done <- err
			}()

			var pub ddspath.Endpoint
			select {
			case pub = <-pubs:
			case <-time.After(10 * time.Second):
				require.FailNow(t, "rt/scan writer of the replay not discovered")
			}
			want := []ros2.NodeEntitiesInfo{{Namespace: "/", Name: "picobridge_bag_replay", Writers: []ros2.Gid{ros2.Gid(pub.GUID)}}}
			var got []ros2.NodeEntitiesInfo
			deadline := time.After(10 * time.Second)
			for len(got) == 0 || len(got[0].Writers) == 0 {
				select {
				case s := <-info.C():
					m, err := ros2.DecodeParticipantEntitiesInfo(s.CDR, tc.size)
					require.NoError(t, err)
					require.Equal(t, ros2.Gid(pub.Participant), m.Gid, "the replay participant's GUID")
					got = m.Nodes
				case <-deadline:
					require.FailNow(t, "no ros_discovery_info with the replay's writer", "last: %+v", got)
				}
			}
			require.Equal(t, want, got)
			require.NoError(t, <-done)
			require.NotZero(t, scan.Stats().Received, "the replay published /scan")
		})
	}
}
