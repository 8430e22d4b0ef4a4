package bridge_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/probe"
)

// A device changes class at most once per classifier.dwell (invariant 8):
// readings that call for a change within the dwell are held (counted in
// DwellHeld) and the change happens at the first evaluation after it if
// they still call for it; leaving UNKNOWN the first time is not held.
func TestClassifierDwell(t *testing.T) {
	cfg := bridge.DefaultConfig().Classifier
	require.Equal(t, 30*time.Second, cfg.Dwell, "default ≥ 30 s")
	cfg.AllowUnknownState = true
	c := bridge.NewClassifier(cfg, t0)
	good, bad := reading(10*ms, 0), reading(80*ms, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var classes []bridge.Class
	for s := range 70 {
		r := good
		if s >= 3 && s < 40 {
			r = bad
		}
		c.Observe(r, at(s))
		classes = append(classes, c.Class())
	}
	st := c.Status()
	require.Len(t, st.History, 3)
	require.Equal(t, at(2), st.History[0].At, "UNKNOWN → CRITICAL: the first change is not held")
	require.Equal(t, bridge.ClassNoncritical, st.History[1].To)
	require.Equal(t, at(32), st.History[1].At, "the demotion due at 5 s waits for the dwell")
	require.Equal(t, bridge.ClassCritical, st.History[2].To)
	require.Equal(t, at(62), st.History[2].At, "the promotion due at 42 s waits for the dwell")
	require.Equal(t, uint64(27+20), st.DwellHeld)
	for s := 33; s < 62; s++ {
		require.Equal(t, bridge.ClassNoncritical, classes[s], "no change within a dwell (s=%d)", s)
	}

	// a reading in between during the dwell resets the counters: no change at its end
	c = bridge.NewClassifier(cfg, t0)
	for s := range 3 {
		c.Observe(good, at(s))
	}
	for s := 3; s < 40; s++ {
		r := bad
		if s == 31 {
			r = reading(40*ms, 0.001)
		}
		c.Observe(r, at(s))
	}
	require.Equal(t, at(34), c.Status().History[1].At, "3 bad readings after the reset")
}

// fillWindow sends n probes answered after rtt each, one per 200 ms from start.
func fillWindow(t *testing.T, c *bridge.Classifier, start time.Time, n int, rtt, self time.Duration) time.Time {
	t.Helper()
	now := start
	for range n {
		ping := c.PingAfter(now, self)
		pong, err := probe.Respond(ping, 0, 0)
		require.NoError(t, err)
		_, err = c.Pong(pong, now.Add(rtt))
		require.NoError(t, err)
		now = now.Add(200 * ms)
	}
	return now
}

// The gateway-health guard judges the device, not the gateway: a bad
// reading the gateway's own wake-up lag explains (RTT − lag within
// demote_rtt) is not applied; one it does not explain is; a host reason
// (steal, load) suspends every reading. The delay the gateway's own queue
// put ahead of a probe is subtracted from its RTT.
func TestGuardSuspendsJudgementItExplains(t *testing.T) {
	cfg := paperConfig()
	cfg.Consecutive = 1
	now := t0
	c := bridge.NewClassifier(cfg, now)
	now = fillWindow(t, c, now, 50, 10*ms, 0)
	c.Evaluate(now)
	require.Equal(t, bridge.ClassCritical, c.Status().State)

	now = fillWindow(t, c, now, 50, 80*ms, 0) // bad: 80 ms > 50 ms
	r, why := c.EvaluateGuarded(now, bridge.Guard{Lag: 40 * ms})
	require.Equal(t, 80*ms, r.RTT)
	require.Equal(t, bridge.SuspendGatewayLag, why, "80 ms − 40 ms of the gateway's lag ≤ 50 ms: explained")
	require.Equal(t, bridge.ClassCritical, c.Class())
	st := c.Status()
	require.Equal(t, uint64(1), st.Suspended)
	require.Equal(t, bridge.SuspendGatewayLag, st.SuspendedBy)
	require.Zero(t, st.Bad, "a suspended reading moves no counter")

	_, why = c.EvaluateGuarded(now, bridge.Guard{Reason: bridge.SuspendCPUSteal})
	require.Equal(t, bridge.SuspendCPUSteal, why)
	require.Equal(t, bridge.ClassCritical, c.Class())

	_, why = c.EvaluateGuarded(now, bridge.Guard{Lag: 20 * ms})
	require.Empty(t, why, "80 ms − 20 ms > 50 ms: the device is slow")
	require.Equal(t, bridge.ClassNoncritical, c.Class())
	require.Empty(t, c.Status().SuspendedBy)

	// self delay: 70 ms of the 75 ms round trip were the gateway's own queue
	c = bridge.NewClassifier(cfg, t0)
	now = fillWindow(t, c, t0, 50, 75*ms, 70*ms)
	r = c.Evaluate(now)
	require.Equal(t, 5*ms, r.RTT)
	require.Equal(t, bridge.ClassCritical, c.Status().State)
	require.Equal(t, 70*ms, c.Status().SelfDelay)
}

// On a gateway whose host reports heavy CPU steal no device changes class,
// whatever its probes say; the suspension is counted
// (picobridge_classifier_suspended_total{reason="cpu_steal"}) and shown in
// /devicez. When the steal ends and the window refilled, judgement resumes.
func TestGatewayGuardCPUSteal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t, twoDevices)
		cfg.Classifier.Dwell = 0
		var stealing atomic.Bool
		var mu sync.Mutex
		var hs bridge.HostStats
		host := func() (bridge.HostStats, error) {
			mu.Lock()
			defer mu.Unlock()
			hs.CPUTotal += 200
			if stealing.Load() {
				hs.CPUSteal += 100 // 50 %
			}
			hs.CPUs = 2
			return hs, nil
		}
		reg := prometheus.NewPedanticRegistry()
		g, err := bridge.New(cfg, bridge.Options{Catalog: catalog(t), Registerer: reg, HostStats: host})
		require.NoError(t, err)
		defer g.Close()
		var rtt atomic.Int64
		rtt.Store(int64(5 * ms))
		sink := &fakeSink{}
		sink.respond = func(key string, ping []byte) {
			dev, _, _ := probe.ParseKey(key)
			delay := time.Duration(rtt.Load())
			go func() { // a sleeping goroutine, not time.AfterFunc: see guard_internal_test.go
				time.Sleep(delay)
				pong, err := probe.Respond(ping, 0, 0)
				if err == nil {
					_ = g.HandlePong(probe.PongKey(dev), pong)
				}
			}()
		}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		require.NoError(t, err)
		d.DeclareSubscriber(probe.PingKey("arm"))
		g.Run()
		time.Sleep(14 * time.Second)
		require.Equal(t, bridge.ClassCritical, d.Classifier().Status().State)

		stealing.Store(true)
		rtt.Store(int64(80 * ms))
		time.Sleep(20*time.Second + ms)
		synctest.Wait()
		st := d.Classifier().Status()
		require.Equal(t, bridge.ClassCritical, st.Class, "the gateway's host is the problem: no demotion")
		require.Equal(t, bridge.SuspendCPUSteal, st.SuspendedBy)
		require.GreaterOrEqual(t, st.Suspended, uint64(19))
		dz := g.Devicez(bridge.DevicezOptions{})
		require.Equal(t, bridge.SuspendCPUSteal, dz.Gateway.Suspended)
		require.Equal(t, 0.5, dz.Gateway.Steal)
		require.Equal(t, 1, dz.Gateway.SuspendedDevices)
		require.Equal(t, float64(st.Suspended), testutil.ToFloat64(gatherCounter(t, reg, bridge.MetricClassifierSuspended, "cpu_steal")))

		stealing.Store(false) // the device really is slow now: judged once the window refilled
		time.Sleep(20 * time.Second)
		require.Equal(t, bridge.ClassNoncritical, d.Classifier().Class())
		require.Empty(t, g.Devicez(bridge.DevicezOptions{}).Gateway.Suspended)
	})
}

