package zenohpath

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

func addUpstream(t *testing.T, r *Router) (*face, *fakeLink) {
	t.Helper()
	l := &fakeLink{}
	f, ok := r.addFace(l, RandomZID(), wire.WhatAmIRouter, true)
	require.True(t, ok)
	return f, l
}

func tokInterest(mode wire.InterestMode, id uint32, key string) *wire.Interest {
	return &wire.Interest{Mode: mode, ID: id,
		Options:  wire.InterestKeyExprs | wire.InterestTokens | wire.InterestRestricted,
		WireExpr: wireKey(key)}
}

// TestUpstreamCurrentRelay: a Current-only interest (a liveliness get) is
// forwarded; the upstream answer is relayed under the origin's id and not
// kept, and the origin's DeclareFinal waits for the upstream's. Entities
// the router already knows from upstream are not sent twice.
func TestUpstreamCurrentRelay(t *testing.T) {
	r, _ := newTestRouter(t)
	up, upL := addUpstream(t, r)
	<-up.ready // nothing to replay
	a, aL := addTestFace(t, r, wire.WhatAmIClient)
	b, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(b, declTok(1, "t/local"))
	require.Equal(t, []string{"DECLARE D_TOKEN key=t/local"}, describeAll(upL.take()))

	r.handle(a, tokInterest(wire.InterestCurrent, 7, "t/**"))
	require.Equal(t, []string{"INTEREST Current id=1 opts=K,T,R key=t/**"}, describeAll(upL.take()))
	require.Equal(t, []string{"DECLARE I=7 D_TOKEN key=t/local"}, describeAll(aL.take()), "the final waits for upstream")
	r.handle(up, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareToken{ID: 3, WireExpr: wireKey("t/far")}})
	r.handle(up, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareFinal{}})
	require.Equal(t, []string{"DECLARE I=7 D_TOKEN key=t/far", "DECLARE I=7 FINAL"}, describeAll(aL.take()))
	r.mu.Lock()
	require.Empty(t, up.ents[kindTok], "a Current answer is not kept")
	require.Empty(t, up.fwd)
	r.mu.Unlock()
	// A late answer for the finished interest is ignored.
	r.handle(up, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareFinal{}})
	require.Empty(t, aL.take())
}

// TestUpstreamFinalOnClose: an origin whose DeclareFinal waits for an
// upstream face gets it when that face closes without answering.
func TestUpstreamFinalOnClose(t *testing.T) {
	r, _ := newTestRouter(t)
	up, upL := addUpstream(t, r)
	a, aL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(a, tokInterest(wire.InterestCurrentFuture, 2, "t/**"))
	require.Equal(t, []string{"INTEREST CurrentFuture id=1 opts=K,T,R key=t/**"}, describeAll(upL.take()))
	require.Empty(t, aL.take())
	r.removeFace(up)
	require.Equal(t, []string{"DECLARE I=2 FINAL"}, describeAll(aL.take()))
	// A new upstream face gets the Future interest replayed.
	up2, up2L := addUpstream(t, r)
	require.Equal(t, []string{"INTEREST CurrentFuture id=1 opts=K,T,R key=t/**"}, describeAll(up2L.take()))
	r.handle(up2, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareToken{ID: 1, WireExpr: wireKey("t/x")}})
	r.handle(up2, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareFinal{}})
	<-up2.ready
	require.Equal(t, []string{"DECLARE D_TOKEN key=t/x"}, describeAll(aL.take()), "the origin had its final already")
}

// TestUpstreamPrune: when the last interest tracking an upstream entity
// ends, the entity is forgotten (the upstream stops reporting on it), and
// the faces told about it hear it undeclared.
func TestUpstreamPrune(t *testing.T) {
	r, _ := newTestRouter(t)
	up, upL := addUpstream(t, r)
	a, aL := addTestFace(t, r, wire.WhatAmIClient)
	b, bL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(a, tokInterest(wire.InterestFuture, 1, "t/**"))
	r.handle(b, tokInterest(wire.InterestFuture, 1, "t/a"))
	require.Equal(t, []string{"INTEREST Future id=1 opts=K,T,R key=t/**", "INTEREST Future id=2 opts=K,T,R key=t/a"}, describeAll(upL.take()))
	r.handle(up, declTok(1, "t/a"))
	r.handle(up, declTok(2, "t/b"))
	require.Equal(t, []string{"DECLARE D_TOKEN key=t/a", "DECLARE D_TOKEN key=t/b"}, describeAll(aL.take()))
	require.Equal(t, []string{"DECLARE D_TOKEN key=t/a"}, describeAll(bL.take()))
	r.handle(a, &wire.Interest{Mode: wire.InterestFinal, ID: 1})
	require.Equal(t, []string{"INTEREST Final id=1"}, describeAll(upL.take()))
	r.mu.Lock()
	var keys []string
	for _, e := range up.ents[kindTok] {
		keys = append(keys, e.key)
	}
	r.mu.Unlock()
	require.Equal(t, []string{"t/a"}, keys, "t/b is tracked by no interest any more; t/a still by b's")
	require.Equal(t, []string{"DECLARE U_TOKEN"}, describeAll(aL.take()), "a was told about t/b: it hears it go")
	require.Empty(t, bL.take())
}

