package zenohpath

import (
	"sort"
	"strings"
)

// entIndex indexes the entities of one kind by key for the lookups that
// answer interests (issue 11: connect cost). Canonical keys without '*'
// intersect only an equal key (zenoh-wire.md §11), so a lookup with such a
// key visits the entities with that exact key and the wildcard ones, not
// every entity: a fleet of devices each with its own keys costs O(1) per
// publisher interest instead of O(devices).
type entIndex struct {
	exact map[string]map[uint32]*entity // non-wildcard keys → entities by gid
	wild  map[uint32]*entity            // wildcard-key entities by gid
}

func newEntIndex() entIndex {
	return entIndex{exact: map[string]map[uint32]*entity{}, wild: map[uint32]*entity{}}
}

func isWild(key string) bool { return strings.IndexByte(key, '*') >= 0 }

func (x *entIndex) add(e *entity) {
	if isWild(e.key) {
		x.wild[e.gid] = e
		return
	}
	m := x.exact[e.key]
	if m == nil {
		m = map[uint32]*entity{}
		x.exact[e.key] = m
	}
	m[e.gid] = e
}

func (x *entIndex) remove(e *entity) {
	if isWild(e.key) {
		delete(x.wild, e.gid)
		return
	}
	if m := x.exact[e.key]; m != nil {
		delete(m, e.gid)
		if len(m) == 0 {
			delete(x.exact, e.key)
		}
	}
}

// candidates returns the entities of kind k that may intersect key ("" =
// every entity), in gid order (deterministic output); the caller still
// checks the intersection. Caller holds r.mu.
func (r *Router) candidates(k kind, key string) []*entity {
	if key == "" || isWild(key) {
		return sortedEntities(r.ents[k])
	}
	x := &r.idx[k]
	out := make([]*entity, 0, len(x.exact[key])+len(x.wild))
	r.eachCandidate(k, key, func(e *entity) bool {
		out = append(out, e)
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].gid < out[j].gid })
	return out
}

// eachCandidate calls fn for the entities of kind k that may intersect key
// ("" = every entity), in no particular order, until fn returns false.
// Caller holds r.mu.
func (r *Router) eachCandidate(k kind, key string, fn func(*entity) bool) {
	if key == "" || isWild(key) {
		for _, e := range r.ents[k] {
			if !fn(e) {
				return
			}
		}
		return
	}
	x := &r.idx[k]
	for _, e := range x.exact[key] {
		if !fn(e) {
			return
		}
	}
	for _, e := range x.wild {
		if !fn(e) {
			return
		}
	}
}

// intIndex indexes the Future interests of every face by key, for the
// same reason as entIndex: a declaration on a key without '*' visits the
// interests on that exact key and the wildcard or unrestricted ones, not
// every interest of every face.
type intIndex struct {
	exact map[string]map[*interest]struct{}
	wild  map[*interest]struct{} // wildcard keys and unrestricted ("")
}

func newIntIndex() intIndex {
	return intIndex{exact: map[string]map[*interest]struct{}{}, wild: map[*interest]struct{}{}}
}

func (x *intIndex) add(in *interest) {
	if in.key == "" || isWild(in.key) {
		x.wild[in] = struct{}{}
		return
	}
	m := x.exact[in.key]
	if m == nil {
		m = map[*interest]struct{}{}
		x.exact[in.key] = m
	}
	m[in] = struct{}{}
}

func (x *intIndex) remove(in *interest) {
	if in.key == "" || isWild(in.key) {
		delete(x.wild, in)
		return
	}
	if m := x.exact[in.key]; m != nil {
		delete(m, in)
		if len(m) == 0 {
			delete(x.exact, in.key)
		}
	}
}

// interestsFor returns the Future interests that may cover an entity on
// key, ordered by face then interest id (deterministic output); the caller
// still checks in.wants. Caller holds r.mu.
func (r *Router) interestsFor(key string) []*interest {
	x := &r.ints
	var out []*interest
	if isWild(key) {
		for _, m := range x.exact {
			for in := range m {
				out = append(out, in)
			}
		}
	} else {
		for in := range x.exact[key] {
			out = append(out, in)
		}
	}
	for in := range x.wild {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].face.id != out[j].face.id {
			return out[i].face.id < out[j].face.id
		}
		return out[i].id < out[j].id
	})
	return out
}
