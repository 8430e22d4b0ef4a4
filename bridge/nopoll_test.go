package bridge_test

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/picobridge/picobridge/bridge"
)

// Issue 25 item 3: no polling on the data path, and Publish never blocks.

// offered is how many samples the device's batched lane took so far:
// forwarded, pending and dropped.
func offered(t *testing.T, g *bridge.Gateway, device string) uint64 {
	t.Helper()
	st := g.Devicez(bridge.DevicezOptions{Device: device}).Devices[0].Lanes["batched"]
	n := st.Forwarded + uint64(st.Depth)
	for _, c := range st.Dropped {
		n += c
	}
	return n
}

// Replay offers each history sample at the instant the key's token bucket
// has a token (a timer computed from the bucket, not a 5 ms poll: at
// 16 Hz the period, 62.5 ms, is off any 5 ms grid), waits while the
// supervisor is DEGRADED and offers the next sample at the instant of the
// change back to NORMAL, without time passing.
func TestReplayAtBucketRateAndModeChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t, twoDevices)
		cfg.Policy.Batched.RateHz = 16 // the device is UNKNOWN, handled as CRITICAL: rate_hz
		cfg.Supervisor.Recover.Evaluations = 1
		g := newGateway(t, cfg, nil)
		sink := &fakeSink{}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		require.NoError(t, err)
		d.DeclareSubscriber("map")
		const n = 10
		hist := make([]bridge.Sample, n)
		for i := range hist {
			hist[i] = bridge.Sample{Key: "map", Payload: []byte{'0' + byte(i)}}
		}
		const period = time.Second / 16
		t0 := time.Now()
		ret := make(chan int, 1)
		go func() { ret <- d.Replay(hist, make(chan struct{})) }()
		// at t0 + i·period exactly: sample i, not one more, not one less
		at := func(when time.Time, want uint64) {
			t.Helper()
			time.Sleep(time.Until(when.Add(-time.Nanosecond)))
			synctest.Wait()
			require.Equal(t, want-1, offered(t, g, "arm"), "1 ns before %v", when.Sub(t0))
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			require.Equal(t, want, offered(t, g, "arm"), "at %v", when.Sub(t0))
		}
		synctest.Wait()
		require.Equal(t, uint64(1), offered(t, g, "arm"), "the first at once (bucket full)")
		for i := 1; i < 3; i++ {
			at(t0.Add(time.Duration(i)*period), uint64(i+1))
		}
		// DEGRADED: the batched lane is suspended, the replay waits
		time.Sleep(time.Millisecond)
		_, changed := g.Supervisor().Observe(bridge.Health{QueueOccupancy: 0.8}, time.Now())
		require.True(t, changed)
		require.Equal(t, bridge.Degraded, g.Mode())
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, uint64(3), offered(t, g, "arm"), "nothing offered while DEGRADED")
		time.Sleep(3700 * time.Microsecond) // off every grid
		tm := time.Now()
		_, changed = g.Supervisor().Observe(bridge.Health{}, tm)
		require.True(t, changed)
		require.Equal(t, bridge.Normal, g.Mode())
		synctest.Wait()
		require.Equal(t, tm, time.Now())
		require.Equal(t, uint64(4), offered(t, g, "arm"), "offered at the mode change, no time passed")
		for j := 1; j < n-3; j++ {
			at(tm.Add(time.Duration(j)*period), uint64(4+j))
		}
		require.Equal(t, n, <-ret)
		require.Equal(t, tm.Add(time.Duration(n-4)*period), time.Now(), "returns with the last offer")
		time.Sleep(time.Second)
		synctest.Wait()
		var got string
		sink.mu.Lock()
		for _, b := range sink.batches {
			for _, x := range b {
				got += x.pay
			}
		}
		sink.mu.Unlock()
		require.Equal(t, "0123456789", got, "every history sample once, in order")
		st := g.Devicez(bridge.DevicezOptions{Device: "arm"}).Devices[0].Lanes["batched"]
		require.Empty(t, st.Dropped)
	})
}

