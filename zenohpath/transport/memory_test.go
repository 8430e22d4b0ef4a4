package transport

import (
	"context"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// memNow returns HeapInuse+StackInuse after two GCs (the second one empties
// the sync.Pool victim caches), in bytes.
func memNow() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// memSessions is the number of sessions the memory tests open
// (PICOBRIDGE_MEM_SESSIONS overrides the default 300).
func memSessions() int {
	if v, err := strconv.Atoi(os.Getenv("PICOBRIDGE_MEM_SESSIONS")); err == nil && v > 0 {
		return v
	}
	return 300
}

// memReport is what measureIdle found, in bytes per session.
type memReport struct {
	n        int
	idle     float64 // (HeapInuse+StackInuse) delta with n idle sessions, per session
	after    float64 // delta after all of them closed, per session
	routines float64 // goroutines per session while idle
}

// measureIdle opens n sessions with open (which returns a function that
// closes them all and waits until they ended), lets them go idle and
// measures the memory they hold, then closes them and measures again. Both
// figures are deltas against a baseline taken before the first open.
func measureIdle(t testing.TB, n int, open func(i int) (closeAll func())) memReport {
	t.Helper()
	g0 := runtime.NumGoroutine()
	base := memNow()
	closers := make([]func(), 0, n)
	for i := 0; i < n; i++ {
		closers = append(closers, open(i))
	}
	time.Sleep(200 * time.Millisecond) // handshake goroutines exit, sessions idle
	idle := memNow()
	g1 := runtime.NumGoroutine()
	for _, c := range closers {
		c()
	}
	closers = nil
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	after := memNow()
	per := func(x uint64) float64 { return (float64(x) - float64(base)) / float64(n) }
	return memReport{n: n, idle: per(idle), after: per(after), routines: float64(g1-g0) / float64(n)}
}

// rawIdleClient opens one session on ln with a hand-made handshake (no
// Session on the client side: only a net.Conn stays), announcing lease so
// that the accepted session does not expire during the test. It returns the
// conn.
func rawIdleClient(t testing.TB, ln *Listener, lease time.Duration) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	sr := newStreamReader(c)
	write := func(m wire.TransportMessage) {
		_, err := c.Write(wire.AppendStreamBatch(nil, wire.AppendBatch(nil, m)))
		require.NoError(t, err)
	}
	read := func() wire.TransportMessage {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := sr.next()
		require.NoError(t, err)
		m, _, err := wire.ParseTransport(b)
		require.NoError(t, err)
		return m
	}
	write(&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: memZID(),
		HasSize: true, Resolution: wire.DefaultResolution, BatchSize: 65535, Patch: 1})
	ack, ok := read().(*wire.InitAck)
	require.True(t, ok)
	write(&wire.OpenSyn{Lease: lease, InitialSN: 1, Cookie: append([]byte(nil), ack.Cookie...)})
	_, ok = read().(*wire.OpenAck)
	require.True(t, ok)
	sr.release()
	_ = c.SetReadDeadline(time.Time{})
	return c
}

var memZIDs atomic.Uint32

// memZID returns a ZID unique in this process (testZID wraps after 255).
func memZID() wire.ZID {
	n := memZIDs.Add(1)
	return wire.MustZID([]byte{0xb0, byte(n >> 16), byte(n >> 8), byte(n), 5, 6, 7, 8})
}

// memListener starts a Listener whose sessions do nothing and returns it
// with a function that waits until it holds n sessions.
func memListener(t testing.TB) (*Listener, func(n int)) {
	t.Helper()
	ln, err := Listen(context.Background(), "tcp/127.0.0.1:0", testConfig(), func(*Session) Handler { return nopHandler{} })
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	wait := func(n int) {
		deadline := time.Now().Add(20 * time.Second)
		for len(ln.Sessions()) != n {
			if time.Now().After(deadline) {
				t.Fatalf("listener holds %d sessions, want %d", len(ln.Sessions()), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return ln, wait
}

// TestMemoryPerAcceptedSession measures what one idle accepted (router
// side) session costs: the peers are raw connections, so the figure is the
// Listener side alone (plus one client net.Conn, a few hundred bytes). It
// logs the figure and asserts that closing returns the memory.
func TestMemoryPerAcceptedSession(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: opens hundreds of sessions")
	}
	n := memSessions()
	ln, wait := memListener(t)
	// Warm up: pools, metrics, the accept goroutine's stack.
	warm := rawIdleClient(t, ln, time.Hour)
	wait(1)
	conns := make([]net.Conn, 0, n)
	r := measureIdle(t, n, func(i int) func() {
		c := rawIdleClient(t, ln, time.Hour)
		conns = append(conns, c)
		if i == n-1 {
			wait(n + 1)
		}
		return func() {
			_ = c.Close()
			if c == conns[len(conns)-1] {
				wait(1)
			}
		}
	})
	_ = warm.Close()
	t.Logf("accepted session, %d idle: %.0f B/session (heap+stack), %.2f goroutines/session; after close: %.0f B/session",
		r.n, r.idle, r.routines, r.after)
	require.Less(t, r.after, 1024.0, "memory not returned after the sessions closed")
}

// TestMemoryPerSessionPair measures dialled + accepted session pairs (both
// in this process) and logs the figure per pair.
func TestMemoryPerSessionPair(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: opens hundreds of sessions")
	}
	n := memSessions()
	ln, wait := memListener(t)
	dial := func() *Session {
		dc := testConfig()
		dc.ZID = memZID()
		dc.WhatAmI = wire.WhatAmIClient
		s, err := Dial(context.Background(), ln.Endpoint(), dc, nopHandler{})
		require.NoError(t, err)
		return s
	}
	warm := dial()
	wait(1)
	var last *Session
	r := measureIdle(t, n, func(i int) func() {
		s := dial()
		if i == n-1 {
			last = s
			wait(n + 1)
		}
		return func() {
			_ = s.Close(ReasonShutdown)
			<-s.Done()
			if s == last {
				wait(1)
			}
		}
	})
	_ = warm.Close(ReasonShutdown)
	<-warm.Done()
	t.Logf("session pair (dialled + accepted), %d idle: %.0f B/pair (heap+stack), %.2f goroutines/pair; after close: %.0f B/pair",
		r.n, r.idle, r.routines, r.after)
	require.Less(t, r.after, 2048.0, "memory not returned after the sessions closed")
}
