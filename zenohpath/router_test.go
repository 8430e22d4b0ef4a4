package zenohpath

import (
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

func newTestRouter(t *testing.T) (*Router, *Metrics) {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	r := NewRouter(RouterConfig{Metrics: m, QueryTimeout: time.Second})
	t.Cleanup(func() { _ = r.Close() })
	return r, m
}

func addTestFace(t *testing.T, r *Router, w wire.WhatAmI) (*face, *fakeLink) {
	t.Helper()
	l := &fakeLink{}
	f, ok := r.addFace(l, RandomZID(), w, false)
	require.True(t, ok)
	return f, l
}

func declSub(id uint32, key string) *wire.Declare {
	return &wire.Declare{Body: &wire.DeclareSubscriber{ID: id, WireExpr: wireKey(key)}}
}

func declQbl(id uint32, key string, complete bool) *wire.Declare {
	return &wire.Declare{Body: &wire.DeclareQueryable{ID: id, WireExpr: wireKey(key), HasInfo: complete, Complete: complete}}
}

func declTok(id uint32, key string) *wire.Declare {
	return &wire.Declare{Body: &wire.DeclareToken{ID: id, WireExpr: wireKey(key)}}
}

func push(key, payload string) *wire.Push {
	return &wire.Push{WireExpr: wireKey(key), Body: &wire.Put{Payload: []byte(payload)}}
}

// feed hands the D>G messages of transcript lines to the router as face f.
func feed(r *Router, f *face, msgs []wire.NetworkMessage) {
	for _, m := range msgs {
		r.handle(f, m)
	}
}

// TestPicoPublisherInterestAggregated replays pub_interest_push.zvec: pico's
// aggregated publisher INTEREST (K,S,R,M,A on its own key id) must be answered,
// like the G>D line 8 pico accepted, with DeclareSubscriber(I=2, key equal to
// the interest key) and DeclareFinal(I=2); then pico's PUSH (scope 1, M) reaches
// the subscriber.
func TestPicoPublisherInterestAggregated(t *testing.T) {
	r, m := newTestRouter(t)
	zv := loadZvec(t, "pub_interest_push")
	sub, subL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(sub, declSub(1, "demo/example/**"))
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)

	feed(r, pico, zvecLine(t, zv, 6)) // DeclareKeyExpr id 1
	feed(r, pico, zvecLine(t, zv, 7)) // INTEREST CurrentFuture id 2 K,S,R,M,A scope 1
	require.Equal(t, describeAll(zvecLine(t, zv, 8)), describeAll(picoL.take()))

	feed(r, pico, zvecLine(t, zv, 9))
	require.Equal(t, []string{`PUSH key=demo/example/zenoh-pico-pub PUT "[   0] Pub from Pico!"`}, describeAll(subL.take()))
	require.Equal(t, 1.0, testutil.ToFloat64(m.routed.WithLabelValues("push")))

	feed(r, pico, zvecLine(t, zv, 13)) // INTEREST Final
	feed(r, pico, zvecLine(t, zv, 14)) // UndeclareKeyExpr
	require.Empty(t, pico.interests)
	require.Empty(t, pico.remoteKeys)
}

// TestPicoPublisherMatchingToggle follows pub_matching_toggle.zvec: when the
// last matching subscriber goes, pico gets UndeclareSubscriber of the
// aggregated id (no I); when one comes back, DeclareSubscriber on the interest
// key again (lines 11 and 12).
func TestPicoPublisherMatchingToggle(t *testing.T) {
	r, _ := newTestRouter(t)
	zv := loadZvec(t, "pub_matching_toggle")
	sub, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(sub, declSub(7, "demo/**"))
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, zvecLine(t, zv, 5))
	feed(r, pico, zvecLine(t, zv, 6))
	first := picoL.take()
	require.Equal(t, describeAll(zvecLine(t, zv, 7)), describeAll(first))
	aggID := first[0].(*wire.Declare).Body.(*wire.DeclareSubscriber).ID

	r.handle(sub, &wire.Declare{Body: &wire.UndeclareSubscriber{ID: 7}})
	got := picoL.take()
	require.Equal(t, describeAll(zvecLine(t, zv, 11)), describeAll(got))
	require.Equal(t, aggID, got[0].(*wire.Declare).Body.(*wire.UndeclareSubscriber).ID)

	// Nothing routes to pico's publisher key any more.
	r.handle(sub, declSub(8, "demo/example/zenoh-pico-pub"))
	require.Equal(t, describeAll(zvecLine(t, zv, 12)), describeAll(picoL.take()))

	// A second matching subscriber does not declare again.
	r.handle(sub, declSub(9, "demo/example/*"))
	require.Empty(t, picoL.take())
}

