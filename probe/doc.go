// Package probe is the probe protocol between the gateway and a device's
// responder (docs/probe.md): the keys under @picobridge/probe/, the 32-byte
// ping/pong codec, the device's answer (Respond), and the window that turns
// settled probes into a mean RTT and a loss ratio.
//
// It is a leaf: it imports only the standard library. The gateway's
// classifier (package bridge) keeps the policy — which pings are pending,
// when one counts as lost, what part of a round trip is the gateway's own
// delay, hysteresis — and the simulator (sim/devsim), the test lane and the
// C responder's tests use the same codec and keys as the gateway.
//
// Files: message.go (the codec and Respond), keys.go (keys and the device
// name rule), window.go (RTT and loss over the last n probes).
package probe
