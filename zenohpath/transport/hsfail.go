package transport

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"
)

// A Listener's handshakes are the one place where anyone on the network can
// make the gateway spend memory and log lines without being a session, so
// both are bounded (issue 17 item 5):
//   - at most Config.MaxHandshakes links are in INIT/OPEN at a time; a
//     connection beyond that is closed at once and counted (refused);
//   - before INIT is validated a stream link accepts batches of at most
//     maxHandshakeBatch bytes, checked on the length prefix before any
//     buffer is taken (too_large), and holds no buffer while it waits;
//   - failures are logged rate-limited per cause (reason): a cause's first
//     failure after a quiet interval at once with its remote and error, the
//     rest as one summary line per cause and handshakeLogInterval with its
//     count, its total and its last remote and error, so that no cause
//     (a client's TLS error) is hidden behind another (a scanner's eof).
//     All are counted in picobridge_transport_handshake_failures_total{reason}.

// maxHandshakeBatch bounds a batch received by the accepting side during
// INIT/OPEN, in bytes of content: an InitSyn or OpenSyn with every
// extension Zenoh 1.x defines (auth, multilink public keys, QoS, shm,
// compression, patch) fits in well under 1 KB.
const maxHandshakeBatch = 4 << 10

// handshakeLogInterval is how often a Listener logs the summary of its
// failed handshakes while they keep failing.
const handshakeLogInterval = 10 * time.Second

// Handshake failure reasons (a closed set: the metrics label).
const (
	hsTimeout  = "timeout"   // OpenTimeout expired
	hsEOF      = "eof"       // the peer closed the connection
	hsTooLarge = "too_large" // a batch over maxHandshakeBatch
	hsRefused  = "refused"   // MaxHandshakes links were already in handshake
	hsTLS      = "tls"       // the TLS handshake failed (bad or missing client certificate, ...)
)

// handshakeFailReason names why a handshake failed: hsTimeout, hsEOF,
// hsTooLarge, or the CloseReason of the *HandshakeError (invalid,
// decode_error, remote_close, connection_to_self, link_error, handshake).
func handshakeFailReason(err error) string {
	switch {
	case isTimeout(err):
		return hsTimeout
	case errors.Is(err, errTLSHandshake):
		return hsTLS
	case errors.Is(err, errBatchTooLarge):
		return hsTooLarge
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.Is(err, errLinkClosed):
		return hsEOF
	}
	var he *HandshakeError
	if errors.As(err, &he) {
		return he.Reason.String()
	}
	return ReasonHandshake.String()
}

// hsFailures counts a Listener's failed handshakes and logs them
// rate-limited per cause. Safe for concurrent use.
type hsFailures struct {
	log   *slog.Logger
	m     *Metrics
	every time.Duration

	mu     sync.Mutex
	causes map[string]*hsCause
	timer  *time.Timer // non-nil while some cause's series is open
	closed bool
}

// hsCause is one reason's series of failures.
type hsCause struct {
	active     bool   // its first failure was logged; its series is open
	pending    uint64 // failures since its last line
	total      uint64 // since the Listener started
	lastRemote string
	lastErr    error
}

func newHSFailures(log *slog.Logger, m *Metrics) *hsFailures {
	return &hsFailures{log: log, m: m, every: handshakeLogInterval, causes: map[string]*hsCause{}}
}

// add records one failure. A cause's first failure after a quiet interval
// is logged at once (with remote and err); its others wait for the
// summary.
func (f *hsFailures) add(reason, remote string, err error) {
	f.m.handshakeFailed(reason)
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.causes[reason]
	if c == nil {
		c = &hsCause{}
		f.causes[reason] = c // reasons are a closed set: the map stays small
	}
	c.total++
	if !c.active && !f.closed {
		c.active = true
		f.log.Info("transport: handshake failed (further failures of this cause are summarised)", "remote", remote, "reason", reason,
			"err", err, "summary_every", f.every)
		if f.timer == nil {
			f.timer = time.AfterFunc(f.every, f.tick)
		}
		return
	}
	c.pending++
	c.lastRemote, c.lastErr = remote, err
}

// tick ends an interval: one summary line per cause that failed in it; a
// cause that did not is quiet again (its next failure is logged at once).
// The next interval opens while some cause's series is open.
func (f *hsFailures) tick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	open := false
	for _, r := range f.reasonsLocked() {
		c := f.causes[r]
		if f.flushLocked(r, c) {
			open = true
		} else {
			c.active = false
		}
	}
	if open && !f.closed {
		f.timer.Reset(f.every)
		return
	}
	f.timer = nil
}

// close stops the timer and logs what is pending.
func (f *hsFailures) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.timer != nil {
		f.timer.Stop()
	}
	for _, r := range f.reasonsLocked() {
		f.flushLocked(r, f.causes[r])
	}
}

func (f *hsFailures) reasonsLocked() []string {
	rs := make([]string, 0, len(f.causes))
	for r := range f.causes {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	return rs
}

// flushLocked logs cause c's summary line and clears its count; it reports
// whether there was anything to log.
func (f *hsFailures) flushLocked(reason string, c *hsCause) bool {
	if c.pending == 0 {
		return false
	}
	f.log.Info("transport: handshakes failed", "reason", reason, "count", c.pending, "interval", f.every, "total", c.total,
		"last_remote", c.lastRemote, "last_err", c.lastErr)
	c.pending, c.lastRemote, c.lastErr = 0, "", nil
	return true
}
