//go:build cgo && cyclonedds

package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/internal/anchortest"
	"github.com/picobridge/picobridge/internal/netns"
	"github.com/picobridge/picobridge/zenohpath"
)

const (
	stringType = "std_msgs::msg::dds_::String_"
	fibPkg     = "example_interfaces::action::dds_::Fibonacci_"
)

// cdrString is a std_msgs/String as plain CDR little endian.
func cdrString(s string) []byte {
	b := binary.LittleEndian.AppendUint32([]byte{0, 1, 0, 0}, uint32(len(s)+1))
	return append(append(b, s...), 0)
}

func fromCDRString(b []byte) string {
	if len(b) < 9 {
		return ""
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if int(n) > len(b)-8 || n == 0 {
		return ""
	}
	return string(b[8 : 8+n-1])
}

// topicCount sends warm-up samples on w until r gets one (the routes on
// both bridges exist and are matched), then n numbered samples 2 ms apart,
// and counts what r gets of them within 10 s: distinct and total.
func topicCount(t *testing.T, w *ddspath.Writer, r *ddspath.Reader, n int) (distinct, total int) {
	t.Helper()
	got := map[string]int{}
	warm := time.Now().Add(40 * time.Second)
	for warmed := false; !warmed; {
		require.True(t, time.Now().Before(warm), "no warm-up sample crossed in 40 s")
		require.NoError(t, w.Write(cdrString("warm"), time.Time{}))
		select {
		case <-r.C():
			warmed = true
		case <-time.After(200 * time.Millisecond):
		}
	}
	time.Sleep(300 * time.Millisecond)
	for len(r.C()) > 0 {
		<-r.C()
	}
	for i := range n {
		require.NoError(t, w.Write(cdrString(fmt.Sprintf("msg-%d", i)), time.Time{}))
		time.Sleep(2 * time.Millisecond)
	}
	deadline := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case s := <-r.C():
			if v := fromCDRString(s.CDR); strings.HasPrefix(v, "msg-") {
				got[v]++
			}
		case <-deadline:
			return len(got), sum(got)
		}
	}
	time.Sleep(500 * time.Millisecond) // duplicates would come now
	for len(r.C()) > 0 {
		if v := fromCDRString((<-r.C()).CDR); strings.HasPrefix(v, "msg-") {
			got[v]++
		}
	}
	return len(got), sum(got)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// addCalls calls a+b on c until the first answer (warm-up: the service
// routes of both bridges exist), then n calls; it returns the right answers.
func addCalls(t *testing.T, c *ddsClient, n int) int {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for {
		require.True(t, time.Now().Before(deadline), "no service reply in 40 s")
		if _, ok := c.call(t, addRequest(1, 1), time.Second); ok {
			break
		}
	}
	good := 0
	for i := range n {
		rep, ok := c.call(t, addRequest(int64(i), 1000), 10*time.Second)
		if ok && bytes.Equal(rep, addReply(int64(i)+1000)) {
			good++
		}
	}
	return good
}

// fibServer is a DDS Fibonacci action server (rmw_cyclonedds layout): every
// goal gets order feedback messages, then its result.
func fibServer(t *testing.T, p *ddspath.Participant, action string, order int) {
	t.Helper()
	fb, err := p.NewWriter("rt"+action+"/_action/feedback", fibPkg+"FeedbackMessage_", ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	stq := ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 1, Durability: ddspath.TransientLocal}
	status, err := p.NewWriter("rt"+action+"/_action/status", "action_msgs::msg::dds_::GoalStatusArray_", stq)
	require.NoError(t, err)
	var mu sync.Mutex
	done := map[string]chan struct{}{}
	goalDone := func(id []byte) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if done[string(id)] == nil {
			done[string(id)] = make(chan struct{})
		}
		return done[string(id)]
	}
	serveDDS(t, p, action+"/_action/send_goal", fibPkg+"SendGoal_Request_", func(req []byte) []byte {
		id := append([]byte(nil), req[4:20]...)
		go func() {
			for i := 1; i <= order; i++ {
				_ = fb.Write(append(append([]byte{0, 1, 0, 0}, id...), fibSequence(i)...), time.Time{})
				time.Sleep(10 * time.Millisecond)
			}
			_ = status.Write(append(append([]byte{0, 1, 0, 0, 1, 0, 0, 0}, id...), 0, 0, 0, 0, 0, 0, 0, 0, 4), time.Time{})
			close(goalDone(id))
		}()
		return []byte{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	})
	serveDDS(t, p, action+"/_action/get_result", fibPkg+"GetResult_Request_", func(req []byte) []byte {
		select {
		case <-goalDone(req[4:20]):
		case <-time.After(10 * time.Second):
		}
		return append([]byte{0, 1, 0, 0, 4, 0, 0, 0}, fibSequence(order)...)
	})
	serveDDS(t, p, action+"/_action/cancel_goal", "action_msgs::srv::dds_::CancelGoal_Request_", func([]byte) []byte {
		return []byte{0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}
	})
}

