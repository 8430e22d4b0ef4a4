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
	hsFirstMsg   = "transport: handshake failed (further failures of this cause are summarised)"
	hsSummaryMsg = "transport: handshakes failed"
)

// TestHandshakeFailureCauseNotHidden: a failure of another cause is logged
// at once with its error even while an earlier cause's interval is open
// (before, the first failure of any cause silenced the others' errors for
// 10 s: a port scanner's eof hid a client's TLS error; docs/security.md
// promises the TLS error).
func TestHandshakeFailureCauseNotHidden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		m, err := NewMetrics(prometheus.NewRegistry())
		require.NoError(t, err)
		f := newHSFailures(slog.New(logs), m)
		f.add(hsEOF, "scanner", io.EOF)
		tlsErr := errors.New("tls: certificate signed by unknown authority")
		f.add(hsTLS, "client", tlsErr)
		first := logs.matching(hsFirstMsg)
		require.Len(t, first, 2)
		require.Equal(t, hsTLS, first[1]["reason"].String())
		require.Equal(t, "client", first[1]["remote"].String())
		require.Equal(t, tlsErr, first[1]["err"].Any())
		f.close()
	})
}

// TestHandshakeFailureLogSynctest pins the rate limiting with a fake clock:
// per cause (reason), the first failure is logged at once with its remote
// and error, the next ones as one summary line per interval with their
// count, the cause's total and its last remote and error; a quiet interval
// ends a cause's series, and close logs what is pending.
func TestHandshakeFailureLogSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		m, err := NewMetrics(prometheus.NewRegistry())
		require.NoError(t, err)
		f := newHSFailures(slog.New(logs), m)
		boom, late := errors.New("boom"), errors.New("late")
		f.add(hsEOF, "a", boom)
		require.Len(t, logs.matching(hsFirstMsg), 1)
		for range 6 {
			f.add(hsTimeout, "b", boom)
		}
		f.add(hsTimeout, "b2", late)
		f.add(hsEOF, "c", late)
		first := logs.matching(hsFirstMsg)
		require.Len(t, first, 2, "one line at once per cause")
		require.Equal(t, []string{hsEOF, hsTimeout}, []string{first[0]["reason"].String(), first[1]["reason"].String()})
		time.Sleep(handshakeLogInterval - time.Millisecond)
		synctest.Wait()
		require.Empty(t, logs.matching(hsSummaryMsg), "nothing before the interval ends")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		sum := logs.matching(hsSummaryMsg)
		require.Len(t, sum, 2, "one summary line per cause")
		require.Equal(t, hsEOF, sum[0]["reason"].String())
		require.EqualValues(t, 1, sum[0]["count"].Uint64())
		require.EqualValues(t, 2, sum[0]["total"].Uint64())
		require.Equal(t, "c", sum[0]["last_remote"].String())
		require.Equal(t, late, sum[0]["last_err"].Any())
		require.Equal(t, hsTimeout, sum[1]["reason"].String())
		require.EqualValues(t, 6, sum[1]["count"].Uint64())
		require.EqualValues(t, 7, sum[1]["total"].Uint64())
		require.Equal(t, "b2", sum[1]["last_remote"].String())
		// more timeouts, no eof: the next summary has the timeout line only
		f.add(hsTimeout, "b3", boom)
		time.Sleep(handshakeLogInterval)
		synctest.Wait()
		sum = logs.matching(hsSummaryMsg)
		require.Len(t, sum, 3)
		require.Equal(t, hsTimeout, sum[2]["reason"].String())
		require.EqualValues(t, 8, sum[2]["total"].Uint64())
		// eof was quiet for an interval: its next failure is logged at once
		f.add(hsEOF, "d", boom)
		require.Len(t, logs.matching(hsFirstMsg), 3)
		// quiet intervals: no line, and every series ends
		time.Sleep(3 * handshakeLogInterval)
		synctest.Wait()
		require.Len(t, logs.matching(hsSummaryMsg), 3)
		f.add(hsRefused, "e", boom)
		f.add(hsTimeout, "f", boom)
		require.Len(t, logs.matching(hsFirstMsg), 5, "after a quiet interval each cause is logged at once")
		f.add(hsRefused, "g", boom)
		f.close()
		sum = logs.matching(hsSummaryMsg)
		require.Len(t, sum, 4, "close logs what is pending")
		require.Equal(t, hsRefused, sum[3]["reason"].String())
		require.EqualValues(t, 1, sum[3]["count"].Uint64())
		require.EqualValues(t, 9, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsTimeout)))
		require.EqualValues(t, 3, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsEOF)))
		require.EqualValues(t, 2, testutil.ToFloat64(m.hsFailed.WithLabelValues(hsRefused)))
	})
}

// TestHandshakeFlood floods a Listener on loopback with half-open
// connections (beyond MaxHandshakes: refused), garbage batches and lying
// length prefixes: every failure is counted under its reason, at most two
// log lines per cause come out (its first failure and one summary), a half-open
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
	// per cause: one detailed line, then (the interval is longer than the
	// test) one summary line at close with the rest
	first, sum := logs.matching(hsFirstMsg), logs.matching(hsSummaryMsg)
	byCause := map[string]uint64{}
	for _, l := range first {
		require.Zero(t, byCause[l["reason"].String()], "one detailed line per cause")
		byCause[l["reason"].String()]++
	}
	require.LessOrEqual(t, len(sum), len(first))
	for _, l := range sum {
		r := l["reason"].String()
		require.EqualValues(t, 1, byCause[r], "a summary follows its cause's detailed line")
		byCause[r] += l["count"].Uint64()
		require.EqualValues(t, byCause[r], l["total"].Uint64())
	}
	var logged uint64
	for r, n := range byCause {
		require.EqualValues(t, n, failures(r), r)
		logged += n
	}
	require.EqualValues(t, total, logged)
	require.LessOrEqual(t, len(first)+len(sum), 10, "a flood of %d logs a few lines", total)
	require.EqualValues(t, total, int(testutil.ToFloat64(m.closed.WithLabelValues(ReasonHandshake.String())))+refused)
	t.Logf("%d failed handshakes, %d log lines; %.0f B per half-open handshake (heap spans + stacks); live heap after: %+.0f B in all",
		total, len(first)+len(sum), perHalfOpen, float64(after.live)-float64(base.live))
	if !raceEnabled {
		require.Less(t, perHalfOpen, 12e3, "memory per half-open handshake")
		require.Less(t, float64(after.live)-float64(base.live), 128e3, "memory not returned after the flood")
	}
}
