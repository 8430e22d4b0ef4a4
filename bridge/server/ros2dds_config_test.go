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

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/zenohpath"
)

// Behaviour of the zenoh-bridge-ros2dds keys of routes.* (routes_config.go)
// with real DDS on one side and a Zenoh client on the other.

const u32Type = "std_msgs::msg::dds_::UInt32_"

func testTag() string { return fmt.Sprintf("%d_%d", os.Getpid(), rand.Uint32()) }

func routeOf(s *Server, topic, dir string) (RouteStatus, bool) {
	for _, r := range s.Routez().Routes {
		if r.Topic == topic && r.Direction == dir {
			return r, true
		}
	}
	return RouteStatus{}, false
}

// seqs records the sequence numbers (seqSample) a Zenoh subscriber gets.
type seqs struct {
	mu  sync.Mutex
	got []uint32
	smp []zenohpath.Sample
}

func (q *seqs) add(smp zenohpath.Sample) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.got = append(q.got, binary.LittleEndian.Uint32(smp.Payload()[4:]))
	q.smp = append(q.smp, smp)
}

func (q *seqs) snapshot() ([]uint32, []zenohpath.Sample) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]uint32(nil), q.got...), append([]zenohpath.Sample(nil), q.smp...)
}

// pub_max_frequencies ["<topic>=10"]: a 100 Hz DDS topic reaches a Zenoh
// subscriber at ~10 Hz. Exact: every sample written is received or counted
// dropped (reason max_frequency), and the last one written is received
// (the held sample goes out when its slot opens). Bounded by the
// Downsampler's rule (fewer than W/period + 2 in any window W), with the
// writer's span for W plus one period for the final slot and one for DDS
// delivery jitter; at least half the cap's rate (the writer keeps every
// slot fed unless the host stalls it).
func TestPubMaxFrequencyDDSToZenoh(t *testing.T) {
	domain := svcDomain()
	topic := "/mf_" + testTag()
	s := startDDSServer(t, fmt.Sprintf(`
zenoh: {listen: [tcp/127.0.0.1:0]}
metrics: {listen: ""}
dds: {domain: %d}
routes:
  pub_max_frequencies: ["%s=10", ".*=1000"]
`, domain, topic))
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	w, err := p.NewWriter("rt"+topic, u32Type, ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 100, Durability: ddspath.Volatile})
	require.NoError(t, err)
	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	var rec seqs
	_, err = cli.DeclareSubscriber(topic[1:], rec.add)
	require.NoError(t, err)

	// Warm-up samples until the route and the subscription are up (those
	// written before are lost to nobody's count: no reader, no subscriber).
	const warm = 1 << 31
	nwarm := uint32(0)
	require.Eventually(t, func() bool {
		_ = w.Write(seqSample(warm+nwarm), time.Time{})
		nwarm++
		got, _ := rec.snapshot()
		return len(got) > 0
	}, 30*time.Second, 50*time.Millisecond, "route and subscription up")
	time.Sleep(300 * time.Millisecond) // the warm-up's held sample goes out; slots reset
	dropped := func() int {
		return int(testutil.ToFloat64(s.stats.dropped.WithLabelValues(dirToZenoh, topic, reasonMaxFrequency)))
	}
	dropped0 := dropped()

	const n = 300 // 3 s at 100 Hz
	tick := time.NewTicker(10 * time.Millisecond)
	start := time.Now()
	for i := range uint32(n) {
		<-tick.C
		require.NoError(t, w.Write(seqSample(i), time.Time{}))
	}
	span := time.Since(start)
	tick.Stop()

	measuredOf := func() []uint32 {
		got, _ := rec.snapshot()
		var m []uint32
		for _, g := range got {
			if g < warm {
				m = append(m, g)
			}
		}
		return m
	}
	require.Eventually(t, func() bool {
		return len(measuredOf())+dropped()-dropped0 == n
	}, 30*time.Second, 20*time.Millisecond, "every sample received or counted")
	measured := measuredOf()
	require.NotEmpty(t, measured)
	require.Equal(t, uint32(n-1), measured[len(measured)-1], "the last sample written is bridged")
	period := 100 * time.Millisecond
	upper := int((span+2*period)/period) + 2
	require.Less(t, len(measured), upper, "cap: %d samples over %v", len(measured), span)
	require.GreaterOrEqual(t, len(measured), int(span/period)/2, "about the cap's rate")
	r, ok := routeOf(s, topic, dirToZenoh)
	require.True(t, ok)
	require.GreaterOrEqual(t, r.Dropped, uint64(dropped()), "/routez counts the drops (with any other DDS-input loss)")
	t.Logf("pub_max_frequencies 10: %d of %d samples in %v (%.1f Hz), %d dropped (max_frequency); load %s",
		len(measured), n, span.Round(time.Millisecond), float64(len(measured))/span.Seconds(), dropped()-dropped0, loadavg())
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b[:min(len(b), 14)])
}

