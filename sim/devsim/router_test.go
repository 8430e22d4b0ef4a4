package devsim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
)

// These tests run simulated devices against a router with Rust clients
// (eclipse-zenoh 1.10.2 via Python, internal/interop) publishing and
// subscribing, twice: with the real Rust router ("rust") and with
// picobridge's Go router, package zenohpath ("go"). They skip with a hint
// when Python Zenoh is missing (and fail in CI).

type routerKind struct {
	name  string
	start func(t *testing.T) string // returns the endpoint
}

var routers = []routerKind{{"rust", rustRouter}, {"go", goRouter}}

// forEachRouter runs f as a subtest per router.
func forEachRouter(t *testing.T, f func(t *testing.T, ep string)) {
	for _, r := range routers {
		t.Run(r.name, func(t *testing.T) { f(t, r.start(t)) })
	}
}

// rustRouter starts a Rust router and returns its endpoint.
func rustRouter(t *testing.T) string {
	t.Helper()
	interop.FindPython(t)
	ep := interop.FreeEndpoint(t)
	interop.StartReady(t, "router", "--listen", ep)
	return ep
}

// goRouter starts picobridge's Go router in-process.
func goRouter(t *testing.T) string {
	t.Helper()
	interop.FindPython(t)
	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return ln.Endpoint()
}

