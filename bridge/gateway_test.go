package bridge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
)

// fakeSink records what a device receives, with the time it arrived.
type fakeSink struct {
	mu        sync.Mutex
	express   []got
	batches   [][]got
	probes    int
	batchWait time.Duration // SendBatch takes this long (a slow link)
	batchErr  error
	block     chan struct{} // SendExpress blocks until closed (a stuck device)
	// expressWait, when set, is how long SendExpress call n (0-based)
	// takes: a stalled lane goroutine or a slow device.
	expressWait func(n int) time.Duration
	calls       int
	respond     func(key string, ping []byte)
}

type got struct {
	key string
	at  time.Time
	pay string
}

func (s *fakeSink) SendExpress(x bridge.Sample) error {
	if s.block != nil {
		<-s.block
	}
	if s.expressWait != nil {
		s.mu.Lock()
		n := s.calls
		s.calls++
		s.mu.Unlock()
		time.Sleep(s.expressWait(n))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.express = append(s.express, got{x.Key, time.Now(), string(x.Payload)})
	return nil
}

func (s *fakeSink) SendBatch(xs []bridge.Sample) error {
	if s.batchWait > 0 {
		time.Sleep(s.batchWait)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var b []got
	for _, x := range xs {
		b = append(b, got{x.Key, time.Now(), string(x.Payload)})
	}
	s.batches = append(s.batches, b)
	return s.batchErr
}

func (s *fakeSink) SendProbe(key string, ping []byte) error {
	s.mu.Lock()
	s.probes++
	f := s.respond
	s.mu.Unlock()
	if f != nil {
		f(key, ping)
	}
	return nil
}

func (s *fakeSink) expressed() []got {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]got(nil), s.express...)
}

func (s *fakeSink) batched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.batches {
		n += len(b)
	}
	return n
}

func catalog(t testing.TB) *knobs.Catalog {
	t.Helper()
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	return cat
}

func testConfig(t testing.TB, yaml string) *bridge.Config {
	t.Helper()
	c, err := bridge.ParseConfig("test.yaml", []byte(yaml))
	require.NoError(t, err)
	return c
}

const twoDevices = `
routes:
  critical: ["/cmd_vel", "/estop"]
devices:
  list:
    - {name: arm, zid: "a1", platform: posix}
    - {name: imu, zid: "b2", platform: zephyr, board: native_sim}
`

func newGateway(t testing.TB, cfg *bridge.Config, reg prometheus.Registerer) *bridge.Gateway {
	t.Helper()
	g, err := bridge.New(cfg, bridge.Options{Catalog: catalog(t), Registerer: reg, Version: "test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func route(t *testing.T, g *bridge.Gateway, topic string) bridge.Route {
	t.Helper()
	r, ok := g.Routes().Resolve(topic, "std_msgs/msg/String", "")
	require.True(t, ok, topic)
	return r
}

// A flood of noncritical samples on a slow link never delays a critical
// sample: each reaches the sink at the instant it was published (synctest
// time), and Publish itself never waits.
func TestCriticalNotDelayedByNoncriticalFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices), nil)
		sink := &fakeSink{batchWait: 300 * time.Millisecond}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "A1"}, sink)
		require.NoError(t, err)
		require.Equal(t, "arm", d.Name())
		d.DeclareSubscriber("**")
		cmd, scan := route(t, g, "/cmd_vel"), route(t, g, "/scan")
		require.Equal(t, bridge.Critical, cmd.Criticality)
		require.Equal(t, bridge.Noncritical, scan.Criticality)
		for i := range 50 {
			for k := range 100 {
				r := scan
				r.Key = "scan/" + string(rune('a'+k%26)) + string(rune('a'+k/26))
				before := time.Now()
				g.Publish(r, bridge.Sample{Payload: []byte("noise")})
				require.Equal(t, before, time.Now(), "Publish never waits")
			}
			published := time.Now()
			g.Publish(cmd, bridge.Sample{Payload: []byte{byte(i)}})
			synctest.Wait()
			ex := sink.expressed()
			require.Len(t, ex, i+1)
			require.Equal(t, published, ex[i].at, "critical sample %d delayed", i)
			time.Sleep(10 * time.Millisecond)
		}
		require.Positive(t, sink.batched(), "the slow batched lane still makes progress")
	})
}

