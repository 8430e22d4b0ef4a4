package devsim

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// fakeRouter is a minimal router-role endpoint (transport.Listen) that
// records what a device sends and lets a test send to it.
type fakeRouter struct {
	// answer: reply to every INTEREST with a DeclareSubscriber on its key
	// and DeclareFinal (a router where everything has a subscriber).
	answer bool
	mu     sync.Mutex
	pushes map[uint16]int // PUSHes received per scope id
	t      *testing.T
	ln     *transport.Listener
	msgs   chan wire.NetworkMessage
	sess   chan *transport.Session
}

func startFakeRouter(t *testing.T, ep string) *fakeRouter {
	return startFakeRouterOpts(t, ep, false)
}

func startFakeRouterOpts(t *testing.T, ep string, answer bool) *fakeRouter {
	t.Helper()
	r := &fakeRouter{t: t, answer: answer, pushes: map[uint16]int{}, msgs: make(chan wire.NetworkMessage, 4096), sess: make(chan *transport.Session, 8)}
	var z [8]byte
	z[0] = 0x42
	cfg := transport.Config{ZID: wire.MustZID(z[:])}
	ln, err := transport.Listen(context.Background(), ep, cfg, func(s *transport.Session) transport.Handler {
		r.sess <- s
		return transport.HandlerFuncs{Network: func(s *transport.Session, m wire.NetworkMessage) {
			if r.answer {
				switch m := m.(type) {
				case *wire.Interest:
					_ = s.Send(&wire.Declare{HasInterestID: true, InterestID: m.ID, Body: &wire.DeclareSubscriber{ID: m.ID,
						WireExpr: wire.WireExpr{Scope: m.WireExpr.Scope, Suffix: m.WireExpr.Suffix, Mapping: wire.MappingReceiver}}},
						transport.SendOptions{Reliable: true})
					_ = s.Send(&wire.Declare{HasInterestID: true, InterestID: m.ID, Body: &wire.DeclareFinal{}}, transport.SendOptions{Reliable: true})
				case *wire.Push:
					r.mu.Lock()
					r.pushes[m.WireExpr.Scope]++
					r.mu.Unlock()
					return
				}
			}
			c, err := wire.CloneNetwork(m)
			if err == nil {
				r.msgs <- c
			}
		}}
	})
	require.NoError(t, err)
	r.ln = ln
	t.Cleanup(func() { _ = ln.Close() })
	return r
}

func (r *fakeRouter) session() *transport.Session {
	r.t.Helper()
	select {
	case s := <-r.sess:
		return s
	case <-time.After(10 * time.Second):
		r.t.Fatal("no device session")
		return nil
	}
}

// next returns the next recorded message that match accepts, skipping others.
func (r *fakeRouter) next(what string, match func(wire.NetworkMessage) bool) wire.NetworkMessage {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-r.msgs:
			if match(m) {
				return m
			}
		case <-deadline:
			r.t.Fatalf("no %s from the device", what)
			return nil
		}
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startDevice(t *testing.T, cfg DeviceConfig, ep string) *Device {
	t.Helper()
	return startDeviceOpts(t, cfg, Options{Endpoint: ep})
}

func startDeviceOpts(t *testing.T, cfg DeviceConfig, opts Options) *Device {
	t.Helper()
	d, err := NewDevice(cfg, opts)
	require.NoError(t, err)
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(d.Stop)
	return d
}

func pushTo(key string, payload, attachment []byte) *wire.Push {
	return &wire.Push{WireExpr: wire.WireExpr{Suffix: key}, Body: &wire.Put{Payload: payload, Attachment: attachment}}
}

