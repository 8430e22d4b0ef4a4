package interop_test

// These tests prove the harness against the real Rust Zenoh today: every endpoint, the router
// included, is eclipse-zenoh through testdata/zpeer.py. They are also the template the Go
// router must pass: swap startRouter for the Go router (docs/interop.md) and the assertions
// stay the same.

import (
	"fmt"
	"os"
	"runtime"
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
	interop.FindPython(t) // skip (or fail in CI) once, up front
}

// startRouter runs the real Rust Zenoh router on a free loopback port and returns the
// endpoint clients connect to.
func startRouter(t *testing.T) string { return interop.StartPythonRouter(t) }

// TestRouterSuiteRust runs the router conformance suite against the real Rust Zenoh router:
// (a) pub/sub of 10 000 reliable samples exactly once and in order, batched and express,
// plus fragmented samples; put/delete with attachments; (b) get/queryable; (c) liveliness
// tokens, subscribers with history and liveliness get. The Go router must pass the same
// suite (docs/interop.md).
func TestRouterSuiteRust(t *testing.T) {
	skipShort(t)
	interop.RunRouterSuite(t, startRouter)
}

// (d) A client connected straight to a peer, no router: pub/sub and get.
func TestClientToPeerDirect(t *testing.T) {
	skipShort(t)
	t.Parallel()
	peerEP := interop.FreeEndpoint(t)
	sub := interop.StartReady(t, "sub", "interop/direct/data", "--mode", "peer", "--listen", peerEP,
		"--count", "1000", "--quiet", "--timeout", interop.Seconds(30*time.Second))
	pub := interop.Start(t, "pub", "interop/direct/data", "--connect", peerEP, "--count", "1000",
		"--wait-matching")
	pub.WaitEvent("sent", 20*time.Second)
	var s interop.SubSummary
	require.NoError(t, sub.WaitEvent("done", 20*time.Second).Decode(&s))
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
