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

// TestListenerAdmitRate: a Listener paced at 1 session/s with a bucket of
// 1 accepts three connections dialled at once: the first at once, the
// other two deferred (counted, with their waits of about 1 s each); all
// three are handed to handshakes, none refused. (At 4/s a loaded host
// spaced the dials by more than a token's 250 ms.)
func TestListenerAdmitRate(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	cfg := testConfig()
	cfg.Metrics, cfg.AdmitRate, cfg.AdmitBurst = m, 1, 1
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
	require.EqualValues(t, 2, testutil.ToFloat64(m.deferred.WithLabelValues(deferRate)))
	require.EqualValues(t, 0, testutil.ToFloat64(m.deferred.WithLabelValues(deferHandshakes)))
	// Waits of about 1 s each (each after the previous token).
	require.Greater(t, testutil.ToFloat64(m.deferWait), 1.0)
	require.EqualValues(t, 0, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsRefused)))
}

// TestListenerHandshakeWait: MaxHandshakes 1 and HandshakeWait 10 s. A
// second connection that arrives while a first one holds the only slot
// waits (not refused); when the first one closes, the second gets the slot.
// A third, with HandshakeWait 50 ms on another listener, is refused after
// its wait. Counted: deferred{handshakes} per wait, refused only for it.
func TestListenerHandshakeWait(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	cfg := testConfig()
	cfg.Metrics, cfg.MaxHandshakes, cfg.HandshakeWait = m, 1, 10*time.Second
	ln, err := Listen(context.Background(), "tcp/127.0.0.1:0", cfg, func(*Session) Handler { return nopHandler{} })
	require.NoError(t, err)
	defer ln.Close()
	links := func() int {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		return len(ln.links)
	}
	a, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return links() == 1 }, 10*time.Second, 2*time.Millisecond)
	b, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer b.Close()
	time.Sleep(50 * time.Millisecond)
	require.EqualValues(t, 0, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsRefused)), "b waits, not refused")
	require.NoError(t, a.Close()) // a's handshake ends (eof): b takes the slot
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.deferred.WithLabelValues(deferHandshakes)) == 1 && links() == 1
	}, 10*time.Second, 2*time.Millisecond)
	require.EqualValues(t, 0, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsRefused)))

	cfg.HandshakeWait = 50 * time.Millisecond
	ln2, err := Listen(context.Background(), "tcp/127.0.0.1:0", cfg, func(*Session) Handler { return nopHandler{} })
	require.NoError(t, err)
	defer ln2.Close()
	c, err := net.Dial("tcp", ln2.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool {
		ln2.mu.Lock()
		defer ln2.mu.Unlock()
		return len(ln2.links) == 1
	}, 10*time.Second, 2*time.Millisecond)
	d, err := net.Dial("tcp", ln2.Addr().String())
	require.NoError(t, err)
	defer d.Close()
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.hsFailed.WithLabelValues(hsRefused)) == 1 }, 10*time.Second, 2*time.Millisecond)
	require.EqualValues(t, 2, testutil.ToFloat64(m.deferred.WithLabelValues(deferHandshakes)), "d waited, then was refused")
}
