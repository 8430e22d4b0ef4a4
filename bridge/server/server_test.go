package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/zenohpath"
)

func startTestServer(t *testing.T, yaml string) *Server {
	t.Helper()
	cfg, err := bridge.ParseConfig("test.yaml", []byte(yaml))
	require.NoError(t, err)
	noDefaultMetrics(cfg, yaml)
	s, err := Start(context.Background(), Options{Config: cfg, DisableDDS: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// noDefaultMetrics turns the metrics listener off unless the test's YAML
// sets one: the default 127.0.0.1:9464 may be held by another test or
// process on the host (a gateway that cannot bind it fails to start).
func noDefaultMetrics(cfg *bridge.Config, yaml string) {
	if !strings.Contains(yaml, "metrics:") {
		cfg.Metrics.Listen = ""
	}
}

type recorder struct {
	mu   sync.Mutex
	keys []string
}

func (r *recorder) add(s zenohpath.Sample) {
	r.mu.Lock()
	r.keys = append(r.keys, s.KeyExpr()+"="+string(s.Payload()))
	r.mu.Unlock()
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 10*time.Millisecond, what)
}

// A device (probe responder) gets bridge samples through its lanes, a
// plain client through the router, each exactly once; probes reach the
// device and its pongs reach the classifier; /devicez, /healthz, /routez
// and /metrics answer.
func TestDevicesAndPlainClients(t *testing.T) {
	s := startTestServer(t, `
zenoh:
  listen: [tcp/127.0.0.1:0]
routes:
  critical: ["/fast"]
classifier:
  probe_interval: 20ms
  window: 10
  min_samples: 10
  evaluation_interval: 50ms
  consecutive: 1
metrics:
  listen: 127.0.0.1:0
`)
	ep := s.Endpoints()[0]
	ctx := context.Background()
	dev, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	require.NoError(t, err)
	defer dev.Close()
	plain, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	require.NoError(t, err)
	defer plain.Close()
	var devGot, plainGot recorder
	_, err = dev.DeclareSubscriber("**", devGot.add)
	require.NoError(t, err)
	_, err = plain.DeclareSubscriber("fast", plainGot.add)
	require.NoError(t, err)
	_, err = DeclareProbeResponder(dev, "dev1")
	require.NoError(t, err)
	eventually(t, "device attached", func() bool { return s.Gateway().Device("dev1") != nil })
	eventually(t, "device subscriptions known", func() bool {
		d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "dev1"})
		return len(d.Devices) == 1 && len(d.Devices[0].Subscriptions) == 1
	})
	eventually(t, "device classified critical by its pongs", func() bool {
		d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "dev1"})
		return len(d.Devices) == 1 && d.Devices[0].Classifier.Reading.Replies > 0 && d.Devices[0].Classifier.Class == bridge.ClassCritical
	})
	eventually(t, "plain subscription routed", func() bool { return len(s.Router().Faces()) == 4 })
	time.Sleep(100 * time.Millisecond) // the plain client's declaration reaches the router

	b := &ddsBridge{s: s}
	route, ok := s.Gateway().Routes().Resolve("/fast", "std_msgs/msg/String", "")
	require.True(t, ok)
	require.Equal(t, "fast", route.Key)
	r := &outRoute{route: route}
	opts := &zenohpath.PutOptions{Express: true}
	for i := range 5 {
		b.forward(r, &ddspath.Sample{CDR: []byte{0, 1, 0, 0, byte('0' + i)}, ReceivedAt: time.Now()}, opts)
		time.Sleep(20 * time.Millisecond)
	}
	want := []string{"fast=\x00\x01\x00\x000", "fast=\x00\x01\x00\x001", "fast=\x00\x01\x00\x002", "fast=\x00\x01\x00\x003", "fast=\x00\x01\x00\x004"}
	eventually(t, "both got 5", func() bool { return len(devGot.get()) >= 5 && len(plainGot.get()) >= 5 })
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, want, devGot.get(), "device: once each, in order (express lane)")
	require.Equal(t, want, plainGot.get(), "plain client: once each, in order")
	d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "dev1"}).Devices[0]
	require.Equal(t, uint64(5), d.Lanes["express"].Forwarded)
	require.Equal(t, uint64(5), r.samples.Load())

	// Samples from another face (a plain client) reach the device through
	// its lanes too: "fast" (critical) on the express lane, "other" batched.
	for i := range 3 {
		require.NoError(t, plain.Put("fast", []byte{byte('a' + i)}, nil))
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, plain.Put("other", []byte("o"), nil))
	eventually(t, "device got the client's samples", func() bool { return len(devGot.get()) == 9 })
	require.Equal(t, []string{"fast=a", "fast=b", "fast=c", "other=o"}, devGot.get()[5:])
	d = s.Gateway().Devicez(bridge.DevicezOptions{Device: "dev1"}).Devices[0]
	require.Equal(t, uint64(8), d.Lanes["express"].Forwarded)
	require.Equal(t, uint64(1), d.Lanes["batched"].Forwarded)

	base := "http://" + s.HTTPAddr()
	for _, p := range []string{bridge.PathHealthz, bridge.PathDevicez, PathRoutez, bridge.PathMetrics} {
		resp, err := http.Get(base + p)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
	}
	resp, err := http.Get(base + bridge.PathMetrics)
	require.NoError(t, err)
	var sb strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	for _, m := range []string{"picobridge_dds_samples_total", "picobridge_router_faces", bridge.MetricForwarded, "picobridge_router_device_faces 1"} {
		require.Contains(t, sb.String(), m)
	}
	var rz RoutezResponse
	resp, err = http.Get(base + PathRoutez)
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&rz))
	resp.Body.Close()
	require.False(t, rz.DDS)

	// The device leaves: detached, the plain client still served.
	require.NoError(t, dev.Close())
	eventually(t, "device detached", func() bool { return s.Gateway().Device("dev1") == nil })
	b.forward(r, &ddspath.Sample{CDR: []byte{0, 1, 0, 0, 'x'}}, opts)
	eventually(t, "plain got the last one", func() bool { return len(plainGot.get()) == 9 }) // 5 + its own 3 (local delivery) + 1
}

