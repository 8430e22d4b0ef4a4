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
//   - failures are logged rate-limited: the first one after a quiet
//     interval with its detail, the rest as one summary line per
//     handshakeLogInterval with counts by reason. All are counted in
//     picobridge_transport_handshake_failures_total{reason}.

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
// rate-limited. Safe for concurrent use.
type hsFailures struct {
	log   *slog.Logger
	m     *Metrics
	every time.Duration

	mu     sync.Mutex
	counts map[string]uint64 // since the last line
	total  uint64            // since the Listener started
	timer  *time.Timer       // non-nil while an interval is open
	closed bool
}

func newHSFailures(log *slog.Logger, m *Metrics) *hsFailures {
	return &hsFailures{log: log, m: m, every: handshakeLogInterval, counts: map[string]uint64{}}
}

// add records one failure. The first one after a quiet interval is logged
// at once (with remote and err), the others wait for the summary.
func (f *hsFailures) add(reason, remote string, err error) {
	f.m.handshakeFailed(reason)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total++
	if f.timer == nil && !f.closed {
		f.log.Info("transport: handshake failed (further failures are summarised)", "remote", remote, "reason", reason,
			"err", err, "summary_every", f.every)
		f.timer = time.AfterFunc(f.every, f.tick)
		return
	}
	f.counts[reason]++
}

// tick ends an interval: it logs the summary when there were failures
// (and opens the next interval), else the Listener is quiet again.
func (f *hsFailures) tick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flushLocked() && !f.closed {
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
	f.flushLocked()
}

// flushLocked logs and clears the counts; it reports whether there were any.
func (f *hsFailures) flushLocked() bool {
	if len(f.counts) == 0 {
		return false
	}
	var n uint64
	reasons := make([]string, 0, len(f.counts))
	for r, c := range f.counts {
		reasons = append(reasons, r)
		n += c
	}
	slices.Sort(reasons)
	attrs := make([]any, 0, 2*len(reasons)+6)
	attrs = append(attrs, "count", n, "interval", f.every, "total", f.total)
	for _, r := range reasons {
		attrs = append(attrs, r, f.counts[r])
	}
	f.log.Info("transport: handshakes failed", attrs...)
	clear(f.counts)
	return true
}
