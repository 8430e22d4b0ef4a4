package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath"
)

// TestPicoReconnectDetect: synthetic time. zenoh-pico's default build (lease 10 s, keep-alive
// every 10/3 s) notices a lost session at its second keep-alive after the loss.
func TestPicoReconnectDetect(t *testing.T) {
	m := DefaultPicoReconnect
	p := m.KeepAlivePeriod()
	require.Equal(t, 3333333333*time.Nanosecond, p)
	// Phase 0.5: ticks at 1.667 s, 5 s, 8.333 s, …
	require.Equal(t, 5*time.Second, m.Detect(time.Second, 0.5).Round(time.Millisecond))
	require.Equal(t, 8333*time.Millisecond, m.Detect(2*time.Second, 0.5).Round(time.Millisecond))
	// A loss at the tick itself: that keep-alive is the first one sent into the reset.
	require.Equal(t, p+p/2, m.Detect(p/2, 0.5).Round(time.Nanosecond))
	// Over the fleet's phases the delay after a loss is in [P, 2P): the storm's only jitter.
	lost := 7 * time.Second
	lo, hi := time.Hour, time.Duration(0)
	for i := range 1000 {
		d := m.Detect(lost, float64(i)/1000) - lost
		lo, hi = min(lo, d), max(hi, d)
	}
	require.GreaterOrEqual(t, lo, p)
	require.Less(t, hi, 2*p)
	require.Less(t, lo, p+10*time.Millisecond, "phases spread over the whole period")
	require.Greater(t, hi, 2*p-10*time.Millisecond)
}

func TestPicoReconnectRetry(t *testing.T) {
	m := DefaultPicoReconnect
	require.Equal(t, time.Second, m.RetryAfter(rand.New(rand.NewPCG(1, 2))), "zenoh-pico: 1 s between reopens, no jitter")
	require.Equal(t, time.Second, m.RetryAfter(nil))
	m.Jitter = 200 * time.Millisecond
	r1, r2 := rand.New(rand.NewPCG(7, 29)), rand.New(rand.NewPCG(7, 29))
	for range 100 {
		d := m.RetryAfter(r1)
		require.GreaterOrEqual(t, d, time.Second)
		require.Less(t, d, 1200*time.Millisecond)
		require.Equal(t, d, m.RetryAfter(r2), "seeded: reproducible")
	}
}

func TestFitSlope(t *testing.T) {
	s := FitSlope([]float64{0, 1, 2, 3}, []float64{3, 5, 7, 9})
	require.InDelta(t, 2, s.PerX, 1e-12)
	require.InDelta(t, 3, s.Intercept, 1e-12)
	require.InDelta(t, 0, s.StdErr, 1e-12)
	// By hand: x̄ 1.5, ȳ 2.75, Sxx 5, Sxy 5.5: b 1.1, a 1.1, SSR 2.7, s.e. √(2.7/2/5).
	s = FitSlope([]float64{0, 1, 2, 3}, []float64{1, 3, 2, 5})
	require.InDelta(t, 1.1, s.PerX, 1e-12)
	require.InDelta(t, 1.1, s.Intercept, 1e-12)
	require.InDelta(t, math.Sqrt(0.27), s.StdErr, 1e-12)
	require.Equal(t, 4, s.N)
	// Degenerate: one point, all x equal, two points (no s.e.).
	require.Zero(t, FitSlope([]float64{1}, []float64{2}).PerX)
	require.Zero(t, FitSlope([]float64{1, 1, 1}, []float64{2, 3, 4}).PerX)
	two := FitSlope([]float64{0, 2}, []float64{0, 1})
	require.InDelta(t, 0.5, two.PerX, 1e-12)
	require.True(t, math.IsNaN(two.StdErr))
	// Flat but noisy: the slope is within 2 s.e. of 0.
	x, y := make([]float64, 100), make([]float64, 100)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range x {
		x[i], y[i] = float64(i)/100, 50+r.NormFloat64()
	}
	f := FitSlope(x, y)
	require.Less(t, math.Abs(f.PerX), 2*f.StdErr+1e-9)
	require.Equal(t, 2*time.Minute, Warmup(30*time.Minute))
	require.Equal(t, 6*time.Second, Warmup(30*time.Second))
}

