//go:build cgo && cyclonedds

package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/internal/anchortest"
	"github.com/picobridge/picobridge/internal/netns"
	"github.com/picobridge/picobridge/zenohpath"
)

// startHistAnchor starts zenohd 1.10.2 with zenoh-plugin-ros2dds 1.10.2
// (ROS_DISTRO=humble) on DDS domain, its Cyclone on our loopback-unicast
// configuration (internal/anchortest); returns its Zenoh endpoint.
func startHistAnchor(t *testing.T, dir string, domain uint32) string {
	t.Helper()
	return anchortest.StartROS2DDS(t, anchortest.Options{Anchors: dir, Domain: int(domain), Distro: "humble",
		CycloneURI: ddspath.Config{DomainID: domain}.XML()}).Endpoint()
}

// histProbe is a DDS participant on domain announcing the ROS node
// /tl_probe on ros_discovery_info (the plugin routes only what a node
// declares).
func histProbe(t *testing.T, domain uint32) *ddspath.Participant {
	t.Helper()
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	_, err = p.AnnounceNode(ddspath.NodeConfig{Name: "tl_probe"})
	require.NoError(t, err)
	return p
}

// recvSeqs reads want samples from rd (60 s at most), then checks for 2 s
// that no more come.
func recvSeqs(t *testing.T, rd *ddspath.Reader, want int, what string) []uint32 {
	t.Helper()
	var got []uint32
	deadline := time.After(60 * time.Second)
	for len(got) < want {
		select {
		case smp := <-rd.C():
			got = append(got, binary.LittleEndian.Uint32(smp.CDR[4:]))
		case <-deadline:
			t.Fatalf("%s: got %v, want %d samples", what, got, want)
		}
	}
	select {
	case smp := <-rd.C():
		t.Fatalf("%s: got %v, then more: %d", what, got, binary.LittleEndian.Uint32(smp.CDR[4:]))
	case <-time.After(2 * time.Second):
	}
	return got
}

// TestAnchorTransientLocalHistoryROS2DDS (opt-in: PICOBRIDGE_ANCHORS):
// late joiners across Zenoh between the gateway and zenohd 1.10.2 +
// zenoh-plugin-ros2dds 1.10.2 (its AdvancedPublisher with a cache, its
// AdvancedSubscriber with history and detect_late_publishers), each on its
// own DDS domain, the gateway connected to zenohd, in a network namespace
// of its own. A TRANSIENT_LOCAL writer (KEEP_LAST 5) writes 8 samples; then
// a TRANSIENT_LOCAL reader (KEEP_LAST 5) appears on the other side's domain
// and gets exactly the last 5, oldest first, once:
//
//   - gateway → ros2dds: the writer on the gateway's domain; the reader
//     (node /tl_probe) on the plugin's, whose route queries the gateway's
//     @adv cache;
//   - ros2dds → gateway: the writer (node /tl_probe) on the plugin's domain,
//     cached by the plugin once a Zenoh subscriber matched it; the reader
//     on the gateway's domain, whose route gets the history from the
//     plugin's cache (gateway counter dds = 5).
func TestAnchorTransientLocalHistoryROS2DDS(t *testing.T) {
	dir := anchortest.Dir(t)
	if !netns.Run(t) {
		return
	}
	tl := ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 5, Durability: ddspath.TransientLocal}
	startGW := func(domain uint32, ep string) *Server {
		return startDDSServer(t, fmt.Sprintf(`
zenoh: {listen: [tcp/127.0.0.1:0], connect: [%s]}
metrics: {listen: ""}
dds: {domain: %d}
services:
  queries_timeout: {transient_local: 5s}
`, ep, domain))
	}
	t.Run("gateway to ros2dds", func(t *testing.T) {
		dP, dG := 100+uint32(rand.IntN(50)), 150+uint32(rand.IntN(50))
		topic := "/tlanchor_fwd_" + testTag()
		ep := startHistAnchor(t, dir, dP)
		gw := startGW(dG, ep)
		pg, err := ddspath.Open(ddspath.Config{DomainID: dG})
		require.NoError(t, err)
		defer pg.Close()
		w, err := pg.NewWriter("rt"+topic, u32Type, tl)
		require.NoError(t, err)
		for i := range uint32(8) {
			require.NoError(t, w.Write(seqSample(i), time.Time{}))
		}
		require.Eventually(t, func() bool { r, ok := routeOf(gw, topic, dirToZenoh); return ok && r.Samples == 5 }, 60*time.Second, 20*time.Millisecond,
			"the gateway bridged the writer's 5 retained samples: %+v", gw.Routez().Routes)
		before := testutil.ToFloat64(gw.histStats.replayed.WithLabelValues("query"))
		rd, err := histProbe(t, dP).NewReader("rt"+topic, u32Type, tl)
		require.NoError(t, err)
		got := recvSeqs(t, rd, 5, "ros2dds's late reader")
		answered := testutil.ToFloat64(gw.histStats.replayed.WithLabelValues("query")) - before
		t.Logf("gateway → ros2dds: late reader got %v; the gateway answered %v samples to the plugin's history queries", got, answered)
		require.Equal(t, []uint32{3, 4, 5, 6, 7}, got, "the writer's depth, oldest first, once")
		require.GreaterOrEqual(t, answered, 5.0, "the plugin's AdvancedSubscriber queried the gateway's cache")
	})
	t.Run("ros2dds to gateway", func(t *testing.T) {
		dP, dG := 100+uint32(rand.IntN(50)), 150+uint32(rand.IntN(50))
		topic := "/tlanchor_rev_" + testTag()
		key := topic[1:]
		ep := startHistAnchor(t, dir, dP)
		w, err := histProbe(t, dP).NewWriter("rt"+topic, u32Type, tl)
		require.NoError(t, err)
		for i := range uint32(8) {
			require.NoError(t, w.Write(seqSample(i), time.Time{}))
		}
		// The plugin reads DDS (and fills its cache) only while a Zenoh
		// subscriber matches its route (route_publisher.rs matching_listener).
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cli, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
		require.NoError(t, err)
		defer cli.Close()
		var live atomic.Int64
		_, err = cli.DeclareSubscriber(key, func(s zenohpath.Sample) { live.Add(1) })
		require.NoError(t, err)
		require.Eventually(t, func() bool { return live.Load() == 5 }, 60*time.Second, 20*time.Millisecond,
			"the plugin republished the writer's 5 retained samples (got %d)", live.Load())

		gw := startGW(dG, ep)
		time.Sleep(time.Second) // the gateway's session with zenohd is up
		pg, err := ddspath.Open(ddspath.Config{DomainID: dG})
		require.NoError(t, err)
		defer pg.Close()
		rd, err := pg.NewReader("rt"+topic, u32Type, tl)
		require.NoError(t, err)
		got := recvSeqs(t, rd, 5, "the gateway's late reader")
		fetched := testutil.ToFloat64(gw.histStats.replayed.WithLabelValues("dds"))
		t.Logf("ros2dds → gateway: late reader got %v; the gateway fetched %v from the plugin's cache", got, fetched)
		require.Equal(t, []uint32{3, 4, 5, 6, 7}, got, "the writer's depth, oldest first, once")
		require.Equal(t, 5.0, fetched, "the history came from the plugin's @adv cache")
		require.Equal(t, int64(5), live.Load(), "nothing was republished live meanwhile")
	})
}
