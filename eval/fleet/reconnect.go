package fleet

import (
	"math/rand/v2"
	"time"
)

// PicoReconnect is zenoh-pico's client auto-reconnect (Z_FEATURE_AUTO_RECONNECT=1), which
// the load generator's sessions follow in a storm (FLEETBENCH_RECONNECT=pico). Source:
// github.com/eclipse-zenoh/zenoh-pico at 0ffe44a (2026-07-01):
//
//   - Noticing the loss. The read task does not: _z_unicast_client_read
//     (src/transport/unicast/read.c) treats a recv that returns nothing, a closed socket
//     included, as "nothing to read". The keep-alive task (_zp_unicast_keep_alive_task_fn,
//     src/transport/unicast/lease.c) sends a KEEP_ALIVE every lease /
//     Z_TRANSPORT_LEASE_EXPIRE_FACTOR (10 s / 3) when nothing else was sent, and the lease
//     task closes the session when nothing was received for a lease. After the gateway's
//     socket is gone, the first send is accepted by the kernel and answered by a reset; the
//     next one fails and starts the reopen task. So a device that only subscribes notices
//     one to two keep-alive periods after the gateway went away, at the phase of its own
//     keep-alive timer: that phase, uniform over a fleet, is the storm's only jitter —
//     zenoh-pico adds none of its own.
//   - Reopening. _z_client_reopen_task_fn (src/net/session.c) calls _z_open; with the
//     default Z_CONFIG_CONNECT_TIMEOUT "0" that is a single attempt (_z_backoff_sleep
//     returns at once for a 0 timeout; with a timeout > 0 it retries inside _z_open,
//     100 ms doubling to 1000 ms, include/zenoh-pico/utils/sleep.h). A retryable failure
//     (_Z_ERR_TRANSPORT_OPEN_FAILED, a refused connect) wakes the task again after
//     1000 ms, forever. The handshake waits up to Z_TRANSPORT_CONNECT_TIMEOUT (10 s) for
//     InitAck and OpenAck (src/transport/unicast/transport.c), so a gateway that paces its
//     admissions is waited for.
//   - After an open, every declaration is sent again
//     (_z_interest_resend_client_declarations).
//
// Jitter adds a uniform [0, Jitter) to every retry interval: 0 for zenoh-pico as it is;
// a fleet whose firmware randomises its retries can be modelled with it.
type PicoReconnect struct {
	Lease        time.Duration // Z_TRANSPORT_LEASE: 10 s
	ExpireFactor int           // Z_TRANSPORT_LEASE_EXPIRE_FACTOR: 3
	Retry        time.Duration // the reopen task's wake-up after a failed open: 1 s
	Jitter       time.Duration // extra uniform [0, Jitter) per retry; 0 in zenoh-pico
}

// DefaultPicoReconnect is zenoh-pico's default build (CMakeLists.txt: Z_TRANSPORT_LEASE
// 10000, Z_TRANSPORT_LEASE_EXPIRE_FACTOR 3; session.c: 1000 ms between reopens).
var DefaultPicoReconnect = PicoReconnect{Lease: 10 * time.Second, ExpireFactor: 3, Retry: time.Second}

// KeepAlivePeriod is lease / ExpireFactor (3.33 s by default).
func (m PicoReconnect) KeepAlivePeriod() time.Duration {
	return m.Lease / time.Duration(max(m.ExpireFactor, 1))
}

// Detect returns when a device whose keep-alive timer fires at phase·period (phase in
// [0, 1)) past every multiple of the period notices a session lost at lost (both times
// on one clock, since an arbitrary epoch): its first keep-alive after lost is sent into
// the reset, the second one fails. The lease task (nothing received for a lease) is
// later for every phase with the default factor 3, and is not modelled.
func (m PicoReconnect) Detect(lost time.Duration, phase float64) time.Duration {
	p := m.KeepAlivePeriod()
	off := time.Duration(phase * float64(p))
	// First tick at or after lost: off + k·p ≥ lost.
	k := (lost - off + p - 1) / p
	if lost <= off {
		k = 0
	}
	first := off + k*p
	return first + p
}

// RetryAfter is the wait after the n-th failed open (n ≥ 1): Retry plus the jitter r draws.
func (m PicoReconnect) RetryAfter(r *rand.Rand) time.Duration {
	d := m.Retry
	if m.Jitter > 0 && r != nil {
		d += time.Duration(r.Int64N(int64(m.Jitter)))
	}
	return d
}