// TestUpstreamQueries: a REQUEST goes upstream unless an answered querier
// interest covers its key without a matching queryable there.
func TestUpstreamQueries(t *testing.T) {
	r, _ := newTestRouter(t)
	up, upL := addUpstream(t, r)
	a, aL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(a, &wire.Request{ID: 1, WireExpr: wireKey("q/a"), Body: &wire.Query{}})
	require.Equal(t, []string{"REQUEST rid=1 key=q/a"}, describeAll(upL.take()))
	r.handle(up, &wire.ResponseFinal{ID: 1})
	require.Equal(t, []string{"RESPONSE_FINAL rid=1"}, describeAll(aL.take()))
	r.handle(a, &wire.Interest{Mode: wire.InterestCurrentFuture, ID: 9,
		Options: wire.InterestKeyExprs | wire.InterestQueryables | wire.InterestRestricted, WireExpr: wireKey("q/a")})
	require.Equal(t, []string{"INTEREST CurrentFuture id=1 opts=K,Q,R key=q/a"}, describeAll(upL.take()))
	r.handle(up, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareFinal{}})
	require.Equal(t, []string{"DECLARE I=9 FINAL"}, describeAll(aL.take()))
	r.handle(a, &wire.Request{ID: 2, WireExpr: wireKey("q/a"), Body: &wire.Query{}})
	require.Empty(t, upL.take(), "covered, and no queryable upstream")
	require.Equal(t, []string{"RESPONSE_FINAL rid=2"}, describeAll(aL.take()))
	r.handle(up, declQbl(4, "q/**", true))
	require.Equal(t, []string{"DECLARE D_QBL key=q/**"}, describeAll(aL.take()))
	r.handle(a, &wire.Request{ID: 3, WireExpr: wireKey("q/a"), Body: &wire.Query{}})
	require.Equal(t, []string{"REQUEST rid=2 key=q/a"}, describeAll(upL.take()))
}

// TestGoClientsScopedDeclarations (issue 11 item 3): M Go client sessions,
// each with a subscriber on its own key and a publisher on the next one's,
// connect to a router over TCP. Each is told exactly what its publisher
// needs: one aggregated subscriber declaration and one DeclareFinal, so the
// router sends 2·M declaration messages in all (it was M² with one
// unrestricted interest per client), and matching status still follows.
func TestGoClientsScopedDeclarations(t *testing.T) {
	const m = 30
	met, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	r := NewRouter(RouterConfig{Metrics: met})
	defer r.Close()
	ctx := context.Background()
	ln, err := r.Listen(ctx, "tcp/127.0.0.1:0")
	require.NoError(t, err)
	key := func(i int) string { return fmt.Sprintf("scoped/c%d", i%m) }
	sessions := make([]*Session, m)
	pubs := make([]*Publisher, m)
	for i := range m {
		s, err := Open(ctx, Config{Connect: []string{ln.Endpoint()}})
		require.NoError(t, err)
		defer s.Close()
		sessions[i] = s
		_, err = s.DeclareSubscriber(key(i), func(Sample) {})
		require.NoError(t, err)
		pubs[i], err = s.DeclarePublisher(key(i+1), PublisherOptions{})
		require.NoError(t, err)
	}
	for i, p := range pubs {
		require.Eventually(t, p.HasMatchingSubscribers, 10*time.Second, time.Millisecond, "publisher %d", i)
	}
	declares := func() float64 { return testutil.ToFloat64(met.routed.WithLabelValues(kindDeclareLabel)) }
	require.Eventually(t, func() bool { return declares() == 2*m }, 5*time.Second, time.Millisecond)
	require.Zero(t, testutil.ToFloat64(met.routed.WithLabelValues(kindInterestLabel)), "a router without upstream asks nothing")
	faces := r.Faces()
	require.Len(t, faces, m)
	for _, f := range faces {
		require.Equal(t, int64(2), f.DeclarationsSent, "face %d (%s): one D_SUB and one DeclareFinal", f.ID, f.ZID)
	}
	for i, s := range sessions {
		fs := s.Router().Faces()
		require.Len(t, fs, 2, "session %d: its own face and the upstream", i)
		for _, f := range fs {
			if f.Upstream {
				require.Equal(t, 1, f.Subscribers, "session %d knows one (aggregated) subscriber", i)
				require.Zero(t, f.Queryables)
				require.Zero(t, f.Tokens)
			}
		}
	}
	// Client 1 leaves: client 0's publisher (on client 1's key) no longer
	// matches, after exactly one more declaration (its U_SUB).
	require.NoError(t, sessions[1].Close())
	require.Eventually(t, func() bool { return !pubs[0].HasMatchingSubscribers() }, 10*time.Second, time.Millisecond)
	require.Equal(t, float64(2*m+1), declares())
	require.True(t, pubs[2].HasMatchingSubscribers())
}