// Invariant 6: a stuck device does not change critical delivery to another.
func TestStuckDeviceDoesNotAffectOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices), nil)
		stuck := &fakeSink{block: make(chan struct{})}
		good := &fakeSink{}
		ds, _ := g.Attach(bridge.DeviceIdentity{ZID: "b2"}, stuck)
		dg, _ := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, good)
		ds.DeclareSubscriber("cmd_vel")
		dg.DeclareSubscriber("cmd_vel")
		cmd := route(t, g, "/cmd_vel")
		for i := range 100 {
			g.Publish(cmd, bridge.Sample{Payload: []byte{byte(i)}})
			synctest.Wait()
			require.Len(t, good.expressed(), i+1)
			time.Sleep(time.Millisecond)
		}
		st := g.Devicez(bridge.DevicezOptions{Device: "imu"}).Devices[0]
		// one sample in the stuck sink, policy.express.depth (4, ≤ ring) pending
		require.Equal(t, bridge.DefaultExpressDepth, st.Lanes["express"].Depth, "keep-latest: the FIFO of the stuck device is full")
		require.Equal(t, uint64(100-1-bridge.DefaultExpressDepth), st.Lanes["express"].Dropped["congestion"])
		close(stuck.block)
	})
}

// A scheduling stall of the express goroutine longer than a sample period
// (60 ms at 30 Hz) loses nothing: the key's FIFO (policy.express.depth)
// holds the samples and they go out in order. A device truly slower than
// the rate still gets keep-latest: the oldest pending samples are dropped,
// counted as congestion, and the newest one always arrives.
func TestExpressRidesOutStallKeepsLatestWhenSlow(t *testing.T) {
	const n = 90 // 3 s at 30 Hz
	run := func(t *testing.T, wait func(int) time.Duration) (*fakeSink, bridge.LaneStatus) {
		g := newGateway(t, testConfig(t, twoDevices), nil)
		sink := &fakeSink{expressWait: wait}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		require.NoError(t, err)
		d.DeclareSubscriber("cmd_vel")
		cmd := route(t, g, "/cmd_vel")
		for i := range n {
			before := time.Now()
			g.Publish(cmd, bridge.Sample{Payload: []byte{byte(i)}})
			require.Equal(t, before, time.Now(), "Publish never waits")
			time.Sleep(time.Second / 30)
		}
		time.Sleep(2 * time.Second) // drain
		synctest.Wait()
		return sink, g.Devicez(bridge.DevicezOptions{Device: "arm"}).Devices[0].Lanes["express"]
	}
	t.Run("stall", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sink, st := run(t, func(i int) time.Duration {
				if i == 10 {
					// 10 ms of sending, then the lane goroutine is held
					// up for 60 ms: samples 11 and 12 arrive meanwhile
					return 10*time.Millisecond + 60*time.Millisecond
				}
				return 0
			})
			ex := sink.expressed()
			require.Len(t, ex, n, "nothing lost to a 60 ms stall")
			for i, x := range ex {
				require.Equal(t, string([]byte{byte(i)}), x.pay, "in order")
			}
			require.Zero(t, st.Dropped["congestion"])
			require.EqualValues(t, n, st.Forwarded)
		})
	})
	t.Run("slow device", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sink, st := run(t, func(int) time.Duration { return 100 * time.Millisecond }) // 10/s < 30 Hz
			ex := sink.expressed()
			require.Less(t, len(ex), n)
			require.Positive(t, st.Dropped["congestion"], "keep-latest drops counted")
			require.EqualValues(t, n, st.Forwarded+st.Dropped["congestion"], "every sample forwarded or counted")
			require.Equal(t, string([]byte{byte(n - 1)}), ex[len(ex)-1].pay, "the newest sample arrives")
			for i := 1; i < len(ex); i++ {
				require.Less(t, ex[i-1].pay[0], ex[i].pay[0], "in order")
			}
		})
	})
}

func TestNoncriticalDeviceRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices), nil)
		sink := &fakeSink{}
		d, _ := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		d.DeclareSubscriber("*")
		scan, cmd := route(t, g, "/scan"), route(t, g, "/cmd_vel")
		run := func() (express, batched int) {
			e0, b0 := len(sink.expressed()), sink.batched()
			for range 300 { // 10 s at 30 Hz
				g.Publish(scan, bridge.Sample{Payload: []byte("s")})
				g.Publish(cmd, bridge.Sample{Payload: []byte("c")})
				time.Sleep(time.Second / 30)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			return len(sink.expressed()) - e0, sink.batched() - b0
		}
		e, b := run()
		require.Equal(t, 300, e, "CRITICAL device: every critical sample express")
		require.InDelta(t, 100, b, 2, "noncritical at 10 Hz")
		require.Equal(t, bridge.LaneExpress, d.Lane(bridge.Critical))

		d.SetOverride(bridge.OverrideNoncritical)
		require.Equal(t, bridge.LaneBatched, d.Lane(bridge.Critical), "demote_critical_routes")
		e, b = run()
		require.Zero(t, e)
		require.InDelta(t, 2*30, b, 3, "both routes at 3 Hz")
		st := g.Devicez(bridge.DevicezOptions{Transitions: true}).Devices[0]
		require.Equal(t, 3.0, st.BatchedRateHz)
		d.SetOverride(bridge.OverrideAuto)
		require.Equal(t, 10.0, g.Devicez(bridge.DevicezOptions{}).Devices[0].BatchedRateHz)
		d.SetOverride(bridge.OverrideNoncritical)
		require.Equal(t, bridge.ClassNoncritical, st.Classifier.Class)
		require.Len(t, st.Classifier.History, 1)
	})
}

func TestSupervisorSuspendsLanes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t, twoDevices+`
supervisor:
  degraded: {errors: 1}
  emergency: {errors: 3}
  recover: {errors: 0, evaluations: 2}
`)
		var changes []bridge.ModeChange
		g, err := bridge.New(cfg, bridge.Options{Catalog: catalog(t), OnModeChange: func(c bridge.ModeChange) { changes = append(changes, c) }})
		require.NoError(t, err)
		defer g.Close()
		sink := &fakeSink{}
		d, _ := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		d.DeclareSubscriber("*")
		scan, cmd := route(t, g, "/scan"), route(t, g, "/cmd_vel")

		g.ReportError()
		_, changed := g.Supervise(time.Now())
		require.True(t, changed)
		require.Equal(t, bridge.Degraded, g.Mode())
		g.Publish(scan, bridge.Sample{Payload: []byte("s")})
		g.Publish(cmd, bridge.Sample{Payload: []byte("c")})
		synctest.Wait()
		require.Len(t, sink.expressed(), 1, "critical still forwarded in DEGRADED")
		st := g.Devicez(bridge.DevicezOptions{}).Devices[0]
		require.Equal(t, uint64(1), st.Lanes["batched"].Dropped["suspended"])

		for range 3 {
			g.ReportError()
		}
		g.Supervise(time.Now())
		require.Equal(t, bridge.Emergency, g.Mode())
		g.Publish(cmd, bridge.Sample{Payload: []byte("c")})
		synctest.Wait()
		require.Len(t, sink.expressed(), 1, "nothing forwarded in EMERGENCY")
		rec := httptest.NewRecorder()
		g.HandleHealthz(rec, httptest.NewRequest("GET", bridge.PathHealthz, nil))
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)

		for range 4 {
			g.Supervise(time.Now())
		}
		require.Equal(t, bridge.Normal, g.Mode())
		require.Len(t, changes, 4)
		require.Equal(t, []bridge.SupervisorMode{bridge.Degraded, bridge.Emergency, bridge.Degraded, bridge.Normal},
			[]bridge.SupervisorMode{changes[0].To, changes[1].To, changes[2].To, changes[3].To})
	})
}

// closedSink is the sink of a device whose session has closed: every send
// fails with ErrDeviceClosed (the server maps the transport's ErrClosed).
type closedSink struct{}

func (closedSink) SendExpress(bridge.Sample) error {
	return fmt.Errorf("%w: transport closed", bridge.ErrDeviceClosed)
}
func (closedSink) SendBatch([]bridge.Sample) error { return bridge.ErrDeviceClosed }
func (closedSink) SendProbe(string, []byte) error  { return bridge.ErrDeviceClosed }

