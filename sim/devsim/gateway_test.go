package devsim

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// sessionSink is a minimal bridge.DeviceSink over one transport session:
// what the lead's zenohpath face adapter does (docs/bridge.md, Wiring).
type sessionSink struct{ s *transport.Session }

func (k sessionSink) send(key string, payload []byte, express, reliable bool) error {
	p := &wire.Push{WireExpr: wire.WireExpr{Suffix: key}, Body: &wire.Put{Payload: payload}}
	if express {
		p.HasQoS, p.QoS = true, wire.NewQoS(wire.PriorityRealTime, wire.CongestionDrop, true)
	}
	err := k.s.Send(p, transport.SendOptions{Reliable: reliable, Express: express})
	if errors.Is(err, transport.ErrQueueFull) {
		return bridge.ErrCongested
	}
	return err
}

func (k sessionSink) SendExpress(s bridge.Sample) error { return k.send(s.Key, s.Payload, true, true) }
func (k sessionSink) SendBatch(ss []bridge.Sample) error {
	for _, s := range ss {
		if err := k.send(s.Key, s.Payload, false, false); err != nil {
			return err
		}
	}
	return nil
}
func (k sessionSink) SendProbe(key string, p []byte) error { return k.send(key, p, true, false) }

// gatewayRouter is a router-role endpoint whose only job is to hand each
// device session to a picobridge gateway (bridge.Gateway) as its egress.
func gatewayRouter(t *testing.T, g *bridge.Gateway) string {
	t.Helper()
	var z [8]byte
	z[0] = 0x44
	var mu sync.Mutex
	devs := map[*transport.Session]*bridge.Device{}
	keys := map[*transport.Session]map[uint16]string{}
	ln, err := transport.Listen(context.Background(), "tcp/127.0.0.1:0",
		transport.Config{ZID: wire.MustZID(z[:]), FlushPeriod: 5 * time.Millisecond},
		func(s *transport.Session) transport.Handler {
			d, err := g.Attach(bridge.DeviceIdentity{ZID: s.PeerZID().Hex()}, sessionSink{s})
			if err != nil {
				return nil
			}
			mu.Lock()
			devs[s], keys[s] = d, map[uint16]string{}
			mu.Unlock()
			return transport.HandlerFuncs{
				Network: func(s *transport.Session, m wire.NetworkMessage) {
					mu.Lock()
					d, kt := devs[s], keys[s]
					mu.Unlock()
					switch m := m.(type) {
					case *wire.Declare:
						switch b := m.Body.(type) {
						case *wire.DeclareKeyExpr:
							kt[b.ID] = b.WireExpr.Suffix
						case *wire.DeclareSubscriber:
							d.DeclareSubscriber(kt[b.WireExpr.Scope] + b.WireExpr.Suffix)
						}
					case *wire.Push:
						if put, ok := m.Body.(*wire.Put); ok {
							_ = g.HandlePong(kt[m.WireExpr.Scope]+m.WireExpr.Suffix, put.Payload)
						}
					}
				},
				Close: func(s *transport.Session, _ error) {
					mu.Lock()
					d := devs[s]
					delete(devs, s)
					delete(keys, s)
					mu.Unlock()
					d.Detach()
				},
			}
		})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Endpoint()
}

// TestGatewayVsStockRouter: the same 500 Hz /scan stream reaches a
// native_sim device (ring 4, socket window 100 ms, woken on arrival) once
// through a stock Rust router and once through picobridge's gateway
// (bridge.Gateway, noncritical default route). Through the gateway nothing
// is lost inside the device. (Before issue 24 the simulator paced receive
// by the socket window and the stock router's stream piled up in front of
// the device; with event-driven receive, 64 B samples 2 ms apart arrive
// about one per batch and the device takes them all: what overruns a
// device is more than its ring in one batch, TestCapacityContract.)
func TestGatewayVsStockRouter(t *testing.T) {
	interop.FindPython(t)
	const rate, run = 500, 4 * time.Second
	victim := func(ep string) *Device {
		return startDevice(t, DeviceConfig{Name: "victim", Platform: "zephyr", Board: "native_sim",
			Subscriptions: []Subscription{{Key: "scan"}}}, ep)
	}

	// Stock: a device publishing stamped samples at 500 Hz through the Rust router.
	ep := rustRouter(t)
	stock := victim(ep)
	flooder := startDevice(t, DeviceConfig{Name: "flooder", Board: "linux-host",
		Publications: []Publication{{Key: "scan", RateHz: rate, Size: 64, Express: true}}}, ep)
	eventuallyScaled(t, 15*time.Second, "stream flowing", func() bool { return stock.Stats().Subscriptions["scan"].Received > 0 })
	eventuallyScaled(t, 3*run, "the measured run: rate × run samples published", func() bool {
		return flooder.Stats().Publications["scan"].Sent >= uint64(rate*run/time.Second)
	})
	flooder.Stop()
	s := stock.Stats().Subscriptions["scan"]

	// picobridge: the gateway shapes the same stream for the same device.
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	cfg, err := bridge.ParseConfig("gw.yaml", []byte(`
routes:
  default_criticality: noncritical
devices:
  list:
    - {name: victim, platform: zephyr, board: native_sim}
metrics: {listen: ""}
`))
	require.NoError(t, err)
	g, err := bridge.New(cfg, bridge.Options{Catalog: cat})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	g.Run()
	shaped := victim(gatewayRouter(t, g))
	route := g.RouteForKey("scan")
	eventuallyScaled(t, 15*time.Second, "device attached and subscribed", func() bool {
		return len(g.Devicez(bridge.DevicezOptions{}).Devices) == 1 && shaped.Stats().Connected
	})
	tk := time.NewTicker(time.Second / rate)
	deadline := time.Now().Add(run)
	for time.Now().Before(deadline) {
		<-tk.C
		g.Publish(route, bridge.Sample{Key: route.Key, Payload: buildSample(nil, time.Now(), "gw", 64), Time: time.Now()})
	}
	tk.Stop()
	// 10 Hz batched lane, 3 Hz once the classifier demotes the backlogged device.
	eventuallyScaled(t, 15*time.Second, "gateway samples delivered", func() bool { return shaped.Stats().Subscriptions["scan"].Delivered >= 8 })
	p := shaped.Stats().Subscriptions["scan"]

	t.Logf("stock Rust router: received %d delivered %d ring_full %d gaps %d latency p50 %.0f ms p99 %.0f ms",
		s.Received, s.Delivered, s.RingFullDrops, s.Gaps, s.Latency.P50, s.Latency.P99)
	t.Logf("picobridge gateway: received %d delivered %d ring_full %d gaps %d latency p50 %.0f ms p99 %.0f ms",
		p.Received, p.Delivered, p.RingFullDrops, p.Gaps, p.Latency.P50, p.Latency.P99)
	if dz, err := json.Marshal(g.Devicez(bridge.DevicezOptions{})); err == nil {
		t.Logf("gateway /devicez: %.1500s", dz)
	}
	require.Zero(t, p.RingFullDrops, "the gateway never overruns the device's ring")
	require.Zero(t, p.OversizeDrops)
	require.Zero(t, p.SlotDrops)
	require.Equal(t, s.Received, s.Delivered+s.RingFullDrops, "stock: every sample that reached the ring is accounted for")
}
