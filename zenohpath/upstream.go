package zenohpath

import (
	"slices"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Interests towards upstream faces (issue 11 item 3).
//
// A router that connects upstream (a Go client Session's own router, a peer,
// the gateway with a connect endpoint) is a client of that face and asks it
// only for what its own faces asked for, as Rust and pico clients do: each
// interest one of our faces sends us (a publisher's or querier's matching
// interest, a liveliness subscriber or get, a pico's interests) is forwarded
// to every upstream face under our own id, and nothing else is. So a client
// is told about the subscribers of its publishers' keys, not about every
// subscriber in the network, and N clients cost the upstream router O(N)
// declarations instead of O(N²).
//
// The other half of the rule (Rust's client routing, zenoh-wire.md §12.9): a
// PUSH or REQUEST goes to an upstream face unless an answered (DeclareFinal
// received) Future interest of ours covers its key for that kind; then it
// goes there only if the face declared a matching entity. Declarations an
// upstream face sends for a Future interest are kept as that face's entities
// and propagate as any face's do; those answering a Current-only interest (a
// liveliness get) are relayed to the interest's origin and not kept, since
// no undeclaration will follow them. The origin's DeclareFinal waits for
// every upstream face's.

// fwdInterest is an interest we sent to an upstream face on behalf of one
// of our faces' interests (or of none: never today).
type fwdInterest struct {
	up   *face
	id   uint32 // our interest id towards up
	in   *interest
	mode wire.InterestMode
	opts wire.InterestOptions
	key  string // "" = unrestricted
	// final: up answered the Current part (DeclareFinal); a Future-only
	// interest is never final (we do not know what existed before it).
	final bool
	// holdsFinal: the origin's DeclareFinal waits for this one.
	holdsFinal bool
	// replay: sent when up connected; up's ready waits for it.
	replay bool
}

func (fw *fwdInterest) future() bool {
	return fw.mode == wire.InterestFuture || fw.mode == wire.InterestCurrentFuture
}

// covers reports whether fw is an answered Future interest for kind k whose
// key includes key: then up has told us every matching entity.
func (fw *fwdInterest) covers(k kind, key string) bool {
	return fw.final && fw.future() && fw.opts&k.option() != 0 && (fw.key == "" || keyexpr.Includes(fw.key, key))
}

// tracks reports whether fw keeps up telling us about entities of kind k
// on key (so such an entity of up is current).
func (fw *fwdInterest) tracks(k kind, key string) bool {
	return fw.future() && fw.opts&k.option() != 0 && (fw.key == "" || keyexpr.Intersects(fw.key, key))
}

// upstreamFaces returns the open upstream faces in creation order. Caller
// holds r.mu.
func (r *Router) upstreamFaces() []*face {
	out := r.sortedUpstreams()
	return slices.DeleteFunc(out, func(g *face) bool { return g.closed })
}

// filters reports whether routing a message of kind k on key to upstream
// face g is decided by g's declared entities (an answered interest covers
// the key); otherwise the message goes to g regardless. Caller holds r.mu.
func (g *face) filters(k kind, key string) bool {
	for _, fw := range g.fwd {
		if fw.covers(k, key) {
			return true
		}
	}
	return false
}

// withUpstream appends to faces (the faces with a matching entity of kind
// k) every upstream face that does not filter key. Caller holds r.mu.
func (r *Router) withUpstream(faces []*face, k kind, key string, from *face) []*face {
	for _, g := range r.upstreamFaces() {
		if g == from || g.filters(k, key) || containsFace(faces, g) {
			continue
		}
		faces = append(faces, g)
	}
	return faces
}

func containsFace(fs []*face, g *face) bool {
	for _, f := range fs {
		if f == g {
			return true
		}
	}
	return false
}

// forward sends in to upstream face g under a new id of ours. With
// holdFinal and a Current part, in's DeclareFinal waits for g's. Caller
// holds r.mu.
func (r *Router) forward(g *face, in *interest, mode wire.InterestMode, holdFinal bool) *fwdInterest {
	g.nextFwd++
	if g.nextFwd == 0 {
		g.nextFwd = 1
	}
	fw := &fwdInterest{up: g, id: g.nextFwd, in: in, mode: mode, opts: in.opts, key: in.key}
	g.fwd[fw.id] = fw
	if in.fwds == nil {
		in.fwds = map[*face]*fwdInterest{}
	}
	if mode != wire.InterestCurrent {
		in.fwds[g] = fw
	}
	if holdFinal && mode != wire.InterestFuture {
		fw.holdsFinal = true
		in.pending++
	}
	opts := in.opts &^ (wire.InterestRestricted | wire.InterestNamed | wire.InterestMapping)
	m := &wire.Interest{Mode: mode, ID: fw.id, Options: opts}
	if in.key != "" {
		m.Options |= wire.InterestRestricted
		m.WireExpr = wireKey(in.key)
	}
	g.send(m, controlOptions, kindInterestLabel)
	return fw
}

// forwardAll forwards a new interest of a non-upstream face to every
// upstream face; it reports whether any got it. Caller holds r.mu.
func (r *Router) forwardAll(in *interest) bool {
	if in.face.upstream {
		return false
	}
	sent := false
	for _, g := range r.upstreamFaces() {
		if g.zid == in.face.zid {
			continue // the same node on both sides (peers that dial each other): no loop
		}
		r.forward(g, in, in.mode, true)
		sent = true
	}
	return sent
}

// unforward withdraws the forwarded copies of in (its origin sent Final or
// went away): Final to each upstream face, and the entities that no other
// interest of ours still tracks are forgotten there. Caller holds r.mu.
func (r *Router) unforward(in *interest) {
	for g, fw := range in.fwds {
		delete(in.fwds, g)
		if g.closed || g.fwd[fw.id] != fw {
			continue
		}
		delete(g.fwd, fw.id)
		g.send(&wire.Interest{Mode: wire.InterestFinal, ID: fw.id}, controlOptions, kindInterestLabel)
		r.pruneUpstream(g, fw)
	}
	clear(r.subRoutes)
}

// pruneUpstream forgets the entities of upstream face g that fw tracked and
// no remaining interest of ours does. Caller holds r.mu.
func (r *Router) pruneUpstream(g *face, fw *fwdInterest) {
	for k := kind(0); k < numKinds; k++ {
		if fw.opts&k.option() == 0 {
			continue
		}
		for _, e := range sortedEntities(g.ents[k]) {
			if !fw.tracks(k, e.key) {
				continue
			}
			still := false
			for _, o := range g.fwd {
				if o.tracks(k, e.key) {
					still = true
					break
				}
			}
			if !still {
				r.removeEntity(e)
			}
		}
	}
}

// replayTo forwards every Future interest of our other faces to a new
// upstream face g (CurrentFuture, to learn the current state too); g.ready
// closes when g answered them all, at once if there are none. Caller holds
// r.mu.
func (r *Router) replayTo(g *face) {
	for _, f := range r.sortedFaces() {
		if f.upstream || f.closed || f.zid == g.zid {
			continue
		}
		for _, in := range f.sortedInterests() {
			fw := r.forward(g, in, wire.InterestCurrentFuture, false)
			fw.replay = true
			g.readyPending++
		}
	}
	if g.readyPending == 0 {
		g.markReady()
	}
}

func (g *face) markReady() {
	if !g.readyDone {
		g.readyDone = true
		close(g.ready)
	}
}

// upstreamFinal handles a DeclareFinal from upstream face g for our
// interest id. Caller holds r.mu.
func (r *Router) upstreamFinal(g *face, id uint32) {
	fw := g.fwd[id]
	if fw == nil || fw.final {
		return
	}
	fw.final = true
	clear(r.subRoutes) // the interest may now filter routes to g
	if fw.mode == wire.InterestCurrent {
		delete(g.fwd, id)
	}
	r.releaseFinal(fw)
	if fw.replay {
		fw.replay = false
		if g.readyPending--; g.readyPending == 0 {
			g.markReady()
		}
	}
}

// releaseFinal ends fw's hold on its origin's DeclareFinal and sends that
// when it was the last. Caller holds r.mu.
func (r *Router) releaseFinal(fw *fwdInterest) {
	if !fw.holdsFinal {
		return
	}
	fw.holdsFinal = false
	in := fw.in
	if in.pending--; in.pending == 0 && !in.face.closed {
		in.face.send(&wire.Declare{HasInterestID: true, InterestID: in.id, Body: &wire.DeclareFinal{}},
			controlOptions, kindDeclareLabel)
	}
}

// upstreamGone releases what upstream face g held when it closed. Caller
// holds r.mu.
func (r *Router) upstreamGone(g *face) {
	for id, fw := range g.fwd {
		delete(g.fwd, id)
		if fw.in != nil && fw.in.fwds[g] == fw {
			delete(fw.in.fwds, g)
		}
		r.releaseFinal(fw)
	}
	clear(r.subRoutes)
}

// relayCurrent passes a declaration that upstream face g sent in answer to
// a Current-only interest of ours to that interest's origin, under the
// origin's interest id; nothing is kept. Caller holds r.mu.
func (r *Router) relayCurrent(g *face, fw *fwdInterest, d *wire.Declare) {
	in := fw.in
	if in == nil || in.face.closed {
		return
	}
	var k kind
	var we wire.WireExpr
	complete := false
	switch b := d.Body.(type) {
	case *wire.DeclareSubscriber:
		k, we = kindSub, b.WireExpr
	case *wire.DeclareQueryable:
		k, we, complete = kindQbl, b.WireExpr, b.Complete
	case *wire.DeclareToken:
		k, we = kindTok, b.WireExpr
	default:
		return
	}
	key, cause := g.resolveCause(we)
	if cause != "" {
		g.refuseDecl(k.String(), 0, we, cause)
		return
	}
	if !in.wants(k, key) {
		return
	}
	if in.aggregates(k) {
		key = in.key
	}
	r.nextGID++
	in.face.send(&wire.Declare{HasInterestID: true, InterestID: in.id, Body: declBody(k, r.nextGID, key, complete)},
		controlOptions, kindDeclareLabel)
}
