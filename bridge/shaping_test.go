package bridge_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
)

// callSink records the time and kind of every call a device's lanes and
// prober make, and answers pings at once.
type callSink struct {
	mu      sync.Mutex
	calls   []sinkCall
	respond func(key string, ping []byte)
}

type sinkCall struct {
	at   time.Time
	kind string // express, batch, probe
	n    int
	key  string
}

func (s *callSink) add(kind string, n int, key string) {
	s.mu.Lock()
	s.calls = append(s.calls, sinkCall{time.Now(), kind, n, key})
	s.mu.Unlock()
}
func (s *callSink) SendExpress(x bridge.Sample) error { s.add("express", 1, x.Key); return nil }
func (s *callSink) SendBatch(xs []bridge.Sample) error {
	s.add("batch", len(xs), "")
	return nil
}
func (s *callSink) SendProbe(key string, ping []byte) error {
	s.add("probe", 1, key)
	if s.respond != nil {
		s.respond(key, ping)
	}
	return nil
}
func (s *callSink) snapshot() []sinkCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sinkCall(nil), s.calls...)
}

// The shaping of a device bounds what it can receive, never by its socket
// window (invariant 9, anchors.md §2.6): a stock native_sim board (per-fd
// lock, 100 ms window) and a POSIX device get the same cadence, the
// gateway's flush_interval.
func TestShapingIgnoresSocketWindow(t *testing.T) {
	nativeSim := knobs.Capacity{RingDepth: 4, SocketWindow: 100 * time.Millisecond, PerFdTxCeiling: true,
		TxBatch: true, TxFlush: 50 * time.Millisecond, SplitLock: true, SlotBytes: 1024, MaxMessageBytes: 2048}
	s := bridge.ShapingOf(nativeSim, 20*time.Millisecond)
	require.Equal(t, bridge.Shaping{MaxMessageBytes: 1024, LargeMessageBytes: 1024, RingDepth: 4, FlushInterval: 20 * time.Millisecond}, s)
	posix := nativeSim
	posix.PerFdTxCeiling, posix.SocketWindow = false, 5*time.Millisecond
	require.Equal(t, s, bridge.ShapingOf(posix, 20*time.Millisecond))
	require.Equal(t, knobs.DefaultGatewayFlush, bridge.ShapingOf(nativeSim, 0).FlushInterval)
}

// A stock native_sim device (per-socket lock, 100 ms socket window) with
// 5 Hz probes under a 100 Hz critical stream and a 500 Hz noncritical
// flood: every critical sample reaches the sink at the instant it was
// published (synctest time), none is dropped; every probe is sent; the
// batched lane flushes on the gateway's 50 ms cadence, at most the ring
// depth per subscription per flush; every sample not forwarded is counted
// with a reason. Before the device-truth fix the same device got 8 sink
// calls per second in all (issue 24: 27 % of a 30 Hz stream).
func TestNativeSimReceivesAtProducerRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices), nil)
		sink := &callSink{}
		sink.respond = func(key string, ping []byte) {
			dev, _, _ := probe.ParseKey(key)
			go func() { // a sleeping goroutine, not time.AfterFunc: see guard_internal_test.go
				time.Sleep(5 * time.Millisecond)
				if pong, err := probe.Respond(ping, 0, 0); err == nil {
					_ = g.HandlePong(probe.PongKey(dev), pong)
				}
			}()
		}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "b2"}, sink)
		require.NoError(t, err)
		require.True(t, d.Capacity().PerFdTxCeiling, "native_sim has the per-fd lock")
		require.Equal(t, 100*time.Millisecond, d.Capacity().SocketWindow)
		d.DeclareSubscriber("cmd_vel")
		d.DeclareSubscriber("scan")
		d.DeclareSubscriber(probe.PingKey("imu"))
		g.Run()
		cmd, scan := route(t, g, "/cmd_vel"), route(t, g, "/scan")
		require.Equal(t, bridge.LaneExpress, d.Lane(cmd.Criticality))
		require.Equal(t, bridge.LaneBatched, d.Lane(scan.Criticality))

		offered := map[string]int{}
		var published []time.Time // when each critical sample was published
		start := time.Now()
		const dur = 10 * time.Second
		for i := 0; time.Since(start) < dur; i++ {
			g.Publish(scan, bridge.Sample{Payload: []byte{byte(i)}})
			offered["scan"]++
			if i%5 == 0 { // 100 Hz
				published = append(published, time.Now())
				g.Publish(cmd, bridge.Sample{Payload: []byte{byte(i)}})
				offered["cmd"]++
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Second) // drain
		synctest.Wait()

		calls := sink.snapshot()
		n := map[string]int{}
		var express []time.Time
		var batches []sinkCall
		for _, c := range calls {
			n[c.kind]++
			switch c.kind {
			case "express":
				express = append(express, c.at)
			case "batch":
				batches = append(batches, c)
			}
		}
		t.Logf("sink calls in %v: %v", dur, n)
		require.Len(t, express, len(published), "every critical sample sent")
		for i := range published {
			require.Equal(t, published[i], express[i], "critical sample %d left the instant it was published", i)
		}
		st := g.Devicez(bridge.DevicezOptions{}).Devices[0]
		require.Zero(t, st.Lanes["express"].Dropped["congestion"])
		require.EqualValues(t, offered["cmd"], st.Lanes["express"].Forwarded)
		// 5 Hz probes for 11 s, none held back by the device's socket window.
		require.GreaterOrEqual(t, n["probe"], 50)
		require.Zero(t, d.Classifier().Status().Reading.Loss, "every probe answered")
		// The batched lane: rate_hz 10 per key, flushes ≥ 50 ms apart, ≤ ring depth per flush.
		for i, b := range batches {
			require.LessOrEqual(t, b.n, d.Capacity().RingDepth)
			if i > 0 {
				require.GreaterOrEqual(t, b.at.Sub(batches[i-1].at), 50*time.Millisecond)
			}
		}
		require.InDelta(t, 10*dur.Seconds(), float64(st.Lanes["batched"].Forwarded), 3)
		for lane, key := range map[string]string{"express": "cmd", "batched": "scan"} {
			ls := st.Lanes[lane]
			total := ls.Forwarded
			for _, v := range ls.Dropped {
				total += v
			}
			require.EqualValues(t, offered[key], total, "%s lane: %+v", lane, ls)
			require.Zero(t, ls.Depth)
		}
		require.NoError(t, g.Close())
	})
}

