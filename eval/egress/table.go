package egress

import (
	"fmt"
	"strconv"
	"strings"
)

// Header is the table's header line.
const Header = "| scenario | system | stream → device | sent | delivered | lost | dup / reordered | p50 ms | p99 ms | max ms | drops counted (/metrics) | RSS at start MiB | RSS growth MiB | CPU s | class changes | goodput MB/s (% of offered, % of link) | p99 from 2 s (step: from step + 2 s) ms | target | met |"

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }

// Table renders the rows as one Markdown table.
func (r *Report) Table() string {
	var sb strings.Builder
	sb.WriteString(Header + "\n")
	sb.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, row := range r.Rows {
		sc := row.Scenario + ") " + row.Title
		if row.Stream == "" {
			fmt.Fprintf(&sb, "| %s | %s | ERROR %s | | | | | | | | | | | | | | | | |\n", sc, row.System, row.Err)
			continue
		}
		drops := "n/a (no /metrics)"
		if row.DropsKnown {
			drops = strconv.FormatFloat(row.Drops, 'f', 0, 64)
			if row.DropReasons != "" {
				drops += " (" + row.DropReasons + ")"
			}
		}
		changes := "—"
		if row.ClassChanges >= 0 {
			changes = strconv.Itoa(row.ClassChanges)
		}
		stream := row.Stream + " → " + row.Device
		if row.Err != "" {
			stream += " (" + row.Err + ")"
		}
		lostPct := ""
		if row.Sent > 0 {
			lostPct = fmt.Sprintf(" (%.1f %%)", 100*float64(row.Lost)/float64(row.Sent))
		}
		good := "—"
		if row.Offered > 0 {
			good = fmt.Sprintf("%.2f (%.0f %%", row.Goodput/1e6, 100*row.Goodput/row.Offered)
			if row.LinkBps > 0 {
				good += fmt.Sprintf(", %.0f %%", 100*row.Goodput/row.LinkBps)
			}
			good += ")"
		}
		after := "—"
		if row.P99AfterStep >= 0 {
			after = fmtMS(row.P99AfterStep)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %d | %d | %d%s | %d / %d | %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %s |\n",
			sc, row.System, stream, row.Sent, row.Delivered, row.Lost, lostPct, row.Duplicates, row.OutOfOrder,
			fmtMS(row.P50), fmtMS(row.P99), fmtMS(row.Max), drops, mib(row.RSSBase), mib(row.RSSGrowth),
			row.CPU.Seconds(), changes, good, after, row.Target, row.Met)
	}
	return sb.String()
}

// Markdown is a note on the run followed by the table.
func (r *Report) Markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "egressbench %s, %.0fs; %s.\n\n", r.Start.UTC().Format("2006-01-02 15:04 UTC"), r.Elapsed.Seconds(), r.Env)
	for _, n := range r.Notes {
		sb.WriteString(n + "\n")
	}
	if len(r.Notes) > 0 {
		sb.WriteString("\n")
	}
	sb.WriteString(r.Table())
	return sb.String()
}

// fmtMS prints a latency in ms ("—" for NaN): two decimals below 10 ms, one
// below 100 ms (a goal of 10 ms must not read as met at 10.4), none above.
func fmtMS(v float64) string {
	switch {
	case v != v:
		return "—"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
