package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startLoggedServer(t *testing.T, yaml string) (*Server, *syncBuf) {
	t.Helper()
	cfg, err := bridge.ParseConfig("test.yaml", []byte(yaml))
	require.NoError(t, err)
	noDefaultMetrics(cfg, yaml)
	var logs syncBuf
	s, err := Start(context.Background(), Options{Config: cfg, DisableDDS: true,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, &logs
}

// TestKnobAnnouncement: a listed device that announces other knobs than
// devices.list says gets the announced profile (provenance device), a
// warning per disagreeing knob, and /devicez says so.
func TestKnobAnnouncement(t *testing.T) {
	s, logs := startLoggedServer(t, `
zenoh:
  listen: [tcp/127.0.0.1:0]
devices:
  list:
    - {name: dev1, board: native_sim}
`)
	dev, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	defer dev.Close()
	_, err = DeclareProbeResponder(dev, "dev1")
	require.NoError(t, err)
	eventually(t, "device attached", func() bool { return s.Gateway().Device("dev1") != nil })
	before := s.Gateway().Devicez(bridge.DevicezOptions{Device: "dev1"}).Devices[0]
	require.Equal(t, "config", before.KnobSource)
	require.Equal(t, 2048, before.Capacity.MaxMessageBytes)

	cat := nativeSimResolved(t)
	a := knobs.AnnouncementOf(cat)
	a.BatchUnicastSize, a.FragMaxSize = 2048, 8192
	require.NoError(t, dev.Put(probe.KnobsKey("dev1"), a.Append(nil), nil))
	eventually(t, "profile from the announcement", func() bool {
		d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "dev1"}).Devices[0]
		return d.KnobSource == "device"
	})
	d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "dev1"}).Devices[0]
	require.Equal(t, []string{
		"zenoh.wire.batch_unicast_size: the device announced 2048, the configuration says 1024 (set by builtin)",
		"zenoh.wire.frag_max_size: the device announced 8192, the configuration says 2048 (set by builtin)",
	}, d.KnobDisagreements)
	require.Equal(t, 8192, d.Capacity.MaxMessageBytes)
	require.Equal(t, 2048, d.Capacity.BatchSize)
	require.Equal(t, "device dev1 (announced)", s.Gateway().Device("dev1").Resolved().Get(knobs.FragMaxSize).Source.String())
	require.Contains(t, logs.String(), `msg="device knobs disagree with devices.list: using what the device announced" part=bridge device=dev1`)
	require.Contains(t, logs.String(), `knob=zenoh.wire.frag_max_size announced=8192 configured=2048 configured_by=builtin`)

	// A bad payload is refused and changes nothing.
	require.NoError(t, dev.Put(probe.KnobsKey("dev1"), []byte{1, 3, 0}, nil))
	eventually(t, "refusal logged", func() bool { return strings.Contains(logs.String(), "knob announcement refused") })
	require.Equal(t, 8192, s.Gateway().Devicez(bridge.DevicezOptions{Device: "dev1"}).Devices[0].Capacity.MaxMessageBytes)
}

func nativeSimResolved(t *testing.T) *knobs.Resolved {
	t.Helper()
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	r, err := cat.Resolve(knobs.Options{Board: "native_sim"})
	require.NoError(t, err)
	return r
}

// TestOversizeFixUnknownDevice: an unlisted device that announces nothing
// gets devices.default; its first oversize drop says, in the log and in
// /devicez, which setting would fix it.
func TestOversizeFixUnknownDevice(t *testing.T) {
	s, logs := startLoggedServer(t, `
zenoh:
  listen: [tcp/127.0.0.1:0]
`)
	ctx := context.Background()
	dev, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	defer dev.Close()
	var got recorder
	_, err = dev.DeclareSubscriber("big", got.add)
	require.NoError(t, err)
	_, err = DeclareProbeResponder(dev, "stranger")
	require.NoError(t, err)
	eventually(t, "device attached with its subscription", func() bool {
		d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "stranger"})
		return len(d.Devices) == 1 && len(d.Devices[0].Subscriptions) == 1
	})
	plain, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	defer plain.Close()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, plain.Put("big", make([]byte, 3000), nil))
	want := `the device announced no knobs and has no devices.list entry, so it gets devices.default: zenoh.wire.frag_max_size 2048 (set by builtin) allows 2048 B messages, this one is 3019 B; if the device was built with a larger Z_FRAG_MAX_SIZE, give it a devices.list entry with its board (or devices.default.env: {NROS_ZENOH_FRAG_MAX_SIZE: "3019"}), or run the probe responder so it announces its knobs`
	eventually(t, "fix in /devicez", func() bool {
		return s.Gateway().Devicez(bridge.DevicezOptions{Device: "stranger"}).Devices[0].OversizeFix != ""
	})
	require.Equal(t, want, s.Gateway().Devicez(bridge.DevicezOptions{Device: "stranger"}).Devices[0].OversizeFix)
	require.Contains(t, logs.String(), "fix=")
	require.Contains(t, logs.String(), "reason=oversize")
	require.Empty(t, got.get())
}