// A device that left is no gateway fault: the samples its lanes could not
// send because its session had closed are counted as closed (not
// congestion) and do not count toward the supervisor's errors, so a
// fleet's churn does not put the gateway in DEGRADED (10 per evaluation)
// or EMERGENCY (100), nor keep it from recovering (recover.errors 0).
// Before, each was a congestion drop and a sink error: 120 of them put the
// gateway in EMERGENCY and suspended every device's critical routes.
func TestClosedDeviceIsNoSupervisorError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices), nil) // default supervisor: errors 10 / 100
		gone, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, closedSink{})
		require.NoError(t, err)
		gone.DeclareSubscriber("*")
		cmd, scan := route(t, g, "/cmd_vel"), route(t, g, "/scan")
		for i := range 120 {
			g.Publish(cmd, bridge.Sample{Payload: []byte(fmt.Sprint(i))})
			synctest.Wait()
		}
		g.Publish(scan, bridge.Sample{Payload: []byte("s")})
		time.Sleep(time.Second)
		synctest.Wait()
		_, changed := g.Supervise(time.Now())
		require.False(t, changed)
		require.Equal(t, bridge.Normal, g.Mode())
		require.Zero(t, g.Supervisor().Status().Health.Errors)
		st := g.Devicez(bridge.DevicezOptions{}).Devices[0]
		require.Equal(t, map[string]uint64{"closed": 120}, st.CriticalDropped)
		require.Equal(t, map[string]uint64{"closed": 120}, st.Lanes["express"].Dropped)
		require.Equal(t, map[string]uint64{"closed": 1}, st.Lanes["batched"].Dropped)
	})
}

// The probe loop end to end: the gateway pings at 5 Hz through the sink, a
// simulated responder answers after the link's RTT, the classifier demotes
// and promotes the device.
func TestProbeLoopClassifiesDevice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		cfg := testConfig(t, twoDevices)
		cfg.Classifier.Dwell = 0 // demote and promote within seconds (dwell: TestClassifierDwell)
		g := newGateway(t, cfg, reg)
		var mu sync.Mutex
		rtt := 5 * time.Millisecond
		sink := &fakeSink{}
		sink.respond = func(key string, ping []byte) {
			dev, kind, ok := probe.ParseKey(key) // the gateway's goroutine: assert, not require
			assert.True(t, ok)
			assert.Equal(t, probe.Ping, kind)
			mu.Lock()
			delay := rtt
			mu.Unlock()
			go func() { // a sleeping goroutine, not time.AfterFunc: see guard_internal_test.go
				time.Sleep(delay)
				pong, err := probe.Respond(ping, 0, 0)
				if err == nil {
					_ = g.HandlePong(probe.PongKey(dev), pong)
				}
			}()
		}
		d, _ := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		g.Run()
		time.Sleep(2 * time.Second)
		sink.mu.Lock()
		require.Zero(t, sink.probes, "no responder, no probes")
		sink.mu.Unlock()
		d.DeclareSubscriber(probe.PingKey("arm")) // the responder comes up
		time.Sleep(14 * time.Second)
		st := d.Classifier().Status()
		require.Equal(t, bridge.ClassCritical, st.State)
		require.Equal(t, 5*time.Millisecond, st.Reading.RTT)
		mu.Lock()
		rtt = 80 * time.Millisecond
		mu.Unlock()
		time.Sleep(10 * time.Second)
		require.Equal(t, bridge.ClassNoncritical, d.Classifier().Class())
		mu.Lock()
		rtt = 5 * time.Millisecond
		mu.Unlock()
		time.Sleep(15 * time.Second)
		require.Equal(t, bridge.ClassCritical, d.Classifier().Class())
		sink.mu.Lock()
		probes := sink.probes
		sink.mu.Unlock()
		require.InDelta(t, 5*(14+10+15), probes, 2)
		require.Equal(t, 1.0, testutil.ToFloat64(collectorFor(t, reg, bridge.MetricDeviceTransitions, map[string]string{"device": "arm", "to": "noncritical"})))
		require.NoError(t, g.Close())
	})
}

// collectorFor gathers reg and returns the one sample of name with labels.
func collectorFor(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x"}, func() float64 { return v })
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return nil
}

