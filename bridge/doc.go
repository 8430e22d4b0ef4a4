// Package bridge is picobridge's policy core: it sits between the DDS side
// (package ddspath) and the Zenoh router (package zenohpath) and decides,
// per zenoh-pico device, what is sent, on which lane, how fast, and what is
// dropped and why. A device's two lanes are the mission's critical express
// path (LaneExpress) and batched noncritical path (LaneBatched); they have
// nothing to do with the CI test lane (package testlane, docs/lane.md). It knows nothing of the wire: the lead adapts the router
// and DDS to the small interfaces declared here.
//
// The pieces (one file each):
//
//   - config.go, configdecode.go, default.yaml: the YAML configuration,
//     strict, decoded through yaml.Node so that every problem names file,
//     line, column and key (invariant 5); DefaultConfig, LoadConfig,
//     Validate, Override for flags.
//   - routes.go: allow/deny and criticality of ROS topics, topic ⇄ key
//     (plain as zenoh-bridge-ros2dds, or rmw_zenoh), KeyIncludes.
//   - egress.go: a device's two lanes. Express (critical routes): each
//     sample to the sink at once, a FIFO of at most policy.express.depth
//     (≤ ring depth) samples per key while the device is busy, keep-latest
//     (oldest dropped) when it cannot keep up, never paced by the device's
//     socket window (invariant 9). Batched (noncritical):
//     token bucket per key, keep-latest, stale-drop, at most ring depth per
//     subscription per flush window (a wildcard covers all its keys),
//     flushed on the gateway's cadence (policy.batched.flush_interval). Nothing larger than the device can
//     receive. Every drop has a reason (invariant 2); drops of critical
//     routes are also counted apart and logged rate-limited (critLogger).
//   - budget.go: a device link's
//     byte budget (policy.link) shared by both lanes, express first, with a
//     model of the bytes the gateway itself has in the link (self delay).
//   - sched.go: the scheduler that serves every device's lanes (units, a
//     ready FIFO, a few workers, one timer heap): no goroutine per device.
//   - replay.go, expressdrain.go, wait.go: the data path's only waits,
//     outside Publish (Device.Replay of TRANSIENT_LOCAL history,
//     Gateway.WaitExpressRoom for a DDS burst): on notifications from the
//     lanes and the supervisor and on timers from Options.Clock, never a poll.
//   - health.go: the gateway-health guard (wake-up lag, CPU steal, load):
//     readings the gateway's own lag explains are not applied.
//   - classifier.go: per-device classifier (Adaptive Bridge paper): the
//     policy over the probe protocol, whose keys, codec and RTT/loss window
//     are package probe (probekeys.go forwards a few names until item 3 of
//     docs/architecture.md).
//   - supervisor.go: NORMAL / DEGRADED / EMERGENCY with hysteresis.
//   - gateway.go: Gateway and Device: attach/detach, subscriptions,
//     Publish (ingress, never blocks), probes, evaluations.
//   - metrics.go, status.go: Prometheus collector, /devicez, /healthz.
//   - tcpinfo*.go: the passive TCP_INFO signal on Linux.
//
// What the lead implements: DeviceSink per zenoh-pico session (SendExpress,
// SendBatch, SendProbe; optionally TCPInfoSource, TxBacklogSource,
// TxRateSetter), and the
// calls Gateway.Attach / Device.Detach on session open/close,
// Device.DeclareSubscriber / UndeclareSubscriber on declarations (a
// subscription to probe.PingKey(name) announces the device's name),
// Gateway.HandlePong for publications on probe.PongSubscription, and
// Gateway.Publish for every sample from DDS (Routes.Resolve at discovery)
// or upstream Zenoh (Gateway.RouteForKey) toward devices.
//
// Goroutines (convention 12): Gateway.Run starts one housekeeping goroutine
// (probes, classifier and supervisor ticks, the wake-up lag meter); the
// first Attach starts the lanes' scheduler (max(4, 2×GOMAXPROCS) workers
// and a timer goroutine), whatever the number of devices. All start
// through goOwned and are counted in the gateway's WaitGroup; Device.Detach
// stops a device's two units, Gateway.Close stops all and waits. goleak
// (main_test.go) checks none survive.
//
// Lock order: Gateway.mu, then Device.mu, then a lane's mutex (express and
// batched are independent, never held together), then the send or link
// budget's, then a Classifier's or the Supervisor's mutex. A Classifier's transition callback runs under the
// classifier's mutex and only counts and logs.
//
// Time: every decision takes the time as an argument (lanes, classifier,
// supervisor) or from Options.Clock, so policy tests are deterministic;
// tests of the running gateway use testing/synctest. No test asserts a
// latency figure measured on the wall clock.
package bridge