// TestPicoDeclarations: the device declares what zenoh-pico declares
// (zenoh-wire.md §12.3, §12.4) and its publisher's write filter stays
// closed until the router answers the INTEREST with a matching
// DeclareSubscriber; UndeclareSubscriber closes it again.
func TestPicoDeclarations(t *testing.T) {
	r := startFakeRouter(t, "tcp/127.0.0.1:0")
	d := startDevice(t, DeviceConfig{
		Name: "d1", Board: "linux-host",
		Subscriptions: []Subscription{{Key: "demo/example/**"}},
		Publications:  []Publication{{Key: "tele/d1", RateHz: 100, Size: 100}},
	}, r.ln.Endpoint())
	s := r.session()
	require.Equal(t, wire.WhatAmIClient, s.PeerWhatAmI())
	require.Equal(t, 65535, s.BatchSize())

	decl := func(m wire.NetworkMessage) wire.DeclarationBody {
		dm, ok := m.(*wire.Declare)
		require.True(t, ok, "want a Declare, got %T", m)
		return dm.Body
	}
	ke := decl(r.next("keyexpr", anyMsg)).(*wire.DeclareKeyExpr)
	require.Equal(t, "demo/example", ke.WireExpr.Suffix)
	sub := decl(r.next("subscriber", anyMsg)).(*wire.DeclareSubscriber)
	require.Equal(t, wire.WireExpr{Suffix: "demo/example/**", Mapping: wire.MappingSender}, sub.WireExpr)
	ping := decl(r.next("ping subscriber", anyMsg)).(*wire.DeclareSubscriber)
	require.Equal(t, probe.PingKey("d1"), ping.WireExpr.Suffix)
	pong := decl(r.next("pong keyexpr", anyMsg)).(*wire.DeclareKeyExpr)
	require.Equal(t, probe.PongKey("d1"), pong.WireExpr.Suffix)
	pubKE := decl(r.next("publisher keyexpr", anyMsg)).(*wire.DeclareKeyExpr)
	require.Equal(t, "tele/d1", pubKE.WireExpr.Suffix)
	in := r.next("interest", anyMsg).(*wire.Interest)
	require.Equal(t, wire.InterestCurrentFuture, in.Mode)
	// §12.4: options 0xD3 = K|S|R|M|A on the publisher's own key id.
	require.Equal(t, 0xd3, int(in.Append(nil)[2]))
	require.Equal(t, wire.WireExpr{Scope: pubKE.ID, Mapping: wire.MappingSender}, in.WireExpr)
	// Last, the responder's knob announcement (docs/probe.md).
	ann := r.next("knob announcement", anyMsg).(*wire.Push)
	require.Equal(t, probe.KnobsKey("d1"), ann.WireExpr.Suffix)
	a, err := knobs.DecodeAnnouncement(ann.Body.(*wire.Put).Payload)
	require.NoError(t, err)
	require.Equal(t, knobs.AnnouncementOf(d.Resolved()), a)

	// Write filter closed: attempts are filtered, nothing is pushed.
	eventually(t, "filtered attempts", func() bool { return d.Stats().Publications["tele/d1"].Filtered >= 5 })
	require.Zero(t, d.Stats().Publications["tele/d1"].Sent)

	// Aggregated reply (the interest's own key, receiver mapping) + final.
	require.NoError(t, s.Send(&wire.Declare{HasInterestID: true, InterestID: in.ID,
		Body: &wire.DeclareSubscriber{ID: 77, WireExpr: wire.WireExpr{Scope: pubKE.ID, Mapping: wire.MappingReceiver}}},
		transport.SendOptions{Reliable: true}))
	require.NoError(t, s.Send(&wire.Declare{HasInterestID: true, InterestID: in.ID, Body: &wire.DeclareFinal{}}, transport.SendOptions{Reliable: true}))
	p := r.next("push", func(m wire.NetworkMessage) bool { _, ok := m.(*wire.Push); return ok }).(*wire.Push)
	require.Equal(t, wire.WireExpr{Scope: pubKE.ID, Mapping: wire.MappingSender}, p.WireExpr)
	put := p.Body.(*wire.Put)
	require.Len(t, put.Payload, 100)
	require.False(t, sampleStamp(put.Payload).IsZero())
	_, seq, ok := sampleSeq(put.Payload, put.Attachment)
	require.True(t, ok)
	require.EqualValues(t, 1, seq)
	require.True(t, d.Stats().Publications["tele/d1"].Matched)

	require.NoError(t, s.Send(&wire.Declare{Body: &wire.UndeclareSubscriber{ID: 77}}, transport.SendOptions{Reliable: true}))
	eventually(t, "write filter closed", func() bool { return !d.Stats().Publications["tele/d1"].Matched })

	// A REQUEST gets its RESPONSE_FINAL.
	require.NoError(t, s.Send(&wire.Request{ID: 5, WireExpr: wire.WireExpr{Suffix: "demo/example/q"}, Body: &wire.Query{}}, transport.SendOptions{Reliable: true}))
	rf := r.next("response final", func(m wire.NetworkMessage) bool { _, ok := m.(*wire.ResponseFinal); return ok }).(*wire.ResponseFinal)
	require.EqualValues(t, 5, rf.ID)
}