// fibClient is a DDS Fibonacci action client: its three service clients and
// feedback and status readers.
type fibClient struct {
	goal, result, cancel *ddsClient
	feedback, status     *ddspath.Reader
}

func newFibClient(t *testing.T, p *ddspath.Participant, action string) *fibClient {
	t.Helper()
	fb, err := p.NewReader("rt"+action+"/_action/feedback", fibPkg+"FeedbackMessage_", ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	stq := ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 1, Durability: ddspath.TransientLocal}
	st, err := p.NewReader("rt"+action+"/_action/status", "action_msgs::msg::dds_::GoalStatusArray_", stq)
	require.NoError(t, err)
	return &fibClient{
		goal:     newDDSClient(t, p, action+"/_action/send_goal", fibPkg+"SendGoal_Request_"),
		result:   newDDSClient(t, p, action+"/_action/get_result", fibPkg+"GetResult_Request_"),
		cancel:   newDDSClient(t, p, action+"/_action/cancel_goal", "action_msgs::srv::dds_::CancelGoal_Request_"),
		feedback: fb, status: st,
	}
}

// roundTrip sends a goal (retrying until the bridges route it), then checks
// every feedback message in order, the result and a cancel's answer.
func (c *fibClient) roundTrip(t *testing.T, order int) (feedback int, result, cancel bool) {
	t.Helper()
	uuid := bytes.Repeat([]byte{byte(rand.IntN(200) + 1)}, 16)
	goal := append(append([]byte{0, 1, 0, 0}, uuid...), binary.LittleEndian.AppendUint32(nil, uint32(order))...)
	deadline := time.Now().Add(40 * time.Second)
	for {
		require.True(t, time.Now().Before(deadline), "no send_goal reply in 40 s")
		rep, ok := c.goal.call(t, goal, 2*time.Second)
		if ok {
			require.Equal(t, []byte{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, rep, "goal accepted")
			break
		}
	}
	want := 1
	for timeout := time.After(10 * time.Second); want <= order; {
		select {
		case s := <-c.feedback.C():
			if bytes.Equal(s.CDR, append(append([]byte{0, 1, 0, 0}, uuid...), fibSequence(want)...)) {
				want++
			}
		case <-timeout:
			return want - 1, false, false
		}
	}
	rep, ok := c.result.call(t, append([]byte{0, 1, 0, 0}, uuid...), 10*time.Second)
	result = ok && bytes.Equal(rep, append([]byte{0, 1, 0, 0, 4, 0, 0, 0}, fibSequence(order)...))
	rep, ok = c.cancel.call(t, append(append([]byte{0, 1, 0, 0}, uuid...), make([]byte, 8)...), 10*time.Second)
	cancel = ok && bytes.Equal(rep, []byte{0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0})
	return want - 1, result, cancel
}

// discoveryNodes collects the nodes of ros_discovery_info on p's domain.
type discoveryNodes struct {
	mu    sync.Mutex
	nodes map[ros2.Gid][]ros2.NodeEntitiesInfo
}

func watchDiscoveryInfo(t *testing.T, p *ddspath.Participant) *discoveryNodes {
	t.Helper()
	r, err := p.NewReader(ros2.DiscoveryInfoTopic, ros2.ParticipantEntitiesInfoDDSType, ddspath.DiscoveryInfoQoS())
	require.NoError(t, err)
	d := &discoveryNodes{nodes: map[ros2.Gid][]ros2.NodeEntitiesInfo{}}
	go func() {
		for s := range r.C() {
			info, err := ros2.DecodeParticipantEntitiesInfo(s.CDR, ros2.GidSizeHumble)
			if err != nil {
				continue
			}
			d.mu.Lock()
			d.nodes[info.Gid] = info.Nodes
			d.mu.Unlock()
		}
	}()
	return d
}

// writerNode is the "/ns/name" of the node that lists writer g, or "".
func (d *discoveryNodes) writerNode(g ddspath.GUID) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, nodes := range d.nodes {
		for _, n := range nodes {
			for _, w := range n.Writers {
				if ros2.Gid(g) == w {
					return strings.TrimSuffix(n.Namespace, "/") + "/" + n.Name
				}
			}
		}
	}
	return ""
}

