package zenohpath

import (
	"context"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

func openInProcess(t *testing.T, r *Router) *Session {
	t.Helper()
	s, err := Open(context.Background(), Config{Router: r})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received within 5 s")
		var zero T
		return zero
	}
}

// TestSessionPubSub: put/delete with encoding, attachment, timestamp and QoS
// arrive as sent; a session also receives its own publications (local
// delivery) but the router never echoes them.
func TestSessionPubSub(t *testing.T) {
	r, _ := newTestRouter(t)
	a := openInProcess(t, r)
	b := openInProcess(t, r)
	sub, err := b.DeclareSubscriberChan("x/**", 16)
	require.NoError(t, err)
	own, err := a.DeclareSubscriberChan("x/own", 16)
	require.NoError(t, err)

	pub, err := a.DeclarePublisher("x/y", PublisherOptions{Express: true, Priority: PriorityRealTime, CongestionControl: CongestionControlBlock,
		Encoding: &Encoding{ID: 7, Schema: []byte("s")}})
	require.NoError(t, err)
	require.True(t, pub.HasMatchingSubscribers())
	ts := Timestamp{Time: 1 << 32, ZID: a.ZID()}
	require.NoError(t, pub.Put([]byte("v1"), &PutOptions{Attachment: []byte("att"), Timestamp: &ts}))
	s := recv(t, sub.Samples())
	require.Equal(t, "x/y", s.KeyExpr())
	require.Equal(t, "v1", string(s.Payload()))
	require.Equal(t, SampleKindPut, s.Kind())
	require.Equal(t, uint16(7), s.Encoding().ID)
	require.Equal(t, "s", string(s.Encoding().Schema))
	require.Equal(t, "att", string(s.Attachment()))
	gotTS, ok := s.Timestamp()
	require.True(t, ok)
	require.Equal(t, ts.Time, gotTS.Time)
	require.True(t, s.Express())
	require.Equal(t, PriorityRealTime, s.Priority())
	require.Equal(t, CongestionControlBlock, s.CongestionControl())

	require.NoError(t, pub.Delete(nil))
	s = recv(t, sub.Samples())
	require.Equal(t, SampleKindDelete, s.Kind())

	require.NoError(t, a.Put("x/own", []byte("me"), nil))
	require.Equal(t, "me", string(recv(t, own.Samples()).Payload()))
	require.Equal(t, "me", string(recv(t, sub.Samples()).Payload()))

	require.NoError(t, sub.Undeclare())
	require.False(t, pub.HasMatchingSubscribers())
	_, err = a.DeclarePublisher("bad//key", PublisherOptions{})
	require.Error(t, err)
}

// TestSessionGet: replies, error replies, a query to nobody ends at once, a
// query to a silent queryable ends at its timeout.
func TestSessionGet(t *testing.T) {
	r, _ := newTestRouter(t)
	srv := openInProcess(t, r)
	cli := openInProcess(t, r)
	gotQuery := make(chan *Query, 1)
	_, err := srv.DeclareQueryable("svc/**", func(q *Query) {
		gotQuery <- q
		require.NoError(t, q.Reply("svc/a", []byte("ok"), &ReplyOptions{Attachment: []byte("m")}))
		require.NoError(t, q.ReplyErr([]byte("bad"), nil))
	}, &QueryableOptions{Complete: true})
	require.NoError(t, err)
	require.True(t, cli.HasMatchingQueryables("svc/a"))

	replies, err := cli.Get("svc/a?x=1", &GetOptions{Payload: []byte("body"), Attachment: []byte("qa"), Target: QueryTargetAllComplete})
	require.NoError(t, err)
	var oks, errs int
	for rep := range replies {
		if s, ok := rep.Ok(); ok {
			oks++
			require.Equal(t, "ok", string(s.Payload()))
			require.Equal(t, "m", string(s.Attachment()))
			require.Equal(t, cli.ZID().String() != "", true)
			require.Equal(t, srv.ZID(), rep.ReplierID())
		} else {
			e, _ := rep.Err()
			require.Equal(t, "bad", string(e.Payload()))
			errs++
		}
	}
	require.Equal(t, 1, oks)
	require.Equal(t, 1, errs)
	q := recv(t, gotQuery)
	require.Equal(t, "svc/a", q.KeyExpr())
	require.Equal(t, "x=1", q.Parameters())
	require.Equal(t, "body", string(q.Payload()))
	require.Equal(t, "qa", string(q.Attachment()))

	start := time.Now()
	replies, err = cli.Get("nobody/**", nil)
	require.NoError(t, err)
	for range replies {
		t.Fatal("reply from nobody")
	}
	require.Less(t, time.Since(start), time.Second)
}