// pub_priorities and reliable_routes_blocking: what a Zenoh subscriber
// sees of each route's puts (priority, express, congestion control).
func TestPubPrioritiesAndReliableBlocking(t *testing.T) {
	for _, blocking := range []bool{true, false} {
		t.Run(fmt.Sprintf("reliable_routes_blocking=%v", blocking), func(t *testing.T) {
			domain := svcDomain()
			tag := testTag()
			exp, low, plain, be := "/pp_exp_"+tag, "/pp_low_"+tag, "/pp_plain_"+tag, "/pp_be_"+tag
			s := startDDSServer(t, fmt.Sprintf(`
zenoh: {listen: [tcp/127.0.0.1:0]}
metrics: {listen: ""}
dds: {domain: %d}
routes:
  pub_priorities: ["%s=3:express", "%s=6"]
  reliable_routes_blocking: %v
`, domain, exp, low, blocking))
			p, err := ddspath.Open(ddspath.Config{DomainID: domain})
			require.NoError(t, err)
			defer p.Close()
			cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
			require.NoError(t, err)
			defer cli.Close()
			type want struct {
				prio    zenohpath.Priority
				express bool
				cc      zenohpath.CongestionControl
				crit    bool
			}
			block := zenohpath.CongestionControlDrop
			if blocking {
				block = zenohpath.CongestionControlBlock
			}
			for topic, x := range map[string]want{
				exp:   {3, true, zenohpath.CongestionControlDrop, true}, // :express → critical route: never blocks
				low:   {6, false, block, false},
				plain: {zenohpath.PriorityData, false, block, false},
				be:    {zenohpath.PriorityData, false, zenohpath.CongestionControlDrop, false}, // BEST_EFFORT writer
			} {
				q := ddspath.ROSDefaultQoS()
				if topic == be {
					q.Reliability = ddspath.BestEffort
				}
				w, err := p.NewWriter("rt"+topic, u32Type, q)
				require.NoError(t, err)
				var rec seqs
				_, err = cli.DeclareSubscriber(topic[1:], rec.add)
				require.NoError(t, err)
				require.Eventually(t, func() bool {
					_ = w.Write(seqSample(1), time.Time{})
					got, _ := rec.snapshot()
					return len(got) > 0
				}, 30*time.Second, 50*time.Millisecond, topic)
				_, smps := rec.snapshot()
				require.Equal(t, x.prio, smps[0].Priority(), topic)
				require.Equal(t, x.express, smps[0].Express(), topic)
				require.Equal(t, x.cc, smps[0].CongestionControl(), topic)
				r, ok := routeOf(s, topic, dirToZenoh)
				require.True(t, ok)
				require.Equal(t, x.crit, r.Criticality == "critical", topic)
			}
		})
	}
}

// routes.allow per kind (zenoh-bridge-ros2dds allow block): publishers
// listed, subscribers not: a topic with a DDS writer and a DDS reader is
// bridged DDS → Zenoh only; a topic not listed not at all; routes.deny
// per kind refuses only its kind.
func TestRoutesAllowDenyPerKindDDS(t *testing.T) {
	for _, c := range []struct {
		name, cfg        string
		toZenoh, fromDDS bool // listed topic: dds_to_zenoh, zenoh_to_dds routes
		other            bool // the unlisted topic bridged (both ways)
	}{
		{"allow publishers", `allow: {publishers: ["%s"]}`, true, false, false},
		{"allow subscribers", `allow: {subscribers: ["%s"]}`, false, true, false},
		{"deny publishers", `deny: {publishers: ["%s"]}`, false, true, true},
		{"flat allow", `allow: ["%s"]`, true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			domain := svcDomain()
			tag := testTag()
			listed, other := "/ad_"+tag, "/ad_other_"+tag
			s := startDDSServer(t, fmt.Sprintf(`
zenoh: {listen: [tcp/127.0.0.1:0]}
metrics: {listen: ""}
dds: {domain: %d}
routes:
  `+c.cfg+`
`, domain, listed))
			p, err := ddspath.Open(ddspath.Config{DomainID: domain})
			require.NoError(t, err)
			defer p.Close()
			for _, topic := range []string{listed, other} {
				_, err := p.NewWriter("rt"+topic, u32Type, ddspath.ROSDefaultQoS())
				require.NoError(t, err)
				_, err = p.NewReader("rt"+topic, u32Type, ddspath.ROSDefaultQoS())
				require.NoError(t, err)
			}
			// The routes the filter allows appear; then, with discovery of
			// all four endpoints settled, the refused ones must be absent.
			require.Eventually(t, func() bool {
				_, a := routeOf(s, listed, dirToZenoh)
				_, b := routeOf(s, listed, dirToDDS)
				_, oa := routeOf(s, other, dirToZenoh)
				_, ob := routeOf(s, other, dirToDDS)
				return (a || !c.toZenoh) && (b || !c.fromDDS) && ((oa && ob) || !c.other)
			}, 30*time.Second, 20*time.Millisecond, "%+v", s.Routez().Routes)
			time.Sleep(time.Second)
			_, a := routeOf(s, listed, dirToZenoh)
			_, b := routeOf(s, listed, dirToDDS)
			require.Equal(t, c.toZenoh, a, "listed topic, DDS → Zenoh: %+v", s.Routez().Routes)
			require.Equal(t, c.fromDDS, b, "listed topic, Zenoh → DDS: %+v", s.Routez().Routes)
			_, a = routeOf(s, other, dirToZenoh)
			_, b = routeOf(s, other, dirToDDS)
			require.Equal(t, c.other, a, "unlisted topic: %+v", s.Routez().Routes)
			require.Equal(t, c.other, b, "unlisted topic: %+v", s.Routez().Routes)
		})
	}
}