func anyMsg(wire.NetworkMessage) bool { return true }

// TestRingFrameAndSlotLimits: a burst larger than the ring is dropped
// newest-first and counted; a fragmented message above frag_max_size is
// an oversize drop; a payload above the slot is a slot drop; samples
// carry latency and sequence accounting.
func TestRingFrameAndSlotLimits(t *testing.T) {
	r := startFakeRouter(t, "tcp/127.0.0.1:0")
	var evMu sync.Mutex
	outcomes := map[string]map[string]int{}
	var maxLatency time.Duration
	d := startDeviceOpts(t, DeviceConfig{
		Name: "d2", Board: "linux-host",
		Env:           map[string]string{"NROS_ZENOH_BATCH_UNICAST_SIZE": "1024", "NROS_ZENOH_FRAG_MAX_SIZE": "2048"},
		Spin:          300 * time.Millisecond,
		Subscriptions: []Subscription{{Key: "scan"}, {Key: "big", Large: true}},
	}, Options{Endpoint: r.ln.Endpoint(), OnSample: func(e SampleEvent) {
		evMu.Lock()
		defer evMu.Unlock()
		if outcomes[e.Key] == nil {
			outcomes[e.Key] = map[string]int{}
		}
		outcomes[e.Key][e.Outcome]++
		maxLatency = max(maxLatency, e.Latency())
	}})
	s := r.session()
	require.Equal(t, 1024, s.BatchSize())
	r.next("big subscriber", func(m wire.NetworkMessage) bool {
		dm, ok := m.(*wire.Declare)
		if !ok {
			return false
		}
		ds, ok := dm.Body.(*wire.DeclareSubscriber)
		return ok && ds.WireExpr.Suffix == "big"
	})

	var gid [16]byte
	for i := 1; i <= 100; i++ {
		seq := int64(i)
		if i == 50 {
			seq = 10 // out of order
		}
		if i > 60 {
			seq++ // one gap
		}
		now := time.Now()
		require.NoError(t, s.Send(pushTo("scan", buildSample(nil, now, "gw", 64), buildAttachment(nil, seq, now, gid)), transport.SendOptions{Reliable: true}))
	}
	require.NoError(t, s.Send(pushTo("big", make([]byte, 5000), nil), transport.SendOptions{Reliable: true}))
	require.NoError(t, s.Send(pushTo("big", make([]byte, 1500), nil), transport.SendOptions{Reliable: true}))
	require.NoError(t, s.Send(pushTo("scan", make([]byte, 1500), nil), transport.SendOptions{Reliable: true}))

	eventually(t, "all delivered or dropped", func() bool {
		st := d.Stats()
		sc, bg := st.Subscriptions["scan"], st.Subscriptions["big"]
		return sc.Received == 100 && sc.Delivered+sc.RingFullDrops == 100 && bg.Delivered == 1 && bg.OversizeDrops == 1
	})
	st := d.Stats()
	sc, bg := st.Subscriptions["scan"], st.Subscriptions["big"]
	t.Logf("scan: %+v", sc)
	require.Greater(t, sc.RingFullDrops, uint64(50), "100 samples in one burst into a ring of 4")
	require.LessOrEqual(t, sc.Delivered, uint64(4*3), "at most ring depth per spin")
	require.EqualValues(t, 1, sc.OutOfOrder)
	require.EqualValues(t, 2, sc.Gaps, "50 (replaced by the out-of-order 10) and 61")
	require.EqualValues(t, 1, sc.SlotDrops, "1500 B > 1024 B slot")
	require.Equal(t, sc.Delivered, sc.Latency.Count)
	require.Greater(t, sc.Latency.P50, 0.0)
	require.EqualValues(t, 16384, bg.RingSlot)
	require.EqualValues(t, 1, bg.Received)

	evMu.Lock()
	defer evMu.Unlock()
	require.Equal(t, map[string]int{OutcomeDelivered: int(sc.Delivered), OutcomeRingFull: int(sc.RingFullDrops), OutcomeSlot: 1}, outcomes["scan"])
	require.Equal(t, map[string]int{OutcomeDelivered: 1, OutcomeOversize: 1}, outcomes["big"])
	require.InDelta(t, sc.Latency.Max, float64(maxLatency.Microseconds())/1000, 1)
}

