// Package egress is the egress benchmark of issue 10 item 6: small critical samples beside
// bulk on a slow link, a link overloaded by large samples, and an overloaded device next to
// a healthy one. Each scenario runs once per system — `picobridge router`, `picobridge run`
// (the gateway, Zenoh side only) and the stock Rust Zenoh router (eclipse-zenoh in router
// mode through eval/zbench's zbench.py) — every one a child process started from a binary
// path, so the same runner measures an old build and a new one. Publishers and devices are
// Go zenohpath client sessions in the runner's process; a device's link can go through
// sim/linkemu (in the runner's process) at a given bit rate. Latency is receive time − the
// send time written into the payload, both from this host's clock. See docs/egressbench.md.
package egress

import (
	"fmt"
	"strings"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/sim/linkemu"
	"github.com/picobridge/picobridge/zenohpath"
)

// System is a system under test (benchkit.System).
type System = benchkit.System

// The systems: `picobridge router`; `picobridge run --no-dds` with a generated
// configuration (devices.list, routes.critical for the critical streams, the device lanes);
// the stock Rust router.
const (
	GoRouter   = benchkit.GoRouter
	Gateway    = benchkit.Gateway
	RustRouter = benchkit.RustRouter
)

// Stream is one publication: a Go zenohpath publisher putting Size-byte payloads on Key at
// RateHz, each carrying its sequence number and send time.
type Stream struct {
	Name       string // row label, e.g. "48 B express"
	Key        string // key expression (plain key style: ROS name "/"+Key)
	Size       int    // payload bytes (≥ PayloadHeader)
	RateHz     float64
	Express    bool
	Priority   zenohpath.Priority
	BestEffort bool
	Block      bool // congestion control BLOCK (else DROP)
	// Critical marks the route critical on the gateway (routes.critical), i.e. the
	// device's express lane; the others take the batched lane.
	Critical bool
	// Group, when set, merges this stream's rows with the other streams of the same group
	// (sent, delivered and latencies summed over them), e.g. ten bulk keys as one row.
	Group string
}

// Device is a subscriber device: a Go zenohpath client session with the probe responder
// (server.DeclareProbeResponder, so the gateway knows it by Name) and one subscriber per
// Subs entry (key expressions, wildcards allowed).
type Device struct {
	Name     string
	Impaired bool // connects through linkemu at the scenario's Link rate
	Subs     []string
	// Env: knob overrides of its devices.list entry on the gateway (docs/knobs.md names).
	Env map[string]string
	// LinkBudget: the devices.list entry tells the gateway the impaired link's rate
	// (link_bytes_per_s = Link/8, the operator's configured budget of issue 10 item 2).
	// Builds before that key existed refuse it, so Scale.LinkBudget turns it on.
	LinkBudget bool
}

// Scenario is one row group of the table.
type Scenario struct {
	ID, Title string
	Duration  time.Duration // publishing time
	// Settle is how long the gateway's classifier may take to leave UNKNOWN for every
	// device before publishing starts (at most; 0: 2 s).
	Settle time.Duration
	// Drain bounds the wait for in-flight samples after publishing stops (0: 10 s).
	Drain time.Duration
	// Link is the impaired devices' rate in bit/s, both directions (0: unlimited).
	Link linkemu.Bitrate
	// LinkQueue is linkemu's per-direction queue in bytes (0: Options.LinkQueue).
	LinkQueue int
	// StepTo, when set, is the impaired devices' rate from StepAt after publishing
	// started (issue 30: a rate step 100 → 10 Mbit/s mid-run); rows then report the
	// p99 of the samples sent from StepAt + StepGrace on (Row.P99AfterStep; without a
	// step, from LearnGrace on).
	StepTo    linkemu.Bitrate
	StepAt    time.Duration
	StepGrace time.Duration
	Streams   []Stream
	Devices   []Device
	Systems   []System
	// Gateway YAML laid over the generated one (policy, classifier, ...), optional.
	GatewayYAML string
	// Targets are checked per row (see Target).
	Targets []Target
}

// Target is a pass/fail goal of one row kind.
type Target struct {
	Stream, Device string // which rows ("" = any)
	System         System // "" = every system
	Text           string // as printed, e.g. "p99 ≤ 5 ms"
	Check          func(r Row) bool
}

