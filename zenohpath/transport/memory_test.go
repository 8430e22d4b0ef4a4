package transport

import (
	"context"
	"fmt"
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

// memSample is the memory the process holds, in bytes, after two GCs
// (the second one empties the sync.Pool victim caches).
type memSample struct {
	inuse uint64 // HeapInuse + StackInuse: spans holding objects, and goroutine stacks
	live  uint64 // HeapAlloc: live heap objects
}

func memNow() memSample {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{inuse: ms.HeapInuse + ms.StackInuse, live: ms.HeapAlloc}
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
	idle     float64 // HeapInuse+StackInuse delta with n idle sessions, per session
	idleLive float64 // HeapAlloc delta with n idle sessions, per session
	after    float64 // HeapAlloc delta after all of them closed, per session (dead goroutines' g structs stay, for reuse)
	again    float64 // HeapAlloc growth over a second open/close round, per session (0 when everything is returned)
	routines float64 // goroutines per session while idle
}

func (r memReport) String() string {
	return fmt.Sprintf("%d idle: %.0f B/session in use (heap spans + stacks), %.0f B/session live heap, %.2f goroutines/session; "+
		"after close: %.0f B/session live heap, a second round: %+.0f B/session", r.n, r.idle, r.idleLive, r.routines, r.after, r.again)
}

// measureIdle opens n sessions with open (which returns a function that
// closes that session and waits until it ended; the last one also waits
// until the peer side of all of them ended), lets them go idle and measures
// the memory they hold, then closes them and measures again; then does the
// same once more and measures how much more stays behind. The figures are
// deltas against a baseline taken before the first open.
func measureIdle(t testing.TB, n int, open func(i int) (closeOne func())) memReport {
	t.Helper()
	g0 := runtime.NumGoroutine()
	base := memNow()
	var idle, after, again memSample
	var g1 int
	for round := range 2 {
		closers := make([]func(), 0, n)
		for i := 0; i < n; i++ {
			closers = append(closers, open(i))
		}
		time.Sleep(200 * time.Millisecond) // handshake goroutines exit, sessions idle
		if round == 0 {
			idle = memNow()
			g1 = runtime.NumGoroutine()
		}
		for _, c := range closers {
			c()
		}
		clear(closers)
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if round == 0 {
			after = memNow()
		} else {
			again = memNow()
		}
	}
	per := func(x, from uint64) float64 { return (float64(x) - float64(from)) / float64(n) }
	return memReport{n: n, idle: per(idle.inuse, base.inuse), idleLive: per(idle.live, base.live),
		after: per(after.live, base.live), again: per(again.live, after.live), routines: float64(g1-g0) / float64(n)}
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

// requireReturned asserts that closing returned the sessions' memory: what
// stays after the first round is bounded by the dead goroutines' g structs
// (the runtime keeps them for reuse, about 400 B each) and span slack, and
// a second round leaves nothing more behind.
func requireReturned(t testing.TB, r memReport) {
	t.Helper()
	if raceEnabled {
		t.Log("SKIP memory assertions: -race changes allocation sizes and sync.Pool behaviour")
		return
	}
	require.Less(t, r.after, 800*r.routines, "memory not returned after the sessions closed")
	require.Less(t, r.again, 128.0, "a second round of sessions left more memory behind")
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
	var last net.Conn
	r := measureIdle(t, n, func(i int) func() {
		c := rawIdleClient(t, ln, time.Hour)
		if i == n-1 {
			last = c
			wait(n + 1)
		}
		return func() {
			_ = c.Close()
			if c == last {
				last = nil
				wait(1)
			}
		}
	})
	_ = warm.Close()
	t.Logf("accepted session, %v", r)
	requireReturned(t, r)
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
				last = nil
				wait(1)
			}
		}
	})
	_ = warm.Close(ReasonShutdown)
	<-warm.Done()
	t.Logf("session pair (dialled + accepted; per pair), %v", r)
	requireReturned(t, r)
}

// rxBudget is the receive side's share of the 16 KB idle-session budget
// (issue 11), in bytes: the read goroutine (its stack, about 4 KB once it
// has decoded, and its g), the link, the socket and its addresses, the
// Session struct and channels (shared with TX, counted here), and the
// test's own client conn (about 300 B). docs/transport.md, "Memory per
// session: RX", itemises it.
//
// Since the TX pipeline starts no writer and holds no batch buffer while
// idle, the test starts the session's TX side too (s.start): what it holds
// idle (a keep-alive timer, the queue heads) is counted here, so the bound
// is the whole idle session's 16 KB of issue 11 item 1 (measured 9.4–9.7 KB
// after the TX/RX merge; 6.4 KB for the RX part alone before it).
const rxBudget = 16 << 10

// TestMemoryRXIdle opens n accepted-side sessions whose TX side is not
// running (no write goroutine, no TX queue: what the TX pipeline allocates
// is not counted here), has each peer send a FRAME and a fragmented message
// through the real read loop, lets them go idle and asserts that each holds
// at most rxBudget bytes (heap spans + stacks), and nothing after close.
func TestMemoryRXIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: opens hundreds of sessions")
	}
	n := memSessions()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer tl.Close()
	cfg := testConfig().withDefaults()
	var delivered atomic.Int64
	h := HandlerFuncs{Network: func(*Session, wire.NetworkMessage) { delivered.Add(1) }}
	big := push("rx/big", make([]byte, 3000)).Append(nil)
	open := func() (net.Conn, *Session) {
		c, err := net.Dial("tcp", tl.Addr().String())
		require.NoError(t, err)
		sc, err := tl.Accept()
		require.NoError(t, err)
		p := params{peerZID: memZID(), resolution: wire.DefaultResolution, batchSize: 2048, patch: 1, peerLease: time.Hour}
		s := newSession(&cfg, newStreamLink(sc), p, h)
		s.start() // the TX side starts no writer until something is queued
		go s.readLoop()
		var stream []byte
		stream = wire.AppendStreamBatch(stream, frameBatch(true, 0, push("rx/a", []byte("hello")), push("rx/b", []byte("world"))))
		stream = wire.AppendStreamBatch(stream, wire.Fragment{Reliable: true, SN: 1, More: true, First: true, Payload: big[:1500]}.Append(nil))
		stream = wire.AppendStreamBatch(stream, wire.Fragment{Reliable: true, SN: 2, Payload: big[1500:]}.Append(nil))
		_, err = c.Write(stream)
		require.NoError(t, err)
		return c, s
	}
	warmC, warmS := open()
	var last *Session
	opened := 1
	r := measureIdle(t, n, func(i int) func() {
		c, s := open()
		opened++
		if i == n-1 {
			last = s
			deadline := time.Now().Add(20 * time.Second)
			for delivered.Load() < int64(3*opened) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			require.EqualValues(t, 3*opened, delivered.Load(), "every session delivered its 3 messages")
		}
		return func() {
			_ = c.Close()
			if s == last {
				last = nil
			}
			<-s.Done()
			require.Zero(t, s.reasm[0].Held()+s.reasm[1].Held())
			require.Zero(t, s.l.(*tcpLink).sr.held())
		}
	})
	_ = warmC.Close()
	<-warmS.Done()
	t.Logf("RX side of an accepted session (budget %d B), %v", rxBudget, r)
	requireReturned(t, r)
	if !raceEnabled {
		require.Less(t, r.idle, float64(rxBudget), "idle RX cost per session over budget")
	}
}