// Replay returns when done is closed, when the device detaches and when
// the gateway closes, whatever it waits for (a token, the flush, the
// supervisor), and leaves no goroutine or timer behind. Wall time, with a
// generous guard as deadlock detector only.
func TestReplayReturnsAndLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := testConfig(t, twoDevices)
	cfg.Policy.Batched.RateHz = 0.001                   // a token every 1000 s
	cfg.Policy.Batched.FlushInterval = 10 * time.Second // its maximum
	g, err := bridge.New(cfg, bridge.Options{Catalog: catalog(t)})
	require.NoError(t, err)
	arm, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, &fakeSink{})
	require.NoError(t, err)
	imu, err := g.Attach(bridge.DeviceIdentity{ZID: "b2"}, &fakeSink{})
	require.NoError(t, err)
	hist := func(key string) []bridge.Sample {
		return []bridge.Sample{{Key: key, Payload: []byte("a")}, {Key: key, Payload: []byte("b")}, {Key: key, Payload: []byte("c")}}
	}
	type result struct {
		name string
		n    int
	}
	res := make(chan result, 4)
	run := func(name string, d *bridge.Device, key string, done chan struct{}) {
		go func() { res <- result{name, d.Replay(hist(key), done)} }()
	}
	waitAll := func(want map[string]int) {
		t.Helper()
		got := map[string]int{}
		guard := time.After(30 * time.Second)
		for len(got) < len(want) {
			select {
			case r := <-res:
				got[r.name] = r.n
			case <-guard:
				t.Fatalf("Replay did not return (deadlock): got %v, want %v", got, want)
			}
		}
		require.Equal(t, want, got)
	}
	// done: waiting for the 10 s flush to take the first sample
	done := make(chan struct{})
	run("done", arm, "map", done)
	// detach: waiting for the same on another device
	run("detach", imu, "map", nil)
	for offered(t, g, "arm") < 1 || offered(t, g, "imu") < 1 {
		time.Sleep(time.Millisecond) // the test waits for the replays to start; Replay does not poll
	}
	close(done)
	imu.Detach()
	waitAll(map[string]int{"done": 1, "detach": 1})
	// close: one waits for a token (flushed by hand), one for the supervisor
	run("token", arm, "grid", nil)
	for offered(t, g, "arm") < 2 {
		time.Sleep(time.Millisecond)
	}
	arm.Flush(nil)
	_, changed := g.Supervisor().Observe(bridge.Health{QueueOccupancy: 0.8}, time.Now())
	require.True(t, changed)
	run("degraded", arm, "tf", nil)
	require.NoError(t, g.Close())
	waitAll(map[string]int{"token": 1, "degraded": 0})
	require.Equal(t, 0, arm.Replay(hist("late"), nil), "after Close: returns at once")
}

// manualClock is a synthetic Options.Clock that moves only when told.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// stalledSink is a device whose link never takes a byte: every send blocks
// until release is closed (the session closing). entered gets one token
// per call that started.
type stalledSink struct {
	release chan struct{}
	entered chan struct{}
}

func (s *stalledSink) block() error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return nil
}
func (s *stalledSink) SendExpress(bridge.Sample) error { return s.block() }
func (s *stalledSink) SendBatch([]bridge.Sample) error { return s.block() }
func (s *stalledSink) SendProbe(string, []byte) error  { return nil }
func (s *stalledSink) waitEntered(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.entered:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the lane never called the sink", what)
	}
}