// pubSink is a sink that reports the device's own publications.
type pubSink struct {
	callSink
	n, bytes int64
}

func (s *pubSink) Published() (int64, int64) { return s.n, s.bytes }

// The device's own publications (PublishedSource) appear in its observed
// traffic as one published topic at the mean rate and size since it
// attached, and advice reports a TX-bound untuned image.
func TestObservedTrafficPublished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t, "devices:\n  list:\n    - {name: slow, zid: \"c3\", platform: zephyr, board: native_sim, env: {CONFIG_NROS_ZENOH_TX_BATCH: \"n\", CONFIG_NROS_ZENOH_TX_SPLIT_LOCK: \"n\"}}\n")
		g := newGateway(t, cfg, nil)
		sink := &pubSink{}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "c3"}, sink)
		require.NoError(t, err)
		require.Empty(t, d.ObservedTraffic("t").Topics, "nothing published yet")
		time.Sleep(10 * time.Second)
		sink.n, sink.bytes = 86, 86*64 // 8.6 msg/s of 64 B
		tr := d.ObservedTraffic("t")
		require.Equal(t, []knobs.Topic{{Name: bridge.PublishedTopic, Direction: knobs.Pub, RateHz: 8.6, SizeBytes: 64,
			LatencyBudget: time.Second, Line: 1}}, tr.Topics)
		require.Equal(t, 50*time.Millisecond, tr.FlushInterval)
		a := d.Advise("t")
		require.NotNil(t, a)
		found := false
		for _, n := range a.Notes {
			found = found || strings.Contains(n, "likely TX-bound")
		}
		require.True(t, found, "notes: %q", a.Notes)
	})
}

// stallSink is a callSink whose TCP connection can be in RTO recovery.
type stallSink struct {
	callSink
	stalled atomic.Bool
}

func (s *stallSink) TCPInfo() (bridge.TCPInfo, error) {
	return bridge.TCPInfo{Stalled: s.stalled.Load()}, nil
}

// While a NONCRITICAL device's TCP connection is in retransmission-timeout
// recovery its batched lane writes nothing (what it wrote would arrive in
// one burst after the repair, more than the device's ring); the held
// samples are kept latest and go stale as usual, every one counted; the
// lane resumes once the connection has recovered. A CRITICAL device is
// never held.
func TestBatchedHoldsWhileLinkStalled(t *testing.T) {
	for _, class := range []string{"noncritical", "critical"} {
		t.Run(class, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGateway(t, testConfig(t, "devices:\n  list:\n    - {name: arm, zid: \"a1\", platform: posix, class: "+class+"}\n"), nil)
				sink := &stallSink{}
				d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
				require.NoError(t, err)
				d.DeclareSubscriber("scan")
				g.Run()
				scan := route(t, g, "/scan")
				require.Equal(t, bridge.LaneBatched, d.Lane(scan.Criticality))
				publish := func(n int) {
					for i := range n {
						g.Publish(scan, bridge.Sample{Payload: []byte{byte(i)}})
						time.Sleep(100 * time.Millisecond)
					}
				}
				publish(10) // 1 s healthy
				synctest.Wait()
				before := len(sink.snapshot())
				sink.stalled.Store(true)
				publish(20) // 2 s of RTO recovery
				synctest.Wait()
				during := len(sink.snapshot()) - before
				sink.stalled.Store(false)
				publish(10)
				time.Sleep(time.Second)
				synctest.Wait()
				after := len(sink.snapshot()) - before - during
				st := g.Devicez(bridge.DevicezOptions{}).Devices[0].Lanes["batched"]
				total := st.Forwarded
				for _, v := range st.Dropped {
					total += v
				}
				require.EqualValues(t, 40, total, "every sample forwarded or dropped with a reason: %+v", st)
				require.Positive(t, before)
				require.Positive(t, after, "the lane resumes")
				if class == "critical" {
					require.Positive(t, during, "a CRITICAL device is never held")
					return
				}
				require.Zero(t, during, "nothing written while the link is stalled")
				require.Positive(t, st.Dropped["stale"]+st.Dropped["congestion"], "held samples replaced or gone stale, counted")
			})
		})
	}
}
