package zenohpath

import (
	"time"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// query is a REQUEST in flight: the origin face and its request id, and the
// target faces with the request id we used towards each (§9.3, §12.5).
type query struct {
	r       *Router
	origin  *face
	rid     uint32
	targets map[*face]uint32
	timer   *time.Timer
	done    bool
	// lowest is the lowest priority (highest value) of the responses relayed
	// to the origin: RESPONSE_FINAL goes at it, so that the origin's TX
	// scheduler, which serves higher priorities first and one priority in
	// order, never lets the final overtake a reply.
	lowest wire.Priority
}

// finish marks the query answered; it reports whether the caller must send
// RESPONSE_FINAL (once). Caller holds r.mu.
func (q *query) finish() bool {
	if q.done {
		return false
	}
	q.done = true
	if q.timer != nil {
		q.timer.Stop()
	}
	delete(q.origin.originated, q)
	return true
}

// cancel drops a query whose origin went away. Caller holds r.mu.
func (q *query) cancel() {
	q.finish()
	for g, rid := range q.targets {
		delete(g.pending, rid)
	}
	q.targets = nil
}

// sendFinal sends RESPONSE_FINAL to the origin. Called without r.mu.
func (q *query) sendFinal() {
	o := controlOptions
	o.Priority = q.lowest
	q.origin.send(&wire.ResponseFinal{ID: q.rid}, o, "response_final")
}

// handleRequest forwards a REQUEST to every face with a matching queryable,
// each under its own request id, or answers RESPONSE_FINAL at once when there
// is none (§9.3).
func (r *Router) handleRequest(f *face, m *wire.Request) {
	r.mu.Lock()
	if f.closed {
		r.mu.Unlock()
		return
	}
	key, cause := f.resolveCause(m.WireExpr)
	if cause != "" {
		r.mu.Unlock()
		r.metrics.droppedInc(cause)
		f.send(&wire.ResponseFinal{ID: m.ID}, controlOptions, "response_final")
		return
	}
	if !r.permit(f, aclIngress, aclQuery, key) {
		r.mu.Unlock()
		f.send(&wire.ResponseFinal{ID: m.ID}, controlOptions, "response_final")
		return
	}
	if r.meshLooped(f, m.NetExt) {
		r.mu.Unlock()
		r.metrics.droppedInc(dropLoop)
		f.send(&wire.ResponseFinal{ID: m.ID}, controlOptions, "response_final")
		return
	}
	targets, nodeID, hasNodeID := r.meshQueryTargets(r.queryTargets(key, f, m.Target), key, f, m)
	targets = r.permitTargets(targets, f, aclQuery, key)
	if len(targets) == 0 {
		r.mu.Unlock()
		r.metrics.droppedInc(dropNoRoute)
		f.send(&wire.ResponseFinal{ID: m.ID}, controlOptions, "response_final")
		return
	}
	q := &query{r: r, origin: f, rid: m.ID, targets: make(map[*face]uint32, len(targets))}
	rids := make([]uint32, len(targets))
	for i, g := range targets {
		g.nextRid++
		if g.nextRid == 0 {
			g.nextRid = 1
		}
		rids[i] = g.nextRid
		g.pending[g.nextRid] = q
		q.targets[g] = g.nextRid
	}
	f.originated[q] = struct{}{}
	timeout := r.queryTimeout
	if m.HasTimeout && m.Timeout > 0 {
		timeout = m.Timeout
	}
	q.timer = time.AfterFunc(timeout, func() { r.expireQuery(q) })
	r.mu.Unlock()

	out := wire.Request{
		WireExpr: wireKey(key), NetExt: routedExt(m.NetExt),
		HasTarget: m.HasTarget, Target: m.Target,
		HasBudget: m.HasBudget, Budget: m.Budget,
		HasTimeout: true, Timeout: timeout,
		Body: m.Body,
	}
	if out.HasTarget && out.Target == wire.TargetBestMatching {
		out.HasTarget = false
	}
	o := dataOptions(m.EffectiveQoS())
	for i, g := range targets {
		out.ID = rids[i]
		out.HasNodeID, out.NodeID = g.mesh && hasNodeID, nodeID // router↔router only (mesh.go)
		g.send(&out, o, "request")
	}
}

// queryTargets picks the faces a query goes to (§10.6). AllComplete: faces
// with a complete matching queryable. BestMatching: a face with a complete
// queryable that includes the whole key if there is one, else every matching
// face. All: every matching face. Caller holds r.mu.
// Upstream faces that do not filter key get the query in every case
// (upstream.go), unless it came from an upstream face.
func (r *Router) queryTargets(key string, from *face, t wire.QueryTarget) []*face {
	up := func(fs []*face) []*face {
		if from.upstream {
			return fs
		}
		return r.withUpstream(fs, kindQbl, key, from)
	}
	switch t {
	case wire.TargetAllComplete:
		return up(r.matchingFaces(kindQbl, key, from, func(e *entity) bool { return e.complete }))
	case wire.TargetBestMatching:
		for _, g := range r.sortedFaces() {
			if g == from {
				continue
			}
			for _, e := range g.ents[kindQbl] {
				if e.complete && keyexpr.Includes(e.key, key) {
					return []*face{g}
				}
			}
		}
	}
	return up(r.matchingFaces(kindQbl, key, from, nil))
}

// handleResponse relays a reply to the query's origin under its request id.
func (r *Router) handleResponse(f *face, m *wire.Response) {
	r.mu.Lock()
	q := f.pending[m.ID]
	if q == nil || q.done || f.closed {
		r.mu.Unlock()
		r.metrics.droppedInc(dropLateResponse)
		return
	}
	key, cause := f.resolveCause(m.WireExpr)
	origin, rid := q.origin, q.rid
	q.lowest = max(q.lowest, m.EffectiveQoS().Priority())
	r.mu.Unlock()
	if cause != "" {
		r.metrics.droppedInc(cause)
		return
	}
	if !r.permit(f, aclIngress, aclReply, key) || !r.permit(origin, aclEgress, aclReply, key) {
		return
	}
	out := wire.Response{
		ID: rid, WireExpr: wireKey(key), NetExt: routedExt(m.NetExt),
		HasResponderID: m.HasResponderID, ResponderID: m.ResponderID,
		Body: m.Body,
	}
	if rp, ok := m.Body.(*wire.Reply); ok && len(rp.Exts) > 0 {
		// zenoh-pico rejects every REPLY extension (§10.4, §12.8).
		clean := *rp
		clean.Exts = nil
		out.Body = &clean
	}
	origin.send(&out, dataOptions(m.EffectiveQoS()), "response")
}

// handleResponseFinal ends one target of a query; the origin gets its
// RESPONSE_FINAL when the last target finished.
func (r *Router) handleResponseFinal(f *face, m *wire.ResponseFinal) {
	r.mu.Lock()
	q := f.pending[m.ID]
	if q == nil {
		r.mu.Unlock()
		r.metrics.droppedInc(dropLateResponse)
		return
	}
	delete(f.pending, m.ID)
	delete(q.targets, f)
	final := len(q.targets) == 0 && q.finish()
	r.mu.Unlock()
	if final {
		q.sendFinal()
	}
}

// expireQuery ends a query whose timeout passed: the origin gets
// RESPONSE_FINAL, later replies from the targets are dropped.
func (r *Router) expireQuery(q *query) {
	r.mu.Lock()
	if q.done {
		r.mu.Unlock()
		return
	}
	q.finish()
	for g, rid := range q.targets {
		delete(g.pending, rid)
	}
	q.targets = nil
	r.mu.Unlock()
	r.metrics.droppedInc(dropQueryTimeout)
	q.sendFinal()
}