// TestPicoPublisherNoMatch: with no subscriber the Current part is only
// DeclareFinal (pub_no_match), and pico stays silent.
func TestPicoPublisherNoMatch(t *testing.T) {
	r, _ := newTestRouter(t)
	zv := loadZvec(t, "pub_interest_push")
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, zvecLine(t, zv, 6))
	feed(r, pico, zvecLine(t, zv, 7))
	require.Equal(t, []string{"DECLARE I=2 FINAL"}, describeAll(picoL.take()))
}

// TestRustInterestNotAggregated: a Rust publisher's interest (K,S,R,M without
// A, captured from Rust 1.10.2) gets one DeclareSubscriber per matching
// subscriber with that subscriber's own key, then DeclareFinal; later
// subscribers are declared without I, and undeclared with the same id.
func TestRustInterestNotAggregated(t *testing.T) {
	r, _ := newTestRouter(t)
	a, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(a, declSub(1, "interop/cap/**"))
	r.handle(a, declSub(2, "interop/cap/data"))
	r.handle(a, declSub(3, "other/**"))
	rust, rustL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, rust, rustMessages(t, "a5b9f8b80f31009e210820010010696e7465726f702f6361702f64617461f90153012108"))
	require.Equal(t, []string{
		"DECLARE I=1 D_SUB key=interop/cap/**",
		"DECLARE I=1 D_SUB key=interop/cap/data",
		"DECLARE I=1 FINAL",
	}, describeAll(rustL.take()))

	r.handle(a, declSub(4, "interop/*/data"))
	got := rustL.take()
	require.Equal(t, []string{"DECLARE D_SUB key=interop/*/data"}, describeAll(got))
	id := got[0].(*wire.Declare).Body.(*wire.DeclareSubscriber).ID
	r.handle(a, &wire.Declare{Body: &wire.UndeclareSubscriber{ID: 4}})
	got = rustL.take()
	require.Equal(t, []string{"DECLARE U_SUB"}, describeAll(got))
	require.Equal(t, id, got[0].(*wire.Declare).Body.(*wire.UndeclareSubscriber).ID)
	// Unrelated subscribers do not reach the face.
	r.handle(a, declSub(5, "other/x"))
	require.Empty(t, rustL.take())
}

// rustMessages decodes one captured batch (hex, no length prefix).
func rustMessages(t *testing.T, h string) []wire.NetworkMessage {
	t.Helper()
	b := mustHex(t, h)
	var out []wire.NetworkMessage
	var p wire.Parser
	require.NoError(t, p.WalkBatch(b, func(_ wire.TransportMessage, m wire.NetworkMessage) error {
		if m != nil {
			out = append(out, cloneNetwork(m))
		}
		return nil
	}))
	return out
}

// TestLivelinessSubscriberHistory replays liveliness_sub_history.zvec: the
// Current part gives the existing token with I=1, then DeclareFinal; a later
// token is declared without I and undeclared with the same id (lines 8, 9, 11).
func TestLivelinessSubscriberHistory(t *testing.T) {
	r, _ := newTestRouter(t)
	zv := loadZvec(t, "liveliness_sub_history")
	tok, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(tok, declTok(1, "group1/fake-router"))
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, zvecLine(t, zv, 6))
	feed(r, pico, zvecLine(t, zv, 7))
	require.Equal(t, describeAll(zvecLine(t, zv, 8)), describeAll(picoL.take()))

	r.handle(tok, declTok(2, "group1/fake-router-2"))
	got := picoL.take()
	require.Equal(t, describeAll(zvecLine(t, zv, 9)), describeAll(got))
	r.handle(tok, &wire.Declare{Body: &wire.UndeclareToken{ID: 2}})
	got2 := picoL.take()
	require.Equal(t, describeAll(zvecLine(t, zv, 11)), describeAll(got2))
	require.Equal(t, got[0].(*wire.Declare).Body.(*wire.DeclareToken).ID, got2[0].(*wire.Declare).Body.(*wire.UndeclareToken).ID)
}