func TestMetricsPromlint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	g := newGateway(t, testConfig(t, twoDevices), reg)
	sink := &fakeSink{}
	d, _ := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
	d.DeclareSubscriber("**")
	g.Publish(route(t, g, "/scan"), bridge.Sample{Payload: make([]byte, 1<<20)}) // oversize
	mfs, err := reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{bridge.MetricBuildInfo, bridge.MetricDeviceClass, bridge.MetricDeviceRTT, bridge.MetricDeviceLoss,
		bridge.MetricDeviceProbes, bridge.MetricDeviceTransitions, bridge.MetricDeviceAttached, bridge.MetricForwarded,
		bridge.MetricDropped, bridge.MetricQueueDepth, bridge.MetricFlushes, bridge.MetricSinkErrors,
		bridge.MetricSupervisorMode, bridge.MetricSupervisorTransition, bridge.MetricQueueOccupancy,
		bridge.MetricOfferedSamples, bridge.MetricOfferedBytes, bridge.MetricOfferedRate, bridge.MetricOfferedByteRate,
		bridge.MetricOfferedMaxBytes, bridge.MetricOfferedP95Bytes, bridge.MetricFlushOccupancy, bridge.MetricFullFlushes} {
		require.True(t, names[n], "missing %s", n)
	}
	require.Equal(t, float64(1<<20), testutil.ToFloat64(collectorFor(t, reg, bridge.MetricOfferedBytes,
		map[string]string{"device": "arm", "key": "**"})))
	require.Equal(t, float64(1<<20), testutil.ToFloat64(collectorFor(t, reg, bridge.MetricOfferedMaxBytes,
		map[string]string{"device": "arm", "key": "**"})))
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Equal(t, 1.0, testutil.ToFloat64(collectorFor(t, reg, bridge.MetricDropped,
		map[string]string{"device": "arm", "lane": "batched", "reason": "oversize"})))
	require.Equal(t, 1.0, testutil.ToFloat64(collectorFor(t, reg, bridge.MetricDeviceClass,
		map[string]string{"device": "arm", "class": "critical"})))
	require.Equal(t, 0.0, testutil.ToFloat64(collectorFor(t, reg, bridge.MetricDeviceAttached, map[string]string{"device": "imu"})))
	require.Equal(t, 1.0, testutil.ToFloat64(collectorFor(t, reg, bridge.MetricSupervisorMode, map[string]string{"mode": "normal"})))
}

// Device labels stay bounded: beyond metrics.max_devices, _other.
func TestDeviceLabelsBounded(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	g := newGateway(t, testConfig(t, twoDevices+"metrics: {max_devices: 3}\n"), reg)
	for _, zid := range []string{"01", "02", "03", "04"} {
		d, err := g.Attach(bridge.DeviceIdentity{ZID: zid}, &fakeSink{})
		require.NoError(t, err)
		d.DeclareSubscriber("**")
	}
	g.Publish(route(t, g, "/scan"), bridge.Sample{Payload: make([]byte, 1<<20)})
	require.Equal(t, 3.0, testutil.ToFloat64(collectorFor(t, reg, bridge.MetricDropped,
		map[string]string{"device": bridge.OtherDevice, "lane": "batched", "reason": "oversize"})))
	_, err := reg.Gather()
	require.NoError(t, err)
}

func TestAnnounceAppliesConfiguration(t *testing.T) {
	g := newGateway(t, testConfig(t, twoDevices+`
    - {name: lidar, platform: zephyr, class: noncritical}
`), nil)
	d, err := g.Attach(bridge.DeviceIdentity{ZID: "ff01"}, &fakeSink{})
	require.NoError(t, err)
	require.Equal(t, "zid-ff01", d.Name())
	d.DeclareSubscriber(probe.PingKey("lidar"))
	require.Equal(t, "lidar", d.Name())
	require.Equal(t, bridge.ClassNoncritical, d.Classifier().Class())
	require.True(t, d.Capacity().PerFdTxCeiling, "zephyr profile applied")
	st := g.Devicez(bridge.DevicezOptions{}).Devices[0]
	require.True(t, st.Configured)
	require.Equal(t, "zephyr", st.Platform)
	require.Empty(t, st.Subscriptions, "the probe subscription is not a data subscription")

	// an unknown name keeps the default profile
	d2, _ := g.Attach(bridge.DeviceIdentity{ZID: "ff02", Name: "stranger"}, &fakeSink{})
	require.Equal(t, "stranger", d2.Name())
	require.False(t, g.Devicez(bridge.DevicezOptions{Device: "stranger"}).Devices[0].Configured)
	d2.Detach()
	require.Nil(t, g.Device("stranger"))
	_, err = g.Attach(bridge.DeviceIdentity{ZID: "not-hex"}, &fakeSink{})
	require.Error(t, err)
}

