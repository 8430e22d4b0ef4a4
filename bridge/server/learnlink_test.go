package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/sim/linkemu"
	"github.com/picobridge/picobridge/zenohpath"
)

// learnCase is one run of the learned link budget through eval/linkemu.
type learnCase struct {
	link     linkemu.Bitrate // the device link's rate, both ways
	stepTo   linkemu.Bitrate // from stepAt on (0: no step)
	stepAt   time.Duration
	bulk     int // bytes per bulk sample, 10 Hz
	queue    int // the bottleneck queue, bytes (linkemu Config.QueueBytes)
	duration time.Duration
	// from is when the checked part starts (the learning before it is
	// not checked); p99 bounds the express latency of the samples sent
	// from then on, and bulk ≥ minBulk of the bulk samples from then on
	// must arrive.
	from    time.Duration
	p99     time.Duration
	minBulk float64
}

// learnRun publishes 48 B critical samples at 50 Hz (the express lane)
// and bulk samples at 10 Hz (batched lane, best effort) to one device
// behind linkemu with a bottleneck queue of c.queue bytes, with the default
// configuration (policy.link.estimate: learn; nothing about the link
// configured), and returns the express latencies of the samples sent from
// c.from on, the express samples lost, and the share of the bulk samples
// sent from c.from on that arrived.
func learnRun(t *testing.T, c learnCase) (lat []time.Duration, lost int, bulkShare float64, class bridge.Class) {
	t.Helper()
	s := startTestServer(t, `
zenoh:
  listen: [tcp/127.0.0.1:0]
routes:
  critical: ["/crit"]
devices:
  list:
    - {name: dev, platform: posix, env: {NROS_ZENOH_FRAG_MAX_SIZE: "4194304", NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE: "4194304", NROS_ZENOH_SUBSCRIBER_RING_DEPTH: "16"}}
supervisor:             # a loaded test machine must not suspend lanes
  degraded: {lag: 2s}
  emergency: {lag: 5s}
metrics:
  listen: ""
`)
	ep := s.Endpoints()[0]
	imp := linkemu.Impairment{Rate: c.link}
	proxy, err := linkemu.NewTCPProxy("127.0.0.1:0", ep[len("tcp/"):], linkemu.Config{
		Profile: linkemu.Profile{Name: "link", ToDevice: imp, ToGateway: imp}, QueueBytes: c.queue, Seed: 30})
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })

	var mu sync.Mutex
	t0 := time.Now()
	from := t0.Add(c.from)
	expressAt := map[uint32]time.Duration{}
	bulkGot := 0
	sess, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{"tcp/" + proxy.Addr()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sess.Close() })
	_, err = sess.DeclareSubscriber("crit", func(smp zenohpath.Sample) {
		p := smp.Payload()
		now := time.Now()
		sent := time.Unix(0, int64(binary.LittleEndian.Uint64(p[4:])))
		mu.Lock()
		defer mu.Unlock()
		if !sent.Before(from) {
			expressAt[binary.LittleEndian.Uint32(p)] = now.Sub(sent)
		}
	})
	require.NoError(t, err)
	_, err = sess.DeclareSubscriber("bulk", func(smp zenohpath.Sample) {
		sent := time.Unix(0, int64(binary.LittleEndian.Uint64(smp.Payload()[4:])))
		mu.Lock()
		defer mu.Unlock()
		if !sent.Before(from) {
			bulkGot++
		}
	})
	require.NoError(t, err)
	_, err = DeclareProbeResponder(sess, "dev")
	require.NoError(t, err)
	g := s.Gateway()
	eventually(t, "dev attached with its subscriptions", func() bool {
		d := g.Devicez(bridge.DevicezOptions{Device: "dev"})
		return len(d.Devices) == 1 && len(d.Devices[0].Subscriptions) == 2
	})
	crit, ok := g.Routes().Resolve("/crit", "std_msgs/msg/String", "")
	require.True(t, ok)
	require.Equal(t, bridge.Critical, crit.Criticality)
	bulk := g.RouteForKey("bulk")

	t0 = time.Now()
	from = t0.Add(c.from)
	if c.stepTo > 0 {
		step := time.AfterFunc(c.stepAt, func() {
			imp := linkemu.Impairment{Rate: c.stepTo}
			_ = proxy.SetProfile(linkemu.Profile{Name: "step", ToDevice: imp, ToGateway: imp})
		})
		t.Cleanup(func() { step.Stop() })
	}
	sentCrit, sentBulk := 0, 0
	for i := 0; ; i++ {
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		if at.Sub(t0) >= c.duration {
			break
		}
		time.Sleep(time.Until(at))
		now := time.Now()
		p := make([]byte, 48)
		binary.LittleEndian.PutUint32(p, uint32(i))
		binary.LittleEndian.PutUint64(p[4:], uint64(now.UnixNano()))
		g.Publish(crit, bridge.Sample{Payload: p})
		if !now.Before(from) {
			sentCrit++
		}
		if i%5 == 0 { // 10 Hz
			b := make([]byte, c.bulk)
			binary.LittleEndian.PutUint64(b[4:], uint64(now.UnixNano()))
			g.Publish(bulk, bridge.Sample{Payload: b})
			if !now.Before(from) {
				sentBulk++
			}
		}
	}
	// What the link still holds arrives (at most its queue at the rate);
	// the caller checks that every express sample did.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(expressAt)
		mu.Unlock()
		if n >= sentCrit {
			break
		}
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for _, l := range expressAt {
		lat = append(lat, l)
	}
	slices.Sort(lat)
	st := g.Devicez(bridge.DevicezOptions{Device: "dev", Transitions: true}).Devices[0]
	require.NotNil(t, st.Link.Learned, "policy.link.estimate: learn is the default")
	t.Logf("link %v→%v: express %d/%d p50 %v p99 %v max %v; bulk %d/%d; learned %+v; class %v, transitions %+v, reading %+v",
		c.link, c.stepTo, len(expressAt), sentCrit, lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], bulkGot, sentBulk,
		*st.Link.Learned, st.Classifier.Class, st.Classifier.History, st.Classifier.Reading)
	return lat, sentCrit - len(expressAt), float64(bulkGot) / float64(sentBulk), st.Classifier.Class
}

