//go:build cgo && cyclonedds

package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

// ddsView follows what a DDS participant discovers: the alive endpoints by
// (kind, topic), with their type names.
type ddsView struct {
	mu    sync.Mutex
	alive map[ddspath.GUID]ddspath.Endpoint
}

func watchDDS(t *testing.T, p *ddspath.Participant) *ddsView {
	v := &ddsView{alive: map[ddspath.GUID]ddspath.Endpoint{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.WatchEndpoints(ctx, func(e ddspath.Endpoint) {
			v.mu.Lock()
			defer v.mu.Unlock()
			if e.Alive {
				v.alive[e.GUID] = e
			} else {
				delete(v.alive, e.GUID)
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return v
}

// find lists the alive endpoints of kind on topic.
func (v *ddsView) find(kind ddspath.EndpointKind, topic string) []ddspath.Endpoint {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []ddspath.Endpoint
	for _, e := range v.alive {
		if e.Kind == kind && e.Topic == topic {
			out = append(out, e)
		}
	}
	return out
}

// TestGraphTokensMakeDDSEndpoints: an rmw_zenoh-style Zenoh client (a
// device) declares NN, MP, MS, SS and SC tokens; a DDS participant then
// discovers the gateway's writer (MP), reader (MS), service server (SS) and
// client (SC) endpoints with the DDS type names, receives what the device
// publishes, calls the device's service; when the tokens are undeclared the
// endpoints disappear from DDS discovery.
func TestGraphTokensMakeDDSEndpoints(t *testing.T) {
	domain := svcDomain()
	s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\nroutes:\n  key_style: rmw_zenoh\n", domain))
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() }) // after watchDDS's cleanup ends its WatchEndpoints
	view := watchDDS(t, p)

	dev, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer dev.Close()
	zid := dev.ZID().String()
	tag := fmt.Sprintf("%d_%d", os.Getpid(), rand.Uint32())
	pubTopic, subTopic, srvName, cliName := "/dpub_"+tag, "/dsub_"+tag, "/dsrv_"+tag, "/dcli_"+tag
	tok := func(eid uint64, kind ros2.EntityKind, name, typ string, q ros2.ZenohQoS) string {
		k, err := ros2.LivelinessToken{Domain: domain, ZID: zid, NodeID: 1, EntityID: eid, Kind: kind, Enclave: "/",
			Namespace: "/", Node: "dev_node", Topic: name, Type: typ, TypeHash: ros2.TypeHashNotSupported, QoS: q}.Key()
		require.NoError(t, err)
		return k
	}
	svcQ := ros2.DefaultZenohQoS()
	svcQ.Depth = 10
	pubQ := svcQ
	pubQ.Reliability = ros2.RMWReliabilityBestEffort
	keys := func(base uint64) []string {
		return []string{
			tok(1, ros2.EntityNode, "", "", ros2.ZenohQoS{}),
			tok(base+2, ros2.EntityPublisher, pubTopic, "std_msgs/msg/String", svcQ),
			tok(base+3, ros2.EntitySubscription, subTopic, "sensor_msgs/msg/LaserScan", pubQ),
			tok(base+4, ros2.EntityServiceServer, srvName, "example_interfaces/srv/AddTwoInts", svcQ),
			tok(base+5, ros2.EntityServiceClient, cliName, "example_interfaces/srv/AddTwoInts", svcQ),
		}
	}
	srvKey := fmt.Sprintf("%d/%s/example_interfaces::srv::dds_::AddTwoInts_/TypeHashNotSupported", domain, srvName[1:])
	_, err = dev.DeclareQueryable(srvKey, func(q *zenohpath.Query) {
		b := q.Payload()
		if len(b) != 20 {
			_ = q.ReplyErr([]byte("bad request"), nil)
			return
		}
		a, c := int64(le64(b[4:])), int64(le64(b[12:]))
		_ = q.Reply(q.KeyExpr(), addReply(a+c), nil)
	}, &zenohpath.QueryableOptions{Complete: true})
	require.NoError(t, err)
	declare := func(keys []string) (toks []*zenohpath.LivelinessToken) {
		for _, k := range keys {
			lt, err := dev.Liveliness().DeclareToken(k)
			require.NoError(t, err)
			toks = append(toks, lt)
		}
		return toks
	}

	rq := func(n string) string { a, _, _ := ros2.ServiceToDDS(n); return a }
	rr := func(n string) string { _, b, _ := ros2.ServiceToDDS(n); return b }
	type want struct {
		kind  ddspath.EndpointKind
		topic string
		typ   string
	}
	wants := []want{
		{ddspath.Publication, "rt" + pubTopic, "std_msgs::msg::dds_::String_"},
		{ddspath.Subscription, "rt" + subTopic, "sensor_msgs::msg::dds_::LaserScan_"},
		{ddspath.Subscription, rq(srvName), "example_interfaces::srv::dds_::AddTwoInts_Request_"},
		{ddspath.Publication, rr(srvName), "example_interfaces::srv::dds_::AddTwoInts_Response_"},
		{ddspath.Publication, rq(cliName), "example_interfaces::srv::dds_::AddTwoInts_Request_"},
		{ddspath.Subscription, rr(cliName), "example_interfaces::srv::dds_::AddTwoInts_Response_"},
	}
	discovered := func() {
		for _, w := range wants {
			require.Eventually(t, func() bool { return len(view.find(w.kind, w.topic)) >= 1 }, 30*time.Second, 20*time.Millisecond, "%v %s", w.kind, w.topic)
			for _, e := range view.find(w.kind, w.topic) { // (phase 2: maybe a lingering one of phase 1, above)
				require.Equal(t, w.typ, e.TypeName, w.topic)
				require.NotEqual(t, p.GUID(), e.Participant)
			}
		}
	}
	// gone checks that the gateway released the endpoints (its routes and
	// service routes for the names are gone: it deleted its DDS writers and
	// readers) and waits for DDS discovery to show them gone. Cyclone
	// 0.10.2 through ddspath sometimes keeps reporting a deleted endpoint of
	// another participant of the same process (reproduced with ddspath alone:
	// 2 of 40 deleted writers still seen after 5 s); such endpoints are
	// logged, not failed on.
	gone := func() {
		require.Eventually(t, func() bool {
			for _, r := range s.Routez().Routes {
				if r.Topic == pubTopic || r.Topic == subTopic {
					return false
				}
			}
			for _, sv := range s.Routez().Services {
				if sv.Name == srvName || sv.Name == cliName {
					return false
				}
			}
			return true
		}, 30*time.Second, 20*time.Millisecond, "the gateway's routes for the dropped tokens")
		still := func() (n int) {
			for _, w := range wants {
				n += len(view.find(w.kind, w.topic))
			}
			return n
		}
		deadline := time.Now().Add(10 * time.Second)
		for still() > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // polling DDS discovery
		}
		if n := still(); n > 0 {
			t.Logf("DDS discovery still shows %d of 6 deleted endpoints after 10 s (ddspath/Cyclone, see above)", n)
		}
	}

	// Phase 1: tokens make the endpoints; undeclared, they go. No DDS peer
	// here: a route also lives while a real DDS endpoint wants it.
	toks := declare(keys(0))
	start := time.Now()
	discovered()
	t.Logf("all 6 DDS endpoints discovered %v after the tokens", time.Since(start))
	sub := view.find(ddspath.Subscription, "rt"+subTopic)[0]
	require.Equal(t, ddspath.BestEffort, sub.QoS.Reliability, "the MS token's QoS")
	require.Equal(t, 4.0, testutil.ToFloat64(s.stats.graphTokens.WithLabelValues(tokenBridged)))
	require.Equal(t, 1.0, testutil.ToFloat64(s.stats.graphTokens.WithLabelValues(tokenNode)))
	start = time.Now()
	for _, lt := range toks {
		require.NoError(t, lt.Undeclare())
	}
	require.Eventually(t, func() bool { return testutil.ToFloat64(s.stats.graphTokens.WithLabelValues(tokenRemoved)) == 4 }, 30*time.Second, 20*time.Millisecond)
	gone()
	t.Logf("dropped tokens: endpoints deleted and gone from DDS discovery %v after the undeclare", time.Since(start))

	// Phase 2: the same entities again (new entity ids); DDS peers use them.
	toks = declare(keys(10))
	defer func() {
		for _, lt := range toks {
			_ = lt.Undeclare()
		}
	}()
	discovered()
	// The device's publications reach a DDS reader of its topic.
	rq0 := ddspath.ROSDefaultQoS()
	rq0.Depth = 1000 // the burst of n must fit the reader's history while the test drains it
	rd, err := p.NewReader("rt"+pubTopic, "std_msgs::msg::dds_::String_", rq0)
	require.NoError(t, err)
	dataKey := fmt.Sprintf("%d/%s/std_msgs::msg::dds_::String_/TypeHashNotSupported", domain, pubTopic[1:])
	str := func(s string) []byte {
		b := []byte{0, 1, 0, 0, byte(len(s) + 1), 0, 0, 0}
		return append(append(b, s...), 0)
	}
	primed := false
	for deadline := time.Now().Add(30 * time.Second); !primed && time.Now().Before(deadline); {
		require.NoError(t, dev.Put(dataKey, str("prime"), nil))
		select {
		case <-rd.C():
			primed = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	require.True(t, primed, "no sample of the device reached DDS")
	const n = 50
	for i := range n {
		require.NoError(t, dev.Put(dataKey, str(fmt.Sprintf("m%03d", i)), nil))
	}
	got := 0
	for got < n {
		select {
		case smp := <-rd.C():
			if string(smp.CDR) == string(str("prime")) {
				continue
			}
			require.Equal(t, str(fmt.Sprintf("m%03d", got)), smp.CDR)
			got++
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d samples", got, n)
		}
	}
	require.NoError(t, rd.Close())

	// A DDS client calls the device's service through the gateway's DDS server.
	c := newDDSClient(t, p, srvName, addReqType)
	require.Eventually(t, func() bool { return c.w.Matched() > 0 && c.rd.Matched() > 0 }, 20*time.Second, 20*time.Millisecond)
	var rtts []time.Duration
	for i := range int64(20) {
		t0 := time.Now()
		body, ok := c.call(t, addRequest(i, 7), 10*time.Second)
		rtts = append(rtts, time.Since(t0))
		require.True(t, ok, "call %d", i)
		require.Equal(t, addReply(i+7), body)
	}
	t.Logf("DDS client → device queryable: 20/20, rtt %s", rttSummary(rtts))
	require.Equal(t, 8.0, testutil.ToFloat64(s.stats.graphTokens.WithLabelValues(tokenBridged)))
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// rttSummary is "p50 … max …" of round-trip times.
func rttSummary(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	return fmt.Sprintf("p50 %v, p90 %v, max %v (n=%d)", s[len(s)/2], s[len(s)*9/10], s[len(s)-1], len(s))
}
