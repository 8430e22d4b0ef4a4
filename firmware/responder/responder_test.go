package responder_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath"
)

// What each client session of TestResponderThroughGoRouter sends.
const (
	seqPings   = 200                  // one at a time, each waiting for its pong
	seqSpacing = 5 * time.Millisecond // between a pong and the next ping
	burstPings = 100                  // back to back, then all pongs collected
	burstGap   = time.Millisecond
	warmupSeq  = 0xF0000000 // seq of warm-up pings (and up)
)

// pongRx is one pong as the Go client received it.
type pongRx struct {
	s  zenohpath.Sample
	at time.Time
}

// pingTx is one ping the Go client sent.
type pingTx struct {
	raw []byte
	at  time.Time
}

// client is a Go session pinging one device through the router.
type client struct {
	t      *testing.T
	name   string
	pub    *zenohpath.Publisher
	pongs  chan pongRx
	t0     time.Time
	sent   int // valid pings sent (warm-up included)
	warmup int
}

func newClient(t *testing.T, sess *zenohpath.Session, name string) *client {
	t.Helper()
	c := &client{t: t, name: name, pongs: make(chan pongRx, 4096), t0: time.Now()}
	// Like the gateway: one subscription for every device's pongs.
	_, err := sess.DeclareSubscriber(probe.PongSubscription, func(s zenohpath.Sample) {
		c.pongs <- pongRx{s, time.Now()}
	})
	require.NoError(t, err)
	c.pub, err = sess.DeclarePublisher(probe.PingKey(name), zenohpath.PublisherOptions{
		Express: true, Priority: zenohpath.PriorityRealTime,
		CongestionControl: zenohpath.CongestionControlDrop, Reliability: zenohpath.ReliabilityBestEffort,
	})
	require.NoError(t, err)
	require.Eventually(t, c.pub.HasMatchingSubscribers, interop.Scale(5*time.Second), 5*time.Millisecond,
		"the responder's subscription to %s never reached the client", probe.PingKey(name))
	return c
}

func (c *client) ping(seq uint32, flags uint16) pingTx {
	c.t.Helper()
	at := time.Now()
	raw := probe.Message{Kind: probe.Ping, Flags: flags, Seq: seq, GwSend: uint64(at.Sub(c.t0))}.Append(nil)
	require.NoError(c.t, c.pub.Put(raw, nil))
	c.sent++
	return pingTx{raw, at}
}

func (c *client) next(timeout time.Duration) (pongRx, bool) {
	select {
	case p := <-c.pongs:
		return p, true
	case <-time.After(interop.Scale(timeout)):
		return pongRx{}, false
	}
}

// warmUp pings until a pong comes back: pico's publisher sends nothing
// until the router told it a subscriber matches (its write filter), so the
// first pongs after a subscription appears may be dropped on the device.
// Late warm-up pongs are drained.
func (c *client) warmUp() {
	c.t.Helper()
	deadline := time.Now().Add(interop.Scale(10 * time.Second))
	for seq := uint32(warmupSeq); ; seq++ {
		require.True(c.t, time.Now().Before(deadline), "no pong to any warm-up ping within 10 s")
		c.ping(seq, 0)
		c.warmup++
		if _, ok := c.next(100 * time.Millisecond); ok {
			break
		}
	}
	for {
		if _, ok := c.next(200 * time.Millisecond); !ok {
			return
		}
	}
}

// check asserts that got is the pong of sent, byte for byte what
// probe.Respond makes of the ping with the device's two timestamps, with
// the pong QoS of docs/probe.md, and returns its RTT (device time removed)
// and the decoded pong.
func (c *client) check(sent pingTx, got pongRx) (time.Duration, probe.Message) {
	c.t.Helper()
	require.Equal(c.t, probe.PongKey(c.name), got.s.KeyExpr())
	raw := got.s.Payload()
	p, err := probe.Decode(raw)
	require.NoError(c.t, err)
	ping, _ := probe.Decode(sent.raw)
	require.Equal(c.t, probe.Pong, p.Kind)
	require.Equal(c.t, ping.Seq, p.Seq, "pongs out of order or lost")
	require.Equal(c.t, ping.GwSend, p.GwSend, "gw_send not echoed")
	require.Equal(c.t, ping.Flags, p.Flags, "flags not copied")
	want, err := probe.Respond(sent.raw, p.DevRecv, p.DevSend)
	require.NoError(c.t, err)
	require.Equal(c.t, want, raw, "pong differs from probe.Respond with the same device times")

	// Device timestamps: nanoseconds of a monotonic clock.
	require.NotZero(c.t, p.DevRecv)
	require.GreaterOrEqual(c.t, p.DevSend, p.DevRecv, "dev_send before dev_recv")
	round := got.at.Sub(sent.at)
	proc := time.Duration(p.DevSend - p.DevRecv)
	require.Less(c.t, proc, round, "device processing %v longer than the round trip %v", proc, round)

	require.True(c.t, got.s.Express(), "pong not express")
	require.Equal(c.t, zenohpath.PriorityRealTime, got.s.Priority())
	require.Equal(c.t, zenohpath.CongestionControlDrop, got.s.CongestionControl())
	return round - proc, p
}

