package linkemu

import (
	"fmt"
	"strings"
	"time"
)

// LossSummary compares the loss a direction produced with the loss its
// profile(s) should have produced (evaluation.md: "the run must record
// the loss it actually produced, not only the configured one").
type LossSummary struct {
	Direction string  `json:"direction"`
	Produced  float64 `json:"produced_loss"`
	Expected  float64 `json:"expected_loss"`
	Sent      uint64  `json:"sent"`
	Lost      uint64  `json:"lost"`
}

// Report is a Stats snapshot with the derived numbers the CLI prints and
// the evaluation records (one JSON object per line with --json).
type Report struct {
	Stats
	// Elapsed is the time since the proxy started, in seconds.
	Elapsed float64 `json:"elapsed_s"`
	// Loss has one entry per direction, to_device first.
	Loss []LossSummary `json:"loss"`
	// Phases is the per-profile breakdown (with a toggle, one per phase).
	Phases []Phase `json:"phases,omitempty"`
}

// NewReport derives a Report from a snapshot; withPhases adds the
// per-phase breakdown.
func NewReport(s Stats, withPhases bool) Report {
	r := Report{Stats: s, Elapsed: s.Taken.Sub(s.Start).Seconds()}
	for _, d := range []Direction{ToDevice, ToGateway} {
		ds := s.Dir(d)
		r.Loss = append(r.Loss, LossSummary{Direction: d.String(), Produced: ds.ProducedLoss(),
			Expected: s.ExpectedLoss(d), Sent: ds.Sent, Lost: ds.Lost})
	}
	if withPhases {
		r.Phases = s.Phases()
	}
	return r
}

// String is one line: the profile, then per direction the packets, the
// produced against the expected loss, drops, retransmissions, mean added
// delay and bytes delivered.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%.1fs %s profile=%s active=%d", r.Elapsed, r.Transport, r.Profile, r.Active)
	for i, d := range []Direction{ToDevice, ToGateway} {
		ds := r.Dir(d)
		fmt.Fprintf(&b, " | %s packets=%d loss=%.2f%% (expected %.2f%%) lost=%d", d, ds.Packets,
			100*r.Loss[i].Produced, 100*r.Loss[i].Expected, ds.Lost)
		if r.Transport == "tcp" {
			fmt.Fprintf(&b, " stalled=%d fast_repairs=%d timeouts=%d", ds.Stalled, ds.FastRepairs, ds.Timeouts)
		} else {
			fmt.Fprintf(&b, " queue_drops=%d", ds.QueueDrops)
		}
		fmt.Fprintf(&b, " delivered=%d bytes=%d delay=%v", ds.Delivered, ds.BytesOut, ds.MeanAddedDelay().Round(10*time.Microsecond))
	}
	return b.String()
}

// PhaseLines describes each phase on its own line.
func (r Report) PhaseLines() []string {
	var out []string
	for _, ph := range r.Phases {
		line := fmt.Sprintf("phase %s +%.1fs for %.1fs:", ph.Profile, ph.Start.Sub(r.Start).Seconds(), ph.Duration.Seconds())
		for _, d := range []Direction{ToDevice, ToGateway} {
			c := ph.Counters[d]
			line += fmt.Sprintf(" %s sent=%d lost=%d loss=%.2f%% (expected %.2f%%)", d, c.Sent, c.Lost, 100*c.ProducedLoss(), 100*ph.Expected[d])
		}
		out = append(out, line)
	}
	return out
}