// gatherCounter reads one labelled series of a family from reg.
func gatherCounter(t *testing.T, reg *prometheus.Registry, name, reason string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x"}, func() float64 { return m.GetCounter().GetValue() })
				}
			}
		}
	}
	t.Fatalf("%s{reason=%q} not exported", name, reason)
	return nil
}

// The probe budget spreads probes over the fleet: 10 devices at 5 Hz want
// 50 pings/s; a budget of 20/s (per core × GOMAXPROCS) gives each device 2
// pings a second, evenly, none skipped or lost.
func TestProbeBudgetSpreadsProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t, twoDevices)
		cfg.Classifier.ProbeBudget = 20 / float64(runtime.GOMAXPROCS(0))
		g := newGateway(t, cfg, nil)
		require.InDelta(t, 20, g.ProbeRate(10), 1e-9)
		require.InDelta(t, 5, g.ProbeRate(1), 1e-9, "one device: probe_interval")
		sinks := make([]*fakeSink, 10)
		for i := range sinks {
			sinks[i] = &fakeSink{}
			d, err := g.Attach(bridge.DeviceIdentity{ZID: fmt.Sprintf("c%d", i)}, sinks[i])
			require.NoError(t, err)
			d.DeclareSubscriber(probe.PingKey(fmt.Sprintf("dev%d", i)))
		}
		g.Run()
		time.Sleep(10*time.Second + time.Millisecond)
		total := 0
		for i, s := range sinks {
			s.mu.Lock()
			n := s.probes
			s.mu.Unlock()
			require.InDelta(t, 20, n, 1, "device %d: 2 pings/s", i)
			total += n
		}
		require.InDelta(t, 200, total, 1)
	})
}