// History queries for late joiners across Zenoh: a TRANSIENT_LOCAL DDS
// reader appears; the gateway asks Zenoh for the history on its key (a
// publication cache answers 3 samples, newest _max) and writes it to the
// reader before what is published live afterwards; it never asks itself.
func TestTransientLocalHistoryFromZenoh(t *testing.T) {
	domain := svcDomain()
	topic := "/tlz_" + testTag()
	s := startDDSServer(t, fmt.Sprintf(`
zenoh: {listen: [tcp/127.0.0.1:0]}
metrics: {listen: ""}
dds: {domain: %d}
services:
  queries_timeout: {transient_local: 3s}
`, domain))
	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	key := topic[1:]
	var qmu sync.Mutex
	var params []string
	_, err = cli.DeclareQueryable(key, func(q *zenohpath.Query) { // a publication cache
		qmu.Lock()
		params = append(params, q.Parameters())
		qmu.Unlock()
		for i := range uint32(3) {
			_ = q.Reply(key, seqSample(100+i), nil)
		}
	}, nil)
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // the queryable's declaration reaches the gateway

	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	rd, err := p.NewReader("rt"+topic, u32Type, ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 20, Durability: ddspath.TransientLocal})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok := routeOf(s, topic, dirToDDS); return ok }, 30*time.Second, 20*time.Millisecond, "route Zenoh → DDS")
	var got []uint32
	recv := func(want int) {
		deadline := time.After(30 * time.Second)
		for len(got) < want {
			select {
			case smp := <-rd.C():
				got = append(got, binary.LittleEndian.Uint32(smp.CDR[4:]))
			case <-deadline:
				t.Fatalf("DDS reader got %v, want %d samples", got, want)
			}
		}
	}
	recv(3)
	require.Equal(t, []uint32{100, 101, 102}, got, "the history, oldest first")
	pub, err := cli.DeclarePublisher(key, zenohpath.PublisherOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_ = pub.Put(seqSample(7), nil)
		select {
		case smp := <-rd.C():
			got = append(got, binary.LittleEndian.Uint32(smp.CDR[4:]))
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}, 30*time.Second, time.Millisecond, "live samples after the history")
	require.Equal(t, uint32(7), got[3])
	qmu.Lock()
	require.Equal(t, []string{"_max=20"}, params, "one history query, for the writer's depth")
	qmu.Unlock()
	require.Equal(t, 3.0, testutil.ToFloat64(s.histStats.replayed.WithLabelValues("dds")))
}

// routes.allow with service kinds (the plugin's allow block in one place):
// service_servers lets one DDS server through; the other stays off Zenoh.
// An allow block without a service kind bridges no service (the plugin's
// rule: a kind without a list bridges none of its names).
func TestRoutesAllowServiceServersDDS(t *testing.T) {
	for _, c := range []struct {
		name, allow string
		bridged     bool
	}{
		{"service_servers listed", `{service_servers: ["/ras_ok_.*"]}`, true},
		{"publishers only", `{publishers: [".*"]}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			domain := svcDomain()
			tag := testTag()
			okName, deniedName := "/ras_ok_"+tag, "/ras_no_"+tag
			s := startDDSServer(t, fmt.Sprintf(`
zenoh: {listen: [tcp/127.0.0.1:0]}
metrics: {listen: ""}
dds: {domain: %d}
routes:
  allow: %s
`, domain, c.allow))
			p, err := ddspath.Open(ddspath.Config{DomainID: domain})
			require.NoError(t, err)
			defer p.Close()
			startDDSAddServer(t, p, okName)
			startDDSAddServer(t, p, deniedName)
			sentinel := "/ras_pub_" + tag // a publisher: bridged in the second case, shows discovery ran
			_, err = p.NewWriter("rt"+sentinel, u32Type, ddspath.ROSDefaultQoS())
			require.NoError(t, err)
			if c.bridged {
				require.Eventually(t, func() bool { return serviceReady(s, okName, dirToDDS) }, 20*time.Second, 20*time.Millisecond, "allowed server bridged")
				time.Sleep(500 * time.Millisecond) // the other server's discovery settles
			} else {
				require.Eventually(t, func() bool { _, ok := routeOf(s, sentinel, dirToZenoh); return ok }, 20*time.Second, 20*time.Millisecond, "publisher bridged")
				time.Sleep(time.Second) // the servers' discovery settles
				require.False(t, serviceReady(s, okName, dirToDDS), "no service kind in allow: no service")
			}
			for _, st := range s.Routez().Services {
				require.NotEqual(t, deniedName, st.Name, "denied server has no route")
			}
		})
	}
}