// TestSessionMatchingInterests: a session's publisher and querier each send
// one aggregated matching interest on their key, which the session's router
// forwards upstream; Undeclare sends its Final (and the upstream entities it
// tracked are forgotten); Session.HasMatchingQueryables asks once per key.
func TestSessionMatchingInterests(t *testing.T) {
	r, _ := newTestRouter(t)
	up, upL := addUpstream(t, r)
	s := openInProcess(t, r)
	pub, err := s.DeclarePublisher("m/pub", PublisherOptions{})
	require.NoError(t, err)
	got := upL.take()
	require.Equal(t, []string{"INTEREST CurrentFuture id=1 opts=K,S,R,A key=m/pub"}, describeAll(got))
	r.handle(up, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareSubscriber{ID: 1, WireExpr: wireKey("m/pub")}})
	r.handle(up, &wire.Declare{HasInterestID: true, InterestID: 1, Body: &wire.DeclareFinal{}})
	require.True(t, pub.HasMatchingSubscribers())
	require.NoError(t, pub.Undeclare())
	require.NoError(t, pub.Undeclare())
	require.Equal(t, []string{"INTEREST Final id=1"}, describeAll(upL.take()))
	require.False(t, pub.HasMatchingSubscribers(), "nothing tracks the upstream subscriber any more")

	qr, err := s.DeclareQuerier("m/q/**", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"INTEREST CurrentFuture id=2 opts=K,Q,R,A key=m/q/**"}, describeAll(upL.take()))
	require.False(t, qr.HasMatchingQueryables())
	r.handle(up, &wire.Declare{Body: &wire.DeclareQueryable{ID: 1, WireExpr: wireKey("m/q/**")}})
	require.True(t, qr.HasMatchingQueryables())

	require.False(t, s.HasMatchingQueryables("m/other"))
	require.False(t, s.HasMatchingQueryables("m/other"))
	require.Equal(t, []string{"INTEREST CurrentFuture id=3 opts=K,Q,R,A key=m/other"}, describeAll(upL.take()), "asked once")
	require.NoError(t, s.Close())
	require.Equal(t, []string{"INTEREST Final id=2", "INTEREST Final id=3"}, describeAll(upL.take()))
}

// TestUpstreamSameNode: when a node is both an upstream face and an
// accepted face (two peers that dial each other), what arrives on one is
// not declared or forwarded back on the other.
func TestUpstreamSameNode(t *testing.T) {
	r, _ := newTestRouter(t)
	zid := RandomZID()
	upL := &fakeLink{}
	up, ok := r.addFace(upL, zid, wire.WhatAmIPeer, true)
	require.True(t, ok)
	<-up.ready
	back, _ := r.addFace(&fakeLink{}, zid, wire.WhatAmIPeer, false)
	r.handle(back, declSub(1, "loop/**"))
	r.handle(back, tokInterest(wire.InterestFuture, 1, "loop/**"))
	require.Empty(t, upL.take())
	other, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(other, declSub(1, "x"))
	require.Equal(t, []string{"DECLARE D_SUB key=x"}, describeAll(upL.take()))
}

// TestUpstreamToUpstream: what arrives from one upstream face reaches
// another only where that one declared a match; what our own faces send
// goes to both.
func TestUpstreamToUpstream(t *testing.T) {
	r, _ := newTestRouter(t)
	up1, up1L := addUpstream(t, r)
	_, up2L := addUpstream(t, r)
	a, aL := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(a, declSub(1, "u/**"))
	up1L.take()
	up2L.take()
	r.handle(up1, push("u/1", "from up1"))
	require.Equal(t, []string{`PUSH key=u/1 PUT "from up1"`}, describeAll(aL.take()))
	require.Empty(t, up2L.take())
	r.handle(up1, &wire.Request{ID: 1, WireExpr: wireKey("u/1"), Body: &wire.Query{}})
	require.Empty(t, up2L.take())
	require.Equal(t, []string{"RESPONSE_FINAL rid=1"}, describeAll(up1L.take()))
	r.handle(a, push("v/1", "from a"))
	require.Equal(t, []string{`PUSH key=v/1 PUT "from a"`}, describeAll(up1L.take()))
	require.Equal(t, []string{`PUSH key=v/1 PUT "from a"`}, describeAll(up2L.take()))
}

// TestToldForgetsClosedFaces: an entity keeps no reference to a face that
// was told about it and closed (no growth under churn of interested faces).
func TestToldForgetsClosedFaces(t *testing.T) {
	r, _ := newTestRouter(t)
	a, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(a, declTok(1, "c/a"))
	for range 10 {
		b, bL := addTestFace(t, r, wire.WhatAmIClient)
		r.handle(b, tokInterest(wire.InterestCurrentFuture, 1, "c/**"))
		require.Equal(t, []string{"DECLARE I=1 D_TOKEN key=c/a", "DECLARE I=1 FINAL"}, describeAll(bL.take()))
		r.removeFace(b)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range a.ents[kindTok] {
		require.Empty(t, e.told)
	}
	require.Empty(t, r.ints.exact)
	require.Empty(t, r.ints.wild)
}
