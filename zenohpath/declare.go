package zenohpath

import (
	"sort"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// kind is the kind of a declared entity.
type kind uint8

const (
	kindSub kind = iota // subscriber
	kindQbl             // queryable
	kindTok             // liveliness token
	numKinds
)

// Metric labels for routed control messages.
const (
	kindDeclareLabel  = "declare"
	kindInterestLabel = "interest"
	kindOAMLabel      = "oam" // link-state to routers (mesh.go)
)

// String names the kind as logs do: subscriber, queryable or token.
func (k kind) String() string {
	switch k {
	case kindSub:
		return "subscriber"
	case kindQbl:
		return "queryable"
	}
	return "token"
}

// aclAction is the access control action of declaring an entity of kind k
// (tokens have none).
func (k kind) aclAction() (aclAction, bool) {
	switch k {
	case kindSub:
		return aclDeclareSubscriber, true
	case kindQbl:
		return aclDeclareQueryable, true
	}
	return 0, false
}

func (k kind) option() wire.InterestOptions {
	switch k {
	case kindSub:
		return wire.InterestSubscribers
	case kindQbl:
		return wire.InterestQueryables
	}
	return wire.InterestTokens
}

// entity is a subscriber, queryable or token declared by a face.
type entity struct {
	kind     kind
	face     *face
	id       uint32 // the declaring face's id
	gid      uint32 // router-wide id, used when declaring it to other faces
	key      string
	complete bool    // queryables
	told     []*face // faces it was declared to for the future (face.sent)
}

func sortedEntities(m map[uint32]*entity) []*entity {
	out := make([]*entity, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gid < out[j].gid })
	return out
}

// declBody is the declaration of e as the router announces it: gid, full key.
func declBody(k kind, gid uint32, key string, complete bool) wire.DeclarationBody {
	switch k {
	case kindSub:
		return &wire.DeclareSubscriber{ID: gid, WireExpr: wireKey(key)}
	case kindQbl:
		d := &wire.DeclareQueryable{ID: gid, WireExpr: wireKey(key)}
		if complete {
			d.HasInfo, d.Complete = true, true
		}
		return d
	}
	return &wire.DeclareToken{ID: gid, WireExpr: wireKey(key)}
}

func undeclBody(k kind, gid uint32) wire.DeclarationBody {
	switch k {
	case kindSub:
		return &wire.UndeclareSubscriber{ID: gid}
	case kindQbl:
		return &wire.UndeclareQueryable{ID: gid}
	}
	return &wire.UndeclareToken{ID: gid}
}

// handleDeclare applies one declaration from f (§9.6).
func (r *Router) handleDeclare(f *face, d *wire.Declare) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.closed {
		return
	}
	if f.upstream && d.HasInterestID {
		if fw := f.fwd[d.InterestID]; fw != nil && !fw.future() {
			r.relayCurrent(f, fw, d) // the answer to a Current-only interest of ours
			if _, ok := d.Body.(*wire.DeclareFinal); !ok {
				return
			}
		}
	}
	switch b := d.Body.(type) {
	case *wire.DeclareKeyExpr:
		// The body's scope (if any) is the sender's (pico); Rust always uses 0.
		we := b.WireExpr
		we.Mapping = wire.MappingSender
		key, cause := f.resolveCause(we)
		if cause != "" {
			f.refuseDecl("keyexpr", uint32(b.ID), we, cause)
			return
		}
		f.remoteKeys[b.ID] = key
	case *wire.UndeclareKeyExpr:
		delete(f.remoteKeys, b.ID)
	case *wire.DeclareSubscriber:
		r.declareEntity(f, kindSub, b.ID, b.WireExpr, false)
	case *wire.UndeclareSubscriber:
		r.undeclareEntity(f, kindSub, b.ID)
	case *wire.DeclareQueryable:
		r.declareEntity(f, kindQbl, b.ID, b.WireExpr, b.Complete)
	case *wire.UndeclareQueryable:
		r.undeclareEntity(f, kindQbl, b.ID)
	case *wire.DeclareToken:
		r.declareEntity(f, kindTok, b.ID, b.WireExpr, false)
	case *wire.UndeclareToken:
		r.undeclareEntity(f, kindTok, b.ID)
	case *wire.DeclareFinal:
		if d.HasInterestID && f.upstream {
			r.upstreamFinal(f, d.InterestID)
		}
	}
}

