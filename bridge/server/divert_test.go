package server

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

// slowSink takes wait per SendExpress (synthetic time): a device's express
// lane that runs late, as on a busy host, but keeps up (under expressStall).
type slowSink struct {
	wait time.Duration
	mu   sync.Mutex
	got  []string
}

func (s *slowSink) SendExpress(x bridge.Sample) error {
	time.Sleep(s.wait)
	s.mu.Lock()
	s.got = append(s.got, string(x.Payload))
	s.mu.Unlock()
	return nil
}
func (s *slowSink) SendBatch([]bridge.Sample) error { return nil }
func (s *slowSink) SendProbe(string, []byte) error  { return nil }

func (s *slowSink) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func divertGateway(t *testing.T, yaml string) *bridge.Gateway {
	t.Helper()
	cfg, err := bridge.ParseConfig("test.yaml", []byte(yaml))
	require.NoError(t, err)
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	g, err := bridge.New(cfg, bridge.Options{Catalog: cat})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// blockSink's SendExpress blocks until release is closed: a stalled device.
type blockSink struct {
	slowSink
	release chan struct{}
}

func (s *blockSink) SendExpress(x bridge.Sample) error {
	<-s.release
	return s.slowSink.SendExpress(x)
}

// The router hands a device's divert the samples of one batch received
// from upstream back to back. A burst of 10 samples of a critical route
// (more than the express depth, 4) reaching a device whose express lane
// takes 3 ms per sample (keeping up, under expressStall) arrives complete
// and in order: the divert waits for room in the lane instead of dropping
// the oldest (before: 5 or 6 of the 10 dropped as congestion; issue 29).
// The ingress waits exactly one lane send per sample beyond the depth. A
// noncritical route never waits; a stalled device is waited for once, for
// expressStall (5 ms), and what it cannot take is counted as congestion.
func TestLaneDivertWaitsForExpressRoom(t *testing.T) {
	const yaml = `
routes:
  critical: ["/fleet/fan"]
`
	burst := func(divert func(string, []byte) bool, key string) time.Duration {
		start := time.Now()
		for i := range 10 {
			require.True(t, divert(key, []byte(fmt.Sprint(i))))
		}
		return time.Since(start)
	}
	t.Run("keeping up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := divertGateway(t, yaml)
			sink := &slowSink{wait: 3 * time.Millisecond}
			dev, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
			require.NoError(t, err)
			dev.DeclareSubscriber("fleet/fan")
			dev.DeclareSubscriber("bulk")
			divert := laneDivert(g, dev, &expressPacer{})
			took := burst(divert, "fleet/fan")
			time.Sleep(time.Second)
			synctest.Wait()
			st := g.Devicez(bridge.DevicezOptions{}).Devices[0]
			require.Empty(t, st.CriticalDropped)
			want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
			require.Equal(t, want, sink.received(), "every sample, in order")
			require.Equal(t, uint64(10), st.CriticalForwarded)
			require.Equal(t, 15*time.Millisecond, took, "samples 4..9 wait for the sends of 0..5")
			require.Zero(t, burst(divert, "bulk"), "a noncritical route does not wait")
			require.False(t, divert("@/x/ping", nil), "verbatim keys stay plain")
		})
	})
	t.Run("stalled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := divertGateway(t, yaml)
			sink := &blockSink{release: make(chan struct{})}
			dev, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
			require.NoError(t, err)
			dev.DeclareSubscriber("fleet/fan")
			divert := laneDivert(g, dev, &expressPacer{})
			took := burst(divert, "fleet/fan")
			close(sink.release)
			synctest.Wait()
			require.Equal(t, []string{"0", "6", "7", "8", "9"}, sink.received(), "keep-latest")
			st := g.Devicez(bridge.DevicezOptions{}).Devices[0]
			require.Equal(t, map[string]uint64{"congestion": 5}, st.CriticalDropped)
			require.Equal(t, 5*time.Millisecond, took, "waited once, until the send of 0 reached expressStall")
		})
	})
}

// A face's send errors map to the lanes' sentinels: a full queue is
// congestion, a closed session (transport or router) is ErrDeviceClosed
// (counted as closed, no supervisor error), anything else stays an error.
func TestSinkErrMapping(t *testing.T) {
	require.ErrorIs(t, sinkErr(fmt.Errorf("%w: x", zenohpath.ErrFaceQueueFull)), bridge.ErrCongested)
	for _, err := range []error{transport.ErrClosed, zenohpath.ErrClosed, fmt.Errorf("send: %w", transport.ErrClosed)} {
		got := sinkErr(err)
		require.ErrorIs(t, got, bridge.ErrDeviceClosed)
		require.ErrorIs(t, got, err, "the cause is kept")
	}
	other := errors.New("encode failed")
	require.Equal(t, other, sinkErr(other))
	require.NoError(t, sinkErr(nil))
}

// The diverts of one sample's fan-out share expressDrainWait: the router
// hands every device face the same payload slice, so what the first device
// face waited is taken from the next one's budget; another sample gets a
// budget of its own; a sample that reuses the address within the window
// gets what is left, never more; an empty payload cannot be told apart and
// gets the whole budget.
func TestExpressPacer(t *testing.T) {
	var p expressPacer
	t0 := time.Unix(100, 0)
	a, b := []byte("a"), []byte("b")
	require.Equal(t, 20*time.Millisecond, p.left(a, t0))
	require.Equal(t, 8*time.Millisecond, p.left(a, t0.Add(12*time.Millisecond)), "the same sample, the next device")
	require.Equal(t, -5*time.Millisecond, p.left(a, t0.Add(25*time.Millisecond)), "its budget is spent")
	require.Equal(t, 20*time.Millisecond, p.left(b, t0.Add(25*time.Millisecond)), "another sample")
	require.Equal(t, 20*time.Millisecond, p.left(b[:1:1], t0.Add(66*time.Millisecond)), "the same address after the window: a new sample")
	require.Equal(t, 20*time.Millisecond, p.left(nil, t0.Add(70*time.Millisecond)))
}