// Invariant 1: Publish never blocks, even when a device's egress is
// stalled in its sink on both lanes. N publishes of a critical and of a
// noncritical route return (a wall-clock guard only detects a deadlock);
// what the device cannot take is counted exactly, with its reason, at one
// instant of a synthetic clock: the express lane keeps its depth (4), the
// batched lane's bucket (burst 1) admits one.
func TestPublishNeverBlocksOnStalledEgress(t *testing.T) {
	clock := &manualClock{t: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig(t, twoDevices)
	cfg.Policy.Batched.FlushInterval = 10 * time.Second // the lane's own flush never comes due: Flush by hand
	g, err := bridge.New(cfg, bridge.Options{Catalog: catalog(t), Clock: clock})
	require.NoError(t, err)
	sink := &stalledSink{release: make(chan struct{}), entered: make(chan struct{}, 2)}
	defer func() { require.NoError(t, g.Close()) }()
	defer close(sink.release) // before Close: a sink returns once its session closes
	d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
	require.NoError(t, err)
	d.DeclareSubscriber("**")
	cmd, scan := route(t, g, "/cmd_vel"), route(t, g, "/scan")
	// One of each stuck in the sink first, so the counts below are exact.
	g.Publish(cmd, bridge.Sample{Payload: []byte("0")})
	sink.waitEntered(t, "express")
	g.Publish(scan, bridge.Sample{Payload: []byte("0")})
	clock.mu.Lock()
	clock.t = clock.t.Add(100 * time.Millisecond) // not stale yet; the bucket has a token again
	clock.mu.Unlock()
	// Flush by hand, on a goroutine of the test since the sink blocks.
	go d.Flush(nil)
	sink.waitEntered(t, "batched")
	const n = 10_000
	ret := make(chan int, 1)
	go func() {
		for i := range n {
			g.Publish(cmd, bridge.Sample{Payload: []byte(fmt.Sprint(i))})
			g.Publish(scan, bridge.Sample{Payload: []byte(fmt.Sprint(i))})
		}
		ret <- n
	}()
	select {
	case got := <-ret:
		require.Equal(t, n, got)
	case <-time.After(60 * time.Second):
		t.Fatal("Publish blocked on a stalled device (deadlock guard)")
	}
	st := g.Devicez(bridge.DevicezOptions{Device: "arm"}).Devices[0]
	ex, bat := st.Lanes["express"], st.Lanes["batched"]
	require.Equal(t, bridge.DefaultExpressDepth, ex.Depth)
	require.Equal(t, map[string]uint64{"congestion": n - bridge.DefaultExpressDepth}, ex.Dropped)
	require.Zero(t, ex.Forwarded)
	require.Equal(t, 1, bat.Depth)
	require.Equal(t, map[string]uint64{"rate_limit": n - 1}, bat.Dropped)
	require.Zero(t, bat.Forwarded)
}

// congestedSink is the server's sink on a socket that takes no byte: the
// transport waits wait_before_drop (1 ms) for room, then refuses
// (ErrCongested).
type congestedSink struct {
	mu    sync.Mutex
	calls int
}

func (s *congestedSink) SendExpress(bridge.Sample) error {
	time.Sleep(time.Millisecond)
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return bridge.ErrCongested
}
func (s *congestedSink) SendBatch([]bridge.Sample) error { return bridge.ErrCongested }
func (s *congestedSink) SendProbe(string, []byte) error  { return nil }

// A stalled device next to a healthy one: a burst on a critical route,
// published as the DDS path does (WaitExpressRoom, then Publish), reaches
// the healthy device complete and in order, and the ingress waits for the
// stalled device once, at the onset of the stall, and never again however
// many bursts follow: until its sink refuses a sample (1 ms, the
// transport's wait_before_drop), or, for a sink that never returns, until
// the call has lasted expressStall (5 ms). Before, every sample of a burst
// beyond the express depth waited the full 20 ms (320 ms for the onset
// burst of 20 here). What the stalled device cannot take is counted as
// congestion, exactly.
func TestStalledDeviceDoesNotDelayIngress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		onset time.Duration
	}{{"refusing", time.Millisecond}, {"blocked", 5 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGateway(t, testConfig(t, twoDevices), nil)
				var stuck bridge.DeviceSink
				blocked := &fakeSink{block: make(chan struct{})}
				refusing := &congestedSink{}
				if tc.name == "blocked" {
					stuck = blocked
				} else {
					stuck = refusing
				}
				good := &fakeSink{}
				ds, err := g.Attach(bridge.DeviceIdentity{ZID: "b2"}, stuck)
				require.NoError(t, err)
				dg, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, good)
				require.NoError(t, err)
				ds.DeclareSubscriber("cmd_vel")
				dg.DeclareSubscriber("cmd_vel")
				cmd := route(t, g, "/cmd_vel")
				seq := 0
				burst := func(k int) time.Duration {
					start := time.Now()
					for range k {
						g.WaitExpressRoom(cmd.Key, 20*time.Millisecond)
						g.Publish(cmd, bridge.Sample{Payload: []byte(fmt.Sprint(seq))})
						seq++
					}
					return time.Since(start)
				}
				burst(1)
				synctest.Wait() // the stuck device's lane is in its sink from now on
				require.Equal(t, tc.onset, burst(20), "onset: waited once")
				time.Sleep(10 * time.Millisecond)
				for range 5 {
					require.Zero(t, burst(20), "a stalled device is not waited for")
					time.Sleep(time.Millisecond)
				}
				synctest.Wait()
				ex := good.expressed()
				require.Len(t, ex, seq)
				for i, x := range ex {
					require.Equal(t, fmt.Sprint(i), x.pay)
				}
				gs := g.Devicez(bridge.DevicezOptions{Device: "arm"}).Devices[0].Lanes["express"]
				require.Empty(t, gs.Dropped, "the healthy device lost nothing")
				if tc.name == "blocked" {
					ss := g.Devicez(bridge.DevicezOptions{Device: "imu"}).Devices[0].Lanes["express"]
					require.Equal(t, bridge.DefaultExpressDepth, ss.Depth)
					require.Equal(t, map[string]uint64{"congestion": uint64(seq - 1 - bridge.DefaultExpressDepth)}, ss.Dropped)
					close(blocked.block)
					synctest.Wait()
					require.Len(t, blocked.expressed(), 1+bridge.DefaultExpressDepth)
					return
				}
				time.Sleep(time.Second) // the lane offers what it holds, each refused
				ss := g.Devicez(bridge.DevicezOptions{Device: "imu"}).Devices[0].Lanes["express"]
				require.Zero(t, ss.Depth)
				require.Zero(t, ss.Forwarded)
				require.Equal(t, map[string]uint64{"congestion": uint64(seq)}, ss.Dropped, "every sample: replaced or refused")
				refusing.mu.Lock()
				defer refusing.mu.Unlock()
				require.Less(t, refusing.calls, seq)
			})
		})
	}
}