// phaseStats is what one client measured.
type phaseStats struct {
	rtts    []time.Duration // sequential phase
	burst   time.Duration   // time from the first burst ping to the last burst pong
	devSpan time.Duration   // device clock across the sequential phase
	gwSpan  time.Duration   // gateway clock across the same pings
	drift   time.Duration   // device − gateway clock over the phase (least-delay offsets)
}

// exercise runs the sequential phase, the burst phase and the invalid
// payloads through one client session.
func (c *client) exercise() phaseStats {
	c.t.Helper()
	var st phaseStats
	c.warmUp()

	// Sequential: ping, wait for its pong, pause, next.
	var offs []int64 // dev_recv − gateway send time, ns: a constant plus the one-way delay
	prevRecv := uint64(0)
	for i := 1; i <= seqPings; i++ {
		sent := c.ping(uint32(i), uint16(i*7))
		got, ok := c.next(time.Second)
		require.True(c.t, ok, "no pong for seq %d (loss)", i)
		rtt, p := c.check(sent, got)
		require.GreaterOrEqual(c.t, p.DevRecv, prevRecv, "device clock went back")
		prevRecv = p.DevRecv
		st.rtts = append(st.rtts, rtt)
		offs = append(offs, int64(p.DevRecv)-int64(sent.at.Sub(c.t0)))
		if i == 1 {
			st.devSpan, st.gwSpan = -time.Duration(p.DevRecv), -sent.at.Sub(c.t0)
		}
		if i == seqPings {
			st.devSpan += time.Duration(p.DevRecv)
			st.gwSpan += sent.at.Sub(c.t0)
		}
		time.Sleep(seqSpacing)
	}
	// The device clock runs at the gateway's rate (ns, not µs or ticks):
	// the smallest offset (least one-way delay) of the first quarter and of
	// the last quarter of the pings agree, whatever the scheduling spikes.
	q := len(offs) / 4
	st.drift = time.Duration(slices.Min(offs[len(offs)-q:]) - slices.Min(offs[:q]))
	tol := interop.Scale(10*time.Millisecond) + st.gwSpan/100
	require.Less(c.t, st.drift.Abs(), tol, "device clock drifts %v against the gateway's over %v (device span %v)",
		st.drift, st.gwSpan, st.devSpan)

	// Burst: all pings first, then every pong, in order, none lost.
	sent := make([]pingTx, 0, burstPings)
	for i := 0; i < burstPings; i++ {
		sent = append(sent, c.ping(uint32(1000+i), 0xBEEF))
		time.Sleep(burstGap)
	}
	var end time.Time
	for i := range sent {
		got, ok := c.next(2 * time.Second)
		require.True(c.t, ok, "burst: %d of %d pongs, then nothing", i, burstPings)
		c.check(sent[i], got)
		end = got.at
	}
	st.burst = end.Sub(sent[0].at)

	// Invalid payloads get no pong: the next pong is the valid ping's.
	valid := probe.Message{Kind: probe.Ping, Seq: 5000}.Append(nil)
	pong := probe.Message{Kind: probe.Pong, Seq: 4999}.Append(nil)
	badVersion := slices.Clone(valid)
	badVersion[0] = 2
	for _, b := range [][]byte{pong, valid[:31], badVersion} {
		require.NoError(c.t, c.pub.Put(b, nil))
	}
	s := c.ping(5001, 0)
	got, ok := c.next(time.Second)
	require.True(c.t, ok, "no pong after the invalid payloads")
	c.check(s, got)
	_, extra := c.next(100 * time.Millisecond)
	require.False(c.t, extra, "a pong for an invalid payload")
	return st
}

var statsRE = regexp.MustCompile(`pings=(\d+) pongs=(\d+) ignored=(\d+) errors=(\d+) last_seq=(\d+)`)

