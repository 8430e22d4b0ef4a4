//go:build cgo && cyclonedds

package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/zenohpath"
)

func seqSample(seq uint32) []byte {
	return binary.LittleEndian.AppendUint32([]byte{0, 1, 0, 0}, seq)
}

// TestTransientLocalLateJoiner: a TRANSIENT_LOCAL DDS writer (KEEP_LAST 5,
// 8 samples written) is bridged; a device that subscribes late, while a
// critical stream flows to it on the express lane, gets exactly the 5
// retained samples, in order, through its batched lane, and the critical
// stream keeps arriving during the replay (every critical sample delivered
// or counted as a drop); a plain Zenoh get on the key returns the same 5.
func TestTransientLocalLateJoiner(t *testing.T) {
	domain := svcDomain()
	tag := fmt.Sprintf("%d_%d", os.Getpid(), rand.Uint32())
	mapTopic, critTopic := "/tl_map_"+tag, "/tl_crit_"+tag
	s := startDDSServer(t, fmt.Sprintf(`
zenoh:
  listen: [tcp/127.0.0.1:0]
metrics:
  listen: ""
dds:
  domain: %d
routes:
  critical: [%q]
devices:
  list: [{name: late, platform: generic, class: critical}]  # pinned: the classifier is not under test
supervisor:
  degraded: {lag: 5s}
  emergency: {lag: 10s}
`, domain, critTopic))
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	const typ = "std_msgs::msg::dds_::UInt32_"
	tl, err := p.NewWriter("rt"+mapTopic, typ, ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 5, Durability: ddspath.TransientLocal})
	require.NoError(t, err)
	for i := range uint32(8) {
		require.NoError(t, tl.Write(seqSample(i), time.Time{}))
	}
	crit, err := p.NewWriter("rt"+critTopic, typ, ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	routeSamples := func(topic string) uint64 {
		for _, r := range s.Routez().Routes {
			if r.Topic == topic && r.Direction == dirToZenoh {
				return r.Samples
			}
		}
		return 0
	}
	require.Eventually(t, func() bool { return routeSamples(mapTopic) == 5 }, 60*time.Second, 20*time.Millisecond,
		"the gateway got the writer's 5 retained samples: %+v", s.Routez().Routes)
	require.Eventually(t, func() bool { return crit.Matched() > 0 }, 30*time.Second, 20*time.Millisecond, "critical route")

	dev, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer dev.Close()
	_, err = DeclareProbeResponder(dev, "late")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Gateway().Device("late") != nil }, 20*time.Second, 20*time.Millisecond, "device attached")

	var mu sync.Mutex
	var critGot []uint32
	var mapGot []uint32
	var critAtMap []int // critical samples received when each history sample arrived
	_, err = dev.DeclareSubscriber(critTopic[1:], func(smp zenohpath.Sample) {
		mu.Lock()
		critGot = append(critGot, binary.LittleEndian.Uint32(smp.Payload()[4:]))
		mu.Unlock()
	})
	require.NoError(t, err)
	const n = 200
	stop := make(chan struct{})
	critDone := make(chan struct{})
	go func() { // the critical stream, 50 Hz
		defer close(critDone)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := range uint32(n) {
			select {
			case <-tick.C:
			case <-stop:
				return
			}
			_ = crit.Write(seqSample(i), time.Time{})
		}
	}()
	defer close(stop)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(critGot) >= 20 }, 30*time.Second, 10*time.Millisecond, "critical stream flowing")

	_, err = dev.DeclareSubscriber(mapTopic[1:], func(smp zenohpath.Sample) {
		mu.Lock()
		mapGot = append(mapGot, binary.LittleEndian.Uint32(smp.Payload()[4:]))
		critAtMap = append(critAtMap, len(critGot))
		mu.Unlock()
	})
	require.NoError(t, err)
	<-critDone
	var devz bridge.DeviceStatus
	require.Eventually(t, func() bool {
		d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "late"})
		if len(d.Devices) != 1 {
			return false
		}
		devz = d.Devices[0]
		dropped := uint64(0)
		for _, v := range devz.CriticalDropped {
			dropped += v
		}
		mu.Lock()
		defer mu.Unlock()
		return len(mapGot) == 5 && uint64(len(critGot))+dropped >= n
	}, 60*time.Second, 20*time.Millisecond, "history replayed and the critical stream accounted: %v, %d critical, dropped %v, lanes %+v, mode %s, routes %+v",
		func() []uint32 { mu.Lock(); defer mu.Unlock(); return append([]uint32(nil), mapGot...) }(),
		func() int { mu.Lock(); defer mu.Unlock(); return len(critGot) }(), devz.CriticalDropped, devz.Lanes, s.Gateway().Mode(), s.Routez().Routes)
	time.Sleep(300 * time.Millisecond) // nothing more may come
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []uint32{3, 4, 5, 6, 7}, mapGot, "the writer's depth of history, oldest first, once")
	require.Greater(t, critAtMap[4], critAtMap[0], "critical samples kept arriving during the replay")
	require.GreaterOrEqual(t, len(critGot), n*95/100, "critical stream: %d of %d (critical drops %v)", len(critGot), n, devz.CriticalDropped)
	require.Equal(t, 5.0, testutil.ToFloat64(s.histStats.replayed.WithLabelValues("device")))

	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	replies, err := cli.Get(mapTopic[1:], &zenohpath.GetOptions{Timeout: 10 * time.Second})
	require.NoError(t, err)
	var got []uint32
	for rep := range replies {
		smp, ok := rep.Ok()
		require.True(t, ok)
		got = append(got, binary.LittleEndian.Uint32(smp.Payload()[4:]))
	}
	require.Equal(t, []uint32{3, 4, 5, 6, 7}, got)
	t.Logf("late joiner: history %v while %d/%d critical samples arrived (%d during the replay)", mapGot, len(critGot), n, critAtMap[4]-critAtMap[0])
}
