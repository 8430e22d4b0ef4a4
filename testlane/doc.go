// Package testlane is picobridge's test lane for one CI job (docs/lane.md): a
// Zenoh router that a zenoh-pico device under test (a Zephyr native_sim
// image, a POSIX build, a devsim device) connects to, and that checks the
// device's behaviour on the wire against its resolved knobs (package knobs:
// builtin < platform < board < env) and a small expectations file.
//
// The device connects to a tap (tap.go) that forwards every byte to a
// zenohpath router and parses the batch framing in both directions
// (zenoh-wire.md §3.1) into a Recorder (observe.go): the INIT batch size,
// the OPEN lease, every batch's size, time and content (keep-alives,
// PUSHes, FRAGMENTs), the declarations. The checks (checks.go) judge it:
//
//	session        the INIT batch size is zenoh.wire.batch_unicast_size
//	lease          the OPEN lease is zenoh.link.lease_ms
//	keepalive      never silent longer than lease / lease_expire_factor (+ tolerance)
//	declarations   the expected keys are declared
//	sends          publications within the knob-derived ceiling: one send per
//	               socket window (per_fd_tx_ceiling), one partial batch per
//	               flush (TX batching), one PUSH per batch (no TX batching)
//	batch_size     no batch above the negotiated size, either direction
//	fragmentation  fragments only with zenoh.wire.fragmentation, none over frag_max_size
//	probes         the probe responder answers (docs/probe.md)
//	fault[i] kind  the recovery expected after an injected fault
//	device_exit    the device command's exit status
//
// Run returns a Report; WriteSummary and WriteJUnit render it. Every
// timeout comes from the expectations file: nothing scales with load.
//
// Goroutines: the tap's accept loop and two pumps per link, the router's,
// one prober, one per fault, and the device command's waiter; Run returns
// after all of them ended.
//
// "Test lane" is a CI job, nothing else: the gateway's two egress paths per
// device (the critical express path and the batched noncritical path, type
// bridge.Lane) are another thing that code and metrics also call lanes
// (docs/architecture.md, "Words"). The package was lane/ until issue 26.
package testlane
