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
//   - receive is event-driven: the read task's callback puts each sample
//     in its subscriber's ring as its batch arrives, and the application is
//     woken by it (or, with a spin period, takes the rings every period);
//   - frag_max_size: a fragmented message larger than it is dropped
//     (oversize_drops);
//   - subscriber_ring_depth: a sample arriving at a full ring is dropped,
//     drop-newest (ring_full_drops): more than the depth in one batch, or in
//     one spin period; a payload larger than the slot is dropped
//     (slot_drops);
//   - per_fd_tx_ceiling + socket_timeout_ms: a device send waits until the
//     read task's recv returns, on data or at the window (fdlock.go); the
//     window caps what the device sends, never what it receives;
//   - zenoh.tx.batch / flush_ms / split_lock and per-publisher express
//     (txpath.go).
//
// Per sample it records latency (delivery − ROS header stamp,
// ros2.HeaderStamp), the device's own receive share (delivery − callback),
// sequence order and gaps per source, and counts; Device.Stats returns a
// JSON-able snapshot. A Fleet runs N devices from a FleetConfig (YAML) or
// command-line specs (ParseDeviceSpec); cmd/devsim is its thin binary.
//
// # Goroutines
//
// Per device: the connect loop (which owns the transport session), the
// read task's recv model (per-fd platforms), the application loop, the
// flush thread (TX batching with a flush thread) and one goroutine per
// publication. Device.Stop (and Fleet.Stop) returns after all of them, and
// the session's, have exited. Lock order: txPath's TX mutex, then its link
// mutex, then Device.mu.
//
// It lives in sim/, the room for simulated hardware, beside sim/linkemu (the
// link emulator); it imports the probe protocol (package probe), never the
// gateway (docs/architecture.md).
package devsim
