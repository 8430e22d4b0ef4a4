package zenohpath

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/routing"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

func linkStates(t *testing.T, m wire.NetworkMessage) []routing.LinkState {
	t.Helper()
	o, ok := m.(*wire.NetworkOAM)
	require.True(t, ok, "want a link-state OAM, got %s", describe(m))
	require.Equal(t, routing.OAMLinkState, o.ID)
	require.Equal(t, routing.LinkStateQoS, o.QoS)
	list, err := routing.ParseLinkStateList(o.Body.Body)
	require.NoError(t, err)
	return list
}

// TestMeshFaceProtocol: a router face gets our link-state at open (psid 0,
// sn 2, a link to psid 1 = the remote); once the remote claims us, what a
// client declares is announced to the router as sourced by us (id 0, no
// NodeId), a subscriber the router sourced gets our client's PUSH (no
// NodeId), and one it relays for a third router C gets it with our
// NodeId of C. The router's interests are ignored.
func TestMeshFaceProtocol(t *testing.T) {
	r, _ := newTestRouter(t)
	rz, cz := RandomZID(), RandomZID()
	rl := &fakeLink{}
	rf, ok := r.addMeshFace(rl, rz)
	require.True(t, ok)
	ls := linkStates(t, rl.waitN(t, 1, time.Second)[0])
	require.Len(t, ls, 2)
	require.Equal(t, routing.LinkState{PSID: 0, SN: 2, HasZID: true, ZID: r.ZID(), HasWhatAmI: true, WhatAmI: wire.WhatAmIRouter, Links: []uint64{1}}, ls[0])
	require.Equal(t, rz, ls[1].ZID)

	// The remote's own state (its psid 0) claims us (its psid 1) and C (2).
	remote := []routing.LinkState{
		{PSID: 0, SN: 1, HasZID: true, ZID: rz, HasWhatAmI: true, Links: []uint64{1, 2}},
		{PSID: 1, SN: 0, HasZID: true, ZID: r.ZID(), HasWhatAmI: true, Links: []uint64{}},
		{PSID: 2, SN: 1, HasZID: true, ZID: cz, HasWhatAmI: true, Links: []uint64{0}},
	}
	r.handle(rf, routing.NewLinkStateOAM(remote))
	require.ElementsMatch(t, []string{rz.String(), cz.String()}, r.MeshRouters())
	rl.take()

	c, cl := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(c, declSub(7, "a/b"))
	got := rl.waitN(t, 1, time.Second)
	d := got[0].(*wire.Declare)
	require.False(t, d.HasNodeID)
	require.Equal(t, &wire.DeclareSubscriber{ID: 0, WireExpr: wireKey("a/b")}, d.Body)

	// Interests from a router are ignored: no DeclareFinal.
	r.handle(rf, &wire.Interest{Mode: wire.InterestCurrent, ID: 3, Options: wire.InterestTokens})

	r.handle(rf, declSub(0, "x/**"))                                                                                                       // sourced by the remote itself
	r.handle(rf, &wire.Declare{NetExt: wire.NetExt{HasNodeID: true, NodeID: 2}, Body: &wire.DeclareSubscriber{WireExpr: wireKey("y/**")}}) // by C
	r.handle(c, push("x/1", "p"))
	r.handle(c, push("y/1", "q"))
	got = rl.waitN(t, 2, time.Second)
	p1, p2 := got[0].(*wire.Push), got[1].(*wire.Push)
	require.Equal(t, "x/1", p1.WireExpr.Suffix)
	require.False(t, p1.HasNodeID, "we source it: no NodeId")
	require.Equal(t, "y/1", p2.WireExpr.Suffix)
	require.False(t, p2.HasNodeID, "from our client: sourced by us")

	// A PUSH the remote relays from C reaches our client, not back.
	r.handle(rf, &wire.Push{WireExpr: wireKey("a/b"), NetExt: wire.NetExt{HasNodeID: true, NodeID: 2}, Body: &wire.Put{Payload: []byte("z")}})
	got = cl.waitN(t, 1, time.Second)
	require.False(t, got[0].(*wire.Push).HasNodeID)
	require.Empty(t, rl.take())

	// Undeclare by key (WireExpr ext), then the remote's subscriber is gone.
	r.handle(rf, &wire.Declare{Body: &wire.UndeclareSubscriber{HasWireExpr: true, WireExpr: wireKey("x/**")}})
	r.handle(c, push("x/1", "p"))
	time.Sleep(20 * time.Millisecond)
	require.Empty(t, rl.take())

	// The client's subscriber goes: undeclared to the router by key.
	r.handle(c, &wire.Declare{Body: &wire.UndeclareSubscriber{ID: 7}})
	got = rl.waitN(t, 1, time.Second)
	require.Equal(t, &wire.UndeclareSubscriber{HasWireExpr: true, WireExpr: wireKey("a/b")}, got[0].(*wire.Declare).Body)
}