// A face whose zid is listed in devices.list is a device from the start.
func TestDeviceByZID(t *testing.T) {
	s := startTestServer(t, `
zenoh:
  listen: [tcp/127.0.0.1:0]
devices:
  list:
    - {name: byzid, zid: "1234abcd", platform: generic}
metrics:
  listen: ""
`)
	zid, err := ParseZID("1234abcd")
	require.NoError(t, err)
	require.Equal(t, "1234abcd", zid.String())
	c, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{s.Endpoints()[0]}, ZID: zid})
	require.NoError(t, err)
	defer c.Close()
	eventually(t, "device attached by zid", func() bool { return s.Gateway().Device("byzid") != nil })
}

func TestZIDHexEvenLength(t *testing.T) {
	z, err := ParseZID("9cb8131389c7cb3b698b640e05f5c63")
	require.NoError(t, err)
	require.Equal(t, "09cb8131389c7cb3b698b640e05f5c63", zidHex(z))
	z, err = ParseZID("1234abcd")
	require.NoError(t, err)
	require.Equal(t, "1234abcd", zidHex(z))
}

// A device over UDP is observed and served like one over TCP.
func TestDeviceOverUDP(t *testing.T) {
	s := startTestServer(t, `
zenoh:
  listen: [udp/127.0.0.1:0]
classifier:
  probe_interval: 20ms
metrics:
  listen: ""
`)
	ep := s.Endpoints()[0]
	require.True(t, strings.HasPrefix(ep, "udp/"), ep)
	dev, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{ep}})
	require.NoError(t, err)
	defer dev.Close()
	var got recorder
	_, err = dev.DeclareSubscriber("udp/**", got.add)
	require.NoError(t, err)
	_, err = DeclareProbeResponder(dev, "udpdev")
	require.NoError(t, err)
	eventually(t, "device attached", func() bool { return s.Gateway().Device("udpdev") != nil })
	eventually(t, "probes answered", func() bool {
		d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "udpdev"})
		return len(d.Devices) == 1 && d.Devices[0].Classifier.Reading.Replies > 0
	})
	eventually(t, "subscription known", func() bool {
		d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "udpdev"})
		return len(d.Devices) == 1 && len(d.Devices[0].Subscriptions) == 1
	})
	b := &ddsBridge{s: s}
	route, _ := s.Gateway().Routes().Resolve("/udp/x", "std_msgs/msg/String", "")
	b.forward(&outRoute{route: route}, &ddspath.Sample{CDR: []byte{0, 1, 0, 0, 'u'}}, &zenohpath.PutOptions{})
	eventually(t, "sample through the batched lane", func() bool { return len(got.get()) == 1 })
}

// With AttachAllClients a client without responder is a device at once.
func TestAttachAllClients(t *testing.T) {
	cfg, err := bridge.ParseConfig("test.yaml", []byte("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\n"))
	require.NoError(t, err)
	s, err := Start(context.Background(), Options{Config: cfg, DisableDDS: true, AttachAllClients: true})
	require.NoError(t, err)
	defer s.Close()
	c, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	defer c.Close()
	eventually(t, "client attached as a device", func() bool { return len(s.Gateway().Devices()) == 1 })
	require.True(t, strings.HasPrefix(s.Gateway().Devices()[0].Name(), "zid-"))
	_, err = DeclareProbeResponder(c, "named")
	require.NoError(t, err)
	eventually(t, "renamed by its responder", func() bool { return s.Gateway().Device("named") != nil })
}