// TestLosses: the per-session record of sequence numbers, counted in two windows.
func TestLosses(t *testing.T) {
	g := &loadgen{n: 3}
	g.init(128, 1, 0)
	mark := func(i int, seqs ...uint32) {
		for _, q := range seqs {
			g.seen[i][q/64].Or(1 << (q % 64))
		}
	}
	for q := uint32(0); q < 100; q++ {
		mark(0, q) // session 0: everything
		if q < 10 || q >= 20 {
			mark(1, q) // session 1: misses 10…19 (in the window)
		}
		if q != 70 {
			mark(2, q) // session 2: misses 70 (after)
		}
	}
	l := g.losses("5 50 100")
	require.Equal(t, 45*3, l["sent_ab"])
	require.Equal(t, 50*3, l["sent_bc"])
	require.Equal(t, 10, l["missed_ab"])
	require.Equal(t, 1, l["missed_bc"])
	require.Equal(t, 10, l["max_session_ab"])
	require.Equal(t, 1, l["sessions_missed_ab"])
	require.Equal(t, 1, l["sessions_missed_bc"])
	// Only the first 2 sessions; C beyond the record is clipped to it (128).
	l = g.losses("0 0 200 2")
	require.Equal(t, 128*2, l["sent_bc"])
	require.Equal(t, 10+28+28, l["missed_bc"])
}

// inProcessRouter listens on addr ("" = a free port) and returns the router and its address.
func inProcessRouter(t *testing.T, addr string) (*zenohpath.Router, string) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	var err error
	for range 50 { // the previous router's port may take a moment to be free
		lst, e := r.Listen(context.Background(), "tcp/"+addr)
		if err = e; e == nil {
			return r, lst.Addr().String()
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, err)
	return nil, ""
}

// startTestLoadgen connects n sessions with a 3 s lease (keep-alive every 0.75 s; a loss
// noticed within 2 s): room for -race on a loaded host, where a 1 s lease expired some.
func startTestLoadgen(t *testing.T, addr string, n int, reconnect bool) (*loadgen, *syncBuf) {
	return startTestLoadgenWith(t, addr, n, reconnect, 3*time.Second, 1024)
}

// startTestLoadgenWith is startTestLoadgen with the sessions' lease and recording the
// sequence numbers below maxSeq.
func startTestLoadgenWith(t *testing.T, addr string, n int, reconnect bool, lease time.Duration, maxSeq uint32) (*loadgen, *syncBuf) {
	out := &syncBuf{}
	g := &loadgen{addr: addr, n: n, sources: 2, key: fanKey, batch: 2048, lease: lease, out: json.NewEncoder(out),
		reconnect: reconnect, token: true}
	g.init(maxSeq, 1, 0)
	stopKA := make(chan struct{})
	kaDone := make(chan struct{})
	go func() { defer close(kaDone); g.keepAlive(stopKA) }()
	t.Cleanup(func() { close(stopKA); <-kaDone })
	g.connect()
	ev := out.events(t)
	require.EqualValues(t, n, ev[0]["ok"], ev[0])
	return g, out
}

