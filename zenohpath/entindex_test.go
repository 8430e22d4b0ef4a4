package zenohpath

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestEntIndexMatchesScan: the key index finds exactly the entities a full
// scan finds, for exact and wildcard queries, after adds and removals.
func TestEntIndexMatchesScan(t *testing.T) {
	r, _ := newTestRouter(t)
	keys := []string{"a/b", "a/c", "a/*", "a/**", "**", "b/c", "a/b/c", "a/$*b", "@x/a", "a/b"}
	queries := append([]string{"a/b", "a/c", "a/d", "b/c", "a/b/c", "x", "@x/a", "a/*", "**", "a/xb"}, keys...)
	faces := make([]*face, len(keys))
	for i, k := range keys {
		faces[i], _ = addTestFace(t, r, wire.WhatAmIClient)
		r.handle(faces[i], declSub(1, k))
	}
	check := func() {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, q := range queries {
			var want, got []uint32
			for _, e := range sortedEntities(r.ents[kindSub]) {
				if keyexpr.Intersects(e.key, q) {
					want = append(want, e.gid)
				}
			}
			for _, e := range r.candidates(kindSub, q) {
				if keyexpr.Intersects(e.key, q) {
					got = append(got, e.gid)
				}
			}
			require.Equal(t, want, got, "query %s", q)
			found, _ := r.anyMatch(kindSub, q, nil)
			require.Equal(t, len(want) > 0, found, "query %s", q)
		}
	}
	check()
	for i := 0; i < len(keys); i += 2 {
		r.handle(faces[i], &wire.Declare{Body: &wire.UndeclareSubscriber{ID: 1}})
	}
	check()
	r.mu.Lock()
	n := 0
	for _, m := range r.idx[kindSub].exact {
		n += len(m)
	}
	n += len(r.idx[kindSub].wild)
	require.Equal(t, len(r.ents[kindSub]), n, "index and table hold the same entities")
	r.mu.Unlock()
}