// TestLivelinessSubscriberFuture replays liveliness_sub_future.zvec: a Future
// interest gets no Current reply, only later changes (lines 8, 10).
func TestLivelinessSubscriberFuture(t *testing.T) {
	r, _ := newTestRouter(t)
	zv := loadZvec(t, "liveliness_sub_future")
	tok, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(tok, declTok(1, "group1/old")) // existing: not reported (no history)
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, zvecLine(t, zv, 6))
	feed(r, pico, zvecLine(t, zv, 7))
	require.Empty(t, picoL.take())
	r.handle(tok, declTok(2, "group1/fake-router-2"))
	require.Equal(t, describeAll(zvecLine(t, zv, 8)), describeAll(picoL.take()))
	r.handle(tok, &wire.Declare{Body: &wire.UndeclareToken{ID: 2}})
	require.Equal(t, describeAll(zvecLine(t, zv, 10)), describeAll(picoL.take()))
	r.handle(tok, &wire.Declare{Body: &wire.UndeclareToken{ID: 1}}) // never declared to pico
	require.Empty(t, picoL.take())
}

// TestLivelinessGet: a Current T interest (pico's liveliness get, captured
// `39 01 79 00 09 "group1/**"`) gets the matching tokens with I and
// DeclareFinal, and is not kept.
func TestLivelinessGet(t *testing.T) {
	r, _ := newTestRouter(t)
	tok, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(tok, declTok(1, "group1/a"))
	r.handle(tok, declTok(2, "group2/b"))
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, rustMessages(t, "2500"+"39017900"+"09"+hexOf("group1/**")))
	require.Equal(t, []string{"DECLARE I=1 D_TOKEN key=group1/a", "DECLARE I=1 FINAL"}, describeAll(picoL.take()))
	require.Empty(t, pico.interests)
	r.handle(tok, &wire.Declare{Body: &wire.UndeclareToken{ID: 1}})
	require.Empty(t, picoL.take())
}

// TestScopeResolution: M=1 resolves against the sender's key ids, M=0 against
// the ids the router declared to that face (§9.1), both for PUSH and for
// declarations; unknown ids are dropped and counted.
func TestScopeResolution(t *testing.T) {
	r, m := newTestRouter(t)
	sub, subL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(sub, declSub(1, "demo/**"))
	pub, _ := addTestFace(t, r, wire.WhatAmIClient)

	// Sender mapping: pico's sub_push_client_scope / put_session form.
	r.handle(pub, &wire.Declare{Body: &wire.DeclareKeyExpr{ID: 1, WireExpr: wireKey("demo/example")}})
	r.handle(pub, &wire.Push{WireExpr: wire.WireExpr{Scope: 1, Suffix: "/a", Mapping: wire.MappingSender}, Body: &wire.Put{Payload: []byte("1")}})
	r.handle(pub, &wire.Push{WireExpr: wire.WireExpr{Scope: 1, Mapping: wire.MappingSender}, Body: &wire.Put{Payload: []byte("2")}})
	// Receiver mapping: an id the router declared to that face.
	r.mu.Lock()
	pub.localKeys[7] = "demo/r"
	r.mu.Unlock()
	r.handle(pub, &wire.Push{WireExpr: wire.WireExpr{Scope: 7, Suffix: "/x", Mapping: wire.MappingReceiver}, Body: &wire.Put{Payload: []byte("3")}})
	// Wrong direction: id 7 was not declared by the sender; id 1 not by us.
	r.handle(pub, &wire.Push{WireExpr: wire.WireExpr{Scope: 7, Mapping: wire.MappingSender}, Body: &wire.Put{Payload: []byte("x")}})
	r.handle(pub, &wire.Push{WireExpr: wire.WireExpr{Scope: 1, Mapping: wire.MappingReceiver}, Body: &wire.Put{Payload: []byte("y")}})
	require.Equal(t, []string{
		`PUSH key=demo/example/a PUT "1"`,
		`PUSH key=demo/example PUT "2"`,
		`PUSH key=demo/r/x PUT "3"`,
	}, describeAll(subL.take()))
	require.Equal(t, 2.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropUnresolved)))

	// A subscriber declared with the sender's scope + suffix (pico after reconnect).
	r.handle(pub, &wire.Declare{Body: &wire.DeclareSubscriber{ID: 3, WireExpr: wire.WireExpr{Scope: 1, Suffix: "/**", Mapping: wire.MappingSender}}})
	r.handle(sub, push("demo/example/z", "4"))
	require.Equal(t, []string{`PUSH key=demo/example/z PUT "4"`}, describeAll(zvecSends(pub)))
	// Never echo to the sender face.
	r.handle(pub, push("demo/example/z", "5"))
	require.Equal(t, []string{`PUSH key=demo/example/z PUT "5"`}, describeAll(subL.take()))
	require.Empty(t, zvecSends(pub))
}

