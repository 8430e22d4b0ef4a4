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
