package zenohpath

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/routing"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Router↔router sessions as Zenoh 1.x routers run them (issue 12;
// zenoh-mesh-auth.md §1, §2). A session whose remote says whatami=router,
// on a router that announces router, is a *mesh face*:
//
//   - both ends exchange link-state lists (network OAM 0x0001); the graph
//     and the per-root trees live in a routing.Network;
//   - declarations between routers are "sourced": entity id 0, NodeId ext
//     = the sender's index of the router that sourced them (absent = the
//     sender), pushed down the source's tree to its children, never in
//     answer to an interest. Interests from routers are ignored and none
//     is sent to them (§2.5);
//   - PUSH and REQUEST go to each router with a matching entity through the
//     next hop of the source's tree, one copy per next hop, with the NodeId
//     of the source in our numbering (§2.6).
//
// What the other routers sourced is held by one virtual face (mesh.vf),
// one entity per (source router, kind, key), so that the rest of the
// router (interests of clients and devices, upstream faces, route caches)
// sees them as ordinary entities. What our own faces declared is
// announced to the mesh as sourced by us, once per (kind, key).

// meshKey names a router-sourced entity.
type meshKey struct {
	src wire.ZID
	k   kind
	key string
}

// localAgg counts our faces' entities of one (kind, key): the mesh knows
// it as one entity sourced by us while n > 0; complete counts the
// complete queryables.
type localAgg struct{ n, complete int }

type meshState struct {
	net   *routing.Network
	faces map[routing.LinkID]*face
	vf    *face
	byKey map[meshKey]uint32 // → vf entity id
	srcOf map[uint32]meshKey // vf entity id → its source and key
	next  uint32             // last vf entity id
	local [numKinds]map[string]*localAgg
}

// virtualLink is the virtual face's link: nothing is ever sent through it (the
// mesh routes to the real router faces).
type virtualLink struct{}

func (virtualLink) send(wire.NetworkMessage, sendOptions) error { return nil }
func (virtualLink) sendShared(*shared, sendOptions) error       { return nil }
func (virtualLink) close()                                      {}

func newMesh(r *Router) *meshState {
	m := &meshState{
		net:   routing.NewNetwork(r.zid, nil),
		faces: map[routing.LinkID]*face{},
		byKey: map[meshKey]uint32{},
		srcOf: map[uint32]meshKey{},
	}
	m.vf = newFace(r, virtualLink{}, wire.ZID{}, wire.WhatAmIRouter, false)
	m.vf.log = r.log.With("face", "mesh")
	for k := range m.local {
		m.local[k] = map[string]*localAgg{}
	}
	return m
}

// meshOn reports whether router↔router link-state runs: on every router
// that announces itself as a router.
func (r *Router) meshOn() bool { return r.mesh != nil }