// publications records the DDS writers discovered on a domain by topic.
type publications struct {
	mu sync.Mutex
	by map[string][]ddspath.GUID
}

func watchPublications(t *testing.T, p *ddspath.Participant) *publications {
	t.Helper()
	ps := &publications{by: map[string][]ddspath.GUID{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		_ = p.WatchEndpoints(ctx, func(e ddspath.Endpoint) {
			if e.Kind == ddspath.Publication && e.Alive && e.Participant != p.GUID() {
				ps.mu.Lock()
				ps.by[e.Topic] = append(ps.by[e.Topic], e.GUID)
				ps.mu.Unlock()
			}
		})
	}()
	return ps
}

func (ps *publications) of(topic string) []ddspath.GUID {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]ddspath.GUID(nil), ps.by[topic]...)
}

// TestAnchorROS2DDSInterop (opt-in: PICOBRIDGE_ANCHORS): robot A is the
// gateway (routes.key_style plain) on DDS domain X, robot B is zenohd +
// zenoh-plugin-ros2dds 1.10.2 (ROS_DISTRO=humble) on domain Y, the gateway
// connected to zenohd; DDS pieces on both domains (on Y they belong to the
// ROS node /robot_b, announced on ros_discovery_info, as ros2dds routes only
// what a node owns). Each way: a topic (100 numbered samples, counted exactly
// once each), an AddTwoInts service (10 calls) and a Fibonacci action (goal,
// 6 feedback messages in order, result, cancel). Graph, each way: a writer
// present only on one robot (rt/only_a, rt/only_b) is announced by its bridge
// with a liveliness token, and the other bridge creates the DDS writer on its
// domain and lists it under its own node on ros_discovery_info, as
// `ros2 topic list` / `ros2 node info` would show. Runs in a network
// namespace of its own; loopback only. Twice: the gateway as zenohd's
// client (zenoh.connect_as client, the default) and as a router
// (connect_as router, a router↔router link as between two zenohd).
func TestAnchorROS2DDSInterop(t *testing.T) {
	anchors := anchortest.Dir(t)
	if !netns.Run(t) {
		return
	}
	domX := 140 + rand.IntN(20)
	for i, as := range []string{"client", "router"} {
		t.Run("connect_as="+as, func(t *testing.T) { ros2ddsInterop(t, anchors, as, domX+i*20, domX+i*20+50) })
	}
}

