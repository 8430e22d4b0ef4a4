package interop_test

// These tests prove the harness against the real Rust Zenoh today: every endpoint, the router
// included, is eclipse-zenoh through testdata/zpeer.py. They are also the template the Go
// router must pass: swap startRouter for the Go router (docs/interop.md) and the assertions
// stay the same.

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
)

func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		code = checkNoLeaks(before)
	}
	os.Exit(code)
}

// checkNoLeaks polls until no zpeer process is left and the goroutine count is back to what it
// was before the tests (the harness owns two goroutines per process and two per proxied
// connection, all ended by t.Cleanup).
func checkNoLeaks(before int) int {
	deadline := time.Now().Add(interop.Scale(5 * time.Second))
	for {
		procs, gs := interop.LiveProcs(), runtime.NumGoroutine()
		if procs == 0 && gs <= before {
			return 0
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "interop: leak after tests: %d zpeer processes, %d goroutines (was %d)\n%s\n",
				procs, gs, before, buf)
			return 1
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("interop: starts real Zenoh processes; skipped in -short mode")
	}
}

// startRouter runs the real Rust Zenoh router on a free loopback port and returns the
// endpoint clients connect to. The Go router will replace exactly this function.
func startRouter(t *testing.T) string {
	t.Helper()
	ep := interop.FreeEndpoint(t)
	interop.StartReady(t, "router", "--mode", "router", "--listen", ep)
	return ep
}

func subSummary(t *testing.T, p *interop.Proc, timeout time.Duration) interop.SubSummary {
	t.Helper()
	var s interop.SubSummary
	require.NoError(t, p.WaitEvent("done", timeout).Decode(&s))
	return s
}

// (a) Pub/sub through the router: every reliable sample arrives exactly once and in order.
func TestPubSubReliableThroughRouter(t *testing.T) {
	skipShort(t)
	ep := startRouter(t)
	cases := []struct {
		name  string
		count int
		size  int
		extra []string
	}{
		{"batched", 10000, 64, nil},
		{"express", 10000, 64, []string{"--express"}},
		// 100 kB samples do not fit a 64 KiB batch: the transport fragments them.
		{"fragmented", 100, 100000, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "interop/pubsub/" + tc.name
			n := strconv.Itoa(tc.count)
			t0 := time.Now()
			sub := interop.StartReady(t, "sub", key, "--connect", ep, "--count", n, "--quiet",
				"--timeout", interop.Seconds(30*time.Second))
			pubArgs := append([]string{"pub", key, "--connect", ep, "--count", n,
				"--size", strconv.Itoa(tc.size), "--wait-matching"}, tc.extra...)
			pub := interop.Start(t, pubArgs...)
			pub.WaitEvent("matched", 10*time.Second)
			sent := pub.WaitEvent("sent", 30*time.Second)
			require.Equal(t, tc.count, sent.Count)

			s := subSummary(t, sub, 30*time.Second)
			require.True(t, s.Complete, "summary %+v", s)
			require.Equal(t, tc.count, s.Count)
			require.Equal(t, tc.count, s.Unique)
			require.Zero(t, s.Dups)
			require.True(t, s.InOrder, "first anomaly %v", s.FirstAnomaly)
			require.Equal(t, uint64(0), *s.FirstSeq)
			require.Equal(t, uint64(tc.count-1), *s.LastSeq)
			require.Equal(t, tc.count*tc.size, s.Bytes)
			require.Zero(t, pub.Wait(10*time.Second))
			var st struct {
				ElapsedS float64 `json:"elapsed_s"`
			}
			require.NoError(t, sent.Decode(&st))
			t.Logf("%d × %d B: publisher sent in %.3fs, subscriber span %.3fs (%.0f samples/s), wall %.2fs",
				tc.count, tc.size, st.ElapsedS, s.SpanS, s.RateHz, time.Since(t0).Seconds())
		})
	}
}

// Put and delete keep their kind and attachment through the router.
func TestPutDeleteAttachmentThroughRouter(t *testing.T) {
	skipShort(t)
	ep := startRouter(t)
	key := "interop/putdel/a"
	sub := interop.StartReady(t, "sub", "interop/putdel/**", "--connect", ep, "--count", "2")
	// Session-level puts are not held back by interests, so the subscriber only has to be
	// known to the router; its "ready" comes after the declaration was handed to the link.
	put := interop.StartReady(t, "put", key, "--connect", ep, "--payload", "hello", "--attachment", "meta")
	require.Zero(t, put.Wait(10*time.Second))
	del := interop.StartReady(t, "delete", key, "--connect", ep, "--attachment", "gone")
	require.Zero(t, del.Wait(10*time.Second))

	s1 := sub.WaitEvent("sample", 10*time.Second)
	require.Equal(t, key, s1.Key)
	require.Equal(t, "put", s1.Kind)
	require.Equal(t, "hello", *s1.Payload)
	require.Equal(t, "meta", *s1.Attachment)
	s2 := sub.WaitEvent("sample", 10*time.Second)
	require.Equal(t, "delete", s2.Kind)
	require.Equal(t, "gone", *s2.Attachment)
	require.Zero(t, s2.PayloadLen)
	require.True(t, subSummary(t, sub, 10*time.Second).Complete)
}

