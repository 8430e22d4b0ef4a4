package egress

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
)

// Options configure Run.
type Options struct {
	// Picobridge is the picobridge binary for GoRouter and Gateway (required for them).
	Picobridge string
	// Python with eclipse-zenoh 1.x for RustRouter (default $PICOBRIDGE_PYTHON or python3).
	Python string
	// Systems, if set, restricts every scenario to these systems.
	Systems []System
	// LinkQueue is linkemu's queue per direction in bytes for scenarios that do not set
	// one (0: 64 KiB, about one Zenoh batch).
	LinkQueue int
	// RouterArgs and GatewayArgs are appended to `picobridge router` / `picobridge run`.
	RouterArgs, GatewayArgs []string
	// Seed of linkemu.
	Seed uint64
	// Log receives progress lines (nil: none).
	Log io.Writer
	// KeepSeqs keeps every received sequence number in arrival order (Row.Seqs), for tests.
	KeepSeqs bool
}

// DefaultLinkQueue is linkemu's queue per direction unless set: 64 KiB, one full Zenoh
// batch. linkemu's own default (1 MiB) would hold 84 ms of bulk at 100 Mbit/s inside the
// link, out of any sender's reach (docs/egressbench.md).
const DefaultLinkQueue = 64 << 10

func (o *Options) defaults() {
	if o.Python == "" {
		o.Python = os.Getenv("PICOBRIDGE_PYTHON")
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.LinkQueue <= 0 {
		o.LinkQueue = DefaultLinkQueue
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
}

// Row is one (scenario, system, stream, device) line of the table.
type Row struct {
	Scenario, Title string
	System          System
	Stream, Device  string
	Sent            int
	Delivered       int // distinct sequence numbers received
	Duplicates      int
	OutOfOrder      int // arrivals with a sequence number below the previous one
	Lost            int // Sent − Delivered
	P50, P99, Max   float64
	// Drops: drop counters of the system's /metrics over the run (router, transport and
	// bridge families, all reasons); DropsKnown is false for the Rust router (no metrics).
	Drops        float64
	DropsKnown   bool
	DropReasons  string
	RSSBase      int64 // RSS of the system when publishing started, bytes
	RSSGrowth    int64 // largest RSS while publishing and draining − RSSBase
	PeakRSS      int64 // VmHWM at the end
	CPU          time.Duration
	ClassChanges int // gateway: transitions of the device's class while publishing (-1: n/a)
	// Goodput is the payload bytes delivered per second of publishing, Offered the payload
	// bytes sent per second, LinkBps the impaired link's mean rate in bytes/s (0: none).
	Goodput, Offered, LinkBps float64
	// P99AfterStep is the p99 latency of the samples sent from Scenario.StepAt +
	// StepGrace on, or, without a step, from LearnGrace on: after a learned link
	// budget settled (-1: none sent then).
	P99AfterStep float64
	Target       string
	Met          string // "yes", "no" or ""
	Err          string
	Seqs         []uint32 `json:"-"` // arrival order (Options.KeepSeqs)
	// Metrics is the system's /metrics delta over the run (nil for the Rust router).
	Metrics benchkit.Metrics `json:"-"`
}

// Report is the result of Run.
type Report struct {
	Start   time.Time
	Elapsed time.Duration
	Env     string
	Notes   []string
	Rows    []Row
}

// Run runs every scenario on every one of its systems (in the order given, alternating
// per scenario) and returns the table rows. A system that fails to start gives one ERROR
// row; Run fails only on a cancelled context.
func Run(ctx context.Context, o Options, scs []Scenario) (*Report, error) {
	o.defaults()
	rep := &Report{Start: time.Now(), Env: fmt.Sprintf("load average %s at start", benchkit.LoadAvg())}
	dir, err := os.MkdirTemp("", "egressbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for i, sc := range scs {
		systems := sc.Systems
		if len(o.Systems) > 0 {
			systems = intersect(sc.Systems, o.Systems)
		}
		if i%2 == 1 {
			systems = reversed(systems)
		}
		for _, sys := range systems {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			t0 := time.Now()
			rows, err := RunScenario(ctx, o, sc, sys, dir)
			if err != nil {
				fmt.Fprintf(o.Log, "%s / %s: ERROR %v\n", sc.ID, sys, err)
				rows = append(rows, Row{Scenario: sc.ID, Title: sc.Title, System: sys, Err: oneLine(err)})
			} else {
				fmt.Fprintf(o.Log, "%s / %s: done in %.1fs\n", sc.ID, sys, time.Since(t0).Seconds())
			}
			rep.Rows = append(rep.Rows, rows...)
		}
	}
	rep.Elapsed = time.Since(rep.Start)
	rep.Env += fmt.Sprintf(", %s at end", benchkit.LoadAvg())
	return rep, nil
}

func intersect(a, b []System) []System {
	var out []System
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}

func reversed(s []System) []System {
	out := make([]System, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

func oneLine(err error) string {
	s := strings.NewReplacer("\n", " ", "|", "/").Replace(err.Error())
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
