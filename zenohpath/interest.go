package zenohpath

import (
	"sort"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// interest is an INTEREST a face sent us, kept for its Future part (§9.7).
type interest struct {
	face *face
	id   uint32
	mode wire.InterestMode
	opts wire.InterestOptions
	key  string // "" when unrestricted (R=0)
	// aggGID is, per kind, the id of the aggregated declaration currently
	// declared to the face (0 = none); aggComplete, for queryables, the
	// complete flag it was last declared with.
	aggGID      [numKinds]uint32
	aggComplete bool
	// fwds are its Future copies sent to upstream faces (upstream.go);
	// pending counts the upstream Current parts its DeclareFinal waits for.
	fwds    map[*face]*fwdInterest
	pending int
}

func (in *interest) future() bool {
	return in.mode == wire.InterestFuture || in.mode == wire.InterestCurrentFuture
}

// wants reports whether the interest covers an entity of kind k on key and
// its face is to be told about it (an in-process Session is told about
// tokens only, see face.local).
func (in *interest) wants(k kind, key string) bool {
	return in.sends(k) && (in.key == "" || keyexpr.Intersects(in.key, key))
}

// sends reports whether declarations of kind k answer the interest.
func (in *interest) sends(k kind) bool {
	return in.opts&k.option() != 0 && (!in.face.local || k == kindTok)
}

// aggregates reports whether entities of kind k are answered with a single
// declaration on the interest's own key: A flag, restricted, and not tokens
// (Rust never aggregates tokens; pico matches aggregated replies by string
// equality with its interest key, §9.7, §12.4).
func (in *interest) aggregates(k kind) bool {
	return in.opts&wire.InterestAggregate != 0 && in.key != "" && k != kindTok
}

func (f *face) sortedInterests() []*interest {
	if len(f.interests) == 0 {
		return nil
	}
	out := make([]*interest, 0, len(f.interests))
	for _, in := range f.interests {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// handleInterest answers an INTEREST (§9.7, §12.4, §12.6): for a Current part,
// the matching entities of the other faces (aggregated or one each) then
// DeclareFinal, always; for a Future part, the interest is kept so that later
// declarations and undeclarations reach the face. Final forgets it.
func (r *Router) handleInterest(f *face, m *wire.Interest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.closed {
		return
	}
	if old := f.interests[m.ID]; old != nil {
		r.unforward(old)
		delete(f.interests, m.ID)
		r.ints.remove(old)
	}
	if m.Mode == wire.InterestFinal {
		return
	}
	in := &interest{face: f, id: m.ID, mode: m.Mode, opts: m.Options}
	valid := true
	if m.Options&wire.InterestRestricted != 0 {
		key, cause := f.resolveCause(m.WireExpr)
		if cause != "" {
			f.refuseDecl("interest", m.ID, m.WireExpr, cause)
			valid = false
		}
		in.key = key
	}
	current := m.Mode == wire.InterestCurrent || m.Mode == wire.InterestCurrentFuture
	if valid && in.future() {
		f.interests[m.ID] = in
		r.ints.add(in)
	}
	forwarded := valid && r.forwardAll(in)
	if current {
		if valid {
			// A Current-only interest gets the upstream faces' entities
			// from their own answers (relayCurrent), not twice.
			r.replyCurrent(in, forwarded && !in.future())
		}
		if in.pending == 0 {
			f.send(&wire.Declare{HasInterestID: true, InterestID: m.ID, Body: &wire.DeclareFinal{}},
				controlOptions, kindDeclareLabel)
		}
	}
}

// replyCurrent sends the Current part of an interest, without the entities
// of upstream faces when skipUpstream. Caller holds r.mu.
func (r *Router) replyCurrent(in *interest, skipUpstream bool) {
	f := in.face
	iid := in.id
	skip := func(e *entity) bool {
		return e.face == f || e.face.closed || skipUpstream && e.face.upstream
	}
	for k := kind(0); k < numKinds; k++ {
		if !in.sends(k) {
			continue
		}
		if in.aggregates(k) {
			found, complete := false, false
			r.eachCandidate(k, in.key, func(e *entity) bool {
				if !skip(e) && keyexpr.Intersects(e.key, in.key) {
					found = true
					complete = complete || e.complete
				}
				return !found || k == kindQbl && !complete
			})
			if !found {
				continue
			}
			r.nextGID++
			gid := r.nextGID
			if in.future() {
				in.aggGID[k] = gid
				if k == kindQbl {
					in.aggComplete = complete
				}
			}
			f.send(&wire.Declare{HasInterestID: true, InterestID: iid, Body: declBody(k, gid, in.key, complete)},
				controlOptions, kindDeclareLabel)
			continue
		}
		for _, e := range r.candidates(k, in.key) {
			if skip(e) || !in.wants(k, e.key) {
				continue
			}
			if in.future() {
				f.markTold(e)
			}
			r.declareTo(f, e, &iid)
		}
	}
}

// updateAggregate keeps the aggregated declaration of kind k of an
// interest in step with the entities it stands for (§9.7): declared when a
// first matching entity exists, undeclared when none is left, and, for
// queryables, declared again under the same id when its complete flag
// changes either way (a complete queryable joins non-complete ones, or the
// last complete one leaves; zenoh-pico's filtering.c takes a repeated
// declaration as a redeclare, issue 18 item 2). Aggregated subscribers carry
// nothing that can change and tokens are never aggregated. Caller holds r.mu.
func (r *Router) updateAggregate(in *interest, k kind) {
	found, complete := r.anyMatch(k, in.key, in.face)
	switch {
	case found && in.aggGID[k] == 0:
		r.nextGID++
		in.aggGID[k] = r.nextGID
		if k == kindQbl {
			in.aggComplete = complete
		}
		in.face.send(&wire.Declare{Body: declBody(k, in.aggGID[k], in.key, complete)}, controlOptions, kindDeclareLabel)
	case found && k == kindQbl && complete != in.aggComplete:
		in.aggComplete = complete
		in.face.send(&wire.Declare{Body: declBody(k, in.aggGID[k], in.key, complete)}, controlOptions, kindDeclareLabel)
	case !found && in.aggGID[k] != 0:
		gid := in.aggGID[k]
		in.aggGID[k] = 0
		in.aggComplete = false
		in.face.send(&wire.Declare{Body: undeclBody(k, gid)}, controlOptions, kindDeclareLabel)
	}
}