// (b) Get and queryable through the router.
func TestGetQueryableThroughRouter(t *testing.T) {
	skipShort(t)
	ep := startRouter(t)
	qbl := interop.StartReady(t, "queryable", "interop/q/**", "--connect", ep, "--reply-count", "3")

	t.Run("replies", func(t *testing.T) {
		get := interop.Start(t, "get", "interop/q/a?x=1", "--connect", ep, "--wait-matching",
			"--payload", "ask", "--timeout", interop.Seconds(10*time.Second))
		q := qbl.WaitEvent("query", 10*time.Second)
		require.Equal(t, "interop/q/a", q.Key)
		require.Equal(t, "ask", *q.Payload)
		var qf struct{ Parameters string }
		require.NoError(t, q.Decode(&qf))
		require.Equal(t, "x=1", qf.Parameters)
		for i := range 3 {
			r := get.WaitEvent("reply", 10*time.Second)
			require.True(t, r.OK)
			require.Equal(t, "interop/q/a", r.Key)
			require.Equal(t, fmt.Sprintf("reply %d", i), *r.Payload)
		}
		done := get.WaitEvent("done", 10*time.Second)
		require.Equal(t, 3, done.Count)
	})

	t.Run("no_queryable_final_at_once", func(t *testing.T) {
		// Without a matching queryable the router must end the query at once (RESPONSE_FINAL),
		// well before the querier's own timeout.
		get := interop.StartReady(t, "get", "interop/none/**", "--connect", ep, "--timeout", "20")
		done := get.WaitEvent("done", 10*time.Second)
		require.Zero(t, done.Count)
		var d struct {
			ElapsedS float64 `json:"elapsed_s"`
		}
		require.NoError(t, done.Decode(&d))
		require.Less(t, d.ElapsedS, 5.0)
	})

	t.Run("error_reply", func(t *testing.T) {
		eq := interop.StartReady(t, "queryable", "interop/err", "--connect", ep, "--reply-err")
		get := interop.Start(t, "get", "interop/err", "--connect", ep, "--wait-matching")
		eq.WaitEvent("query", 10*time.Second)
		r := get.WaitEvent("reply", 10*time.Second)
		require.False(t, r.OK)
		require.Equal(t, "error 0", *r.Payload)
		require.Equal(t, 1, get.WaitEvent("done", 10*time.Second).Count)
	})
}

// (c) Liveliness: tokens appear and disappear (undeclared, or their session killed) at a
// liveliness subscriber; history and liveliness get see the current tokens.
func TestLivelinessThroughRouter(t *testing.T) {
	skipShort(t)
	ep := startRouter(t)
	isLive := func(key, kind string) func(interop.Event) bool {
		return func(e interop.Event) bool { return e.Ev == "liveliness" && e.Key == key && e.Kind == kind }
	}
	lsub := interop.StartReady(t, "liveliness-sub", "interop/tok/**", "--connect", ep)

	a := interop.StartReady(t, "token", "interop/tok/a", "--connect", ep)
	lsub.WaitFor("put interop/tok/a", 10*time.Second, isLive("interop/tok/a", "put"))
	b := interop.StartReady(t, "token", "interop/tok/b", "--connect", ep)
	lsub.WaitFor("put interop/tok/b", 10*time.Second, isLive("interop/tok/b", "put"))

	// Both tokens reached the subscriber through the router, so the router knows them.
	get := interop.StartReady(t, "liveliness-get", "interop/tok/**", "--connect", ep)
	seen := map[string]bool{}
	for range 2 {
		e := get.WaitEvent("liveliness", 10*time.Second)
		require.Equal(t, "put", e.Kind)
		seen[e.Key] = true
	}
	require.Equal(t, map[string]bool{"interop/tok/a": true, "interop/tok/b": true}, seen)
	require.Equal(t, 2, get.WaitEvent("done", 10*time.Second).Count)

	// A subscriber declared later with history gets the current tokens at once.
	late := interop.StartReady(t, "liveliness-sub", "interop/tok/a", "--connect", ep, "--history")
	late.WaitFor("history put interop/tok/a", 10*time.Second, isLive("interop/tok/a", "put"))

	a.Send("undeclare")
	a.WaitEvent("undeclared", 10*time.Second)
	lsub.WaitFor("delete interop/tok/a", 10*time.Second, isLive("interop/tok/a", "delete"))
	late.WaitFor("delete interop/tok/a", 10*time.Second, isLive("interop/tok/a", "delete"))

	// SIGKILL: no UndeclareToken, no CLOSE; the router must notice the dead link.
	b.Kill()
	lsub.WaitFor("delete interop/tok/b", 10*time.Second, isLive("interop/tok/b", "delete"))

	empty := interop.StartReady(t, "liveliness-get", "interop/tok/**", "--connect", ep)
	require.Zero(t, empty.WaitEvent("done", 10*time.Second).Count)
}

// (d) A client connected straight to a peer, no router: pub/sub and get.
func TestClientToPeerDirect(t *testing.T) {
	skipShort(t)
	peerEP := interop.FreeEndpoint(t)
	sub := interop.StartReady(t, "sub", "interop/direct/data", "--mode", "peer", "--listen", peerEP,
		"--count", "1000", "--quiet", "--timeout", interop.Seconds(30*time.Second))
	pub := interop.Start(t, "pub", "interop/direct/data", "--connect", peerEP, "--count", "1000",
		"--wait-matching")
	pub.WaitEvent("sent", 20*time.Second)
	s := subSummary(t, sub, 20*time.Second)
	require.True(t, s.Complete && s.InOrder && s.Unique == 1000, "summary %+v", s)

	qEP := interop.FreeEndpoint(t)
	interop.StartReady(t, "queryable", "interop/direct/q", "--mode", "peer", "--listen", qEP,
		"--reply-payload", "from peer")
	get := interop.Start(t, "get", "interop/direct/q", "--connect", qEP, "--wait-matching")
	r := get.WaitEvent("reply", 10*time.Second)
	require.True(t, r.OK)
	require.Equal(t, "from peer", *r.Payload)
	require.Equal(t, 1, get.WaitEvent("done", 10*time.Second).Count)
}