// TestMeshMalformedLinkState: a link-state that does not decode is not
// applied (the session is closed for a transport face).
func TestMeshMalformedLinkState(t *testing.T) {
	r, _ := newTestRouter(t)
	rl := &fakeLink{}
	rf, ok := r.addMeshFace(rl, RandomZID())
	require.True(t, ok)
	r.handle(rf, &wire.NetworkOAM{ID: routing.OAMLinkState, Body: wire.OAMBody{Enc: wire.ExtEncZBuf, Body: []byte{5, 0}}})
	require.Empty(t, r.MeshRouters())
}

// TestMeshRelayNodeIDs: between two router faces R and S (each linked
// only to us), a subscriber S sources reaches R with NodeId = our index
// of S, and R's PUSH reaches S with NodeId = our index of R.
func TestMeshRelayNodeIDs(t *testing.T) {
	r, _ := newTestRouter(t)
	rz, sz := RandomZID(), RandomZID()
	rl, sl := &fakeLink{}, &fakeLink{}
	rf, ok := r.addMeshFace(rl, rz)
	require.True(t, ok)
	sf, ok := r.addMeshFace(sl, sz)
	require.True(t, ok)
	claim := func(f *face, z wire.ZID) {
		r.handle(f, routing.NewLinkStateOAM([]routing.LinkState{
			{PSID: 0, SN: 1, HasZID: true, ZID: z, HasWhatAmI: true, Links: []uint64{1}},
			{PSID: 1, SN: 0, HasZID: true, ZID: r.ZID(), HasWhatAmI: true, Links: []uint64{}},
		}))
	}
	claim(rf, rz)
	claim(sf, sz)
	require.Len(t, r.MeshRouters(), 2)
	r.mu.RLock()
	ri, _ := r.mesh.net.Index(rz)
	si, _ := r.mesh.net.Index(sz)
	r.mu.RUnlock()
	require.NotZero(t, ri)
	require.NotZero(t, si)
	rl.take()
	sl.take()

	r.handle(sf, declSub(0, "k/**"))
	got := rl.waitN(t, 1, time.Second)
	d := got[0].(*wire.Declare)
	require.True(t, d.HasNodeID)
	require.Equal(t, si, d.NodeID)
	require.Equal(t, &wire.DeclareSubscriber{ID: 0, WireExpr: wireKey("k/**")}, d.Body)
	require.Empty(t, sl.take(), "not echoed to its source")

	r.handle(rf, push("k/1", "v"))
	got = sl.waitN(t, 1, time.Second)
	p := got[0].(*wire.Push)
	require.True(t, p.HasNodeID)
	require.Equal(t, ri, p.NodeID)
	require.Empty(t, rl.take())
}

// TestMeshLoopDropped: a PUSH or REQUEST from a router face whose NodeId
// names us (R's psid 1 is us) is what we sourced coming back; it is
// dropped (counted "loop", the REQUEST answered with RESPONSE_FINAL), not
// routed again to S's subscriber, which would circulate it when routers
// disagree on a tree.
func TestMeshLoopDropped(t *testing.T) {
	r, m := newTestRouter(t)
	rz, sz := RandomZID(), RandomZID()
	rl, sl := &fakeLink{}, &fakeLink{}
	rf, ok := r.addMeshFace(rl, rz)
	require.True(t, ok)
	sf, ok := r.addMeshFace(sl, sz)
	require.True(t, ok)
	for _, x := range []struct {
		f *face
		z wire.ZID
	}{{rf, rz}, {sf, sz}} {
		r.handle(x.f, routing.NewLinkStateOAM([]routing.LinkState{
			{PSID: 0, SN: 1, HasZID: true, ZID: x.z, HasWhatAmI: true, Links: []uint64{1}},
			{PSID: 1, SN: 0, HasZID: true, ZID: r.ZID(), HasWhatAmI: true, Links: []uint64{}},
		}))
	}
	require.Len(t, r.MeshRouters(), 2)
	r.handle(sf, declSub(0, "k/**"))
	r.handle(sf, &wire.Declare{Body: &wire.DeclareQueryable{ID: 0, WireExpr: wireKey("k/**")}})
	rl.waitN(t, 2, time.Second)
	rl.take()
	sl.take()

	looped := push("k/1", "v")
	looped.HasNodeID, looped.NodeID = true, 1
	r.handle(rf, looped)
	req := &wire.Request{ID: 7, WireExpr: wireKey("k/1"), Body: &wire.Query{}}
	req.HasNodeID, req.NodeID = true, 1
	r.handle(rf, req)
	got := rl.waitN(t, 1, time.Second)
	require.Equal(t, &wire.ResponseFinal{ID: 7}, got[0])
	require.Equal(t, 2.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropLoop)))

	r.handle(rf, push("k/2", "v")) // sourced by R: routed
	p := sl.waitN(t, 1, time.Second)[0].(*wire.Push)
	require.Equal(t, "k/2", p.WireExpr.Suffix, "only the PUSH sourced by R reached S")
}