func zvecSends(f *face) []wire.NetworkMessage { return f.link.(*fakeLink).take() }

// TestPushQoS: routed sends carry the sender's QoS (express, priority,
// congestion control) and the PUSH keeps QoS and timestamp but never NodeId.
func TestPushQoS(t *testing.T) {
	r, _ := newTestRouter(t)
	sub, subL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(sub, declSub(1, "**"))
	pub, _ := addTestFace(t, r, wire.WhatAmIClient)
	p := push("a/b", "x")
	p.HasQoS, p.QoS = true, wire.NewQoS(wire.PriorityRealTime, wire.CongestionBlock, true)
	p.HasNodeID, p.NodeID = true, 3
	r.handle(pub, p)
	p2 := push("a/b", "y") // default QoS: Data, Drop
	r.handle(pub, p2)
	subL.mu.Lock()
	defer subL.mu.Unlock()
	require.Len(t, subL.msgs, 2)
	// Inline: the fan-out has a single target (issue 25 item 3).
	require.Equal(t, sendOptions{Reliable: true, Express: true, Block: true, Priority: wire.PriorityRealTime, Inline: true}, subL.opts[0])
	require.Equal(t, sendOptions{Reliable: true, Priority: wire.PriorityData, Inline: true}, subL.opts[1])
	got := subL.msgs[0].(*wire.Push)
	require.False(t, got.HasNodeID)
	require.True(t, got.HasQoS)
}

// TestQueryRouting replays get_query.zvec / queryable_request.zvec: pico's
// REQUEST goes to each queryable face under that face's own request id; replies
// come back under pico's id and RESPONSE_FINAL only once every target finished.
func TestQueryRouting(t *testing.T) {
	r, _ := newTestRouter(t)
	zq := loadZvec(t, "queryable_request")
	q1, q1L := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, q1, zvecLine(t, zq, 6)) // pico queryable: DeclareKeyExpr
	feed(r, q1, zvecLine(t, zq, 7)) // DeclareQueryable scope 1
	q2, q2L := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(q2, declQbl(5, "demo/**", false))
	r.handle(q2, &wire.Request{ID: 40, WireExpr: wireKey("demo/x"), Body: &wire.Query{}}) // advance q2's own ids: no target
	require.Equal(t, []string{"RESPONSE_FINAL rid=40"}, describeAll(q2L.take()))

	zg := loadZvec(t, "get_query")
	getter, gL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, getter, zvecLine(t, zg, 6)) // REQUEST rid 1 demo/example/** (All)
	r1 := q1L.take()
	r2 := q2L.take()
	require.Equal(t, []string{"REQUEST rid=1 key=demo/example/**"}, describeAll(r1))
	require.Equal(t, []string{"REQUEST rid=1 key=demo/example/**"}, describeAll(r2))
	require.True(t, r1[0].(*wire.Request).HasTimeout)
	require.Equal(t, 10*time.Second, r1[0].(*wire.Request).Timeout)

	// pico queryable answers (queryable_request lines 9 and 10, rid 1).
	feed(r, q1, zvecLine(t, zq, 9))
	feed(r, q1, zvecLine(t, zq, 10))
	require.Equal(t, []string{`RESPONSE rid=1 key=demo/example/zenoh-pico-queryable REPLY PUT "Queryable from Pico!"`}, describeAll(gL.take()))
	r.handle(q2, &wire.Response{ID: 1, WireExpr: wireKey("demo/example/q2"), Body: &wire.Reply{Body: &wire.Put{Payload: []byte("q2")}}})
	r.handle(q2, &wire.ResponseFinal{ID: 1})
	require.Equal(t, []string{`RESPONSE rid=1 key=demo/example/q2 REPLY PUT "q2"`, "RESPONSE_FINAL rid=1"}, describeAll(gL.take()))
	// A late reply is dropped.
	r.handle(q2, &wire.Response{ID: 1, WireExpr: wireKey("demo/example/q2"), Body: &wire.Reply{Body: &wire.Put{}}})
	require.Empty(t, gL.take())

	// Compare with what pico accepted in get_query line 7 (by meaning).
	want := describeAll(zvecLine(t, zg, 7))
	require.Equal(t, []string{`RESPONSE rid=1 key=demo/example/fake-router REPLY PUT "reply from fake router"`, "RESPONSE_FINAL rid=1"}, want)
}

