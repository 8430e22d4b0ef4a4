package transport

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// logRecords is a slog.Handler that keeps every record.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

// matching returns the records whose message is msg, as attribute maps.
func (h *logRecords) matching(msg string) []map[string]slog.Value {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]slog.Value
	for _, r := range h.recs {
		if r.Message != msg {
			continue
		}
		m := map[string]slog.Value{}
		r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value; return true })
		out = append(out, m)
	}
	return out
}

const (
	hsFirstMsg   = "transport: handshake failed (further failures are summarised)"
	hsSummaryMsg = "transport: handshakes failed"
)

// TestHandshakeFailureLogSynctest pins the rate limiting with a fake clock:
// the first failure is logged at once, the next ones as one summary per
// interval, a quiet interval ends the series, and close logs what is
// pending.
func TestHandshakeFailureLogSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		m, err := NewMetrics(prometheus.NewRegistry())
		require.NoError(t, err)
		f := newHSFailures(slog.New(logs), m)
		boom := errors.New("boom")
		f.add(hsEOF, "a", boom)
		require.Len(t, logs.matching(hsFirstMsg), 1)
		for range 7 {
			f.add(hsTimeout, "b", boom)
		}
		f.add(hsEOF, "c", boom)
		time.Sleep(handshakeLogInterval - time.Millisecond)
		synctest.Wait()
		require.Empty(t, logs.matching(hsSummaryMsg), "nothing before the interval ends")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		sum := logs.matching(hsSummaryMsg)
		require.Len(t, sum, 1)
		require.EqualValues(t, 8, sum[0]["count"].Uint64())
		require.EqualValues(t, 7, sum[0][hsTimeout].Uint64())
		require.EqualValues(t, 1, sum[0][hsEOF].Uint64())
		require.EqualValues(t, 9, sum[0]["total"].Uint64())
		// A quiet interval: no line, and the series ends.
		time.Sleep(2 * handshakeLogInterval)
		synctest.Wait()
		require.Len(t, logs.matching(hsSummaryMsg), 1)
		f.add(hsRefused, "d", boom)
		require.Len(t, logs.matching(hsFirstMsg), 2, "a failure after a quiet interval is logged at once")
		f.add(hsRefused, "e", boom)
		f.close()
		sum = logs.matching(hsSummaryMsg)
		require.Len(t, sum, 2, "close logs what is pending")
		require.EqualValues(t, 1, sum[1][hsRefused].Uint64())
		require.EqualValues(t, 7, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsTimeout)))
		require.EqualValues(t, 2, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsEOF)))
		require.EqualValues(t, 2, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsRefused)))
	})
}

// TestHandshakeFlood floods a Listener on loopback with half-open
// connections (beyond MaxHandshakes: refused), garbage batches and lying
// length prefixes: every failure is counted under its reason, at most two
// log lines come out (the first failure and one summary), a half-open
// handshake holds no read buffer, and the memory is back after.
func TestHandshakeFlood(t *testing.T) {
	const (
		halfOpen = 50  // = MaxHandshakes
		refused  = 100 // while the half-open ones are pending
		garbage  = 100 // a batch that does not decode
		tooLarge = 100 // a length prefix over maxHandshakeBatch
	)
	logs := &logRecords{}
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	cfg := testConfig()
	cfg.MaxHandshakes = halfOpen
	cfg.OpenTimeout = time.Minute
	cfg.Logger = slog.New(logs)
	cfg.Metrics = m
	ln, err := Listen(context.Background(), "tcp/127.0.0.1:0", cfg, func(*Session) Handler { return nopHandler{} })
	require.NoError(t, err)
	defer ln.Close()
	pending := func() int {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		return len(ln.links)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timeout waiting for %s", what)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	failures := func(reason string) int { return int(testutil.ToFloat64(m.hsFailed.WithLabelValues(reason))) }
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		return c
	}
	// waitClosed reads until the Listener closes c.
	waitClosed := func(c net.Conn) {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, c) // EOF, or a reset when our bytes were left unread
		require.False(t, isTimeout(err), "the listener closes the connection")
		_ = c.Close()
	}

	base := memNow()
	g0 := runtime.NumGoroutine()
	held0 := rxHeld.Load()
	half := make([]net.Conn, 0, halfOpen)
	for range halfOpen {
		half = append(half, dial())
	}
	waitFor("half-open handshakes", func() bool { return pending() == halfOpen })
	held := memNow()
	require.Equal(t, held0, rxHeld.Load(), "a half-open handshake holds no read buffer")
	perHalfOpen := (float64(held.inuse) - float64(base.inuse)) / halfOpen
	for range refused {
		waitClosed(dial())
	}
	require.Equal(t, refused, failures(hsRefused))
	for _, c := range half {
		_ = c.Close()
	}
	waitFor("half-open failures", func() bool { return failures(hsEOF) == halfOpen })
	for range garbage {
		c := dial()
		_, err := c.Write([]byte{0x03, 0x00, 0xff, 0xff, 0xff})
		require.NoError(t, err)
		waitClosed(c)
	}
	for range tooLarge {
		c := dial()
		_, err := c.Write([]byte{0xff, 0xff, 0x01}) // 65535 bytes announced, 1 sent
		require.NoError(t, err)
		waitClosed(c)
	}
	waitFor("garbage failures", func() bool {
		return failures(ReasonDecodeError.String())+failures(ReasonInvalid.String()) == garbage && failures(hsTooLarge) == tooLarge
	})
	// A valid session still opens.
	dc := testConfig()
	dc.WhatAmI = wire.WhatAmIClient
	s, err := Dial(context.Background(), ln.Endpoint(), dc, nopHandler{})
	require.NoError(t, err)
	_ = s.Close(ReasonShutdown)
	<-s.Done()
	waitFor("sessions to end", func() bool { return len(ln.Sessions()) == 0 && runtime.NumGoroutine() <= g0 })
	after := memNow()
	require.NoError(t, ln.Close())

	total := halfOpen + refused + garbage + tooLarge
	first, sum := logs.matching(hsFirstMsg), logs.matching(hsSummaryMsg)
	require.Len(t, first, 1, "one detailed line")
	require.Len(t, sum, 1, "one summary line (the interval is longer than the test)")
	require.EqualValues(t, total-1, sum[0]["count"].Uint64())
	require.EqualValues(t, total, sum[0]["total"].Uint64())
	require.EqualValues(t, total, int(testutil.ToFloat64(m.closed.WithLabelValues(ReasonHandshake.String())))+refused)
	t.Logf("%d failed handshakes, %d log lines; %.0f B per half-open handshake (heap spans + stacks); live heap after: %+.0f B in all",
		total, len(first)+len(sum), perHalfOpen, float64(after.live)-float64(base.live))
	if !raceEnabled {
		require.Less(t, perHalfOpen, 12e3, "memory per half-open handshake")
		require.Less(t, float64(after.live)-float64(base.live), 128e3, "memory not returned after the flood")
	}
}