// WaitExpressRoom takes its time from Options.Clock: with a TimerClock its
// bound is that clock's timer.
type timerClock struct {
	manualClock
	fire chan time.Time
	set  chan time.Duration
}

func (c *timerClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	c.set <- d
	return c.fire, func() bool { return true }
}

func TestWaitExpressRoomUsesTheGatewayClock(t *testing.T) {
	clock := &timerClock{manualClock: manualClock{t: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)},
		fire: make(chan time.Time), set: make(chan time.Duration, 1)}
	g, err := bridge.New(testConfig(t, twoDevices), bridge.Options{Catalog: catalog(t), Clock: clock})
	require.NoError(t, err)
	sink := &stalledSink{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	defer func() { require.NoError(t, g.Close()) }()
	defer close(sink.release)
	d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
	require.NoError(t, err)
	d.DeclareSubscriber("cmd_vel")
	cmd := route(t, g, "/cmd_vel")
	g.Publish(cmd, bridge.Sample{Payload: []byte("x")})
	sink.waitEntered(t, "express")
	for range bridge.DefaultExpressDepth {
		g.Publish(cmd, bridge.Sample{Payload: []byte("x")})
	}
	ret := make(chan bool, 1)
	go func() { ret <- g.WaitExpressRoom(cmd.Key, 20*time.Millisecond) }()
	guard := time.After(30 * time.Second)
	select {
	case d := <-clock.set:
		require.Equal(t, 5*time.Millisecond, d, "until the sink call counts as stalled")
	case <-guard:
		t.Fatal("no timer from the gateway's clock")
	}
	clock.mu.Lock()
	clock.t = clock.t.Add(5 * time.Millisecond)
	clock.mu.Unlock()
	clock.fire <- clock.Now()
	select {
	case ok := <-ret:
		require.True(t, ok, "a stalled device is not waited for")
	case <-guard:
		t.Fatal("WaitExpressRoom did not return")
	}
}
