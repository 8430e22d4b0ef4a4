package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/picobridge/picobridge/zenohpath/transport"
)

// defaultAdmitRate is the --admit-rate of `router` and `run`, in sessions
// per second (issue 29 item 1): a fleet of 10 000 devices that redials at
// once after a gateway restart is admitted in 5 s, half the 10 s lease
// (zenoh-pico's Z_TRANSPORT_LEASE), so every device is back within the
// lease; unpaced, the Go router opened 10 000 sessions in 1.9 s (≈ 5 000/s,
// docs/results/2026-12-01-egress-fleet.md) at the cost of the other
// sessions' forwarding while it did.
const defaultAdmitRate = 2000

// defaultHandshakeWait is --handshake-wait: a connection that finds every
// handshake slot (transport.DefaultMaxHandshakes) taken waits this long for
// one before it is refused. zenoh-pico waits 10 s for InitAck
// (Z_TRANSPORT_CONNECT_TIMEOUT) but retries a refused open only after 1 s:
// waiting up to that 1 s costs the device no more than a refusal would. At
// 1 000 devices on a loaded host, refusing at once refused 851 handshakes
// (docs/results/2026-12-03-fleet-faults.md).
const defaultHandshakeWait = time.Second

// admitOptions are --admit-rate and --admit-burst (transport.Config.AdmitRate,
// AdmitBurst; zenohpath/transport/admission.go).
type admitOptions struct {
	rate  float64
	burst int
	wait  time.Duration
}

func addAdmitFlags(f *pflag.FlagSet, o *admitOptions) {
	f.Float64Var(&o.rate, "admit-rate", defaultAdmitRate, "admit at most this many new TCP sessions per second; the rest wait their turn, counted in picobridge_transport_admission_deferred_total (0 = unpaced)")
	f.IntVar(&o.burst, "admit-burst", 0, "sessions admitted at once before --admit-rate paces them (0 = a tenth of a second's worth)")
	f.DurationVar(&o.wait, "handshake-wait", defaultHandshakeWait, "a connection that finds every handshake slot taken waits this long for one before it is refused (counted in picobridge_transport_admission_deferred_total{reason=\"handshakes\"}; 0 = refused at once)")
}

func (o admitOptions) validate() error {
	if o.rate < 0 {
		return fmt.Errorf("--admit-rate %v: must be ≥ 0", o.rate)
	}
	if o.burst < 0 {
		return fmt.Errorf("--admit-burst %d: must be ≥ 0", o.burst)
	}
	if o.wait < 0 {
		return fmt.Errorf("--handshake-wait %v: must be ≥ 0", o.wait)
	}
	return nil
}

// apply sets the pacing on c.
func (o admitOptions) apply(c *transport.Config) {
	c.AdmitRate, c.AdmitBurst, c.HandshakeWait = o.rate, o.burst, o.wait
}
