package bridge

import (
	"errors"
	"fmt"
	"log/slog"
)

// Errors of Device.AdmitRequest.
var (
	// ErrRequestSuspended: the supervisor suspended the request's lane
	// (DEGRADED: batched, EMERGENCY: both), as for samples (DropSuspended).
	ErrRequestSuspended = errors.New("bridge: lane suspended by the supervisor")
	// ErrRequestOversize: the request is larger than the device can
	// receive (knobs: frag_max_size, batch size), as for samples (DropOversize).
	ErrRequestOversize = errors.New("bridge: request larger than the device can receive")
)

// RequestOverhead is the conservative size of a query's header beyond its
// key and payload (request id, target, consolidation, the payload's
// encoding and length, an rmw_zenoh attachment of 33 bytes): what a
// request adds to MessageOverhead.
const RequestOverhead = 48

// AdmitRequest applies the device's per-route rules to one service request
// (a Zenoh query of payload bytes on key) toward a queryable of the device,
// the rules its lanes apply to samples (docs/services.md):
//
//   - the lane is the route's criticality's (Device.Lane: critical →
//     express, unless demoted; other → batched); the caller sends the
//     query with that lane's priority;
//   - a lane the supervisor suspended refuses it (ErrRequestSuspended);
//   - a request of payload + MessageOverhead(key) + RequestOverhead bytes
//     above the device's largest receivable message (knobs.Capacity
//     MaxMessageBytes: frag_max_size with fragmentation, else one batch)
//     is refused (ErrRequestOversize; zenoh-pico drops it silently,
//     zenoh-wire.md §4.7).
//
// A refusal is counted as a drop of that lane with the sample reason
// (picobridge_bridge_samples_dropped_total{reason="suspended"|"oversize"})
// and logged once per lane and reason; the error says the sizes.
func (d *Device) AdmitRequest(key string, payload int, c Criticality) (Lane, error) {
	now := d.g.clock.Now()
	lane := d.Lane(c)
	eg := d.egress()
	crit := c == Critical
	switch mode := d.g.sup.Mode(); {
	case mode == Emergency, mode == Degraded && lane == LaneBatched:
		eg.drop(lane, DropSuspended, 1, crit, now)
		eg.log.once(lane, DropSuspended, "service request refused: lane suspended by the supervisor", slog.String("mode", mode.String()))
		return lane, fmt.Errorf("%w (%s lane, mode %s)", ErrRequestSuspended, lane, mode)
	}
	size := payload + MessageOverhead(key) + RequestOverhead
	if max := eg.shape.MaxMessageBytes; size > max {
		eg.drop(lane, DropOversize, 1, crit, now)
		eg.log.once(lane, DropOversize, "service request larger than the device can receive",
			slog.String("key", key), slog.Int("bytes", size), slog.Int("max_bytes", max))
		return lane, fmt.Errorf("%w: %d bytes, device %s takes at most %d (knobs: zenoh.wire.frag_max_size / batch_unicast_size)",
			ErrRequestOversize, size, d.Name(), max)
	}
	return lane, nil
}