// 10 000 idle devices cost no goroutine (the lanes are units of one shared
// scheduler) and little memory each; detaching them returns the units.
// The bytes per idle device are reported (and bounded: ≤ 16 KiB, issue 11).
func TestIdleDevicesCostNoGoroutines(t *testing.T) {
	const n = 10_000
	cfg := testConfig(t, twoDevices)
	cfg.Metrics.MaxDevices = 1 // counters of unknown devices share _other, as at fleet scale
	g := newGateway(t, cfg, nil)
	_, err := g.Attach(bridge.DeviceIdentity{ZID: "ff"}, nopSink{}) // starts the scheduler
	require.NoError(t, err)
	g0 := runtime.NumGoroutine()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ds := make([]*bridge.Device, n)
	for i := range ds {
		ds[i], err = g.Attach(bridge.DeviceIdentity{ZID: fmt.Sprintf("%08x", i+1)}, nopSink{})
		require.NoError(t, err)
		ds[i].DeclareSubscriber("bulk/**")
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	require.Equal(t, g0, runtime.NumGoroutine(), "no goroutine per device")
	per := (m1.HeapAlloc - m0.HeapAlloc) / n
	t.Logf("idle device: %d bytes of heap each (%d devices)", per, n)
	require.LessOrEqual(t, per, uint64(16<<10))
	for _, d := range ds {
		d.Detach()
	}
	require.Equal(t, g0, runtime.NumGoroutine())
	require.Len(t, g.Devices(), 1)
}

// A device whose critical traffic alone exceeds its link budget is paced on
// purpose: WaitExpressDrained (the DDS path's burst guard) does not wait
// for it, so it never slows a critical route for the other devices.
func TestWaitExpressDrainedSkipsLinkPacedDevice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t, twoDevices)
		cfg.Devices.List[0].LinkBytesPerS = 2000 // arm: 1800 B/s for its lanes
		g := newGateway(t, cfg, nil)
		sink := &fakeSink{}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		require.NoError(t, err)
		d.DeclareSubscriber("cmd_vel")
		cmd := route(t, g, "/cmd_vel")
		for range 4 {
			g.Publish(cmd, bridge.Sample{Payload: make([]byte, 1000)})
		}
		synctest.Wait()
		// 1023 B each against a 1500 B bucket: one from the bucket, two borrowed
		// ahead (tokens down to −1500 B), the fourth waits for the budget
		require.Equal(t, 3, len(sink.expressed()))
		start := time.Now()
		require.True(t, g.WaitExpressDrained("cmd_vel", time.Second))
		require.Equal(t, start, time.Now(), "not waited for")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, 4, len(sink.expressed()), "paced by the budget, nothing lost")
	})
}

// estSink is a sink on a TCP link: TCP_INFO rates and the transport's pacing.
type estSink struct {
	fakeSink
	mu       sync.Mutex
	delivery uint64
	rates    []float64
}