// TestSessionGetTimeout: a queryable that never finishes (a remote face that
// does not answer) ends the Get at the timeout.
func TestSessionGetTimeout(t *testing.T) {
	r, _ := newTestRouter(t)
	silent, _ := addTestFace(t, r, wire.WhatAmIClient)
	r.handle(silent, declQbl(1, "slow/**", false))
	cli := openInProcess(t, r)
	start := time.Now()
	replies, err := cli.Get("slow/a", &GetOptions{Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	for range replies {
		t.Fatal("reply")
	}
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	require.Less(t, time.Since(start), 2*time.Second)
}

// TestSessionLiveliness: tokens, subscriber with and without history, get,
// and the delete a session's end produces.
func TestSessionLiveliness(t *testing.T) {
	r, _ := newTestRouter(t)
	dev := openInProcess(t, r)
	mon := openInProcess(t, r)
	_, err := dev.Liveliness().DeclareToken("fleet/a")
	require.NoError(t, err)
	hist := make(chan Sample, 8)
	fut := make(chan Sample, 8)
	_, err = mon.Liveliness().DeclareSubscriber("fleet/**", func(s Sample) { hist <- s }, &LivelinessSubscriberOptions{History: true})
	require.NoError(t, err)
	futSub, err := mon.Liveliness().DeclareSubscriber("fleet/**", func(s Sample) { fut <- s }, nil)
	require.NoError(t, err)
	require.Equal(t, "fleet/a", recv(t, hist).KeyExpr())
	b, err := dev.Liveliness().DeclareToken("fleet/b")
	require.NoError(t, err)
	require.Equal(t, "fleet/b", recv(t, hist).KeyExpr())
	require.Equal(t, "fleet/b", recv(t, fut).KeyExpr())
	require.NoError(t, b.Undeclare())
	s := recv(t, hist)
	require.Equal(t, SampleKindDelete, s.Kind())
	require.Equal(t, "fleet/b", s.KeyExpr())
	require.Equal(t, SampleKindDelete, recv(t, fut).Kind())

	alive, err := mon.Liveliness().Get("fleet/**", nil)
	require.NoError(t, err)
	var keys []string
	for rep := range alive {
		s, ok := rep.Ok()
		require.True(t, ok)
		keys = append(keys, s.KeyExpr())
	}
	require.Equal(t, []string{"fleet/a"}, keys)

	require.NoError(t, futSub.Undeclare())
	require.NoError(t, dev.Close())
	s = recv(t, hist)
	require.Equal(t, SampleKindDelete, s.Kind())
	require.Equal(t, "fleet/a", s.KeyExpr())
	select {
	case s := <-fut:
		t.Fatalf("undeclared subscriber got %v", s)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestNoGoroutineLeak: a router with a TCP listener, two client sessions over
// TCP and one in-process session, traffic, then Close: every goroutine ends.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		r := NewRouter(RouterConfig{})
		ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
		require.NoError(t, err)
		a, err := Open(context.Background(), Config{Connect: []string{ln.Endpoint()}})
		require.NoError(t, err)
		b, err := Open(context.Background(), Config{Connect: []string{ln.Endpoint()}})
		require.NoError(t, err)
		c, err := Open(context.Background(), Config{Router: r})
		require.NoError(t, err)
		sub, err := b.DeclareSubscriberChan("k/**", 4)
		require.NoError(t, err)
		_, err = c.DeclareQueryable("q", func(q *Query) { _ = q.Reply("q", []byte("r"), nil) }, nil)
		require.NoError(t, err)
		pub, _ := a.DeclarePublisher("k/1", PublisherOptions{})
		for !pub.HasMatchingSubscribers() {
			time.Sleep(5 * time.Millisecond)
		}
		require.NoError(t, pub.Put([]byte("x"), nil))
		recv(t, sub.Samples())
		replies, err := a.Get("q", nil)
		require.NoError(t, err)
		for range replies {
		}
		_, err = a.Get("q", &GetOptions{Timeout: time.Hour}) // left pending
		require.NoError(t, err)
		_, err = a.Liveliness().Get("z/**", &LivelinessGetOptions{Timeout: time.Hour})
		require.NoError(t, err)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
		require.NoError(t, c.Close())
		require.NoError(t, r.Close())
	}()
	waitGoroutines(t, before)
}

// TestOpenErrors: bad configurations are refused with a reason.
func TestOpenErrors(t *testing.T) {
	_, err := Open(context.Background(), Config{})
	require.ErrorContains(t, err, "Connect")
	_, err = Open(context.Background(), Config{Listen: []string{"tcp/127.0.0.1:0"}})
	require.ErrorContains(t, err, "ModePeer")
	_, err = Open(context.Background(), Config{Connect: []string{"tcp/127.0.0.1:1"}})
	require.Error(t, err)
	r := NewRouter(RouterConfig{})
	require.NoError(t, r.Close())
	_, err = Open(context.Background(), Config{Router: r})
	require.ErrorIs(t, err, ErrClosed)
}

// TestPeerMode: a peer-mode session listens and routes between the clients
// that connect to it, and delivers to itself.
func TestPeerMode(t *testing.T) {
	p, err := Open(context.Background(), Config{Mode: ModePeer, Listen: []string{"tcp/127.0.0.1:0"}})
	require.NoError(t, err)
	defer p.Close()
	eps := p.Router().Endpoints()
	require.Len(t, eps, 1)
	ep := eps[0]
	c, err := Open(context.Background(), Config{Connect: []string{ep}})
	require.NoError(t, err)
	defer c.Close()
	sub, err := p.DeclareSubscriberChan("p/**", 4)
	require.NoError(t, err)
	pub, _ := c.DeclarePublisher("p/1", PublisherOptions{})
	for !pub.HasMatchingSubscribers() {
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, pub.Put([]byte("to peer"), nil))
	require.Equal(t, "to peer", string(recv(t, sub.Samples()).Payload()))
	for _, f := range p.r.Faces() {
		if !f.Upstream && f.WhatAmI == "client" && f.ZID != p.ZID().String() {
			require.Equal(t, c.ZID().String(), f.ZID)
		}
	}
}

// TestSessionLocal: a session's own queryables answer its Get (together with
// remote ones), and its own tokens reach its own liveliness subscribers and
// liveliness Get.
func TestSessionLocal(t *testing.T) {
	r, _ := newTestRouter(t)
	s := openInProcess(t, r)
	other := openInProcess(t, r)
	_, err := s.DeclareQueryable("q/**", func(q *Query) { _ = q.Reply("q/own", []byte("own"), nil) }, nil)
	require.NoError(t, err)
	_, err = other.DeclareQueryable("q/**", func(q *Query) { _ = q.Reply("q/other", []byte("other"), nil) }, nil)
	require.NoError(t, err)
	replies, err := s.Get("q/x", &GetOptions{Target: QueryTargetAll})
	require.NoError(t, err)
	var got []string
	for rep := range replies {
		smp, ok := rep.Ok()
		require.True(t, ok)
		got = append(got, string(smp.Payload()))
	}
	require.ElementsMatch(t, []string{"own", "other"}, got)
	// Only local: still ends.
	replies, err = s.Get("q/y", &GetOptions{Target: QueryTargetAll, Timeout: 5 * time.Second})
	require.NoError(t, err)
	n := 0
	for range replies {
		n++
	}
	require.Equal(t, 2, n)

	events := make(chan Sample, 8)
	tok, err := s.Liveliness().DeclareToken("lv/own")
	require.NoError(t, err)
	_, err = s.Liveliness().DeclareSubscriber("lv/**", func(smp Sample) { events <- smp }, &LivelinessSubscriberOptions{History: true})
	require.NoError(t, err)
	require.Equal(t, "lv/own", recv(t, events).KeyExpr())
	alive, err := s.Liveliness().Get("lv/**", nil)
	require.NoError(t, err)
	var keys []string
	for rep := range alive {
		smp, _ := rep.Ok()
		keys = append(keys, smp.KeyExpr())
	}
	require.Equal(t, []string{"lv/own"}, keys)
	require.NoError(t, tok.Undeclare())
	smp := recv(t, events)
	require.Equal(t, SampleKindDelete, smp.Kind())
	require.NoError(t, tok.Undeclare()) // twice: no-op
}

func TestStatus(t *testing.T) {
	r, _ := newTestRouter(t)
	s := openInProcess(t, r)
	_, err := s.DeclareSubscriber("a/**", func(Sample) {})
	require.NoError(t, err)
	_, err = s.Liveliness().DeclareToken("t/1")
	require.NoError(t, err)
	st := r.Status()
	require.Equal(t, r.ZID().String(), st.ZID)
	require.Len(t, st.Faces, 1)
	require.Equal(t, 1, st.Subscribers)
	require.Equal(t, 1, st.Tokens)
	rec := httptest.NewRecorder()
	r.HandleStatus(rec, httptest.NewRequest("GET", StatusPath, nil))
	require.Contains(t, rec.Body.String(), `"subscribers": 1`)
}

// TestCloseWithFullChannels: a subscriber channel and a Get channel nobody
// reads do not hold up Close.
func TestCloseWithFullChannels(t *testing.T) {
	r, _ := newTestRouter(t)
	a := openInProcess(t, r)
	b, err := Open(context.Background(), Config{Router: r})
	require.NoError(t, err)
	_, err = b.DeclareSubscriberChan("f/**", 1)
	require.NoError(t, err)
	_, err = a.DeclareQueryable("g", func(q *Query) {
		for range 10 {
			_ = q.Reply("g", []byte("r"), nil)
		}
	}, nil)
	require.NoError(t, err)
	_, err = b.Get("g", &GetOptions{Capacity: 1})
	require.NoError(t, err)
	for range 10 {
		require.NoError(t, a.Put("f/1", []byte("x"), nil))
	}
	done := make(chan struct{})
	go func() { _ = b.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on full channels")
	}
}

func TestQuerier(t *testing.T) {
	r, _ := newTestRouter(t)
	srv := openInProcess(t, r)
	cli := openInProcess(t, r)
	qr, err := cli.DeclareQuerier("svc/echo", &QuerierOptions{Target: QueryTargetAllComplete, Timeout: 2 * time.Second})
	require.NoError(t, err)
	require.False(t, qr.HasMatchingQueryables())
	_, err = srv.DeclareQueryable("svc/echo", func(q *Query) {
		_ = q.Reply(q.KeyExpr(), append([]byte(q.Parameters()+":"), q.Payload()...), nil)
	}, &QueryableOptions{Complete: true})
	require.NoError(t, err)
	require.True(t, qr.HasMatchingQueryables())
	replies, err := qr.Get("n=1", &QuerierGetOptions{Payload: []byte("hi")})
	require.NoError(t, err)
	var got []string
	for rep := range replies {
		s, ok := rep.Ok()
		require.True(t, ok)
		got = append(got, string(s.Payload()))
	}
	require.Equal(t, []string{"n=1:hi"}, got)
	require.Equal(t, "svc/echo", qr.KeyExpr())
	require.NoError(t, qr.Undeclare())
}