// ros2ddsInterop is one run of TestAnchorROS2DDSInterop, the gateway dialling
// zenohd with zenoh.connect_as as.
func ros2ddsInterop(t *testing.T, anchors, as string, domX, domY int) {
	z := anchortest.StartROS2DDS(t, anchortest.Options{Anchors: anchors, Domain: domY, Distro: "humble",
		CycloneURI: ddspath.Config{DomainID: uint32(domY)}.XML()})
	s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\n  connect: [%s]\n  connect_as: %s\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\n  nodename: robot_a_gw\n", z.Endpoint(), as, domX))

	pX, err := ddspath.Open(ddspath.Config{DomainID: uint32(domX)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pX.Close() })
	pY, err := ddspath.Open(ddspath.Config{DomainID: uint32(domY)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pY.Close() })
	_, err = pY.AnnounceNode(ddspath.NodeConfig{Name: "robot_b"})
	require.NoError(t, err)
	infoX, infoY := watchDiscoveryInfo(t, pX), watchDiscoveryInfo(t, pY)
	pubsX, pubsY := watchPublications(t, pX), watchPublications(t, pY)

	q := ddspath.ROSDefaultQoS()
	q.Depth = 200
	// topics
	wA, err := pX.NewWriter("rt/a_chatter", stringType, q)
	require.NoError(t, err)
	rB, err := pY.NewReader("rt/a_chatter", stringType, q, ddspath.WithQueue(1024, ddspath.DropNewest))
	require.NoError(t, err)
	wB, err := pY.NewWriter("rt/b_chatter", stringType, q)
	require.NoError(t, err)
	rA, err := pX.NewReader("rt/b_chatter", stringType, q, ddspath.WithQueue(1024, ddspath.DropNewest))
	require.NoError(t, err)
	// graph-only writers
	_, err = pX.NewWriter("rt/only_a", stringType, q)
	require.NoError(t, err)
	_, err = pY.NewWriter("rt/only_b", stringType, q)
	require.NoError(t, err)
	// services and actions
	startDDSAddServer(t, pX, "/a_add")
	startDDSAddServer(t, pY, "/b_add")
	cliB := newDDSClient(t, pY, "/a_add", addReqType)
	cliA := newDDSClient(t, pX, "/b_add", addReqType)
	fibServer(t, pX, "/fib_a", 6)
	fibServer(t, pY, "/fib_b", 6)
	actB := newFibClient(t, pY, "/fib_a")
	actA := newFibClient(t, pX, "/fib_b")

	const n = 100
	d, tot := topicCount(t, wA, rB, n)
	t.Logf("topic A→B (picobridge → zenoh-bridge-ros2dds): %d/%d distinct, %d received", d, n, tot)
	require.Equal(t, n, d)
	require.Equal(t, n, tot, "no duplicates")
	d, tot = topicCount(t, wB, rA, n)
	t.Logf("topic B→A (zenoh-bridge-ros2dds → picobridge): %d/%d distinct, %d received", d, n, tot)
	require.Equal(t, n, d)
	require.Equal(t, n, tot, "no duplicates")

	const calls = 10
	good := addCalls(t, cliB, calls)
	t.Logf("service B client → A server: %d/%d", good, calls)
	require.Equal(t, calls, good)
	good = addCalls(t, cliA, calls)
	t.Logf("service A client → B server: %d/%d", good, calls)
	require.Equal(t, calls, good)

	fb, res, cancel := actB.roundTrip(t, 6)
	t.Logf("action B client → A server: feedback %d/6, result %v, cancel %v", fb, res, cancel)
	require.Equal(t, 6, fb)
	require.True(t, res && cancel)
	fb, res, cancel = actA.roundTrip(t, 6)
	t.Logf("action A client → B server: feedback %d/6, result %v, cancel %v", fb, res, cancel)
	require.Equal(t, 6, fb)
	require.True(t, res && cancel)

	// graph: the writer that exists only on A shows on Y as a writer of the
	// plugin's node, and the reverse
	var nodeY, nodeX string
	require.Eventually(t, func() bool {
		for _, g := range pubsY.of("rt/only_a") {
			if nodeY = infoY.writerNode(g); nodeY != "" {
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "rt/only_a (A only) on domain Y, owned by a node on ros_discovery_info")
	require.Eventually(t, func() bool {
		for _, g := range pubsX.of("rt/only_b") {
			if nodeX = infoX.writerNode(g); nodeX != "" {
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "rt/only_b (B only) on domain X, owned by a node on ros_discovery_info")
	t.Logf("graph: on domain Y rt/only_a is a writer of node %s; on domain X rt/only_b is a writer of node %s", nodeY, nodeX)
	require.Equal(t, "/zenoh_bridge_ros2dds", nodeY, "the plugin's own node (its default nodename)")
	require.Equal(t, "/robot_a_gw", nodeX, "the gateway's node (dds.nodename)")

	// the liveliness tokens each bridge declares, as seen on Zenoh
	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{z.Endpoint()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	replies, err := cli.Liveliness().Get(ros2.ROS2DDSLivelinessAll, &zenohpath.LivelinessGetOptions{Timeout: 5 * time.Second})
	require.NoError(t, err)
	byZID := map[string][]string{}
	for rep := range replies {
		if smp, ok := rep.Ok(); ok {
			tok, err := ros2.ParseROS2DDSToken(smp.KeyExpr())
			require.NoError(t, err, smp.KeyExpr())
			byZID[tok.ZID] = append(byZID[tok.ZID], strings.TrimPrefix(smp.KeyExpr(), "@/"+tok.ZID+"/@ros2_lv"))
		}
	}
	gw := s.router.ZID().String()
	for zid, toks := range byZID {
		who := "zenoh-bridge-ros2dds"
		if zid == gw {
			who = "picobridge"
		}
		t.Logf("tokens of %s (%s): %q", who, zid, toks)
	}
	require.Len(t, byZID, 2, "both bridges announce themselves")
	mine := strings.Join(byZID[gw], " ")
	for _, want := range []string{"/MP/only_a/std_msgs§msg§String/:1::0,200", "/MP/a_chatter/", "/MS/b_chatter/", "/SS/a_add/example_interfaces§srv§AddTwoInts",
		"/AS/fib_a/example_interfaces§action§Fibonacci"} {
		require.Contains(t, mine, want)
	}
	// the plugin took every token of ours, and said nothing against any
	took := z.Log.Lines("Remote bridge " + gw)
	for _, l := range took {
		t.Logf("zenohd: %s", l)
	}
	require.NotEmpty(t, took)
	require.Empty(t, z.Log.Lines("unexpected liveliness", "invalid liveliness", "Error treating announcement", "invalid ROS2 interface"))
}
