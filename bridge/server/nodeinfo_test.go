//go:build cgo && cyclonedds

package server

import (
	"bytes"
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
)

// rosGraphReader reads ros_discovery_info as a ROS node does (RELIABLE,
// TRANSIENT_LOCAL, KEEP_ALL) and keeps the latest state per participant.
type rosGraphReader struct {
	rd   *ddspath.Reader
	size ros2.GidSize
	last map[ros2.Gid]ros2.ParticipantEntitiesInfo
}

func newROSGraphReader(t *testing.T, p *ddspath.Participant, size ros2.GidSize) *rosGraphReader {
	t.Helper()
	q := ddspath.DiscoveryInfoQoS()
	q.History = ddspath.KeepAll
	rd, err := p.NewReader(ros2.DiscoveryInfoTopic, ros2.ParticipantEntitiesInfoDDSType, q)
	require.NoError(t, err)
	return &rosGraphReader{rd: rd, size: size, last: map[ros2.Gid]ros2.ParticipantEntitiesInfo{}}
}

// node drains what arrived and returns participant pp's nodes.
func (g *rosGraphReader) node(t *testing.T, pp ddspath.GUID) []ros2.NodeEntitiesInfo {
	for {
		select {
		case s := <-g.rd.C():
			m, err := ros2.DecodeParticipantEntitiesInfo(s.CDR, g.size)
			require.NoError(t, err)
			g.last[m.Gid] = m
		default:
			return g.last[ros2.Gid(pp)].Nodes
		}
	}
}

func sortedGids(gs ...ddspath.GUID) []ros2.Gid {
	out := make([]ros2.Gid, len(gs))
	for i, g := range gs {
		out[i] = ros2.Gid(g)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][:], out[j][:]) < 0 })
	return out
}

// TestGatewayROSNode: the gateway's DDS participant is the ROS node
// dds.nodename in dds.namespace on ros_discovery_info, and the node owns
// exactly the readers and writers DDS discovery shows for the gateway's
// routes (GUIDs as another participant discovers them), following routes as
// they come and go; humble and jazzy Gid layouts.
func TestGatewayROSNode(t *testing.T) {
	for _, tc := range []struct {
		distro string
		size   ros2.GidSize
	}{{"humble", ros2.GidSizeHumble}, {"jazzy", ros2.GidSizeIron}} {
		t.Run(tc.distro, func(t *testing.T) {
			domain := svcDomain()
			s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\n  namespace: /robot1\n  nodename: pico_gw\n  ros_distro: %s\n", domain, tc.distro))
			gw := s.dds.p.GUID()

			ros, err := ddspath.Open(ddspath.Config{DomainID: uint32(domain)})
			require.NoError(t, err)
			t.Cleanup(func() { _ = ros.Close() })
			view := watchDDS(t, ros)
			graph := newROSGraphReader(t, ros, tc.size)

			// before any route: the node, owning nothing
			eventually(t, "empty node on ros_discovery_info", func() bool {
				n := graph.node(t, gw)
				return len(n) == 1 && n[0].Namespace == "/robot1" && n[0].Name == "pico_gw" && len(n[0].Readers)+len(n[0].Writers) == 0
			})

			// a ROS publisher of /chatter (→ gateway reader) and subscriber of /cmd (→ gateway writer)
			topicOut := fmt.Sprintf("rt/chatter_%d", domain)
			topicIn := fmt.Sprintf("rt/cmd_%d", domain)
			pub, err := ros.NewWriter(topicOut, "std_msgs::msg::dds_::String_", ddspath.ROSDefaultQoS())
			require.NoError(t, err)
			sub, err := ros.NewReader(topicIn, "std_msgs::msg::dds_::String_", ddspath.ROSDefaultQoS())
			require.NoError(t, err)
			defer sub.Close()

			gwEndpoint := func(kind ddspath.EndpointKind, topic string) (ddspath.GUID, bool) {
				for _, e := range view.find(kind, topic) {
					if e.Participant == gw {
						return e.GUID, true
					}
				}
				return ddspath.GUID{}, false
			}
			var rdGUID, wrGUID ddspath.GUID
			eventually(t, "the gateway's reader and writer in DDS discovery", func() bool {
				var ok1, ok2 bool
				rdGUID, ok1 = gwEndpoint(ddspath.Subscription, topicOut)
				wrGUID, ok2 = gwEndpoint(ddspath.Publication, topicIn)
				return ok1 && ok2
			})
			want := []ros2.NodeEntitiesInfo{{Namespace: "/robot1", Name: "pico_gw", Readers: sortedGids(rdGUID), Writers: sortedGids(wrGUID)}}
			eventually(t, "node owning the route endpoints", func() bool {
				n := graph.node(t, gw)
				return len(n) == 1 && len(n[0].Readers) == 1 && len(n[0].Writers) == 1
			})
			require.Equal(t, want, graph.node(t, gw))

			// the publisher goes: its route and the gateway's reader with it
			require.NoError(t, pub.Close())
			want[0].Readers = nil
			eventually(t, "node without the removed route's reader", func() bool {
				n := graph.node(t, gw)
				return len(n) == 1 && len(n[0].Readers) == 0
			})
			require.Equal(t, want, graph.node(t, gw))
			// the announcer's counters follow its write (the reader may see the sample first)
			eventually(t, "announcer stats", func() bool {
				st := s.dds.node.Stats()
				return st.Readers == 0 && st.Writers == 1
			})
			require.Zero(t, s.dds.node.Stats().Errors)
		})
	}
}
