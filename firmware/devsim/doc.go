// Package devsim simulates fleets of zenoh-pico devices that obey their
// compile-time knobs, so that the demo, the evaluation runner and the
// end-to-end tests can show where a router overruns a device
// (architecture.md, "Microcontrollers are not small PCs"; invariants 3, 6).
//
// A Device is one zenoh-pico client: it resolves its knobs through the
// ladder (firmware.Catalog, knobs.Resolve: builtin < platform < board <
// env), dials a Zenoh router with transport.Dial in the client role with
// its batch_unicast_size, and behaves as pico does on the wire
// (zenoh-wire.md §12): DeclareKeyExpr + DeclareSubscriber per subscription,
// DeclareKeyExpr + an aggregated CurrentFuture INTEREST per publication,
// whose write filter stays closed until the router declares a matching
// subscriber; it answers the gateway's probes (docs/probe.md) and
// reconnects after a failure. What it obeys (Model, docs/devsim.md):
//
//   - frag_max_size: a fragmented message larger than it is dropped
//     (oversize_drops);
//   - subscriber_ring_depth: each subscriber has a ring the application
//     empties every drain interval; a full ring drops the newest sample
//     (ring_full_drops); a payload larger than the subscriber's slot is
//     dropped (slot_drops);
//   - per_fd_tx_ceiling + socket_timeout_ms: one batch read and one batch
//     sent per socket window cycle (window.go, relay.go);
//   - zenoh.tx.batch / flush_ms / split_lock and per-publisher express.
//
// Per sample it records latency (delivery − ROS header stamp,
// ros2.HeaderStamp), sequence order and gaps per source, and counts;
// Device.Stats returns a JSON-able snapshot. A Fleet runs N devices from
// a FleetConfig (YAML) or command-line specs (ParseDeviceSpec); cmd/devsim
// is its thin binary.
//
// # Goroutines
//
// Per device: the connect loop (which owns the transport session and, on
// per-fd platforms, the relay and its two copy goroutines), the window
// ticker (per-fd platforms), the application drain loop, the pong sender,
// the flush thread (TX batching with a flush thread) and one goroutine per
// publication. Device.Stop (and Fleet.Stop) returns after all of them, and
// the session's, have exited. Device.mu guards the counters and session
// tables; flushMu (no split lock) is taken before mu, never after.
package devsim