// Scale shrinks the standard scenarios for smoke runs and tests.
type Scale struct {
	// Duration overrides each scenario's publishing time (0: the issue's: a 20 s, b 60 s,
	// c 180 s).
	A, B, C time.Duration
	// SizeDiv divides every payload size (1 = the sizes), RateDiv every rate, and
	// LinkDiv the link rates, so a CI run keeps the ratios (overload stays overload).
	SizeDiv, RateDiv, LinkDiv float64
	// LinkBudget configures the impaired devices' link budget for `picobridge
	// run` (Device.LinkBudget; needs a build with devices.list[].link_bytes_per_s).
	LinkBudget bool
	// D and E override the publishing time of scenarios d and e (0: 20 s).
	D, E time.Duration
}

func (s Scale) dur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func div(x, d float64) float64 {
	if d <= 0 {
		return x
	}
	return x / d
}

// bigDevice: a posix-class device whose reassembly and ring fit the scenarios' messages
// (the generic platform's 2048-byte frag_max_size would make the gateway drop them as
// oversize, which is not what these scenarios measure).
var bigDevice = map[string]string{"NROS_ZENOH_FRAG_MAX_SIZE": "4194304", "NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE": "4194304", "NROS_ZENOH_SUBSCRIBER_RING_DEPTH": "16"}

