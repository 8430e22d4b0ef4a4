package bridge_test

import (
	"encoding/binary"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/probe"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// paperConfig is the paper's classifier, without the dwell time (tested
// apart in TestClassifierDwell).
func paperConfig() bridge.ClassifierConfig {
	c := bridge.DefaultConfig().Classifier
	c.Dwell = 0
	return c
}

const ms = time.Millisecond

func reading(rtt time.Duration, loss float64) bridge.Reading {
	return bridge.Reading{RTT: rtt, Loss: loss, Samples: 50, Replies: 50}
}

// feed observes readings one second apart and returns the effective class after each.
func feed(c *bridge.Classifier, start time.Time, rs ...bridge.Reading) []bridge.Class {
	var out []bridge.Class
	for i, r := range rs {
		c.Observe(r, start.Add(time.Duration(i)*time.Second))
		out = append(out, c.Class())
	}
	return out
}

const (
	U = bridge.ClassUnknown
	C = bridge.ClassCritical
	N = bridge.ClassNoncritical
)

func TestClassifierPaperHysteresis(t *testing.T) {
	good := reading(10*ms, 0)
	bad := reading(60*ms, 0)            // RTT > 50 ms
	lossy := reading(10*ms, 0.02)       // loss > 1.5 %
	between := reading(40*ms, 0.001)    // 35 < RTT ≤ 50: neither
	betweenLoss := reading(10*ms, 0.01) // 0.5 % ≤ loss ≤ 1.5 %
	edgeDemote := reading(50*ms, 0.015) // exactly at the demote thresholds: not bad
	edgePromote := reading(35*ms, 0)    // exactly at promote RTT: not good

	cfg := paperConfig()
	cfg.AllowUnknownState = true
	c := bridge.NewClassifier(cfg, t0)
	require.Equal(t, U, c.Class())

	// UNKNOWN → CRITICAL after 3 good readings
	require.Equal(t, []bridge.Class{U, U, C}, feed(c, t0, good, good, good))
	// 2 bad, then a reading in between resets the counter: 3 more bad needed
	require.Equal(t, []bridge.Class{C, C, C, C, C, N}, feed(c, t0.Add(10*time.Second), bad, lossy, between, bad, lossy, bad))
	// promote needs 3 good in a row; between-band readings and a bad reading reset
	require.Equal(t, []bridge.Class{N, N, N, N, N, N, N, N, C},
		feed(c, t0.Add(20*time.Second), good, good, betweenLoss, good, good, bad, good, good, good))
	// exact thresholds are in the band
	require.Equal(t, []bridge.Class{C, C, C, C, C, C}, feed(c, t0.Add(40*time.Second), edgeDemote, edgeDemote, edgeDemote, edgePromote, edgePromote, edgePromote))
	st := c.Status()
	require.Equal(t, uint64(3), st.Transitions)
	require.Len(t, st.History, 3)
	require.Equal(t, bridge.Transition{At: t0.Add(2 * time.Second), From: U, To: C, Reason: st.History[0].Reason}, st.History[0])
	require.Equal(t, t0.Add(15*time.Second), st.History[1].At)
	require.Equal(t, C, st.History[1].From)
	require.Equal(t, N, st.History[1].To)
	require.Contains(t, st.History[1].Reason, "for 3 evaluations")
	require.Equal(t, t0.Add(28*time.Second), st.History[2].At)
}

func TestClassifierUnknownHandling(t *testing.T) {
	// default: UNKNOWN is handled as CRITICAL and going to CRITICAL is no transition
	c := bridge.NewClassifier(paperConfig(), t0)
	require.Equal(t, C, c.Class())
	require.Equal(t, U, c.Status().State)
	feed(c, t0, reading(10*ms, 0), reading(10*ms, 0), reading(10*ms, 0))
	require.Equal(t, C, c.Status().State)
	require.Zero(t, c.Status().Transitions)

	// UNKNOWN → NONCRITICAL after 3 bad readings
	c = bridge.NewClassifier(paperConfig(), t0)
	require.Equal(t, []bridge.Class{C, C, N}, feed(c, t0, reading(80*ms, 0), reading(80*ms, 0), reading(80*ms, 0)))

	// too few samples: no change, counters reset
	c = bridge.NewClassifier(paperConfig(), t0)
	few := bridge.Reading{RTT: 80 * ms, Samples: 49, Replies: 49}
	require.Equal(t, []bridge.Class{C, C, C, C, C}, feed(c, t0, reading(80*ms, 0), reading(80*ms, 0), few, reading(80*ms, 0), reading(80*ms, 0)))
	require.Equal(t, U, c.Status().State)
	// no reply at all is bad
	c = bridge.NewClassifier(paperConfig(), t0)
	require.Equal(t, []bridge.Class{C, C, N}, feed(c, t0, bridge.Reading{Samples: 50, Loss: 1}, bridge.Reading{Samples: 50, Loss: 1}, bridge.Reading{Samples: 50, Loss: 1}))
}

func TestClassifierOverride(t *testing.T) {
	c := bridge.NewClassifier(paperConfig(), t0)
	var seen []bridge.Transition
	c.OnTransition(func(tr bridge.Transition) { seen = append(seen, tr) })
	c.SetOverride(bridge.OverrideNoncritical, t0)
	require.Equal(t, N, c.Class())
	feed(c, t0, reading(1*ms, 0), reading(1*ms, 0), reading(1*ms, 0))
	require.Equal(t, N, c.Class(), "override wins over readings")
	require.Equal(t, C, c.Status().State)
	c.SetOverride(bridge.OverrideAuto, t0.Add(5*time.Second))
	require.Equal(t, C, c.Class())
	require.Len(t, seen, 2)
	require.Equal(t, "override noncritical", seen[0].Reason)
	require.Equal(t, bridge.Transition{At: t0.Add(5 * time.Second), From: N, To: C, Reason: "override auto"}, seen[1])
}

// The whole loop: pings at 5 Hz, a responder, a link with a given RTT and
// loss pattern, evaluations at 1 Hz.
func TestClassifierProbeLoop(t *testing.T) {
	cfg := paperConfig()
	c := bridge.NewClassifier(cfg, t0)
	now := t0
	var devClock uint64
	type inflight struct {
		payload []byte
		at      time.Time
	}
	var q []inflight
	rtt := 10 * ms
	lossEvery := 0 // drop one ping in lossEvery; 0 none
	n := 0
	step := func(d time.Duration) {
		end := now.Add(d)
		for now.Before(end) {
			now = now.Add(10 * ms)
			for len(q) > 0 && !q[0].at.After(now) {
				_, err := c.Pong(q[0].payload, q[0].at)
				require.NoError(t, err)
				q = q[1:]
			}
			if now.Sub(t0)%cfg.ProbeInterval == 0 {
				ping := c.Ping(now)
				n++
				if lossEvery == 0 || n%lossEvery != 0 {
					devClock += 1000
					pong, err := probe.Respond(ping, devClock, devClock+500_000) // 0.5 ms in the device
					require.NoError(t, err)
					q = append(q, inflight{pong, now.Add(rtt + 500*time.Microsecond)})
				}
			}
			if now.Sub(t0)%cfg.EvaluationInterval == 0 {
				c.Evaluate(now)
			}
		}
	}
	step(9 * time.Second)
	require.Equal(t, U, c.Status().State, "window not yet full after 9 s")
	step(4 * time.Second) // full at 10.2 s, third good evaluation at 13 s
	st := c.Status()
	require.Equal(t, C, st.State)
	require.Equal(t, 10*ms, st.Reading.RTT, "device processing time excluded")
	require.Zero(t, st.Reading.Loss)

	rtt = 70 * ms
	step(15 * time.Second)
	require.Equal(t, N, c.Class())
	rtt = 5 * ms
	step(15 * time.Second)
	require.Equal(t, C, c.Class())
	lossEvery = 20 // 5 % loss
	step(15 * time.Second)
	require.Equal(t, N, c.Class())
	require.InDelta(t, 0.05, c.Status().Reading.Loss, 0.021)
	require.Equal(t, uint64(3), c.Status().Transitions, "UNKNOWN→CRITICAL is no change of the effective class")
	require.LessOrEqual(t, c.Status().Pending, 10)
}

func TestClassifierPongErrors(t *testing.T) {
	c := bridge.NewClassifier(paperConfig(), t0)
	ping := c.Ping(t0)
	_, err := c.Pong(ping, t0)
	require.ErrorIs(t, err, probe.ErrKind)
	pong, err := probe.Respond(ping, 1, 2)
	require.NoError(t, err)
	_, err = c.Pong(pong, t0.Add(2*time.Second))
	require.ErrorIs(t, err, bridge.ErrUnexpectedPong, "after the timeout")
	_, err = c.Pong(pong, t0.Add(2*time.Second))
	require.ErrorIs(t, err, bridge.ErrUnexpectedPong, "duplicate")
	forged := append([]byte(nil), pong...)
	binary.LittleEndian.PutUint32(forged[4:], 99)
	_, err = c.Pong(forged, t0)
	require.ErrorIs(t, err, bridge.ErrUnexpectedPong)
	// pending stays bounded without evaluations
	for i := range 1000 {
		c.Ping(t0.Add(time.Duration(i) * 200 * ms))
	}
	require.LessOrEqual(t, c.Status().Pending, 8)
}

func TestClassifierTCPInfo(t *testing.T) {
	cfg := paperConfig()
	cfg.TCPInfo = true
	cfg.MinSamples = 1
	c := bridge.NewClassifier(cfg, t0)
	ping := c.Ping(t0)
	pong, _ := probe.Respond(ping, 0, 0)
	_, err := c.Pong(pong, t0.Add(5*ms))
	require.NoError(t, err)
	c.ObserveTCP(bridge.TCPInfo{RTT: 80 * ms, SegsOut: 100, TotalRetrans: 0})
	c.ObserveTCP(bridge.TCPInfo{RTT: 80 * ms, SegsOut: 200, TotalRetrans: 10})
	r := c.Evaluate(t0.Add(10 * ms))
	require.Equal(t, 80*ms, r.RTT)
	require.InDelta(t, 0.1, r.Loss, 1e-9)
}

func TestReadTCPInfo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			_, _ = c.Write([]byte("x"))
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, _ = conn.Read(make([]byte, 1))
	info, err := bridge.ReadTCPInfo(conn.(*net.TCPConn))
	if err == bridge.ErrTCPInfoUnsupported {
		t.Skip("TCP_INFO not supported here")
	}
	require.NoError(t, err)
	require.GreaterOrEqual(t, info.RTT, time.Duration(0))
}