// TestQueryNoTarget: no matching queryable → RESPONSE_FINAL at once.
func TestQueryNoTarget(t *testing.T) {
	r, _ := newTestRouter(t)
	g, gL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(g, &wire.Request{ID: 9, WireExpr: wireKey("a/**"), Body: &wire.Query{}})
	require.Equal(t, []string{"RESPONSE_FINAL rid=9"}, describeAll(gL.take()))
}

// TestQueryTimeout: a target that never finishes → RESPONSE_FINAL after the
// REQUEST's Timeout ext; its later replies are dropped.
func TestQueryTimeout(t *testing.T) {
	r, m := newTestRouter(t)
	q, qL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(q, declQbl(1, "a/**", true))
	g, gL := addTestFace(t, r, wire.WhatAmIClient)
	start := time.Now()
	r.handle(g, &wire.Request{ID: 3, WireExpr: wireKey("a/b"), HasTimeout: true, Timeout: 80 * time.Millisecond, Body: &wire.Query{}})
	req := qL.take()
	require.Len(t, req, 1)
	got := gL.waitN(t, 1, 2*time.Second)
	require.Equal(t, []string{"RESPONSE_FINAL rid=3"}, describeAll(got))
	require.GreaterOrEqual(t, time.Since(start), 80*time.Millisecond)
	rid := req[0].(*wire.Request).ID
	r.handle(q, &wire.Response{ID: rid, WireExpr: wireKey("a/b"), Body: &wire.Reply{Body: &wire.Put{}}})
	r.handle(q, &wire.ResponseFinal{ID: rid})
	require.Empty(t, gL.take())
	require.Equal(t, 1.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropQueryTimeout)))
	// The default timeout applies without the ext (router configured 1 s).
	r.handle(g, &wire.Request{ID: 4, WireExpr: wireKey("a/b"), Body: &wire.Query{}})
	require.Equal(t, time.Second, qL.take()[0].(*wire.Request).Timeout)
	require.Equal(t, []string{"RESPONSE_FINAL rid=4"}, describeAll(gL.waitN(t, 1, 3*time.Second)))
}

// TestQueryTargets: AllComplete skips incomplete queryables; BestMatching
// prefers one complete queryable that includes the key.
func TestQueryTargets(t *testing.T) {
	r, _ := newTestRouter(t)
	a, aL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(a, declQbl(1, "s/**", false))
	b, bL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(b, declQbl(1, "s/add", true))
	g, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(g, &wire.Request{ID: 1, WireExpr: wireKey("s/add"), HasTarget: true, Target: wire.TargetAllComplete, Body: &wire.Query{}})
	require.Empty(t, aL.take())
	require.Len(t, bL.take(), 1)
	r.handle(g, &wire.Request{ID: 2, WireExpr: wireKey("s/add"), Body: &wire.Query{}})
	require.Empty(t, aL.take())
	require.Len(t, bL.take(), 1)
	r.handle(g, &wire.Request{ID: 3, WireExpr: wireKey("s/**"), Body: &wire.Query{}})
	require.Len(t, aL.take(), 1)
	require.Len(t, bL.take(), 1)
	r.handle(g, &wire.Request{ID: 4, WireExpr: wireKey("s/add"), HasTarget: true, Target: wire.TargetAll, Body: &wire.Query{}})
	require.Len(t, aL.take(), 1)
	require.Len(t, bL.take(), 1)
}