// requireDeclared waits until r has exactly n device faces, each with one subscriber and
// one liveliness token.
func requireDeclared(t *testing.T, r *zenohpath.Router, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		fs := r.Faces()
		if len(fs) != n {
			return false
		}
		for _, f := range fs {
			if f.Subscribers != 1 || f.Tokens != 1 {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "%d faces with 1 subscriber and 1 token each", n)
}

// TestSmallStormInProcess: 50 pico-like sessions (lease 3 s, zenoh-pico's reopen) on an
// in-process router that is closed and replaced by a new one on the same port: every
// session notices, reopens once and declares again; the new router holds exactly 50
// faces with one subscriber and one token each, and a sample reaches each exactly once.
func TestSmallStormInProcess(t *testing.T) {
	r1, addr := inProcessRouter(t, "")
	g, _ := startTestLoadgen(t, addr, 50, true)
	defer g.leave()
	requireDeclared(t, r1, 50)
	r1.Close()
	time.Sleep(200 * time.Millisecond) // down: some first attempts are refused
	r2, _ := inProcessRouter(t, addr)
	defer r2.Close()
	require.Eventually(t, func() bool { return g.up() == 50 }, 10*time.Second, 10*time.Millisecond)
	requireDeclared(t, r2, 50)
	require.EqualValues(t, 50, g.reconnects.Load(), "each session reopened once")
	require.EqualValues(t, 50, g.lost.Load())

	pub, err := dialRaw(nil, addr, 2048, 10*time.Second, 5*time.Second)
	require.NoError(t, err)
	defer pub.close()
	g.deliv.Store(0)
	payload := make([]byte, 64)
	for i := range 3 {
		encodeFan(payload, uint32(i), time.Now())
		require.NoError(t, pub.put(fanKey, payload, time.Now().Add(time.Second)))
	}
	for deadline := time.Now().Add(15 * time.Second); g.deliv.Load() < 150 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	require.EqualValues(t, 50, g.lost.Load(), "no session lost but by the fault")
	require.EqualValues(t, 150, g.deliv.Load(), "3 samples × 50 sessions, once each")
	l := g.losses("0 3 3")
	require.Zero(t, l["missed_ab"])
	require.EqualValues(t, 0, l["duplicates"])
}

// TestChurnInProcess: 30 sessions, 20 joins/s and 20 leaves/s for 1 s, the first 5 kept:
// 19 joins and 19 leaves (ticks at 50 … 950 ms; 25 can leave even if no join is through yet), 30 open after, the router holds exactly
// their faces, subscribers and tokens (every leave's declarations undone), and the kept
// sessions are never closed.
func TestChurnInProcess(t *testing.T) {
	r, addr := inProcessRouter(t, "")
	defer r.Close()
	g, _ := startTestLoadgen(t, addr, 30, false)
	defer g.leave()
	requireDeclared(t, r, 30)
	g.mu.Lock()
	kept := append([]*rawSession(nil), g.sessions[:5]...)
	g.mu.Unlock()
	res := g.runChurn("20 20 1 5")
	require.EqualValues(t, 19, res["joins"], res)
	require.EqualValues(t, 0, res["join_failed"], res)
	require.EqualValues(t, 19, res["leaves"], res)
	require.Equal(t, 30, res["live"], res)
	requireDeclared(t, r, 30)
	g.mu.Lock()
	for i, s := range kept {
		require.Same(t, s, g.sessions[i], "kept session %d", i)
	}
	g.mu.Unlock()
	require.Zero(t, g.lost.Load(), "no session closed by the router")
}

// TestReadCountsDuplicates: a session that receives sample 5 twice and 6 once records both,
// counts 3 deliveries and 1 duplicate.
func TestReadCountsDuplicates(t *testing.T) {
	g := &loadgen{n: 1}
	g.init(64, 1, 0)
	var stream []byte
	for _, seq := range []uint32{5, 6, 5} {
		p := make([]byte, 32)
		encodeFan(p, seq, time.Now())
		stream = append(stream, byte(len(p)), 0)
		stream = append(stream, p...)
	}
	a, b := net.Pipe()
	defer b.Close()
	s := &rawSession{c: a, br: bufio.NewReader(bytes.NewReader(stream))}
	g.wg.Add(1)
	g.read(0, s) // returns at the end of the stream
	require.EqualValues(t, 3, g.deliv.Load())
	require.EqualValues(t, 1, g.dups.Load())
	l := g.losses("5 7 7")
	require.Equal(t, 0, l["missed_ab"])
	require.EqualValues(t, 1, l["duplicates"])
}

// TestCutProxy: bytes pass both ways; a cut ends the forwarded connection and refuses new
// dials; a heal accepts again on the same address. A blackhole refuses new dials too but
// keeps the forwarded connection open and drops its bytes;
// after a heal the same connection passes bytes again.
func TestCutProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() { // echo server
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	p, err := newCutProxy(ln.Addr().String())
	require.NoError(t, err)
	defer p.close()
	echo := func() (net.Conn, error) {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			return nil, err
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return c, err
		}
		b := make([]byte, 4)
		_, err = io.ReadFull(c, b)
		if err == nil && string(b) != "ping" {
			err = io.ErrUnexpectedEOF
		}
		return c, err
	}
	c, err := echo()
	require.NoError(t, err)
	p.cut()
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err, "the forwarded connection ends at the cut")
	_ = c.Close()
	_, err = net.Dial("tcp", p.addr)
	require.Error(t, err, "refused while cut")
	require.NoError(t, p.heal())
	c, err = echo()
	require.NoError(t, err)

	p.blackhole()
	_, err = net.Dial("tcp", p.addr)
	require.Error(t, err, "refused while blackholed")
	_, err = c.Write([]byte("lost"))
	require.NoError(t, err)
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	n, err := c.Read(make([]byte, 4))
	require.Zero(t, n)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "no byte, no close: the read times out")
	require.True(t, ne.Timeout(), err)
	require.NoError(t, p.heal())
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Write([]byte("pong"))
	require.NoError(t, err)
	b := make([]byte, 4)
	_, err = io.ReadFull(c, b)
	require.NoError(t, err)
	require.Equal(t, "pong", string(b), "the same connection forwards again; what was sent into the hole is gone")
	_ = c.Close()
	c, err = echo()
	require.NoError(t, err)
	_ = c.Close()
}
