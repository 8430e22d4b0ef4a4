package zbench

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/picobridge/picobridge/eval/benchkit"
)

func numCPU() int { return runtime.NumCPU() }

// formatValue prints v with a precision that suits the metric.
func formatValue(metric string, v float64) string {
	switch {
	case metric == "msgs/s":
		return strconv.FormatFloat(v, 'f', 0, 64)
	case strings.HasSuffix(metric, "µs/msg"):
		return strconv.FormatFloat(v, 'f', 2, 64)
	case strings.Contains(metric, "µs"), strings.HasSuffix(metric, "%"), strings.Contains(metric, "% "):
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// Header is the table's header line.
const Header = "| scenario | payload B | metric | Go | Rust | Go/Rust |"

// Table renders the rows as a Markdown table; a skipped or failed scenario is one row
// whose metric cell says why.
func (r *Report) Table() string {
	var sb strings.Builder
	sb.WriteString(Header + "\n")
	sb.WriteString("|---|---:|---|---:|---:|---:|\n")
	for _, row := range r.Rows {
		size := "—"
		if row.Size > 0 {
			size = strconv.Itoa(row.Size)
		}
		if row.Err != "" {
			fmt.Fprintf(&sb, "| %s | %s | %s | — | — | — |\n", row.Scenario, size, row.Err)
			continue
		}
		ratio := "—"
		if row.Rust != 0 {
			ratio = strconv.FormatFloat(row.Ratio(), 'f', 2, 64)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", row.Scenario, size, row.Metric,
			formatValue(row.Metric, row.Go), formatValue(row.Metric, row.Rust), ratio)
	}
	return sb.String()
}

// Markdown is the table preceded by a short note on the run.
func (r *Report) Markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "zbench %s, %.0fs: window %v (warmup %v) per throughput measurement, %d round trips per latency measurement, median of %d runs per router; %s, load average %s at end.\n\n",
		r.Start.UTC().Format("2006-01-02 15:04 UTC"), r.Elapsed.Seconds(), r.Options.Duration, r.Options.Warmup,
		min(max(int(r.Options.Duration.Seconds()*400), 50), 5000), r.Options.Repeat, r.Env, benchkit.LoadAvg())
	if r.Options.Picobridge != "" {
		sb.WriteString("Go router: `" + r.Options.Picobridge + " router` as a child process (defaults, metrics on). ")
	} else {
		sb.WriteString("Go router: this binary re-executed as a child process (zenohpath.NewRouter + Listen, defaults). ")
	}
	sb.WriteString("Rust router: eclipse-zenoh in router mode (Python process). A fresh router per measurement, the order Go/Rust alternating between measurements; all on loopback TCP. ")
	sb.WriteString("Go/Rust > 1 is better for Go on msgs/s and MB/s, worse on µs, CPU and RSS.\n\n")
	sb.WriteString(r.Table())
	return sb.String()
}