func TestDevicezAndHealthzHandlers(t *testing.T) {
	g := newGateway(t, testConfig(t, twoDevices), nil)
	d, _ := g.Attach(bridge.DeviceIdentity{ZID: "b2"}, &fakeSink{})
	d.DeclareSubscriber("scan")
	rec := httptest.NewRecorder()
	g.HandleDevicez(rec, httptest.NewRequest("GET", bridge.PathDevicez+"?device=imu&transitions=1", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var resp bridge.DevicezResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
	require.Len(t, resp.Devices, 1)
	got := resp.Devices[0]
	require.Equal(t, "imu", got.Name)
	require.Equal(t, "b2", got.ZID)
	require.Equal(t, []string{"scan"}, got.Subscriptions)
	require.Equal(t, d.Capacity(), got.Capacity)
	require.Equal(t, bridge.ShapingOf(d.Capacity(), 50*time.Millisecond), got.Shaping)
	require.Equal(t, 100*time.Millisecond, got.Capacity.SocketWindow, "the window is shown, and shapes nothing")
	require.Equal(t, "NORMAL", string(mustJSONField(t, rec.Body.Bytes(), "supervisor", "mode")))

	rec = httptest.NewRecorder()
	g.HandleHealthz(rec, httptest.NewRequest("GET", bridge.PathHealthz, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"status": "ok"`)
}

func mustJSONField(t *testing.T, b []byte, path ...string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	return v.(string)
}

func TestNewRefusesBadProfiles(t *testing.T) {
	cfg := testConfig(t, `
devices:
  list:
    - {name: a, platform: nosuchos}
`)
	_, err := bridge.New(cfg, bridge.Options{Catalog: catalog(t)})
	require.Error(t, err)
	require.ErrorIs(t, err, knobs.ErrUnknownPlatform)
	require.Equal(t, `test.yaml:4:27: devices.list[0].platform: no platform named "nosuchos" (known: baremetal, freertos, generic, nuttx, posix, threadx, zephyr)`, err.Error())
	_, err = bridge.New(testConfig(t, "devices:\n  list:\n    - name: a\n      platform: zephyr\n      env:\n        ZPICO_TX_BATCH: maybe\n"), bridge.Options{Catalog: catalog(t)})
	require.ErrorIs(t, err, knobs.ErrBadValue)
	require.Equal(t, `test.yaml:6:25: devices.list[0].env.ZPICO_TX_BATCH: cannot parse "maybe" as a bool (want y/n, 1/0, true/false)`, err.Error())
	_, err = bridge.New(cfg, bridge.Options{})
	require.Error(t, err)
}

// A range problem set by a flag and a profile problem from the file come
// back in one error, in that order, so one run names both.
func TestNewReportsRangeAndProfileTogether(t *testing.T) {
	cfg := testConfig(t, `
devices:
  list:
    - {name: a, platform: nosuchos}
`)
	require.NoError(t, cfg.OverrideFrom("--domain", "dds.domain", "300"))
	_, err := bridge.New(cfg, bridge.Options{Catalog: catalog(t)})
	require.ErrorIs(t, err, knobs.ErrUnknownPlatform)
	var ce *knobs.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Problems, 2, "%v", err)
	require.Equal(t, "dds.domain", ce.Problems[0].Key)
	require.Equal(t, "devices.list[0].platform", ce.Problems[1].Key)
}

// Every goroutine the gateway starts is gone after Close (convention 12).
func TestNoGoroutineLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	cfg := testConfig(t, twoDevices)
	g, err := bridge.New(cfg, bridge.Options{Catalog: catalog(t)})
	require.NoError(t, err)
	g.Run()
	for _, zid := range []string{"a1", "b2", "c3"} {
		d, err := g.Attach(bridge.DeviceIdentity{ZID: zid}, &fakeSink{})
		require.NoError(t, err)
		d.DeclareSubscriber("**")
	}
	g.Device("arm").Detach()
	g.Publish(route(t, g, "/cmd_vel"), bridge.Sample{Payload: []byte("x")})
	require.Greater(t, runtime.NumGoroutine(), base)
	require.NoError(t, g.Close())
	require.NoError(t, g.Close(), "Close twice is fine")
	// poll by hand: testify's Eventually runs its condition in a goroutine of its own
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines left: base %d, now %d\n%s", base, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err = g.Attach(bridge.DeviceIdentity{ZID: "d4"}, &fakeSink{})
	require.Error(t, err, "no attach after Close")
}

var _ = errors.New

// A stock Zephyr native_sim device (per-fd lock, 100 ms socket window)
// gets a 30 Hz critical stream complete and in order: a sample to the
// device ends its blocking recv at once, so the window never paces what it
// receives (invariant 9; issue 24: it got 27 % of it when it did).
func TestNativeSimCriticalStreamComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices), nil)
		sink := &fakeSink{}
		d, _ := g.Attach(bridge.DeviceIdentity{ZID: "b2"}, sink)
		d.DeclareSubscriber("cmd_vel")
		require.True(t, d.Capacity().PerFdTxCeiling)
		cmd := route(t, g, "/cmd_vel")
		const n = 300 // 10 s at 30 Hz
		for i := range n {
			g.Publish(cmd, bridge.Sample{Payload: []byte{byte(i)}})
			synctest.Wait()
			ex := sink.expressed()
			require.Len(t, ex, i+1, "sample %d sent at once", i)
			require.Equal(t, string([]byte{byte(i)}), ex[i].pay)
			time.Sleep(time.Second / 30)
		}
		st := g.Devicez(bridge.DevicezOptions{}).Devices[0]
		require.Equal(t, uint64(n), st.Lanes["express"].Forwarded)
		require.Zero(t, st.Lanes["express"].Dropped["congestion"])
		require.Zero(t, st.Lanes["express"].Depth)
	})
}

// Publishers, attach/detach, announcements, overrides, probes, status and
// scrapes all at once (run with -race); bounded in count, no timing asserted.
func TestConcurrentUse(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	g := newGateway(t, testConfig(t, twoDevices+"classifier: {probe_interval: 1ms, evaluation_interval: 2ms}\nsupervisor: {evaluation_interval: 2ms}\n"), reg)
	g.Run()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	routes := []bridge.Route{route(t, g, "/cmd_vel"), route(t, g, "/scan")}
	for p := range 4 {
		wg.Go(func() {
			r := routes[p%2]
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				g.Publish(r, bridge.Sample{Payload: []byte{byte(i)}})
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			sink := &fakeSink{}
			sink.respond = func(key string, ping []byte) {
				dev, _, _ := probe.ParseKey(key)
				pong, _ := probe.Respond(ping, 0, 0)
				_ = g.HandlePong(probe.PongKey(dev), pong)
			}
			d, err := g.Attach(bridge.DeviceIdentity{ZID: []string{"a1", "b2", "c3"}[i%3]}, sink)
			if !assert.NoError(t, err) { // not require: this is not the test's goroutine
				return
			}
			d.DeclareSubscriber("**")
			d.DeclareSubscriber(probe.PingKey("lidar"))
			if i%5 == 0 {
				d.UndeclareSubscriber(probe.PingKey("lidar"))
			}
			d.SetOverride([]bridge.ClassOverride{bridge.OverrideAuto, bridge.OverrideNoncritical}[i%2])
			_ = g.Devicez(bridge.DevicezOptions{Transitions: true})
			_, err = reg.Gather()
			assert.NoError(t, err)
			time.Sleep(time.Millisecond)
			if i%2 == 0 {
				d.Detach()
			}
		}
	})
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	require.NoError(t, g.Close())
	_, err := reg.Gather()
	require.NoError(t, err)
}

func TestPerDeviceRates(t *testing.T) {
	g := newGateway(t, testConfig(t, `
devices:
  list:
    - {name: fast, zid: "01", platform: posix, rate_hz: 30, noncritical_rate_hz: 5}
`), nil)
	d, _ := g.Attach(bridge.DeviceIdentity{ZID: "01"}, &fakeSink{})
	require.Equal(t, 30.0, g.Devicez(bridge.DevicezOptions{}).Devices[0].BatchedRateHz)
	d.SetOverride(bridge.OverrideNoncritical)
	require.Equal(t, 5.0, g.Devicez(bridge.DevicezOptions{}).Devices[0].BatchedRateHz)
	_, err := bridge.ParseConfig("x.yaml", []byte("devices:\n  list:\n    - {name: a, rate_hz: -1}\n"))
	require.EqualError(t, err, "x.yaml:3:26: devices.list[0].rate_hz: must be ≥ 0 (got -1)")
}