func (s *estSink) TCPInfo() (bridge.TCPInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bridge.TCPInfo{DeliveryRate: s.delivery, PacingRate: ^uint64(0)}, nil
}

func (s *estSink) SetTxRate(r float64) {
	s.mu.Lock()
	s.rates = append(s.rates, r)
	s.mu.Unlock()
}

func (s *estSink) lastRate() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rates) == 0 {
		return -1
	}
	return s.rates[len(s.rates)-1]
}

// The link budget is configured (and then applied to the transport's pacing
// at once, × headroom) or estimated from TCP_INFO: the largest delivery rate
// over the last 10 evaluations, at least min_bytes_per_s; an unlimited
// pacing rate (^0) is ignored.
func TestLinkBudgetConfiguredAndEstimated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t, twoDevices)
		cfg.Devices.List[0].LinkBytesPerS = 250_000
		cfg.Policy.Link.Estimate = bridge.LinkEstimateTCPInfo
		g := newGateway(t, cfg, nil)
		conf := &estSink{delivery: 1 << 30}
		_, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, conf)
		require.NoError(t, err)
		require.Equal(t, 225_000.0, conf.lastRate(), "configured: the transport paces at budget × headroom")
		est := &estSink{delivery: 100_000}
		_, err = g.Attach(bridge.DeviceIdentity{ZID: "b2"}, est)
		require.NoError(t, err)
		require.Equal(t, 0.0, est.lastRate(), "nothing estimated yet: unpaced")
		g.Run()
		time.Sleep(time.Second + ms)
		synctest.Wait()
		require.Equal(t, 90_000.0, est.lastRate())
		st := g.Devicez(bridge.DevicezOptions{Device: "imu"}).Devices[0].Link
		require.Equal(t, 100_000.0, st.BudgetBytesPerS)
		est.mu.Lock()
		est.delivery = 50_000 // app-limited for a while: the max filter holds
		est.mu.Unlock()
		time.Sleep(9 * time.Second)
		synctest.Wait()
		require.Equal(t, 90_000.0, est.lastRate(), "the largest of the last 10")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, 45_000.0, est.lastRate(), "10 evaluations later")
		est.mu.Lock()
		est.delivery = 1000
		est.mu.Unlock()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Equal(t, 0.9*16384, est.lastRate(), "never below min_bytes_per_s")
		require.Equal(t, 225_000.0, conf.lastRate(), "a configured budget is not estimated")
	})
}

// WaitExpressDrained returns the instant the last pending sample of its key
// is taken by the device's express lane (it is notified, it does not
// poll); a device stalled in its sink is waited for only until the call
// has lasted expressStall (5 ms), not max.
func TestWaitExpressDrainedNotified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices), nil)
		sink := &fakeSink{expressWait: func(int) time.Duration { return 3 * time.Millisecond }}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		require.NoError(t, err)
		d.DeclareSubscriber("cmd_vel")
		cmd := route(t, g, "/cmd_vel")
		for range 4 {
			g.Publish(cmd, bridge.Sample{Payload: []byte("x")})
		}
		start := time.Now()
		require.True(t, g.WaitExpressDrained("cmd_vel", time.Second))
		require.Equal(t, 9*time.Millisecond, time.Since(start), "the fourth is taken after three 3 ms sends")

		stuck := &fakeSink{block: make(chan struct{})}
		d2, err := g.Attach(bridge.DeviceIdentity{ZID: "b2"}, stuck)
		require.NoError(t, err)
		d2.DeclareSubscriber("cmd_vel")
		time.Sleep(10 * time.Millisecond) // the first device finishes its last send
		g.Publish(cmd, bridge.Sample{Payload: []byte("y")})
		g.Publish(cmd, bridge.Sample{Payload: []byte("z")}) // waits behind the blocked send
		start = time.Now()
		require.True(t, g.WaitExpressDrained("cmd_vel", 20*time.Millisecond))
		require.Equal(t, 5*time.Millisecond, time.Since(start), "the blocked send began at start")
		close(stuck.block)
		require.True(t, g.WaitExpressDrained("cmd_vel", time.Second))
		require.NoError(t, g.Close())
	})
}
