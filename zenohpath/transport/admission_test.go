package transport

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestAdmissionDelay: synthetic time. 100 sessions/s with a bucket of 10:
// ten at once, then one every 10 ms; an idle second refills the bucket.
func TestAdmissionDelay(t *testing.T) {
	a := newAdmission(100, 10)
	t0 := time.Unix(1000, 0)
	for i := range 10 {
		require.Zero(t, a.delay(t0), "token %d of the burst", i)
	}
	require.Equal(t, 10*time.Millisecond, a.delay(t0))
	require.Equal(t, 20*time.Millisecond, a.delay(t0))
	// At t0+20ms the two reserved tokens are spent: the next waits 10 ms.
	require.Equal(t, 10*time.Millisecond, a.delay(t0.Add(20*time.Millisecond)))
	t1 := t0.Add(2 * time.Second)
	for i := range 10 {
		require.Zero(t, a.delay(t1), "token %d after the refill", i)
	}
	require.Equal(t, 10*time.Millisecond, a.delay(t1))
}

func TestAdmissionDefaults(t *testing.T) {
	require.Nil(t, newAdmission(0, 5), "AdmitRate 0: not paced")
	var a *admission
	require.Zero(t, a.delay(time.Now()))
	require.Equal(t, 200, DefaultAdmitBurst(2000))
	require.Equal(t, 1, DefaultAdmitBurst(3))
	b := newAdmission(3, 0)
	t0 := time.Unix(0, 0)
	require.Zero(t, b.delay(t0))
	require.InDelta(t, float64(time.Second/3), float64(b.delay(t0)), float64(time.Microsecond))
}

// TestListenerAdmitRate: a Listener paced at 4 sessions/s with a bucket of
// 1 accepts three connections dialled at once: the first at once, the
// other two deferred (counted, with their waits); all three are handed to
// handshakes, none refused.
func TestListenerAdmitRate(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	cfg := testConfig()
	cfg.Metrics, cfg.AdmitRate, cfg.AdmitBurst = m, 4, 1
	ln, err := Listen(context.Background(), "tcp/127.0.0.1:0", cfg, func(*Session) Handler { return nopHandler{} })
	require.NoError(t, err)
	defer ln.Close()
	var cs []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		cs = append(cs, c)
	}
	defer func() {
		for _, c := range cs {
			_ = c.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln.mu.Lock()
		n := len(ln.links)
		ln.mu.Unlock()
		if n == 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "3 links in handshake, have %d", n)
		time.Sleep(5 * time.Millisecond)
	}
	require.EqualValues(t, 2, testutil.ToFloat64(m.deferred))
	// Waits of about 250 ms and 250 ms (each after the previous token).
	require.Greater(t, testutil.ToFloat64(m.deferWait), 0.2)
	require.EqualValues(t, 0, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsRefused)))
}
