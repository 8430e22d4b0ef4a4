package transport

import (
	"time"

	"golang.org/x/time/rate"
)

// Admission pacing (issue 29 item 1): when a gateway restarts, every device
// of the fleet redials within a few seconds (zenoh-pico's reopen task tries
// once a second, docs/fleetbench.md "Reconnect storm"), and each accepted
// link costs a handshake goroutine, two buffers and a burst of
// declarations. With Config.AdmitRate set, a Listener's TCP accept loop
// takes one token per accepted connection from a bucket of AdmitRate
// tokens per second holding at most AdmitBurst: a connection that finds the
// bucket empty waits (it is "deferred"; the accept loop sleeps until the
// next token, so the links behind it wait in the kernel's listen backlog
// with their INIT unread) and is counted in
// picobridge_transport_admission_deferred_total{reason="rate"}, its wait
// added to picobridge_transport_admission_wait_seconds_total. Nothing is
// refused by the pacing itself. Config.MaxHandshakes still bounds the links
// in INIT/OPEN at a time; with Config.HandshakeWait a connection that finds
// them all taken waits up to that long for one to finish
// (deferred{reason="handshakes"}) before it is refused (counted in
// handshake_failures_total{reason="refused"}): on a loaded host a storm's
// handshakes last long enough that a refusal at once sent hundreds of
// devices into zenoh-pico's 1 s retry (docs/results/2026-12-03-fleet-faults.md).
// A backlog overflow is the kernel's (the client's SYN is retransmitted).
// UDP links are not paced.

// admission is the token bucket of Config.AdmitRate. A nil *admission
// admits everything at once.
type admission struct {
	lim *rate.Limiter
}

// newAdmission returns the pacing of perSec sessions per second with a
// bucket of burst (≥ 1; 0 = DefaultAdmitBurst(perSec)), or nil when perSec ≤ 0.
func newAdmission(perSec float64, burst int) *admission {
	if perSec <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = DefaultAdmitBurst(perSec)
	}
	return &admission{lim: rate.NewLimiter(rate.Limit(perSec), burst)}
}

// DefaultAdmitBurst is the bucket of an AdmitRate of perSec when
// Config.AdmitBurst is 0: a tenth of a second's worth, at least 1.
func DefaultAdmitBurst(perSec float64) int {
	return max(1, int(perSec/10))
}

// delay takes one token at now and returns how long the connection must
// wait for it (0: admitted at once).
func (a *admission) delay(now time.Time) time.Duration {
	if a == nil {
		return 0
	}
	return a.lim.ReserveN(now, 1).DelayFrom(now)
}