func eventuallyScaled(t *testing.T, nominal time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(interop.Scale(nominal))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", interop.Scale(nominal), what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRingOverflow: a Rust client floods a key; a native_sim device
// (ring depth 4, application spinning once a second) overflows its ring
// and counts it, while a device built with 65535-sized knobs (batch, frag,
// ring) loses nothing at a gentle rate.
func TestRingOverflow(t *testing.T) { forEachRouter(t, testRingOverflow) }

func testRingOverflow(t *testing.T, ep string) {
	slow := startDevice(t, DeviceConfig{Name: "slow", Platform: "zephyr", Board: "native_sim", Spin: time.Second,
		Subscriptions: []Subscription{{Key: "flood"}}}, ep)
	big := startDevice(t, DeviceConfig{Name: "big", Board: "linux-host",
		Env: map[string]string{"NROS_ZENOH_SUBSCRIBER_RING_DEPTH": "65535", "NROS_ZENOH_BATCH_UNICAST_SIZE": "65535",
			"NROS_ZENOH_FRAG_MAX_SIZE": "65535"},
		Subscriptions: []Subscription{{Key: "gentle"}}}, ep)
	require.Equal(t, 4, slow.Model().RingDepth)
	require.Equal(t, 65535, big.Model().RingDepth)

	interop.StartReady(t, "pub", "flood", "--connect", ep, "--rate", "1000", "--count", "20000", "--wait-matching", "--timeout", "20")
	interop.StartReady(t, "pub", "gentle", "--connect", ep, "--rate", "20", "--count", "40", "--wait-matching", "--timeout", "20")

	eventuallyScaled(t, 20*time.Second, "ring_full_drops on the slow device and 40 gentle samples on the big one", func() bool {
		return slow.Stats().Subscriptions["flood"].RingFullDrops > 0 && big.Stats().Subscriptions["gentle"].Delivered == 40
	})
	s, b := slow.Stats(), big.Stats()
	t.Logf("slow (native_sim, ring 4, spin 1 s): %+v rx_batches=%d", s.Subscriptions["flood"], s.RxBatches)
	t.Logf("big (65535 knobs): %+v", b.Subscriptions["gentle"])
	g := b.Subscriptions["gentle"]
	require.Zero(t, g.RingFullDrops)
	require.Zero(t, g.OversizeDrops)
	require.Zero(t, g.Gaps)
	require.Zero(t, g.OutOfOrder)
	require.EqualValues(t, 40, g.Received)
	f := s.Subscriptions["flood"]
	require.Zero(t, f.OutOfOrder)
	require.LessOrEqual(t, f.Received-f.Delivered-f.RingFullDrops, uint64(4), "the rest waits in the ring")
}

// TestOversize: through the router, a message larger than the
// device's frag_max_size (2048 on native_sim, arriving as fragments of its
// 1024-byte batch) is dropped and counted; a fragmented one below the bound
// is delivered.
func TestOversize(t *testing.T) { forEachRouter(t, testOversize) }

func testOversize(t *testing.T, ep string) {
	d := startDevice(t, DeviceConfig{Name: "frag", Platform: "zephyr", Board: "native_sim",
		Subscriptions: []Subscription{{Key: "big/**", Large: true}}}, ep)
	interop.StartReady(t, "pub", "big/large", "--connect", ep, "--size", "5000", "--count", "3", "--rate", "20", "--wait-matching", "--timeout", "20")
	interop.StartReady(t, "pub", "big/medium", "--connect", ep, "--size", "1500", "--count", "3", "--rate", "20", "--wait-matching", "--timeout", "20")
	eventuallyScaled(t, 20*time.Second, "3 oversize drops and 3 delivered", func() bool {
		s := d.Stats().Subscriptions["big/**"]
		return s.OversizeDrops == 3 && s.Delivered == 3
	})
	s := d.Stats()
	t.Logf("frag: %+v", s.Subscriptions["big/**"])
	require.Zero(t, s.Subscriptions["big/**"].SlotDrops)
	require.EqualValues(t, 3, s.Subscriptions["big/**"].Received)
}

// TestDevicePublishes: a device's publisher sends nothing while no
// subscriber matches (the router's answer to its aggregated INTEREST has
// no DeclareSubscriber); once a Rust subscriber appears the router declares
// it, the write filter opens and the Rust subscriber receives the device's
// samples. Another device subscribed to the same key measures latency from
// the ROS header stamps.
func TestDevicePublishes(t *testing.T) { forEachRouter(t, testDevicePublishes) }

func testDevicePublishes(t *testing.T, ep string) {
	pub := startDevice(t, DeviceConfig{Name: "z1", Platform: "zephyr", Board: "native_sim",
		Publications: []Publication{{Key: "tele/z1", RateHz: 20, Size: 64}}}, ep)
	eventuallyScaled(t, 15*time.Second, "filtered publications while nobody subscribes", func() bool {
		return pub.Stats().Publications["tele/z1"].Filtered >= 5
	})
	require.Zero(t, pub.Stats().Publications["tele/z1"].Sent)

	// The write filter opens once the subscriber's interest arrives; it may
	// close again as soon as the subscriber has its 10 samples and leaves
	// (the Go router relays the undeclaration within milliseconds), so the
	// check is on samples sent, not on Matched after the subscriber is done.
	sub := interop.StartReady(t, "sub", "tele/**", "--connect", ep, "--count", "10", "--timeout", "30")
	done := sub.WaitEvent("done", 30*time.Second)
	var sum interop.SubSummary
	require.NoError(t, done.Decode(&sum))
	require.True(t, sum.Complete, "the subscriber got its 10 samples: %s", done)
	require.GreaterOrEqual(t, pub.Stats().Publications["tele/z1"].Sent, uint64(10))

	host := startDevice(t, DeviceConfig{Name: "h1", Board: "linux-host",
		Subscriptions: []Subscription{{Key: "tele/*"}}}, ep)
	eventuallyScaled(t, 15*time.Second, "10 samples device to device", func() bool {
		return host.Stats().Subscriptions["tele/*"].Latency.Count >= 10
	})
	st := host.Stats().Subscriptions["tele/*"]
	t.Logf("device → router → device: %+v", st)
	require.Zero(t, st.OutOfOrder)
	require.Greater(t, st.Latency.P50, 0.0)
	require.Less(t, st.Latency.P50, 1000.0)
}

// TestReceiveNotPacedByWindow: under the same 1000 Hz flood, a native_sim
// device (per-socket lock, 100 ms socket window, woken on arrival) receives
// as many samples as a POSIX device: the window caps what a device sends,
// never what it receives (anchors.md §2.6); data ends its read task's recv.
func TestReceiveNotPacedByWindow(t *testing.T) { forEachRouter(t, testReceiveNotPacedByWindow) }

func testReceiveNotPacedByWindow(t *testing.T, ep string) {
	ring := map[string]string{"NROS_ZENOH_SUBSCRIBER_RING_DEPTH": "65535"}
	w100 := startDevice(t, DeviceConfig{Name: "w100", Platform: "zephyr", Board: "native_sim", Env: ring,
		Subscriptions: []Subscription{{Key: "flood"}}}, ep)
	host := startDevice(t, DeviceConfig{Name: "host", Board: "linux-host", Env: ring,
		Subscriptions: []Subscription{{Key: "flood"}}}, ep)
	require.Equal(t, 100*time.Millisecond, w100.Model().SocketWindow)
	require.True(t, w100.Model().PerFdLock)
	eventuallyScaled(t, 15*time.Second, "connected", func() bool { return w100.Stats().Connected && host.Stats().Connected })
	interop.StartReady(t, "pub", "flood", "--connect", ep, "--rate", "1000", "--count", "2000", "--wait-matching", "--timeout", "20")
	eventuallyScaled(t, 30*time.Second, "the flood delivered to both", func() bool {
		a, h := w100.Stats().Subscriptions["flood"], host.Stats().Subscriptions["flood"]
		return a.Delivered >= 1900 && h.Delivered >= 1900 && a.Delivered+a.RingFullDrops == a.Received
	})
	a, h := w100.Stats(), host.Stats()
	t.Logf("w100: %+v socket %+v rx_batches %d; host: %+v", a.Subscriptions["flood"], a.Socket, a.RxBatches, h.Subscriptions["flood"])
	require.Zero(t, a.Subscriptions["flood"].RingFullDrops)
	require.Greater(t, a.RxBatches, uint64(100), "far more batches than the 20-odd windows the flood lasts")
	require.Greater(t, a.Socket.RecvDataEnds, uint64(100), "data ended the read task's recv")
}

// TestRustRouterRestart: the Rust router is killed and started again on the
// same endpoint; the device reconnects (zenoh-pico auto-reconnect), declares
// its subscriber again and receives a Rust publisher's samples.
func TestRustRouterRestart(t *testing.T) {
	interop.FindPython(t)
	ep := interop.FreeEndpoint(t)
	r1 := interop.StartReady(t, "router", "--listen", ep)
	d := startDevice(t, DeviceConfig{Name: "rc", Platform: "zephyr", Board: "native_sim", ReconnectInterval: 200 * time.Millisecond,
		Subscriptions: []Subscription{{Key: "scan"}}}, ep)
	eventuallyScaled(t, 15*time.Second, "connected", func() bool { return d.Stats().Connected })
	r1.Kill()
	eventuallyScaled(t, 15*time.Second, "disconnected", func() bool { return !d.Stats().Connected })
	interop.StartReady(t, "router", "--listen", ep)
	eventuallyScaled(t, 20*time.Second, "reconnected", func() bool { st := d.Stats(); return st.Connected && st.Reconnects == 1 })
	interop.StartReady(t, "pub", "scan", "--connect", ep, "--rate", "20", "--count", "5", "--wait-matching", "--timeout", "20")
	eventuallyScaled(t, 20*time.Second, "samples after the restart", func() bool { return d.Stats().Subscriptions["scan"].Delivered == 5 })
}