// addMeshFace registers a router↔router session and starts the link-state
// exchange (§2.2): the new link gets our whole graph, the other router
// links our new own state.
func (r *Router) addMeshFace(l link, zid wire.ZID) (*face, bool) {
	f, ok := r.addFace(l, zid, wire.WhatAmIRouter, false)
	if !ok {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.closed {
		return f, true
	}
	f.mesh = true
	f.markReady()
	m := r.mesh
	m.faces[routing.LinkID(f.id)] = f
	r.meshSend(m.net.AddLink(routing.LinkID(f.id), zid, wire.WhatAmIRouter))
	r.meshTreesChanged()
	f.log.Info("router link opened: link-state exchange started")
	return f, true
}

// describeStates formats link-state entries for the debug log:
// psid:zid(short)/sn→[links as psids].
func describeStates(list []routing.LinkState) string {
	var b strings.Builder
	for i, s := range list {
		if i > 0 {
			b.WriteString(" ")
		}
		z := "?"
		if s.HasZID {
			z = s.ZID.String()
			if len(z) > 4 {
				z = z[:4]
			}
		}
		fmt.Fprintf(&b, "%d:%s/%d→%v", s.PSID, z, s.SN, s.Links)
	}
	return b.String()
}

// meshSend sends link-state lists. Caller holds r.mu.
func (r *Router) meshSend(out routing.Out) {
	for id, list := range out {
		if g := r.mesh.faces[id]; g != nil && !g.closed && len(list) > 0 {
			if g.log.Enabled(r.ctx, slog.LevelDebug) {
				g.log.Debug("link-state sent", "states", describeStates(list))
			}
			g.send(routing.NewLinkStateOAM(list), controlOptions, kindOAMLabel)
		}
	}
}

// meshFaceGone handles the close of a router face. Caller holds r.mu.
func (r *Router) meshFaceGone(f *face) {
	m := r.mesh
	id := routing.LinkID(f.id)
	if m.faces[id] != f {
		return
	}
	delete(m.faces, id)
	out, gone := m.net.RemoveLink(id)
	r.meshSend(out)
	r.meshForget(gone)
	r.meshTreesChanged()
}

// meshForget removes what the routers gone (no longer reachable) had
// sourced. Caller holds r.mu.
func (r *Router) meshForget(gone []wire.ZID) {
	if len(gone) == 0 {
		return
	}
	m := r.mesh
	for _, e := range sortedEntitiesAll(m.vf) {
		mk := m.srcOf[e.id]
		if slices.Contains(gone, mk.src) {
			r.meshDropEntity(e)
		}
	}
}

func sortedEntitiesAll(f *face) []*entity {
	var out []*entity
	for k := range f.ents {
		out = append(out, sortedEntities(f.ents[k])...)
	}
	return out
}

func (r *Router) meshDropEntity(e *entity) {
	m := r.mesh
	mk := m.srcOf[e.id]
	delete(m.srcOf, e.id)
	delete(m.byKey, mk)
	r.removeEntity(e)
}

// meshHandleOAM applies a link-state list from router face f (§1.5). A
// list that does not decode closes the session, as Rust does (§1.5
// "Decode failure").
func (r *Router) meshHandleOAM(f *face, o *wire.NetworkOAM) {
	if o.ID != routing.OAMLinkState || o.Body.Enc != wire.ExtEncZBuf {
		return
	}
	list, err := routing.ParseLinkStateList(o.Body.Body)
	if err != nil {
		f.log.Warn("router link: malformed link-state, closing the session", "err", err)
		if sl, ok := f.link.(sessionLink); ok {
			_ = sl.s.Close(transport.ReasonInvalid)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.closed {
		return
	}
	if f.log.Enabled(r.ctx, slog.LevelDebug) {
		f.log.Debug("link-state received", "states", describeStates(list))
	}
	m := r.mesh
	out, gone, changed := m.net.HandleLinkStates(routing.LinkID(f.id), list)
	r.meshSend(out)
	r.meshForget(gone)
	if changed {
		f.log.Debug("router link: link-state applied", "entries", len(list), "routers", len(m.net.Routers()))
		r.meshTreesChanged()
	}
}

// meshTreesChanged sends to every router face that became a child of a
// tree what that tree's root sourced (§2.3). Caller holds r.mu.
func (r *Router) meshTreesChanged() {
	m := r.mesh
	nc := m.net.NewChildren()
	if len(nc) == 0 {
		return
	}
	self := r.zid
	for root, ids := range nc {
		for _, id := range ids {
			g := m.faces[id]
			if g == nil || g.closed {
				continue
			}
			if root == self {
				for k := kind(0); k < numKinds; k++ {
					for _, key := range sortedKeys(m.local[k]) {
						a := m.local[k][key]
						r.meshDecl(g, self, k, key, a.complete > 0, false)
					}
				}
				continue
			}
			for _, e := range sortedEntitiesAll(m.vf) {
				if mk := m.srcOf[e.id]; mk.src == root {
					r.meshDecl(g, root, e.kind, e.key, e.complete, false)
				}
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// meshDecl sends router face g the (un)declaration of what src sourced on
// key: entity id 0, NodeId = our index of src (absent for us), the key in
// full (and in the WireExpr ext of an undeclaration, §2.4). Caller holds
// r.mu.
func (r *Router) meshDecl(g *face, src wire.ZID, k kind, key string, complete, undecl bool) {
	d := &wire.Declare{}
	if i, ok := r.mesh.net.Index(src); ok && i != 0 {
		d.HasNodeID, d.NodeID = true, i
	}
	we := wireKey(key)
	switch {
	case undecl && k == kindSub:
		d.Body = &wire.UndeclareSubscriber{HasWireExpr: true, WireExpr: we}
	case undecl && k == kindQbl:
		d.Body = &wire.UndeclareQueryable{HasWireExpr: true, WireExpr: we}
	case undecl:
		d.Body = &wire.UndeclareToken{HasWireExpr: true, WireExpr: we}
	default:
		d.Body = declBody(k, 0, key, complete)
	}
	g.send(d, controlOptions, kindDeclareLabel)
}

// meshPropagate sends an (un)declaration sourced by src to the children of
// src's tree, except the face it came from. Caller holds r.mu.
func (r *Router) meshPropagate(from *face, src wire.ZID, k kind, key string, complete, undecl bool) {
	for _, id := range r.mesh.net.Children(src) {
		if g := r.mesh.faces[id]; g != nil && g != from && !g.closed {
			r.meshDecl(g, src, k, key, complete, undecl)
		}
	}
}

// meshHandleDeclare applies a DECLARE from router face f (§2.4): key
// expression declarations as from any face, entity declarations as
// sourced by the router its NodeId names.
func (r *Router) meshHandleDeclare(f *face, d *wire.Declare) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.closed {
		return
	}
	m := r.mesh
	switch b := d.Body.(type) {
	case *wire.DeclareKeyExpr:
		we := b.WireExpr
		we.Mapping = wire.MappingSender
		key, cause := f.resolveCause(we)
		if cause != "" {
			f.refuseDecl("keyexpr", uint32(b.ID), we, cause)
			return
		}
		f.remoteKeys[b.ID] = key
		return
	case *wire.UndeclareKeyExpr:
		delete(f.remoteKeys, b.ID)
		return
	case *wire.DeclareFinal:
		return
	}
	var nodeID uint16
	if d.HasNodeID {
		nodeID = d.NodeID
	}
	src, ok := m.net.Source(routing.LinkID(f.id), nodeID)
	if !ok {
		r.metrics.droppedInc(dropUnknownRouter)
		f.log.Debug("router declaration from an unknown source router: dropped", "node_id", nodeID)
		return
	}
	if src == r.zid {
		return // ours, echoed back
	}
	var (
		k        kind
		we       wire.WireExpr
		complete bool
		undecl   bool
	)
	switch b := d.Body.(type) {
	case *wire.DeclareSubscriber:
		k, we = kindSub, b.WireExpr
	case *wire.DeclareQueryable:
		k, we, complete = kindQbl, b.WireExpr, b.Complete
	case *wire.DeclareToken:
		k, we = kindTok, b.WireExpr
	case *wire.UndeclareSubscriber:
		k, we, undecl = kindSub, b.WireExpr, true
		ok = b.HasWireExpr
	case *wire.UndeclareQueryable:
		k, we, undecl = kindQbl, b.WireExpr, true
		ok = b.HasWireExpr
	case *wire.UndeclareToken:
		k, we, undecl = kindTok, b.WireExpr, true
		ok = b.HasWireExpr
	default:
		return
	}
	if !ok {
		r.metrics.droppedInc(dropUnresolved)
		f.log.Debug("router undeclaration without its key expression: dropped")
		return
	}
	key, cause := f.resolveCause(we)
	if cause != "" {
		f.refuseDecl(k.String(), 0, we, cause)
		return
	}
	mk := meshKey{src: src, k: k, key: key}
	id, known := m.byKey[mk]
	if undecl {
		if !known {
			return
		}
		if e := m.vf.ents[k][id]; e != nil {
			r.meshDropEntity(e)
		}
		r.meshPropagate(f, src, k, key, false, true)
		return
	}
	if known {
		e := m.vf.ents[k][id]
		if e == nil || e.complete == complete {
			return
		}
		r.redeclareEntity(e, complete)
	} else {
		m.next++
		id = m.next
		m.byKey[mk] = id
		m.srcOf[id] = mk
		r.declareEntity(m.vf, k, id, wireKey(key), complete)
	}
	r.meshPropagate(f, src, k, key, complete, false)
}

// meshLocal is called when an entity of one of our faces appears
// (delta +1), goes (-1), or changes its complete flag (delta 0, by dc):
// the mesh learns of the first and last of each (kind, key), sourced by
// us, and of a change of the merged complete flag. Caller holds r.mu.
func (r *Router) meshLocal(e *entity, delta, dc int) {
	m := r.mesh
	if m == nil || e.face == m.vf || e.face.mesh {
		return
	}
	a := m.local[e.kind][e.key]
	if a == nil {
		if delta <= 0 {
			return
		}
		a = &localAgg{}
		m.local[e.kind][e.key] = a
	}
	was, wasC := a.n, a.complete > 0
	a.n += delta
	a.complete += dc
	switch {
	case a.n <= 0:
		delete(m.local[e.kind], e.key)
		if was > 0 {
			r.meshPropagate(nil, r.zid, e.kind, e.key, false, true)
		}
	case was == 0 || wasC != (a.complete > 0):
		r.meshPropagate(nil, r.zid, e.kind, e.key, a.complete > 0, false)
	}
}

// meshSource is the router that sourced a message from f: for a router
// face the one its NodeId names (absent = the sender; an unknown one is
// taken as us, as Rust does, §2.6), else us. Caller holds r.mu (read).
func (r *Router) meshSource(f *face, x wire.NetExt) wire.ZID {
	if !f.mesh {
		return r.zid
	}
	var id uint16
	if x.HasNodeID {
		id = x.NodeID
	}
	if z, ok := r.mesh.net.Source(routing.LinkID(f.id), id); ok {
		return z
	}
	return r.zid
}

// meshLooped reports whether a message from router face f names us as
// its source (a NodeId that maps to our zid): what we sourced came back,
// which happens only when routers disagree on a tree; routing it again
// would circulate it. Caller holds r.mu (read).
func (r *Router) meshLooped(f *face, x wire.NetExt) bool {
	if !f.mesh || !x.HasNodeID || x.NodeID == 0 {
		return false
	}
	z, ok := r.mesh.net.Source(routing.LinkID(f.id), x.NodeID)
	return ok && z == r.zid
}

// meshHops returns the router faces a message of kind k on key, sourced by
// src and received from f, goes to: the next hop of src's tree towards
// each router with a matching entity (pred filters them), each once, never
// back to f. Caller holds r.mu (read).
func (r *Router) meshHops(k kind, key string, src wire.ZID, f *face, pred func(*entity) bool) []*face {
	m := r.mesh
	var out []*face
	r.eachCandidate(k, key, func(e *entity) bool {
		if e.face != m.vf || pred != nil && !pred(e) || !keyexpr.Intersects(e.key, key) {
			return true
		}
		id, ok := m.net.NextHop(src, m.srcOf[e.id].src)
		if !ok {
			return true
		}
		if g := m.faces[id]; g != nil && g != f && !g.closed && !slices.Contains(out, g) {
			out = append(out, g)
		}
		return true
	})
	slices.SortFunc(out, func(a, b *face) int { return int(a.id) - int(b.id) })
	return out
}

// meshNodeID is the NodeId ext for what src sourced, in our numbering.
// Caller holds r.mu (read).
func (r *Router) meshNodeID(src wire.ZID) (uint16, bool) {
	i, ok := r.mesh.net.Index(src)
	return i, ok && i != 0
}

// meshPush routes a PUSH on key from f to the routers that subscribe to
// it (§2.6), sharing one encoding (same NodeId for every hop).
func (r *Router) meshPush(f *face, key string, m *wire.Push, o sendOptions) {
	r.mu.RLock()
	if f.closed {
		r.mu.RUnlock()
		return
	}
	src := r.meshSource(f, m.NetExt)
	hops := r.meshHops(kindSub, key, src, f, nil)
	x := routedExt(m.NetExt)
	x.NodeID, x.HasNodeID = r.meshNodeID(src)
	r.mu.RUnlock()
	if len(hops) == 0 {
		return
	}
	sm := sharedPush(wire.Push{WireExpr: wireKey(key), NetExt: x, Body: m.Body})
	r.fanout(sm, hops, o, f, nil)
	sm.release()
}

// meshQueryTargets replaces the virtual face in a query's targets with the
// router faces on the way to the matching queryables (complete ones only
// for AllComplete); it returns the NodeId to put on the copies for
// routers. Caller holds r.mu.
func (r *Router) meshQueryTargets(targets []*face, key string, f *face, m *wire.Request) ([]*face, uint16, bool) {
	if r.mesh == nil {
		return targets, 0, false
	}
	i := slices.Index(targets, r.mesh.vf)
	if i < 0 {
		return targets, 0, false
	}
	targets = slices.Delete(slices.Clone(targets), i, i+1)
	src := r.meshSource(f, m.NetExt)
	var pred func(*entity) bool
	if m.HasTarget && m.Target == wire.TargetAllComplete {
		pred = func(e *entity) bool { return e.complete }
	}
	for _, g := range r.meshHops(kindQbl, key, src, f, pred) {
		if !slices.Contains(targets, g) {
			targets = append(targets, g)
		}
	}
	id, has := r.meshNodeID(src)
	return targets, id, has
}

// meshStrip removes the virtual face from a route (the mesh is routed by
// meshPush) and reports whether it was there. Caller holds r.mu.
func (r *Router) meshStrip(fs []*face) ([]*face, bool) {
	if r.mesh == nil {
		return fs, false
	}
	i := slices.Index(fs, r.mesh.vf)
	if i < 0 {
		return fs, false
	}
	return slices.Delete(fs, i, i+1), true
}

// MeshRouters lists the zids (zenohd's hex form) of the other routers
// reachable over the router link-state graph, sorted by wire bytes; empty
// when none is, or when we do not run as a router.
func (r *Router) MeshRouters() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.mesh == nil {
		return []string{}
	}
	out := []string{}
	for _, z := range r.mesh.net.Routers() {
		out = append(out, z.String())
	}
	return out
}

// MeshNextHop is the router (zenohd's hex zid) that what we source for
// router dst (zenohd's hex zid) goes to first: the next hop of our own
// tree towards dst (zenohd's admin key route/successor/src/<us>/dst/<dst>);
// "" when dst is not reachable or we do not run as a router.
func (r *Router) MeshNextHop(dst string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.mesh == nil {
		return ""
	}
	for _, z := range r.mesh.net.Routers() {
		if z.String() != dst {
			continue
		}
		if id, ok := r.mesh.net.NextHop(r.zid, z); ok {
			if f := r.mesh.faces[id]; f != nil {
				return f.zid.String()
			}
		}
	}
	return ""
}
