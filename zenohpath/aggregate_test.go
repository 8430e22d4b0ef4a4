package zenohpath

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Issue 18 item 2: the aggregated declaration answering a pico querier's
// interest must follow the complete flag of the queryables it stands for.
// The expectations are the exact bytes the router sends (each DECLARE as
// m.Append encodes it), in pico's framing terms:
//
//	3e 02 ...  DECLARE with I, interest id 2 (pico's)
//	1e ...     DECLARE without I (the Future part)
//	24 / a4    DeclareQueryable N (a4: + Z, ext QueryableInfo 21 01 = complete)
//	05         UndeclareQueryable
//	1a         DeclareFinal

// picoQuerier is what zenoh-pico's z_querier sends (§12.4): FRAME R sn 0,
// DeclareKeyExpr id 1 = key, INTEREST CurrentFuture id 2 options 0xd5
// (K,Q,R,M,A) on its key id 1.
func picoQuerier(t *testing.T, key string) []wire.NetworkMessage {
	t.Helper()
	return rustMessages(t, "2500"+"1e200100"+hex.EncodeToString([]byte{byte(len(key))})+hexOf(key)+"7902d501")
}

// sentHex encodes what a face was sent, one hex string per message.
func sentHex(l *fakeLink) []string {
	var out []string
	for _, m := range l.take() {
		out = append(out, hex.EncodeToString(m.Append(nil)))
	}
	return out
}

const aggKey = "test/matching/q" // 15 bytes: 0f

var aggKeyHex = "000f" + hexOf(aggKey) // scope 0, suffix

// TestAggregatedQueryableCompleteChanges is z_api_matching_test.c's
// querier-wants-complete case: a non-complete queryable first, then a
// complete one must re-declare the aggregate (same id) as complete; when the
// complete one leaves, it is re-declared non-complete; the last leaving
// undeclares it.
func TestAggregatedQueryableCompleteChanges(t *testing.T) {
	r, _ := newTestRouter(t)
	x, _ := addTestFace(t, r, wire.WhatAmIClient)
	y, _ := addTestFace(t, r, wire.WhatAmIClient)
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, picoQuerier(t, aggKey))
	require.Equal(t, []string{"3e021a"}, sentHex(picoL), "nothing matches yet: DeclareFinal only")

	r.handle(x, declQbl(1, "test/matching/**", false)) // gid 1
	require.Equal(t, []string{"1e2402" + aggKeyHex}, sentHex(picoL), "aggregate id 2, not complete")
	r.handle(y, declQbl(1, aggKey, true)) // gid 3
	require.Equal(t, []string{"1ea402" + aggKeyHex + "2101"}, sentHex(picoL), "same id, now complete")
	r.handle(y, declQbl(1, aggKey, true))
	require.Empty(t, sentHex(picoL), "a repeated identical declaration changes nothing")
	r.handle(y, &wire.Declare{Body: &wire.UndeclareQueryable{ID: 1}})
	require.Equal(t, []string{"1e2402" + aggKeyHex}, sentHex(picoL), "last complete one left: same id, not complete")
	r.handle(x, &wire.Declare{Body: &wire.UndeclareQueryable{ID: 1}})
	require.Equal(t, []string{"1e0502"}, sentHex(picoL), "none left: undeclared")

	r.handle(y, declQbl(2, aggKey, true)) // gid 4
	require.Equal(t, []string{"1ea405" + aggKeyHex + "2101"}, sentHex(picoL), "a new aggregate (id 5), complete from the start")
	r.handle(x, declQbl(2, "test/**", false))
	require.Empty(t, sentHex(picoL), "a non-complete one beside a complete one changes nothing")
	// The complete queryable's own face makes it non-complete in place.
	r.handle(y, declQbl(2, aggKey, false))
	require.Equal(t, []string{"1e2405" + aggKeyHex}, sentHex(picoL))
}

// TestAggregatedQueryableCurrent: the Current part carries the complete
// flag of the queryables that exist when the interest arrives.
func TestAggregatedQueryableCurrent(t *testing.T) {
	r, _ := newTestRouter(t)
	x, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(x, declQbl(1, "test/matching/**", false)) // gid 1
	r.handle(x, declQbl(2, aggKey, true))              // gid 2
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, picoQuerier(t, aggKey))
	require.Equal(t, []string{"3e02a403" + aggKeyHex + "2101", "3e021a"}, sentHex(picoL))
	r.handle(x, &wire.Declare{Body: &wire.UndeclareQueryable{ID: 2}})
	require.Equal(t, []string{"1e2403" + aggKeyHex}, sentHex(picoL))
}

// TestQueryableCompleteRedeclared: without aggregation (a Rust querier,
// K|Q|R) a queryable whose face re-declares it with another complete flag
// is declared again under the same id, not undeclared and replaced.
func TestQueryableCompleteRedeclared(t *testing.T) {
	r, _ := newTestRouter(t)
	x, _ := addTestFace(t, r, wire.WhatAmIClient)
	rust, rustL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(rust, &wire.Interest{Mode: wire.InterestCurrentFuture, ID: 1,
		Options: wire.InterestKeyExprs | wire.InterestQueryables | wire.InterestRestricted, WireExpr: wireKey(aggKey)})
	require.Equal(t, []string{"3e011a"}, sentHex(rustL))
	r.handle(x, declQbl(4, "test/**", false)) // gid 1
	require.Equal(t, []string{"1e2401" + "0007" + hexOf("test/**")}, sentHex(rustL))
	r.handle(x, declQbl(4, "test/**", true))
	require.Equal(t, []string{"1ea401" + "0007" + hexOf("test/**") + "2101"}, sentHex(rustL))
	r.handle(x, &wire.Declare{Body: &wire.UndeclareQueryable{ID: 4}})
	require.Equal(t, []string{"1e0501"}, sentHex(rustL))
}

// TestAggregatedSubscribers: an aggregated subscriber declaration carries
// nothing that changes with the subscribers behind it: declared once when
// the first appears, undeclared when the last leaves, silent in between.
func TestAggregatedSubscribers(t *testing.T) {
	r, _ := newTestRouter(t)
	x, _ := addTestFace(t, r, wire.WhatAmIClient)
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	key := "test/matching/s"
	feed(r, pico, rustMessages(t, "2500"+"1e2001000f"+hexOf(key)+"7902d301"))
	require.Equal(t, []string{"3e021a"}, sentHex(picoL))
	r.handle(x, declSub(1, key))       // gid 1
	r.handle(x, declSub(2, "test/**")) // gid 3
	r.handle(x, &wire.Declare{Body: &wire.UndeclareSubscriber{ID: 1}})
	r.handle(x, &wire.Declare{Body: &wire.UndeclareSubscriber{ID: 2}})
	require.Equal(t, []string{"1e2202000f" + hexOf(key), "1e0302"}, sentHex(picoL))
}
