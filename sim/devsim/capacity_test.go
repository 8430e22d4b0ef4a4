package devsim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// shapedSend sends burst samples every period for n periods, each burst in
// one FRAME (the fake router's transport coalesces within FlushPeriod).
func shapedSend(t *testing.T, s *transport.Session, key string, size, burst int, period time.Duration, n int) {
	t.Helper()
	tk := time.NewTicker(period)
	defer tk.Stop()
	var gid [16]byte
	seq := int64(0)
	for range n {
		<-tk.C
		for range burst {
			seq++
			now := time.Now()
			require.NoError(t, s.Send(pushTo(key, buildSample(nil, now, "gw", size), buildAttachment(nil, seq, now, gid)), transport.SendOptions{Reliable: true}))
		}
	}
}

func startShapingRouter(t *testing.T) *fakeRouter {
	t.Helper()
	r := &fakeRouter{t: t, pushes: map[uint16]int{}, msgs: make(chan wire.NetworkMessage, 4096), sess: make(chan *transport.Session, 8)}
	var z [8]byte
	z[0] = 0x43
	ln, err := transport.Listen(context.Background(), "tcp/127.0.0.1:0", transport.Config{ZID: wire.MustZID(z[:]), FlushPeriod: 10 * time.Millisecond},
		func(s *transport.Session) transport.Handler { r.sess <- s; return transport.HandlerFuncs{} })
	require.NoError(t, err)
	r.ln = ln
	t.Cleanup(func() { _ = ln.Close() })
	return r
}

// TestCapacityContract: what bounds sends to a device (anchors.md §2.6):
// a sender that puts at most RingDepth samples for one subscriber in one
// batch, each ≤ MaxSampleBytes, never overruns a device woken on arrival,
// however fast the batches come (here every 20 ms, five per socket window
// of native_sim); twice the ring in one batch does.
func TestCapacityContract(t *testing.T) {
	for _, tc := range []struct {
		name  string
		burst func(ring int) int
		drops bool
	}{
		{"ring per batch", func(ring int) int { return ring }, false},
		{"twice", func(ring int) int { return 2 * ring }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startShapingRouter(t)
			d := startDevice(t, DeviceConfig{Name: "cap", Board: "native_sim", Subscriptions: []Subscription{{Key: "scan"}}}, r.ln.Endpoint())
			s := r.session()
			eventually(t, "connected", func() bool { return d.Stats().Connected })
			m := d.Model()
			size := 60 // twice the ring (8 samples) fits one 1024 B batch
			burst := tc.burst(m.Capacity.RingDepth)
			shapedSend(t, s, "scan", size, burst, 20*time.Millisecond, 25)
			eventually(t, "everything received", func() bool {
				st := d.Stats().Subscriptions["scan"]
				return st.Received == uint64(25*burst) && st.Delivered+st.RingFullDrops == st.Received
			})
			st := d.Stats().Subscriptions["scan"]
			t.Logf("burst %d every 20 ms: %+v", burst, st)
			if tc.drops {
				require.Greater(t, st.RingFullDrops, uint64(0))
			} else {
				require.Zero(t, st.RingFullDrops)
				require.Zero(t, st.Gaps)
			}
		})
	}
}