// TestLearnedLinkBudget (issue 30 item 4): with nothing configured about
// the device's link, a 48 B express stream at 50 Hz beside bulk at 10 Hz
// through eval/linkemu with a bounded bottleneck queue keeps a short queue
// once the rate is learned: the express p99 of the checked part is within
// the bound, no express sample is lost, and bulk still arrives. Unpaced,
// the queue holds 80 ms of each 100 kB burst at 10 Mbit/s, and 84 ms (a
// full 1 MiB queue) at 100 Mbit/s; after the rate step 100 → 10 Mbit/s
// it holds over a second (linkemu's queue and the socket buffer in front
// of it), which the learner drains (and the classifier does not take for
// a bad device: the critical route stays on the express lane). The
// bounds leave room for the race detector on a 2-core host; egressbench
// measures the goals without it (docs/egressbench.md).
func TestLearnedLinkBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: seconds of traffic through linkemu")
	}
	for _, c := range []struct {
		name string
		learnCase
	}{
		{"10mbit", learnCase{link: 10 * (1000 * linkemu.Kbit), bulk: 100_000, queue: 256 << 10, duration: 5 * time.Second,
			from: 2 * time.Second, p99: 30 * time.Millisecond, minBulk: 0.9}},
		// Under -race the gateway itself is slower: 68–90 % of the 1 MB
		// samples arrived at load 1–7 (egressbench without -race: 98 %);
		// a starved bulk lane (the learner at its 16 kB/s floor) gets
		// none.
		{"100mbit", learnCase{link: 100 * (1000 * linkemu.Kbit), bulk: 1_000_000, queue: 1 << 20, duration: 8 * time.Second,
			from: 3 * time.Second, p99: 30 * time.Millisecond, minBulk: 0.5}},
		// After the step, 1 MB samples overload the 10 Mbit/s link 8×:
		// keep-latest replaces most of them, so only express is checked,
		// from 3 s after the step (the drain of the second of queue
		// takes 2.3–2.8 s here).
		{"step", learnCase{link: 100 * (1000 * linkemu.Kbit), stepTo: 10 * (1000 * linkemu.Kbit), stepAt: 4 * time.Second,
			bulk: 1_000_000, queue: 256 << 10, duration: 10 * time.Second, from: 7 * time.Second, p99: 30 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lat, lost, bulk, class := learnRun(t, c.learnCase)
			require.Zero(t, lost, "express samples lost")
			require.Equal(t, bridge.ClassCritical, class, "the device keeps its class")
			require.LessOrEqual(t, lat[len(lat)*99/100], c.p99, fmt.Sprintf("express p99 from %v", c.from))
			require.GreaterOrEqual(t, bulk, c.minBulk, "bulk share delivered")
		})
	}
}
