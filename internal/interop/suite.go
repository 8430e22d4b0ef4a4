package interop

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RouterFunc starts the router under test for one scenario and returns the endpoint
// (tcp/127.0.0.1:port) that clients connect to. It stops the router in t.Cleanup.
type RouterFunc func(t *testing.T) string

// Scenario is one router conformance scenario: real Rust Zenoh clients (zpeer.py) talk to
// each other through the router at ep, and the scenario checks what they observe.
type Scenario struct {
	Name string
	Run  func(t *testing.T, ep string)
}

// RouterScenarios are the scenarios [RunRouterSuite] runs, in order.
var RouterScenarios = []Scenario{
	{"pubsub_reliable", PubSubReliable},
	{"put_delete_attachment", PutDeleteAttachment},
	{"get_queryable", GetQueryable},
	{"liveliness", Liveliness},
	{"matching", Matching},
	{"qos_preserved", QoSPreserved},
}

// RunRouterSuite runs every scenario of [RouterScenarios] as a parallel subtest, each against
// a fresh router from start (so start must allow several routers at once, on distinct ports).
// The same suite runs against the Python (Rust) router in this package's tests and against
// picobridge's Go router in its own (docs/interop.md).
func RunRouterSuite(t *testing.T, start RouterFunc) {
	for _, s := range RouterScenarios {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel() // mostly waiting for Python processes to start
			s.Run(t, start(t))
		})
	}
}

// StartPythonRouter is a [RouterFunc] for the real Rust Zenoh router (zpeer.py router).
func StartPythonRouter(t *testing.T) string {
	t.Helper()
	ep := FreeEndpoint(t)
	StartReady(t, "router", "--mode", "router", "--listen", ep)
	return ep
}

func subSummary(t *testing.T, p *Proc, timeout time.Duration) SubSummary {
	t.Helper()
	var s SubSummary
	require.NoError(t, p.WaitEvent("done", timeout).Decode(&s))
	return s
}