// TestResponderThroughGoRouter builds z_probe_responder, runs it as a
// zenoh-pico client of an in-process Go router on a free loopback port and
// probes it from two Go sessions in turn: a TCP client, and a session
// attached in-process to the router as the gateway's is. Every ping gets
// its pong, in order, byte-for-byte what probe.Respond makes with the
// device's times; invalid payloads get none; the responder's own counters
// agree; its subscription goes when it exits.
func TestResponderThroughGoRouter(t *testing.T) {
	p := pico(t)
	bin, err := responder.Build(context.Background(), p, t.TempDir())
	require.NoError(t, err)

	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	t.Cleanup(func() { _ = r.Close() })
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	ep := ln.Endpoint()

	const name = "pico-probe_1.test"
	dev := start(t, bin, "-e", ep, "-m", "client", "-n", name)
	dev.WaitLine("picobridge probe responder ready: name="+name+" ping="+probe.PingKey(name)+" pong="+probe.PongKey(name), 10*time.Second)

	ctx := context.Background()
	total, warm := 0, 0
	for _, mode := range []string{"tcp-client", "in-process"} {
		cfg := zenohpath.Config{Connect: []string{ep}}
		if mode == "in-process" {
			cfg = zenohpath.Config{Router: r}
		}
		sess, err := zenohpath.Open(ctx, cfg)
		require.NoError(t, err)
		c := newClient(t, sess, name)
		st := c.exercise()
		total += c.sent
		warm += c.warmup
		require.NoError(t, sess.Close())

		rt := slices.Clone(st.rtts)
		slices.Sort(rt)
		pct := func(q float64) time.Duration { return rt[int(q*float64(len(rt)-1))] }
		var sum time.Duration
		for _, d := range rt {
			sum += d
		}
		t.Logf("%s via Go router %s: %d sequential pings, %d pongs, loss 0; RTT min %v median %v mean %v p90 %v p99 %v max %v; "+
			"burst of %d pings 1 ms apart answered in %v; device clock span %v vs gateway %v, drift %v; warm-up pings %d",
			mode, ep, seqPings, len(rt), rt[0], pct(0.5), sum/time.Duration(len(rt)), pct(0.9), pct(0.99), rt[len(rt)-1],
			burstPings, st.burst, st.devSpan, st.gwSpan, st.drift, c.warmup)
	}

	// The responder's counters: every valid ping answered, the three
	// invalid payloads of each client ignored, no error.
	require.Equal(t, 0, dev.Stop())
	line := dev.WaitLine("picobridge probe responder stats:", 5*time.Second)
	m := statsRE.FindStringSubmatch(line)
	require.NotNil(t, m, line)
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	require.Equal(t, total, n(1), "pings counted by the responder")
	require.Equal(t, total, n(2), "pongs published by the responder")
	require.Equal(t, 2*3, n(3), "ignored payloads")
	require.Equal(t, 0, n(4), "errors")
	require.Equal(t, 5001, n(5), "last seq")
	t.Logf("responder: %s (%d pings sent in all, %d of them warm-up)", line, total, warm)

	// Its subscription to the ping key went with it: the gateway would stop probing.
	obs, err := zenohpath.Open(ctx, zenohpath.Config{Router: r})
	require.NoError(t, err)
	defer obs.Close()
	pub, err := obs.DeclarePublisher(probe.PingKey(name), zenohpath.PublisherOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !pub.HasMatchingSubscribers() }, interop.Scale(5*time.Second), 10*time.Millisecond)
}

// TestResponderCount: with -c N the responder leaves by itself once N pings
// were answered, after the Nth pong went out, with exit status 0.
func TestResponderCount(t *testing.T) {
	p := pico(t)
	bin, err := responder.Build(context.Background(), p, t.TempDir())
	require.NoError(t, err)
	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	t.Cleanup(func() { _ = r.Close() })
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)

	const name, count = "counted", 20
	dev := start(t, bin, "-m", "client", "-e", ln.Endpoint(), "-n", name, "-c", strconv.Itoa(count))
	dev.WaitLine("ready", 10*time.Second)
	sess, err := zenohpath.Open(context.Background(), zenohpath.Config{Router: r})
	require.NoError(t, err)
	defer sess.Close()
	c := newClient(t, sess, name)
	c.warmUp()
	for i := c.warmup; i < count; i++ {
		sent := c.ping(uint32(i), 0)
		got, ok := c.next(time.Second)
		require.True(t, ok, "no pong for ping %d", i)
		c.check(sent, got)
	}
	select {
	case <-dev.Done():
	case <-time.After(interop.Scale(5 * time.Second)):
		t.Fatalf("the responder did not exit after %d pings", count)
	}
	require.Equal(t, 0, dev.Cmd.ProcessState.ExitCode())
	line := dev.WaitLine("stats:", time.Second)
	require.Contains(t, line, fmt.Sprintf("pings=%d pongs=%d ignored=0 errors=0 last_seq=%d", count, count, count-1))
}
