// Package linkemu emulates the impaired wireless link of one simulated
// device for the evaluation (evaluation.md, "Impairment profiles"), in
// user space and without privileges: a UDP or TCP proxy on loopback that
// the device connects to instead of the gateway. Only 127.0.0.0/8
// addresses are accepted.
//
// The pieces:
//
//   - GE and Channel: the Gilbert–Elliott loss chain, stepped once per
//     transmission, seeded (math/rand/v2 PCG, one stream per direction),
//     with ExpectedLoss = (r·loss_good + p·loss_bad)/(p + r).
//   - Jitter: one-way delay, a normal distribution truncated at 0.
//   - Bitrate and the shaper: serialization at the link rate behind a
//     bounded queue.
//   - Impairment and Profile: what each direction does; the profiles of
//     evaluation.md (clean, mild, moderate, strong) are embedded from
//     profiles.yaml (Profiles, LookupProfile). Toggle switches a proxy
//     between an impaired profile and clean at a fixed period.
//   - UDPProxy: every datagram is independently queued (drop when the
//     queue is full), lost or delayed; one upstream socket per client.
//   - TCPProxy: the stream is cut into packets (Zenoh batches by their u16
//     length prefix, or chunks); a lost packet is retransmitted when Linux
//     would notice the loss (RTOConfig.Repair: RACK about one round trip
//     after it left when later packets follow, a tail loss probe at
//     2·srtt, the RTO with Linux's formula and doubling as the last
//     resort; or the RTO every time) and holds everything behind it; delay
//     never reorders.
//   - Stats, Phase, Report: what the proxy actually did per direction
//     (packets, transmissions, losses, drops, retransmissions, bytes, added
//     delay), the profile timeline with counters at each switch, and the
//     produced loss next to the expected one. Metrics exports the same to
//     Prometheus.
//
// Both directions of a proxy are one link shared by all its connections or
// client mappings (the device has one radio): one chain, one transmitter
// per direction. The models take arrival times as arguments, so with the
// same seed and the same arrival sequence the decisions are the same.
//
// Goroutines are owned by the proxy (a WaitGroup that Close waits on):
// UDPProxy runs a listen-socket reader, one reader per client mapping and
// one delay line per direction; TCPProxy runs its accept loop and, per
// connection pair, one reader and one writer per direction plus the
// goroutine that waits for them.
//
// Lock order: core.mu before link.mu; delayLine.mu, UDPProxy.mu and
// TCPProxy.mu are leaves (nothing is locked while holding them).
//
// It lives in sim/, the room for simulated hardware, beside sim/devsim (the
// simulated devices) (docs/architecture.md).
package linkemu