// TestProbeResponder: a ping on the device's ping key is answered on its
// pong key with the gateway's protocol: from the read task without using
// the socket (the default, as firmware/responder/c), or from the
// application as an express put that waits for the socket.
func TestProbeResponder(t *testing.T) {
	for _, from := range []string{"", PongFromApp} {
		t.Run("from="+from, func(t *testing.T) { testProbeResponder(t, from) })
	}
}

func testProbeResponder(t *testing.T, from string) {
	r := startFakeRouter(t, "tcp/127.0.0.1:0")
	d := startDevice(t, DeviceConfig{Name: "d3", Platform: "zephyr", Board: "native_sim", PongFrom: from}, r.ln.Endpoint())
	s := r.session()
	pongKE := r.next("pong keyexpr", func(m wire.NetworkMessage) bool {
		dm, ok := m.(*wire.Declare)
		if !ok {
			return false
		}
		k, ok := dm.Body.(*wire.DeclareKeyExpr)
		return ok && k.WireExpr.Suffix == probe.PongKey("d3")
	}).(*wire.Declare).Body.(*wire.DeclareKeyExpr)
	ping := probe.Message{Kind: probe.Ping, Seq: 7, GwSend: 12345}.Append(nil)
	require.NoError(t, s.Send(pushTo(probe.PingKey("d3"), ping, nil), transport.SendOptions{Express: true}))
	p := r.next("pong", func(m wire.NetworkMessage) bool { p, ok := m.(*wire.Push); return ok && p.WireExpr.Scope == pongKE.ID }).(*wire.Push)
	require.Equal(t, pongKE.ID, p.WireExpr.Scope)
	require.True(t, p.EffectiveQoS().Express())
	pong, err := probe.Decode(p.Body.(*wire.Put).Payload)
	require.NoError(t, err)
	require.Equal(t, probe.Pong, pong.Kind)
	require.EqualValues(t, 7, pong.Seq)
	require.EqualValues(t, 12345, pong.GwSend)
	eventually(t, "pong counted", func() bool { return d.Stats().ProbeResponses == 1 })
	if from == PongFromApp {
		require.EqualValues(t, 1, d.Stats().Socket.TxGrants, "the application's pong waited for the socket")
	} else {
		require.Zero(t, d.Stats().Socket.TxWaits, "the read task's pong does not wait for the socket")
	}
}

// TestReconnect: after the router goes away the device reconnects (same
// ZID) and declares everything again on the new session.
func TestReconnect(t *testing.T) {
	r := startFakeRouter(t, "tcp/127.0.0.1:0")
	ep := r.ln.Endpoint()
	d := startDevice(t, DeviceConfig{Name: "d4", Board: "linux-host", ReconnectInterval: 50 * time.Millisecond,
		Subscriptions: []Subscription{{Key: "scan"}}}, ep)
	s1 := r.session()
	require.NoError(t, r.ln.Close())
	<-s1.Done()
	r2 := startFakeRouter(t, ep)
	s2 := r2.session()
	require.Equal(t, d.ZID(), s2.PeerZID())
	r2.next("subscriber again", func(m wire.NetworkMessage) bool {
		dm, ok := m.(*wire.Declare)
		if !ok {
			return false
		}
		ds, ok := dm.Body.(*wire.DeclareSubscriber)
		return ok && ds.WireExpr.Suffix == "scan"
	})
	eventually(t, "reconnected", func() bool { st := d.Stats(); return st.Connected && st.Reconnects == 1 })
}

