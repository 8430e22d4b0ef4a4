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
	// declared to the face (0 = none).
	aggGID [numKinds]uint32
}

func (in *interest) future() bool {
	return in.mode == wire.InterestFuture || in.mode == wire.InterestCurrentFuture
}

// wants reports whether the interest covers an entity of kind k on key.
func (in *interest) wants(k kind, key string) bool {
	return in.opts&k.option() != 0 && (in.key == "" || keyexpr.Intersects(in.key, key))
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
	if m.Mode == wire.InterestFinal {
		delete(f.interests, m.ID)
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
	if current {
		if valid {
			r.replyCurrent(in)
		}
		f.send(&wire.Declare{HasInterestID: true, InterestID: m.ID, Body: &wire.DeclareFinal{}},
			controlOptions, kindDeclareLabel)
	}
	if valid && in.future() {
		f.interests[m.ID] = in
	}
}

// replyCurrent sends the Current part of an interest. Caller holds r.mu.
func (r *Router) replyCurrent(in *interest) {
	f := in.face
	iid := in.id
	for k := kind(0); k < numKinds; k++ {
		if in.opts&k.option() == 0 {
			continue
		}
		if in.aggregates(k) {
			found, complete := r.anyMatch(k, in.key, f)
			if !found {
				continue
			}
			r.nextGID++
			gid := r.nextGID
			if in.future() {
				in.aggGID[k] = gid
			}
			f.send(&wire.Declare{HasInterestID: true, InterestID: iid, Body: declBody(k, gid, in.key, complete)},
				controlOptions, kindDeclareLabel)
			continue
		}
		for _, e := range sortedEntities(r.ents[k]) {
			if e.face == f || e.face.closed || !in.wants(k, e.key) {
				continue
			}
			if in.future() {
				f.sent[k][e.gid] = true
			}
			r.declareTo(f, e, &iid)
		}
	}
}

// updateAggregate declares the aggregated entity of kind k of an interest when
// a first matching entity exists, and undeclares it when none is left.
// Caller holds r.mu.
func (r *Router) updateAggregate(in *interest, k kind) {
	found, complete := r.anyMatch(k, in.key, in.face)
	switch {
	case found && in.aggGID[k] == 0:
		r.nextGID++
		in.aggGID[k] = r.nextGID
		in.face.send(&wire.Declare{Body: declBody(k, in.aggGID[k], in.key, complete)}, controlOptions, kindDeclareLabel)
	case !found && in.aggGID[k] != 0:
		gid := in.aggGID[k]
		in.aggGID[k] = 0
		in.face.send(&wire.Declare{Body: undeclBody(k, gid)}, controlOptions, kindDeclareLabel)
	}
}
