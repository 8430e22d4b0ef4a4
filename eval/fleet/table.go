package fleet

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Header is the table's header line.
const Header = "| sessions | system | connected | connect s | all reached s | router RSS before MiB | idle RSS MiB | idle KiB/session | fan-out | delivered | p50 ms | p99 ms | max ms | deliveries/s | router CPU % | router µs/delivery | loadgen CPU % | router fds idle | RSS after leave MiB | peak RSS MiB | lost sessions |"

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }

func ms(v float64) string {
	if v < 0 || math.IsNaN(v) {
		return "—"
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// Table renders the rows as one Markdown table.
func (r *Report) Table() string {
	var sb strings.Builder
	sb.WriteString(Header + "\n|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Rows {
		if row.Err != "" && row.Connected == 0 {
			fmt.Fprintf(&sb, "| %d | %s | ERROR %s | | | | | | | | | | | | | | | | | | |\n", row.Sessions, row.System, row.Err)
			continue
		}
		perSess := "—"
		if row.Connected > 0 && row.RSSIdle > 0 {
			perSess = strconv.FormatFloat(float64(row.RSSIdle-row.RSSBefore)/1024/float64(row.Connected), 'f', 1, 64)
		}
		want := int64(row.Sent) * int64(row.Connected)
		delivered := fmt.Sprintf("%d / %d", row.Deliveries, want)
		if want > 0 {
			delivered += fmt.Sprintf(" (%.1f %%)", 100*float64(row.Deliveries)/float64(want))
		}
		w := row.Window.Seconds()
		cpu, lcpu, per := "—", "—", "—"
		if w > 0 {
			cpu = strconv.FormatFloat(100*row.RouterCPU.Seconds()/w, 'f', 1, 64)
			lcpu = strconv.FormatFloat(100*row.LoadgenCPU.Seconds()/w, 'f', 1, 64)
		}
		if row.Deliveries > 0 {
			per = strconv.FormatFloat(1e6*row.RouterCPU.Seconds()/float64(row.Deliveries), 'f', 2, 64)
		}
		reach := "not all in 60 s"
		if row.ReachSecs >= 0 {
			reach = strconv.FormatFloat(row.ReachSecs, 'f', 2, 64)
		}
		conn := strconv.Itoa(row.Connected)
		if row.Failed > 0 {
			conn += fmt.Sprintf(" (%d failed)", row.Failed)
		}
		if row.Retries > 0 {
			conn += fmt.Sprintf(" (%d redials)", row.Retries)
		}
		if row.Err != "" {
			conn += " ERROR " + row.Err
		}
		lost := strconv.Itoa(row.LostSessions)
		if row.CloseReasons != "" {
			lost += " (router closed: " + row.CloseReasons + ")"
		}
		fmt.Fprintf(&sb, "| %d | %s | %s | %.2f | %s | %s | %s | %s | %g Hz × %d s | %s | %s | %s | %s | %.0f | %s | %s | %s | %d | %s | %s | %s |\n",
			row.Sessions, row.System, conn, row.ConnectSecs, reach, mib(row.RSSBefore), mib(row.RSSIdle), perSess,
			row.RateHz, int(math.Round(row.Window.Seconds())), delivered, ms(row.P50), ms(row.P99), ms(row.Max), row.DeliveriesPerSec,
			cpu, per, lcpu, row.RouterFDs, mib(row.RSSAfterLeave), mib(row.PeakRSS), lost)
	}
	return sb.String()
}

// Markdown is a note on the run followed by the table.
func (r *Report) Markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "fleetbench %s, %.0fs; %s.\n\n", r.Start.UTC().Format("2006-01-02 15:04 UTC"), r.Elapsed.Seconds(), r.Env)
	for _, n := range r.Notes {
		sb.WriteString(n + "\n")
	}
	if len(r.Notes) > 0 {
		sb.WriteString("\n")
	}
	sb.WriteString(r.Table())
	return sb.String()
}