// TestFaceDeathCleanup: when a face dies, its subscriber, queryable and token
// are undeclared towards every face that was told (aggregated and not), queries
// it was a target of finish, and queries it originated are dropped.
func TestFaceDeathCleanup(t *testing.T) {
	r, m := newTestRouter(t)
	obs, obsL := addTestFace(t, r, wire.WhatAmIClient)
	// Aggregated publisher interest, liveliness subscriber, Rust querier interest.
	r.handle(obs, &wire.Interest{Mode: wire.InterestCurrentFuture, ID: 1, Options: wire.InterestKeyExprs | wire.InterestSubscribers | wire.InterestRestricted | wire.InterestAggregate, WireExpr: wireKey("d/pub")})
	r.handle(obs, &wire.Interest{Mode: wire.InterestFuture, ID: 2, Options: wire.InterestTokens | wire.InterestRestricted, WireExpr: wireKey("d/**")})
	r.handle(obs, &wire.Interest{Mode: wire.InterestCurrentFuture, ID: 3, Options: wire.InterestQueryables | wire.InterestRestricted, WireExpr: wireKey("d/q")})
	require.Equal(t, []string{"DECLARE I=1 FINAL", "DECLARE I=3 FINAL"}, describeAll(obsL.take()))

	dead, deadL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(dead, declSub(1, "d/**"))
	r.handle(dead, declTok(2, "d/tok"))
	r.handle(dead, declQbl(3, "d/q", false))
	require.Equal(t, []string{"DECLARE D_SUB key=d/pub", "DECLARE D_TOKEN key=d/tok", "DECLARE D_QBL key=d/q"}, describeAll(obsL.take()))
	// A query towards dead, and one from dead towards obs.
	r.handle(obs, declQbl(9, "e/**", false))
	obsL.take()
	r.handle(obs, &wire.Request{ID: 5, WireExpr: wireKey("d/q"), Body: &wire.Query{}})
	r.handle(dead, &wire.Request{ID: 6, WireExpr: wireKey("e/x"), Body: &wire.Query{}})
	require.Len(t, deadL.take(), 1)
	require.Len(t, obsL.take(), 1)

	r.removeFace(dead)
	require.ElementsMatch(t, []string{"DECLARE U_SUB", "DECLARE U_TOKEN", "DECLARE U_QBL", "RESPONSE_FINAL rid=5"}, describeAll(obsL.take()))
	require.Equal(t, 1.0, testutil.ToFloat64(m.faces))
	r.mu.Lock()
	for k := range r.ents {
		for _, e := range r.ents[k] {
			require.NotEqual(t, dead, e.face)
		}
	}
	require.Empty(t, obs.pending)
	r.mu.Unlock()
	// obs answering the dead face's query is dropped quietly.
	r.handle(obs, &wire.ResponseFinal{ID: 1})
	require.Empty(t, obsL.take())
}

