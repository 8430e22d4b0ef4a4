package bridge_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/knobs"
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

func TestShapingSendBudget(t *testing.T) {
	perFd := knobs.Capacity{RingDepth: 4, DrainInterval: 100 * time.Millisecond, FlushInterval: 100 * time.Millisecond,
		PerFdTxCeiling: true, ExpressRateCeiling: 9, SlotBytes: 1024, MaxMessageBytes: 2048}
	s := bridge.ShapingOf(perFd)
	require.InDelta(t, 8.0, s.SendRate, 1e-9, "0.8 batches per 100 ms socket window")
	require.Equal(t, 125*time.Millisecond, s.SendInterval())
	require.Equal(t, 125*time.Millisecond, s.FlushInterval, "the batched lane flushes no faster than the budget")
	perFd.ExpressRateCeiling = 5 // a lower measured ceiling wins
	require.InDelta(t, 5.0, bridge.ShapingOf(perFd).SendRate, 1e-9)

	posix := knobs.Capacity{RingDepth: 4, DrainInterval: 100 * time.Millisecond, FlushInterval: 50 * time.Millisecond, SlotBytes: 1024, MaxMessageBytes: 2048}
	s = bridge.ShapingOf(posix)
	require.Zero(t, s.SendRate, "no per-socket lock: no budget")
	require.Zero(t, s.SendInterval())
	require.Equal(t, 50*time.Millisecond, s.FlushInterval)
}

// A native_sim device (per-socket lock, 100 ms socket window) under a flood
// of critical and noncritical samples with 5 Hz probes: express samples,
// batched flushes and pings share one budget of 8 sink calls per second,
// never more in any second; critical samples go first; probes come before
// batched flushes, a probe without budget is skipped and not counted as
// loss; every sample not forwarded is counted with a reason.
func TestSendBudgetSharedByLanesAndProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices), nil)
		sink := &callSink{}
		sink.respond = func(key string, ping []byte) {
			dev, _, _ := bridge.ParseProbeKey(key)
			go func() { // a sleeping goroutine, not time.AfterFunc: see guard_internal_test.go
				time.Sleep(5 * time.Millisecond)
				if pong, err := bridge.Respond(ping, 0, 0); err == nil {
					_ = g.HandlePong(bridge.PongKey(dev), pong)
				}
			}()
		}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "b2"}, sink)
		require.NoError(t, err)
		d.DeclareSubscriber("cmd_vel")
		d.DeclareSubscriber("scan")
		d.DeclareSubscriber(bridge.PingKey("imu"))
		budget := d.Capacity()
		shape := bridge.ShapingOf(budget)
		require.InDelta(t, 8.0, shape.SendRate, 1e-9)
		g.Run()
		cmd, scan := route(t, g, "/cmd_vel"), route(t, g, "/scan")
		require.Equal(t, bridge.LaneExpress, d.Lane(cmd.Criticality))
		require.Equal(t, bridge.LaneBatched, d.Lane(scan.Criticality))

		// flood publishes scan at 500 Hz and cmd_vel at cmdHz for dur.
		offered := map[string]int{}
		flood := func(cmdHz int, dur time.Duration) {
			start := time.Now()
			tick := time.Second / 500
			every := 500 / cmdHz
			for i := 0; time.Since(start) < dur; i++ {
				g.Publish(scan, bridge.Sample{Payload: []byte{byte(i)}})
				offered["scan"]++
				if i%every == 0 {
					g.Publish(cmd, bridge.Sample{Payload: []byte{byte(i)}})
					offered["cmd"]++
				}
				time.Sleep(tick)
			}
		}

		// Phase 1: critical at 2 Hz, below the budget.
		flood(2, 10*time.Second)
		synctest.Wait()
		phase1 := sink.snapshot()
		n := map[string]int{}
		for _, c := range phase1 {
			n[c.kind]++
		}
		t.Logf("phase 1 (2 Hz critical): %v sink calls in 10 s, probes skipped %d", n, g.Devicez(bridge.DevicezOptions{}).Devices[0].ProbesSkipped)
		st := g.Devicez(bridge.DevicezOptions{}).Devices[0]
		require.Zero(t, st.Lanes["express"].Dropped["congestion"], "critical below the budget: none replaced")
		require.EqualValues(t, offered["cmd"], st.Lanes["express"].Forwarded, "every critical sample sent")
		require.Positive(t, n["probe"], "probes get the tokens express leaves")
		require.Positive(t, n["batch"], "batched flushes get what is left")
		// 5 Hz ticks, at most ProbeShare of 8/s = 2/s: every third tick
		// (500 ms apart) in 10 s; each one goes before any batched flush.
		require.GreaterOrEqual(t, n["probe"], 15, "every probe within its share is sent, before batched flushes")
		require.LessOrEqual(t, float64(n["probe"]), bridge.ProbeShare*shape.SendRate*10+1, "probes keep to their share")
		require.Zero(t, d.Classifier().Status().Reading.Loss, "every sent probe answered")

		// Phase 2: critical at 50 Hz, far above the budget.
		flood(50, 10*time.Second)
		time.Sleep(2 * time.Second) // drain
		synctest.Wait()
		calls := sink.snapshot()
		phase2 := calls[len(phase1):]
		n = map[string]int{}
		for _, c := range phase2 {
			n[c.kind]++
		}
		t.Logf("phase 2 (50 Hz critical): %v sink calls in 12 s", n)
		// 10 s at 8/s, then the full express FIFO (policy.express.depth) drains
		require.InDelta(t, 8*10+bridge.DefaultExpressDepth, n["express"], 3, "the express lane takes the whole budget under a critical flood")

		// The budget: two sink calls never closer than 1/SendRate, so never
		// more than SendRate in any second (sliding window).
		iv := shape.SendInterval()
		for i := 1; i < len(calls); i++ {
			require.GreaterOrEqual(t, calls[i].at.Sub(calls[i-1].at), iv, "call %d (%s) after %s", i, calls[i].kind, calls[i-1].kind)
		}
		for i := range calls {
			j := i
			for j < len(calls) && calls[j].at.Sub(calls[i].at) < time.Second {
				j++
			}
			require.LessOrEqual(t, j-i, int(shape.SendRate), "sink calls in the second from %v", calls[i].at)
		}

		st = g.Devicez(bridge.DevicezOptions{}).Devices[0]
		t.Logf("status: lanes %+v probes_skipped %d probes_sent %d loss %v", st.Lanes, st.ProbesSkipped, st.Classifier.ProbesSent, st.Classifier.Reading.Loss)
		require.Positive(t, st.ProbesSkipped, "a probe without budget is skipped")
		require.Zero(t, st.Classifier.Reading.Loss, "a skipped probe is not loss")
		// every sample forwarded or dropped with a reason
		for lane, key := range map[string]string{"express": "cmd", "batched": "scan"} {
			ls := st.Lanes[lane]
			total := ls.Forwarded
			for _, v := range ls.Dropped {
				total += v
			}
			require.EqualValues(t, offered[key], total, "%s lane: %+v", lane, ls)
			require.Zero(t, ls.Depth)
		}
		require.Positive(t, st.Lanes["express"].Dropped["congestion"], "keep-latest under the flood, counted")
		require.NoError(t, g.Close())
	})
}
