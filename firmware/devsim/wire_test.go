package devsim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// fakeRouter is a minimal router-role endpoint (transport.Listen) that
// records what a device sends and lets a test send to it.
type fakeRouter struct {
	t    *testing.T
	ln   *transport.Listener
	msgs chan wire.NetworkMessage
	sess chan *transport.Session
}

func startFakeRouter(t *testing.T, ep string) *fakeRouter {
	t.Helper()
	r := &fakeRouter{t: t, msgs: make(chan wire.NetworkMessage, 4096), sess: make(chan *transport.Session, 8)}
	var z [8]byte
	z[0] = 0x42
	cfg := transport.Config{ZID: wire.MustZID(z[:])}
	ln, err := transport.Listen(context.Background(), ep, cfg, func(s *transport.Session) transport.Handler {
		r.sess <- s
		return transport.HandlerFuncs{Network: func(_ *transport.Session, m wire.NetworkMessage) {
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
	d, err := NewDevice(cfg, Options{Endpoint: ep})
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
	require.Equal(t, bridge.PingKey("d1"), ping.WireExpr.Suffix)
	pong := decl(r.next("pong keyexpr", anyMsg)).(*wire.DeclareKeyExpr)
	require.Equal(t, bridge.PongKey("d1"), pong.WireExpr.Suffix)
	pubKE := decl(r.next("publisher keyexpr", anyMsg)).(*wire.DeclareKeyExpr)
	require.Equal(t, "tele/d1", pubKE.WireExpr.Suffix)
	in := r.next("interest", anyMsg).(*wire.Interest)
	require.Equal(t, wire.InterestCurrentFuture, in.Mode)
	// §12.4: options 0xD3 = K|S|R|M|A on the publisher's own key id.
	require.Equal(t, 0xd3, int(in.Append(nil)[2]))
	require.Equal(t, wire.WireExpr{Scope: pubKE.ID, Mapping: wire.MappingSender}, in.WireExpr)

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
	d := startDevice(t, DeviceConfig{
		Name: "d2", Board: "linux-host",
		Env:           map[string]string{"NROS_ZENOH_BATCH_UNICAST_SIZE": "1024", "NROS_ZENOH_FRAG_MAX_SIZE": "2048"},
		Drain:         300 * time.Millisecond,
		Subscriptions: []Subscription{{Key: "scan"}, {Key: "big", Large: true}},
	}, r.ln.Endpoint())
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
	require.LessOrEqual(t, sc.Delivered, uint64(4*3), "at most ring depth per drain")
	require.EqualValues(t, 1, sc.OutOfOrder)
	require.EqualValues(t, 2, sc.Gaps, "50 (replaced by the out-of-order 10) and 61")
	require.EqualValues(t, 1, sc.SlotDrops, "1500 B > 1024 B slot")
	require.Equal(t, sc.Delivered, sc.Latency.Count)
	require.Greater(t, sc.Latency.P50, 0.0)
	require.EqualValues(t, 16384, bg.RingSlot)
	require.EqualValues(t, 1, bg.Received)
}

// TestProbeResponder: a ping on the device's ping key is answered on its
// pong key with the gateway's protocol.
func TestProbeResponder(t *testing.T) {
	r := startFakeRouter(t, "tcp/127.0.0.1:0")
	d := startDevice(t, DeviceConfig{Name: "d3", Platform: "zephyr", Board: "native_sim"}, r.ln.Endpoint())
	s := r.session()
	pongKE := r.next("pong keyexpr", func(m wire.NetworkMessage) bool {
		dm, ok := m.(*wire.Declare)
		if !ok {
			return false
		}
		k, ok := dm.Body.(*wire.DeclareKeyExpr)
		return ok && k.WireExpr.Suffix == bridge.PongKey("d3")
	}).(*wire.Declare).Body.(*wire.DeclareKeyExpr)
	ping := bridge.Probe{Kind: bridge.ProbePing, Seq: 7, GwSend: 12345}.Append(nil)
	require.NoError(t, s.Send(pushTo(bridge.PingKey("d3"), ping, nil), transport.SendOptions{Express: true}))
	p := r.next("pong", func(m wire.NetworkMessage) bool { _, ok := m.(*wire.Push); return ok }).(*wire.Push)
	require.Equal(t, pongKE.ID, p.WireExpr.Scope)
	require.True(t, p.EffectiveQoS().Express())
	pong, err := bridge.DecodeProbe(p.Body.(*wire.Put).Payload)
	require.NoError(t, err)
	require.Equal(t, bridge.ProbePong, pong.Kind)
	require.EqualValues(t, 7, pong.Seq)
	require.EqualValues(t, 12345, pong.GwSend)
	eventually(t, "pong counted", func() bool { return d.Stats().ProbeResponses == 1 })
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