// TestUpstreamFace: an upstream face gets every local entity declared and,
// instead of one unrestricted interest, the interests of our faces (replayed
// at connect, issue 11 item 3); what it declares is routable; its entities
// are not echoed back to it; PUSHes go to it unless an answered interest
// covers their key, and then only if it declared a subscriber.
func TestUpstreamFace(t *testing.T) {
	r, m := newTestRouter(t)
	a, aL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(a, declSub(1, "x/**"))
	r.handle(a, &wire.Interest{Mode: wire.InterestCurrentFuture, ID: 5,
		Options:  wire.InterestKeyExprs | wire.InterestSubscribers | wire.InterestRestricted | wire.InterestAggregate,
		WireExpr: wireKey("y/1")})
	require.Equal(t, []string{"DECLARE I=5 FINAL"}, describeAll(aL.take()))
	upL := &fakeLink{}
	up, ok := r.addFace(upL, RandomZID(), wire.WhatAmIRouter, true)
	require.True(t, ok)
	require.Equal(t, []string{"DECLARE D_SUB key=x/**", "INTEREST CurrentFuture id=1 opts=K,S,R,A key=y/1"}, describeAll(upL.take()))
	r.handle(a, declTok(2, "t/a"))
	require.Equal(t, []string{"DECLARE D_TOKEN key=t/a"}, describeAll(upL.take()))
	select {
	case <-up.ready:
		t.Fatal("ready before DeclareFinal")
	default:
	}
	r.handle(a, push("y/1", "before"))
	require.Equal(t, []string{`PUSH key=y/1 PUT "before"`}, describeAll(upL.take()), "not filtered before the interest is answered")
	r.handle(up, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareSubscriber{ID: 1, WireExpr: wireKey("y/1")}})
	r.handle(up, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareFinal{}})
	<-up.ready
	require.Equal(t, []string{"DECLARE D_SUB key=y/1"}, describeAll(aL.take()))
	require.Empty(t, upL.take())
	r.handle(a, push("y/1", "p"))
	r.handle(a, push("z/1", "unfiltered"))
	require.Equal(t, []string{`PUSH key=y/1 PUT "p"`, `PUSH key=z/1 PUT "unfiltered"`}, describeAll(upL.take()))
	r.handle(up, push("x/1", "q"))
	require.Equal(t, []string{`PUSH key=x/1 PUT "q"`}, describeAll(aL.take()))

	// The upstream subscriber leaves: the answered interest filters y/1.
	r.handle(up, &wire.Declare{Body: &wire.UndeclareSubscriber{ID: 1}})
	require.Equal(t, []string{"DECLARE U_SUB"}, describeAll(aL.take()))
	r.handle(a, push("y/1", "nobody"))
	require.Empty(t, upL.take())
	require.Equal(t, 1.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropNoRoute)))

	r.handle(a, &wire.Interest{Mode: wire.InterestFinal, ID: 5})
	require.Equal(t, []string{"INTEREST Final id=1"}, describeAll(upL.take()))
	r.handle(a, push("y/1", "unfiltered again"))
	require.Equal(t, []string{`PUSH key=y/1 PUT "unfiltered again"`}, describeAll(upL.take()))
	r.handle(a, &wire.Declare{Body: &wire.UndeclareSubscriber{ID: 1}})
	require.Equal(t, []string{"DECLARE U_SUB"}, describeAll(upL.take()))
}

// TestRouterCloseNoLeak: no goroutine survives Close (query timers included).
func TestRouterCloseNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	r := NewRouter(RouterConfig{})
	q, _ := r.addFace(&fakeLink{}, RandomZID(), wire.WhatAmIClient, false)
	r.handle(q, declQbl(1, "a/**", false))
	g, _ := r.addFace(&fakeLink{}, RandomZID(), wire.WhatAmIClient, false)
	r.handle(g, &wire.Request{ID: 1, WireExpr: wireKey("a/b"), Body: &wire.Query{}})
	require.NoError(t, r.Close())
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines, want <= %d:\n%s", runtime.NumGoroutine(), want, buf[:n])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stuckLink fails every send like a transport whose queue never drains.
type stuckLink struct {
	fakeLink
	blocks int
}

func (l *stuckLink) send(m wire.NetworkMessage, o sendOptions) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o.Block {
		l.blocks++
		return transport.ErrBlockTimeout
	}
	return transport.ErrQueueFull
}

func (l *stuckLink) sendShared(s *shared, o sendOptions) error { return l.send(s.m, o) }

// TestCongestedFace: after one BLOCK send timed out, BLOCK sends to that face
// are made as DROP (no more waiting) until it drains; drops are counted.
func TestCongestedFace(t *testing.T) {
	r, m := newTestRouter(t)
	l := &stuckLink{}
	stuck, ok := r.addFace(l, RandomZID(), wire.WhatAmIClient, false)
	require.True(t, ok)
	r.handle(stuck, declSub(1, "**"))
	pub, _ := addTestFace(t, r, wire.WhatAmIClient)
	for range 5 {
		p := push("a", "x")
		p.HasQoS, p.QoS = true, wire.NewQoS(wire.PriorityData, wire.CongestionBlock, false)
		r.handle(pub, p)
	}
	require.Equal(t, 1, l.blocks)
	require.Equal(t, 1.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropCongestion)))
	require.Equal(t, 4.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropQueueFull)))
	require.True(t, stuck.congested.Load())
}