// PubSubReliable: pub/sub through the router: every reliable sample arrives exactly once and in order.
func PubSubReliable(t *testing.T, ep string) {
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
			sub := StartReady(t, "sub", key, "--connect", ep, "--count", n, "--quiet",
				"--timeout", Seconds(30*time.Second))
			pubArgs := append([]string{"pub", key, "--connect", ep, "--count", n,
				"--size", strconv.Itoa(tc.size), "--wait-matching"}, tc.extra...)
			pub := Start(t, pubArgs...)
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

// PutDeleteAttachment: put and delete keep their kind and attachment through the router.
func PutDeleteAttachment(t *testing.T, ep string) {
	key := "interop/putdel/a"
	sub := StartReady(t, "sub", "interop/putdel/**", "--connect", ep, "--count", "2")
	// Session-level puts are not held back by interests, so the subscriber only has to be
	// known to the router; its "ready" comes after the declaration was handed to the link.
	put := StartReady(t, "put", key, "--connect", ep, "--payload", "hello", "--attachment", "meta")
	require.Zero(t, put.Wait(10*time.Second))
	del := StartReady(t, "delete", key, "--connect", ep, "--attachment", "gone")
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

// GetQueryable: get and queryable through the router: replies, an immediate final without
// a queryable, error replies.
func GetQueryable(t *testing.T, ep string) {
	qbl := StartReady(t, "queryable", "interop/q/**", "--connect", ep, "--reply-count", "3")

	t.Run("replies", func(t *testing.T) {
		get := Start(t, "get", "interop/q/a?x=1", "--connect", ep, "--wait-matching",
			"--payload", "ask", "--timeout", Seconds(10*time.Second))
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
		get := StartReady(t, "get", "interop/none/**", "--connect", ep, "--timeout", "20")
		done := get.WaitEvent("done", 10*time.Second)
		require.Zero(t, done.Count)
		var d struct {
			ElapsedS float64 `json:"elapsed_s"`
		}
		require.NoError(t, done.Decode(&d))
		require.Less(t, d.ElapsedS, 5.0)
	})

	t.Run("error_reply", func(t *testing.T) {
		eq := StartReady(t, "queryable", "interop/err", "--connect", ep, "--reply-err")
		get := Start(t, "get", "interop/err", "--connect", ep, "--wait-matching")
		eq.WaitEvent("query", 10*time.Second)
		r := get.WaitEvent("reply", 10*time.Second)
		require.False(t, r.OK)
		require.Equal(t, "error 0", *r.Payload)
		require.Equal(t, 1, get.WaitEvent("done", 10*time.Second).Count)
	})
}

// Liveliness: tokens appear and disappear (undeclared, or their session killed) at a
// liveliness subscriber; history and liveliness get see the current tokens.
func Liveliness(t *testing.T, ep string) {
	isLive := func(key, kind string) func(Event) bool {
		return func(e Event) bool { return e.Ev == "liveliness" && e.Key == key && e.Kind == kind }
	}
	lsub := StartReady(t, "liveliness-sub", "interop/tok/**", "--connect", ep)

	a := StartReady(t, "token", "interop/tok/a", "--connect", ep)
	lsub.WaitFor("put interop/tok/a", 10*time.Second, isLive("interop/tok/a", "put"))
	b := StartReady(t, "token", "interop/tok/b", "--connect", ep)
	lsub.WaitFor("put interop/tok/b", 10*time.Second, isLive("interop/tok/b", "put"))

	// Both tokens reached the subscriber through the router, so the router knows them.
	get := StartReady(t, "liveliness-get", "interop/tok/**", "--connect", ep)
	seen := map[string]bool{}
	for range 2 {
		e := get.WaitEvent("liveliness", 10*time.Second)
		require.Equal(t, "put", e.Kind)
		seen[e.Key] = true
	}
	require.Equal(t, map[string]bool{"interop/tok/a": true, "interop/tok/b": true}, seen)
	require.Equal(t, 2, get.WaitEvent("done", 10*time.Second).Count)

	// A subscriber declared later with history gets the current tokens at once.
	late := StartReady(t, "liveliness-sub", "interop/tok/a", "--connect", ep, "--history")
	late.WaitFor("history put interop/tok/a", 10*time.Second, isLive("interop/tok/a", "put"))

	a.Send("undeclare")
	a.WaitEvent("undeclared", 10*time.Second)
	lsub.WaitFor("delete interop/tok/a", 10*time.Second, isLive("interop/tok/a", "delete"))
	late.WaitFor("delete interop/tok/a", 10*time.Second, isLive("interop/tok/a", "delete"))

	// SIGKILL: no UndeclareToken, no CLOSE; the router must notice the dead link.
	b.Kill()
	lsub.WaitFor("delete interop/tok/b", 10*time.Second, isLive("interop/tok/b", "delete"))

	empty := StartReady(t, "liveliness-get", "interop/tok/**", "--connect", ep)
	require.Zero(t, empty.WaitEvent("done", 10*time.Second).Count)
}

// Matching: a publisher's and a querier's matching status follows subscribers and queryables
// appearing and disappearing (gracefully or killed). For the router this is the Future part
// of the interests Rust publishers and queriers send (zenoh-wire.md §12.4, §12.9): Declare
// when a matching entity appears, Undeclare when the last one goes.
func Matching(t *testing.T, ep string) {
	isMatching := func(want bool) func(Event) bool {
		return func(e Event) bool {
			var m struct{ Matching bool }
			return e.Ev == "matching" && e.Decode(&m) == nil && m.Matching == want
		}
	}
	pub := StartReady(t, "matching", "interop/match/data", "--connect", ep)
	qr := StartReady(t, "matching", "interop/match/q", "--querier", "--connect", ep)

	sub := StartReady(t, "sub", "interop/match/**", "--connect", ep)
	pub.WaitFor("matching true", 10*time.Second, isMatching(true))
	sub.Stop() // graceful: the session closes
	pub.WaitFor("matching false after the subscriber's session closed", 10*time.Second, isMatching(false))

	sub2 := StartReady(t, "sub", "interop/match/data", "--connect", ep)
	pub.WaitFor("matching true again", 10*time.Second, isMatching(true))
	sub2.Send("undeclare")
	sub2.WaitEvent("undeclared", 10*time.Second)
	pub.WaitFor("matching false after UndeclareSubscriber", 10*time.Second, isMatching(false))

	sub3 := StartReady(t, "sub", "interop/match/data", "--connect", ep)
	pub.WaitFor("matching true a third time", 10*time.Second, isMatching(true))
	sub3.Kill()
	pub.WaitFor("matching false after the subscriber was killed", 10*time.Second, isMatching(false))

	qbl := StartReady(t, "queryable", "interop/match/q", "--connect", ep)
	qr.WaitFor("querier matching true", 10*time.Second, isMatching(true))
	qbl.Kill()
	qr.WaitFor("querier matching false", 10*time.Second, isMatching(false))
}

// QoSPreserved: priority, express and attachment set by the publisher reach the subscriber
// through the router (they travel in the PUSH's QoS extension and the PUT's attachment).
func QoSPreserved(t *testing.T, ep string) {
	sub := StartReady(t, "sub", "interop/qos/*", "--connect", ep, "--count", "2")
	for _, a := range [][]string{
		{"pub", "interop/qos/rt", "--priority", "real_time", "--express", "--attachment", "rt"},
		{"pub", "interop/qos/bg", "--priority", "background", "--congestion", "drop", "--attachment", "bg"},
	} {
		p := Start(t, append(a, "--connect", ep, "--wait-matching")...)
		p.WaitEvent("sent", 10*time.Second)
		require.Zero(t, p.Wait(10*time.Second))
	}
	type sampleQoS struct {
		Key      string
		Express  bool
		Priority string
	}
	got := map[string]sampleQoS{}
	for range 2 {
		var s sampleQoS
		e := sub.WaitEvent("sample", 10*time.Second)
		require.NoError(t, e.Decode(&s))
		require.Equal(t, s.Key[len("interop/qos/"):], *e.Attachment)
		got[s.Key] = s
	}
	require.Equal(t, sampleQoS{"interop/qos/rt", true, "real_time"}, got["interop/qos/rt"])
	require.Equal(t, sampleQoS{"interop/qos/bg", false, "background"}, got["interop/qos/bg"])
}