// TestTxWindow: with a per-socket lock and no TX batching a publisher gets
// one send per socket window (the ~9 msg/s of nano-ros tx-tuning.md at
// 100 ms); TX batching restores the offered rate; a POSIX device (no
// lock) is not limited. (The exact counts are TestFDLock's, in synthetic
// time; here the shares are checked on a live session.)
func TestTxWindow(t *testing.T) {
	r := startFakeRouterOpts(t, "tcp/127.0.0.1:0", true)
	pub := []Publication{{Key: "tele", RateHz: 50}}
	untuned := startDevice(t, DeviceConfig{Name: "untuned", Board: "native_sim", Env: map[string]string{"NROS_ZENOH_TX_BATCH": "0"}, Publications: pub}, r.ln.Endpoint())
	batched := startDevice(t, DeviceConfig{Name: "batched", Board: "native_sim", Publications: pub}, r.ln.Endpoint())
	host := startDevice(t, DeviceConfig{Name: "host", Board: "linux-host", Publications: pub}, r.ln.Endpoint())
	matched := func(d *Device) bool { return d.Stats().Publications["tele"].Matched }
	eventually(t, "write filters open", func() bool { return matched(untuned) && matched(batched) && matched(host) })
	sent := func(d *Device) float64 { return float64(d.Stats().Publications["tele"].Sent) }
	u0, b0, h0 := sent(untuned), sent(batched), sent(host)
	eventually(t, "100 samples from the host", func() bool { return sent(host) >= h0+100 })
	du, db, dh := sent(untuned)-u0, sent(batched)-b0, sent(host)-h0
	t.Logf("sent meanwhile: untuned %.0f, batched %.0f, host %.0f (model: 10 : 50 : 50 per second)", du, db, dh)
	require.InDelta(t, 10.0/50, du/dh, 0.1, "untuned ≈ one send per 100 ms window")
	require.Greater(t, db/dh, 0.75, "batching carries the offered rate")
	st := untuned.Stats()
	require.Greater(t, st.Socket.TxWaits, uint64(0))
	require.Greater(t, st.Socket.RecvTimeouts, uint64(0))
	p := st.Publications["tele"]
	require.LessOrEqual(t, p.Attempts-(p.Sent+p.Filtered+p.TxDrops), uint64(1), "every attempt is accounted for (one may be waiting for the socket)")
}

// TestUDPReceiveNotPaced: over UDP the device takes every sample as it
// arrives, and each arriving batch ends the read task's recv.
func TestUDPReceiveNotPaced(t *testing.T) {
	r := startFakeRouter(t, "udp/127.0.0.1:0")
	d := startDevice(t, DeviceConfig{Name: "u1", Board: "native_sim",
		Subscriptions: []Subscription{{Key: "scan"}}}, r.ln.Endpoint())
	s := r.session()
	r.next("subscriber", func(m wire.NetworkMessage) bool {
		dm, ok := m.(*wire.Declare)
		return ok && dm.Body.DeclID() == wire.IDDeclareSubscriber
	})
	for range 30 {
		require.NoError(t, s.Send(pushTo("scan", []byte("x"), nil), transport.SendOptions{Reliable: true, Express: true}))
		time.Sleep(time.Millisecond) // one batch each
	}
	eventually(t, "30 samples", func() bool { return d.Stats().Subscriptions["scan"].Delivered == 30 })
	st := d.Stats()
	require.Zero(t, st.Subscriptions["scan"].RingFullDrops)
	require.GreaterOrEqual(t, st.Socket.RecvDataEnds, uint64(1))
	require.EqualValues(t, 30, st.Subscriptions["scan"].DeviceReceive.Count)
}

// TestFleetStopLeavesNoGoroutine: a fleet of replicas (per-fd devices with
// relays, POSIX devices, publishers, batching) leaves nothing behind.
func TestFleetStopLeavesNoGoroutine(t *testing.T) {
	r := startFakeRouterOpts(t, "tcp/127.0.0.1:0", true)
	before := goleak.IgnoreCurrent()
	fc, err := ParseFleetConfig("fleet.yaml", []byte(`
devices:
  - name: z
    board: native_sim
    replicas: 3
    subscriptions: [{key: "cmd/${name}"}]
    publications: [{key: "tele/${name}", rate_hz: 20}, {key: "alarm/${name}", rate_hz: 5, express: true}]
  - name: h
    board: linux-host
    replicas: 2
    publications: [{key: "tele/${name}", rate_hz: 20}]
`))
	require.NoError(t, err)
	require.Len(t, fc.Devices, 5)
	require.Equal(t, "tele/z-2", fc.Devices[2].Publications[0].Key)
	f, err := NewFleet(fc, Options{Endpoint: r.ln.Endpoint()})
	require.NoError(t, err)
	require.NoError(t, f.Start(context.Background()))
	eventually(t, "all publishing", func() bool {
		st := f.Stats()
		return st.Totals.Connected == 5 && st.Totals.Sent >= 20
	})
	f.Stop()
	st := f.Stats()
	require.Zero(t, st.Totals.Connected)
	// The router's side of the sessions ends on EOF; goleak retries.
	goleak.VerifyNone(t, before)
}