// Standard returns the scenarios of issue 10 item 6 (a)–(c), scaled.
func Standard(sc Scale) []Scenario {
	size := func(n int) int { return max(int(div(float64(n), sc.SizeDiv)), PayloadHeader) }
	rate := func(hz float64) float64 { return div(hz, sc.RateDiv) }
	link := func(bps float64) linkemu.Bitrate { return linkemu.Bitrate(div(bps, sc.LinkDiv)) }
	p99le := func(ms float64) func(Row) bool { return func(r Row) bool { return r.Delivered > 0 && r.P99 <= ms } }
	a := Scenario{
		ID: "a", Title: "48 B express + 1 MB bulk, 100 Mbit/s",
		Duration: sc.dur(sc.A, 20*time.Second), Link: link(100e6),
		Streams: []Stream{
			{Name: "48 B express", Key: "bench/small", Size: 48, RateHz: rate(50), Express: true,
				Priority: zenohpath.PriorityRealTime, Block: true, Critical: true},
			{Name: "1 MB bulk", Key: "bench/bulk", Size: size(1_000_000), RateHz: rate(10),
				Priority: zenohpath.PriorityData, BestEffort: true},
		},
		Devices: []Device{{Name: "dev", Impaired: true, Subs: []string{"bench/small", "bench/bulk"}, Env: bigDevice, LinkBudget: sc.LinkBudget}},
		Systems: []System{GoRouter, Gateway, RustRouter},
		Targets: []Target{{Stream: "48 B express", Text: "p99 ≤ 5 ms", Check: p99le(5)},
			{Stream: "1 MB bulk", Text: "delivered > 0", Check: func(r Row) bool { return r.Delivered > 0 }}},
	}
	b := Scenario{
		ID: "b", Title: "200 kB at 50 Hz into 20 Mbit/s",
		Duration: sc.dur(sc.B, 60*time.Second), Link: link(20e6),
		Streams: []Stream{{Name: "200 kB", Key: "bench/big", Size: size(200_000), RateHz: rate(50),
			Priority: zenohpath.PriorityData, Critical: true}},
		Devices: []Device{{Name: "dev", Impaired: true, Subs: []string{"bench/big"}, Env: bigDevice}},
		Systems: []System{GoRouter, Gateway, RustRouter},
		Targets: []Target{{Text: "RSS growth ≤ 20 MB, p99 ≤ 1 s, drops counted", Check: func(r Row) bool {
			counted := r.Lost == 0 || (r.DropsKnown && r.Drops > 0)
			return r.RSSGrowth <= 20e6 && r.Delivered > 0 && r.P99 <= 1000 && counted
		}}},
	}
	bulkKeys := make([]Stream, 0, 11)
	bulkKeys = append(bulkKeys, Stream{Name: "critical 1.5 kB", Key: "bench/crit", Size: size(1500), RateHz: rate(30),
		Express: true, Priority: zenohpath.PriorityRealTime, Block: true, Critical: true})
	for i := range 10 {
		bulkKeys = append(bulkKeys, Stream{Name: fmt.Sprintf("bulk %d", i), Key: fmt.Sprintf("bench/bulk/%d", i),
			Size: size(5000), RateHz: rate(10), Priority: zenohpath.PriorityData, BestEffort: true,
			Group: "bulk 10 keys × 5 kB"})
	}
	c := Scenario{
		ID: "c", Title: "overloaded device A (2 Mbit/s) + healthy device B",
		Duration: sc.dur(sc.C, 180*time.Second), Settle: 15 * time.Second, Drain: 5 * time.Second, Link: link(2e6),
		Streams: bulkKeys,
		Devices: []Device{
			{Name: "A", Impaired: true, Subs: []string{"bench/crit", "bench/bulk/**"}, Env: bigDevice, LinkBudget: sc.LinkBudget},
			{Name: "B", Subs: []string{"bench/crit", "bench/bulk/**"}, Env: bigDevice},
		},
		Systems: []System{Gateway},
		Targets: []Target{
			{Stream: "critical 1.5 kB", Device: "A", Text: "delivered ≥ 99 %, p99 ≤ 100 ms, ≤ 1 class change",
				Check: func(r Row) bool {
					return r.Sent > 0 && float64(r.Delivered) >= 0.99*float64(r.Sent) && r.P99 <= 100 && r.ClassChanges <= 1
				}},
			{Stream: "critical 1.5 kB", Device: "B", Text: "delivered 100 %", Check: func(r Row) bool { return r.Sent > 0 && r.Delivered == r.Sent }},
		},
	}
	// d and e (issue 30): a on a 10 Mbit/s link with 100 kB bulk, and a with a rate step
	// 100 → 10 Mbit/s at the middle of the run (bulk stays 1 MB: after the step it
	// overloads the link 8×, as a real link that slows down would be). The bottleneck
	// queue is the 256 KiB. "…b" variants tell the gateway the (initial) rate.
	q256 := 256 << 10
	d := a
	d.ID, d.Title = "d", "48 B express + 100 kB bulk, 10 Mbit/s"
	d.Duration, d.Link, d.LinkQueue = sc.dur(sc.D, 20*time.Second), link(10e6), q256
	d.Streams = []Stream{a.Streams[0], a.Streams[1]}
	d.Streams[1].Name, d.Streams[1].Size = "100 kB bulk", size(100_000)
	d.Targets = []Target{{Stream: "48 B express", Text: "p99 ≤ 10 ms, none lost", Check: func(r Row) bool { return r.Lost == 0 && r.Delivered > 0 && r.P99 <= 10 }},
		{Stream: "100 kB bulk", Text: "goodput ≥ 90 % of offered", Check: func(r Row) bool { return r.Goodput >= 0.9*r.Offered }}}
	e := a
	e.ID, e.Title = "e", "48 B express + 1 MB bulk, 100 → 10 Mbit/s step"
	e.Duration, e.LinkQueue = sc.dur(sc.E, 20*time.Second), q256
	e.StepTo, e.StepAt, e.StepGrace = link(10e6), e.Duration/2, 2*time.Second
	e.Targets = []Target{{Stream: "48 B express", Text: "p99 from step + 2 s ≤ 10 ms, none lost", Check: func(r Row) bool {
		return r.Lost == 0 && r.Delivered > 0 && r.P99AfterStep >= 0 && r.P99AfterStep <= 10
	}}}
	a2 := a
	a2.LinkQueue = q256
	a2.ID = "a256"
	a2.Title = "48 B express + 1 MB bulk, 100 Mbit/s, 256 KiB queue"
	a2.Targets = []Target{{Stream: "48 B express", Text: "p99 ≤ 5 ms, none lost", Check: func(r Row) bool { return r.Lost == 0 && r.Delivered > 0 && r.P99 <= 5 }},
		{Stream: "1 MB bulk", Text: "goodput ≥ 90 % of offered", Check: func(r Row) bool { return r.Goodput >= 0.9*r.Offered }}}
	for _, x := range []*Scenario{&a2, &d, &e} {
		x.Systems = []System{Gateway, RustRouter}
	}
	out := []Scenario{a, b, c, a2, d, e}
	for _, x := range []Scenario{a2, d, e} {
		x.ID += "b"
		x.Title += ", budget configured"
		x.Systems = []System{Gateway}
		x.Devices = []Device{x.Devices[0]}
		x.Devices[0].LinkBudget = true
		out = append(out, x)
	}
	return out
}

// Select keeps the scenarios whose ID is in ids (all when ids is empty).
func Select(all []Scenario, ids []string) ([]Scenario, error) {
	if len(ids) == 0 {
		return all, nil
	}
	var out []Scenario
	for _, id := range ids {
		found := false
		for _, s := range all {
			if s.ID == strings.TrimSpace(id) {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (allowed: a, b, c, a256, d, e, a256b, db, eb)", id)
		}
	}
	return out, nil
}