type tcpSink struct {
	fakeSink
	info bridge.TCPInfo
}

func (s *tcpSink) TCPInfo() (bridge.TCPInfo, error) { return s.info, nil }

// A sink that offers TCP_INFO feeds the classifier when classifier.tcp_info is
// on: the probes say 5 ms, the kernel says 90 ms, the larger wins.
func TestGatewayUsesTCPInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices+"classifier: {tcp_info: true, min_samples: 5}\n"), nil)
		sink := &tcpSink{info: bridge.TCPInfo{RTT: 90 * ms}}
		var _ bridge.TCPInfoSource = sink
		sink.respond = func(key string, ping []byte) {
			go func() { // a sleeping goroutine, not time.AfterFunc: see guard_internal_test.go
				time.Sleep(5 * ms)
				pong, _ := probe.Respond(ping, 0, 0)
				_ = g.HandlePong(probe.PongKey("arm"), pong)
			}()
		}
		d, _ := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		d.DeclareSubscriber(probe.PingKey("arm"))
		g.Run()
		time.Sleep(5 * time.Second)
		st := d.Classifier().Status()
		require.Equal(t, 90*ms, st.Reading.RTT)
		require.Equal(t, bridge.ClassNoncritical, st.Class)
		pong, _ := probe.Respond(probe.Message{Kind: probe.Ping}.Append(nil), 0, 0)
		require.Error(t, g.HandlePong(probe.PongKey("nobody"), pong))
		require.Error(t, g.HandlePong("scan", pong))
		require.NoError(t, g.Close())
	})
}