// declareEntity records an entity of f and tells the faces that want it.
// Caller holds r.mu.
func (r *Router) declareEntity(f *face, k kind, id uint32, we wire.WireExpr, complete bool) {
	key, cause := f.resolveCause(we)
	if cause != "" {
		f.refuseDecl(k.String(), id, we, cause)
		return
	}
	if act, ok := k.aclAction(); ok && !r.permit(f, aclIngress, act, key) {
		return // zenohd's ACL drops a denied declaration: not recorded, not propagated
	}
	if old := f.ents[k][id]; old != nil {
		if old.key == key {
			if old.complete != complete {
				r.redeclareEntity(old, complete)
			}
			return // re-declaration (e.g. the Current reply and a Future one)
		}
		r.removeEntity(old)
	}
	r.nextGID++
	e := &entity{kind: k, face: f, id: id, gid: r.nextGID, key: key, complete: complete}
	if k == kindSub {
		clear(r.subRoutes)
	}
	f.ents[k][id] = e
	r.ents[k][e.gid] = e
	r.idx[k].add(e)
	r.meshLocal(e, 1, b2i(complete))
	f.log.Debug("declared", "kind", k, "id", id, "key", key)
	if !f.upstream {
		for _, g := range r.sortedUpstreams() {
			if g != f && !g.closed && g.zid != f.zid { // not back to the node it came from
				r.declareTo(g, e, nil)
			}
		}
	}
	for _, in := range r.interestsFor(key) {
		g := in.face
		if g == f || g.closed || g.upstream && !f.upstream || !in.wants(k, key) {
			continue
		}
		if in.aggregates(k) {
			r.updateAggregate(in, k)
		} else {
			r.declareTo(g, e, nil)
		}
	}
}

// redeclareEntity changes the complete flag of a queryable: the faces told
// about it get it declared again under the same id, aggregated
// declarations follow (updateAggregate). Caller holds r.mu.
func (r *Router) redeclareEntity(e *entity, complete bool) {
	r.meshLocal(e, 0, b2i(complete)-b2i(e.complete))
	e.complete = complete
	for _, g := range e.told {
		if !g.closed && g.sent[e.kind][e.gid] {
			g.send(&wire.Declare{Body: declBody(e.kind, e.gid, e.key, e.complete)}, controlOptions, kindDeclareLabel)
		}
	}
	r.updateAggregates(e)
}

// undeclareEntity removes an entity of f by its id. Caller holds r.mu.
func (r *Router) undeclareEntity(f *face, k kind, id uint32) {
	if e := f.ents[k][id]; e != nil {
		r.removeEntity(e)
	}
}

// removeEntity forgets e and undeclares it where it was declared; aggregated
// interests that lose their last match are undeclared too. Caller holds r.mu.
func (r *Router) removeEntity(e *entity) {
	delete(e.face.ents[e.kind], e.id)
	delete(r.ents[e.kind], e.gid)
	r.idx[e.kind].remove(e)
	r.meshLocal(e, -1, -b2i(e.complete))
	if e.kind == kindSub {
		clear(r.subRoutes)
	}
	for _, g := range e.told {
		if !g.closed && g.sent[e.kind][e.gid] {
			delete(g.sent[e.kind], e.gid)
			g.send(&wire.Declare{Body: undeclBody(e.kind, e.gid)}, controlOptions, kindDeclareLabel)
		}
	}
	e.told = nil
	r.updateAggregates(e)
}

// declareTo declares e to g: as a reply to interest iid when iid != nil
// (Declare with I), else as a future declaration, at most once per face.
// Caller holds r.mu.
func (r *Router) declareTo(g *face, e *entity, iid *uint32) {
	if act, ok := e.kind.aclAction(); ok && !r.permit(g, aclEgress, act, e.key) {
		return
	}
	d := &wire.Declare{Body: declBody(e.kind, e.gid, e.key, e.complete)}
	if iid != nil {
		d.HasInterestID, d.InterestID = true, *iid
	} else {
		if g.sent[e.kind][e.gid] {
			return
		}
		g.markTold(e)
	}
	g.send(d, controlOptions, kindDeclareLabel)
}

// markTold records that g was told about e for the future (it is to hear
// e's undeclaration and re-declarations). Caller holds r.mu.
func (g *face) markTold(e *entity) {
	if !g.sent[e.kind][e.gid] {
		g.sent[e.kind][e.gid] = true
		e.told = append(e.told, g)
	}
}

// updateAggregates brings the aggregated declarations that e's key
// concerns up to date (after e appeared, changed or left). Caller holds
// r.mu.
func (r *Router) updateAggregates(e *entity) {
	for _, in := range r.interestsFor(e.key) {
		g := in.face
		if g == e.face || g.closed || !in.aggregates(e.kind) || !in.wants(e.kind, e.key) {
			continue
		}
		r.updateAggregate(in, e.kind)
	}
}

// sortedUpstreams returns the upstream faces in creation order. Caller
// holds r.mu.
func (r *Router) sortedUpstreams() []*face {
	if len(r.ups) == 0 {
		return nil
	}
	out := make([]*face, 0, len(r.ups))
	for _, f := range r.ups {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// sortedFaces returns the open faces in creation order (deterministic output).
// Caller holds r.mu.
func (r *Router) sortedFaces() []*face {
	out := make([]*face, 0, len(r.faces))
	for _, f := range r.faces {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// anyMatch reports whether an entity of kind k of a face other than f
// intersects key (key "" = any). complete reports whether one of them is a
// complete queryable. Caller holds r.mu.
func (r *Router) anyMatch(k kind, key string, f *face) (found, complete bool) {
	r.eachCandidate(k, key, func(e *entity) bool {
		if e.face == f || e.face.closed {
			return true
		}
		if key == "" || keyexpr.Intersects(e.key, key) {
			found = true
			complete = complete || e.complete
		}
		return !found || k == kindQbl && !complete // stop once the answer cannot change
	})
	return found, complete
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
