//go:build cgo && cyclonedds

package ddspath

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/ros2"
)

// discoveryInfoReader is a ROS-like reader of ros_discovery_info on p (the
// QoS of rmw_cyclonedds_cpp's: RELIABLE, TRANSIENT_LOCAL, KEEP_ALL).
func discoveryInfoReader(t *testing.T, p *Participant) *Reader {
	t.Helper()
	q := DiscoveryInfoQoS()
	q.History = KeepAll
	rd, err := p.NewReader(ros2.DiscoveryInfoTopic, ros2.ParticipantEntitiesInfoDDSType, q)
	require.NoError(t, err)
	return rd
}

// nextInfo returns the next ros_discovery_info sample of participant pp that
// satisfies ok, decoded with size.
func nextInfo(t *testing.T, rd *Reader, size ros2.GidSize, pp GUID, ok func(ros2.ParticipantEntitiesInfo) bool) ros2.ParticipantEntitiesInfo {
	t.Helper()
	deadline := time.After(5 * time.Second * timeScale())
	for {
		select {
		case s := <-rd.C():
			m, err := ros2.DecodeParticipantEntitiesInfo(s.CDR, size)
			require.NoError(t, err)
			if m.Gid == ros2.Gid(pp) && ok(m) {
				return m
			}
		case <-deadline:
			require.FailNow(t, "no matching ros_discovery_info sample")
		}
	}
}

// discovered collects what DDS discovery on p reports of other participants' endpoints.
func discovered(t *testing.T, p *Participant) func() map[GUID]Endpoint {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := make(chan Endpoint, 256)
	go func() { _ = p.WatchEndpoints(ctx, func(e Endpoint) { ch <- e }) }()
	seen := map[GUID]Endpoint{}
	return func() map[GUID]Endpoint {
		for {
			select {
			case e := <-ch:
				if e.Alive {
					seen[e.GUID] = e
				} else {
					delete(seen, e.GUID)
				}
			default:
				return seen
			}
		}
	}
}

func gids(gs ...GUID) []ros2.Gid {
	out := make([]ros2.Gid, len(gs))
	for i, g := range gs {
		out[i] = ros2.Gid(g)
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i][:]) < string(out[j][:]) })
	return out
}

// TestAnnounceNode: another participant reads the node from
// ros_discovery_info with exactly the GUIDs its DDS discovery reports for the
// announcing participant's endpoints, in both Gid layouts; the list follows
// endpoints as they come and go, and a late joiner gets the latest state.
func TestAnnounceNode(t *testing.T) {
	for _, tc := range []struct {
		distro string
		size   ros2.GidSize
	}{{"humble", ros2.GidSizeHumble}, {"jazzy", ros2.GidSizeIron}} {
		t.Run(tc.distro, func(t *testing.T) {
			gw, ros := openPair(t)
			disco := discovered(t, ros)
			rd := discoveryInfoReader(t, ros)
			a, err := gw.AnnounceNode(NodeConfig{Namespace: "/robot1", Name: "picobridge", GidSize: tc.size})
			require.NoError(t, err)

			// no endpoints yet: the node, empty
			m := nextInfo(t, rd, tc.size, gw.GUID(), func(ros2.ParticipantEntitiesInfo) bool { return true })
			require.Equal(t, []ros2.NodeEntitiesInfo{{Namespace: "/robot1", Name: "picobridge"}}, m.Nodes)

			w1, err := gw.NewWriter(uniqueTopic(t, "w1"), "std_msgs::msg::dds_::String_", ROSDefaultQoS())
			require.NoError(t, err)
			w2, err := gw.NewWriter(uniqueTopic(t, "w2"), "std_msgs::msg::dds_::String_", SensorDataQoS())
			require.NoError(t, err)
			r1, err := gw.NewReader(uniqueTopic(t, "r1"), "std_msgs::msg::dds_::String_", ROSDefaultQoS())
			require.NoError(t, err)

			// the GUIDs as the other participant's DDS discovery reports them
			var gw1, gw2, gr1 GUID
			waitFor(t, 5*time.Second, "discovery of the three endpoints", func() bool {
				seen := disco()
				gw1, gw2, gr1 = GUID{}, GUID{}, GUID{}
				for g, e := range seen {
					switch e.Topic {
					case w1.Topic():
						gw1 = g
					case w2.Topic():
						gw2 = g
					case r1.Topic():
						gr1 = g
					}
				}
				return gw1 != GUID{} && gw2 != GUID{} && gr1 != GUID{}
			})
			for _, g := range []GUID{gw1, gw2, gr1} {
				require.Equal(t, gw.GUID().String()[:24], g.String()[:24], "same GUID prefix as the participant")
			}
			own1, err := w1.GUID()
			require.NoError(t, err)
			require.Equal(t, gw1, own1)

			want := []ros2.NodeEntitiesInfo{{Namespace: "/robot1", Name: "picobridge", Readers: gids(gr1), Writers: gids(gw1, gw2)}}
			m = nextInfo(t, rd, tc.size, gw.GUID(), func(m ros2.ParticipantEntitiesInfo) bool {
				return len(m.Nodes) == 1 && len(m.Nodes[0].Writers) == 2 && len(m.Nodes[0].Readers) == 1
			})
			require.Equal(t, want, m.Nodes)
			require.Equal(t, tc.size, m.GidSize)

			// a writer goes
			require.NoError(t, w1.Close())
			want[0].Writers = gids(gw2)
			m = nextInfo(t, rd, tc.size, gw.GUID(), func(m ros2.ParticipantEntitiesInfo) bool {
				return len(m.Nodes) == 1 && len(m.Nodes[0].Writers) == 1
			})
			require.Equal(t, want, m.Nodes)

			// a late joiner gets the latest state (TRANSIENT_LOCAL, KEEP_LAST 1) and only it
			late := discoveryInfoReader(t, ros)
			m = nextInfo(t, late, tc.size, gw.GUID(), func(ros2.ParticipantEntitiesInfo) bool { return true })
			require.Equal(t, want, m.Nodes)
			select {
			case s := <-late.C():
				require.FailNow(t, "late joiner got more than the latest state", "%x", s.CDR)
			case <-time.After(200 * time.Millisecond):
			}

			// Stats and Info follow the write (a reader may see the sample first)
			waitFor(t, time.Second, "announcer stats", func() bool {
				st := a.Stats()
				return st.Readers == 1 && st.Writers == 1
			})
			st := a.Stats()
			require.Zero(t, st.Errors)
			require.GreaterOrEqual(t, st.Published, uint64(3))
			require.Equal(t, want, a.Info().Nodes)

			_, err = gw.AnnounceNode(NodeConfig{Name: "second"})
			require.ErrorContains(t, err, "already announces node /robot1/picobridge")
			require.NoError(t, a.Close())
			require.NoError(t, a.Close())
		})
	}
}

func TestAnnounceNodeConfig(t *testing.T) {
	p, _ := openPair(t)
	for _, tc := range []struct {
		cfg NodeConfig
		err string
	}{
		{NodeConfig{}, "empty node name"},
		{NodeConfig{Name: "pico-bridge"}, "not allowed"},
		{NodeConfig{Name: "a", Namespace: "robot"}, "node namespace"},
		{NodeConfig{Name: "a", GidSize: 20}, "want 24 (up to humble) or 16 (iron and later)"},
	} {
		_, err := p.AnnounceNode(tc.cfg)
		require.ErrorContains(t, err, tc.err, "%+v", tc.cfg)
	}
	a, err := p.AnnounceNode(NodeConfig{Name: "ok"})
	require.NoError(t, err)
	_ = a // closed by the participant
}