// TestMetricsLint runs promlint over the router's collectors.
func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	m.routedInc("push")
	m.droppedInc(dropNoRoute)
	m.faceAdded(1)
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
	n, err := testutil.GatherAndCount(reg, "picobridge_router_faces", "picobridge_router_routed_total", "picobridge_router_dropped_total")
	require.NoError(t, err)
	require.Equal(t, 1+len(routedKinds)+len(dropReasons), n, "every label value pre-initialised")
	// Registering twice reuses the collectors.
	m2, err := NewMetrics(reg)
	require.NoError(t, err)
	m2.routedInc("push")
	require.Equal(t, 2.0, testutil.ToFloat64(m.routed.WithLabelValues("push")))
}

// TestPicoSubscriberPush replays sub_push.zvec: pico's subscriber (declared
// with its keyexpr table) gets a publication of another face as the PUSH pico
// accepted (G>D line 8, by meaning, payload and attachment kept); after its
// UndeclareSubscriber (line 12) nothing more is routed to it.
func TestPicoSubscriberPush(t *testing.T) {
	r, m := newTestRouter(t)
	zv := loadZvec(t, "sub_push")
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, zvecLine(t, zv, 6))
	feed(r, pico, zvecLine(t, zv, 7))
	pub, _ := addTestFace(t, r, wire.WhatAmIClient)
	want := zvecLine(t, zv, 8)
	feed(r, pub, want) // the same PUSH, sent by a publisher face
	got := picoL.take()
	require.Equal(t, describeAll(want), describeAll(got))
	require.Equal(t, want[0].(*wire.Push).Body.(*wire.Put).Attachment, got[0].(*wire.Push).Body.(*wire.Put).Attachment)
	feed(r, pico, zvecLine(t, zv, 12))
	feed(r, pico, zvecLine(t, zv, 13))
	feed(r, pub, want)
	require.Empty(t, picoL.take())
	require.Equal(t, 1.0, testutil.ToFloat64(m.dropped.WithLabelValues(dropNoRoute)))
}

// TestPicoToken replays liveliness_token.zvec: pico's DeclareToken (scope 1,
// M) reaches a liveliness subscriber with the resolved key; its UndeclareToken
// (with the WireExpr ext) undeclares the same id.
func TestPicoToken(t *testing.T) {
	r, _ := newTestRouter(t)
	zv := loadZvec(t, "liveliness_token")
	obs, obsL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(obs, &wire.Interest{Mode: wire.InterestFuture, ID: 1, Options: wire.InterestTokens | wire.InterestRestricted, WireExpr: wireKey("group1/**")})
	pico, _ := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, zvecLine(t, zv, 6))
	feed(r, pico, zvecLine(t, zv, 7))
	d := obsL.take()
	require.Equal(t, []string{"DECLARE D_TOKEN key=group1/zenoh-pico"}, describeAll(d))
	feed(r, pico, zvecLine(t, zv, 9))
	u := obsL.take()
	require.Equal(t, []string{"DECLARE U_TOKEN"}, describeAll(u))
	require.Equal(t, d[0].(*wire.Declare).Body.(*wire.DeclareToken).ID, u[0].(*wire.Declare).Body.(*wire.UndeclareToken).ID)
	feed(r, pico, zvecLine(t, zv, 10))
	require.Empty(t, pico.remoteKeys)
}

// TestRouterRequestToPico compares the REQUEST the router sends to pico's
// queryable with queryable_request.zvec line 8 (by meaning: rid, key).
func TestRouterRequestToPico(t *testing.T) {
	r, _ := newTestRouter(t)
	zv := loadZvec(t, "queryable_request")
	pico, picoL := addTestFace(t, r, wire.WhatAmIClient)
	feed(r, pico, zvecLine(t, zv, 6))
	feed(r, pico, zvecLine(t, zv, 7))
	g, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(g, &wire.Request{ID: 77, WireExpr: wireKey("demo/example/zenoh-pico-queryable"), Body: &wire.Query{Parameters: "from=router"}})
	got := picoL.take()
	require.Equal(t, describeAll(zvecLine(t, zv, 8)), describeAll(got))
	require.Equal(t, "from=router", got[0].(*wire.Request).Body.(*wire.Query).Parameters)
	require.False(t, got[0].(*wire.Request).HasNodeID)
}
