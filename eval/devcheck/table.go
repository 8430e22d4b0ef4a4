package devcheck

import (
	"fmt"
	"strings"
)

// Header is one line naming the run: date (UTC), picobridge and zenoh-pico
// commits, the load averages at start and end, duration and stream.
func (r *Report) Header() string {
	unknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	return fmt.Sprintf("Measured %s UTC, picobridge %s, zenoh-pico %s, load average %s at the start and %s at the end; %g s per cell, %g Hz inbound, %d B samples.",
		r.Started.Format("2006-01-02 15:04"), unknown(r.Commit), unknown(r.PicoCommit), unknown(r.LoadStart), unknown(r.LoadEnd),
		r.Options.DurationS, r.Options.InboundHz, r.Options.Size)
}

// Markdown renders the report as one table, a row per window and mode with
// real pico and devsim side by side (receive latency p50/p95/p99 in ms over
// the measured samples; TX in msg/s), then one line per cell error.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| window | mode | pico rx p50 / p95 / p99 ms (n) | devsim rx p50 / p95 / p99 ms (n) | devsim app p50 ms | pico TX msg/s | devsim TX msg/s |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|\n")
	type key struct {
		w    float64
		mode string
	}
	var order []key
	cells := map[key]map[string]Cell{}
	for _, c := range r.Cells {
		k := key{c.WindowMs, c.Mode}
		if cells[k] == nil {
			cells[k] = map[string]Cell{}
			order = append(order, k)
		}
		cells[k][c.Target] = c
	}
	for _, k := range order {
		p, d := cells[k][TargetPico], cells[k][TargetDevsim]
		app := "–"
		if d.RxApp != nil && d.RxApp.Count > 0 && k.mode != ModeTx {
			app = fmt.Sprintf("%.2f", d.RxApp.P50)
		}
		fmt.Fprintf(&b, "| %g ms | %s | %s | %s | %s | %s | %s |\n", k.w, modeText(k.mode),
			lat(p, k.mode), lat(d, k.mode), app, tx(p, k.mode), tx(d, k.mode))
	}
	for _, c := range r.Cells {
		if c.Err != "" {
			fmt.Fprintf(&b, "\n%s, %g ms, %s: %s", c.Target, c.WindowMs, c.Mode, c.Err)
		}
	}
	return b.String()
}

func modeText(m string) string {
	switch m {
	case ModeRx:
		return "30 Hz in, no TX"
	case ModeTx:
		return "tight-loop TX, nothing in"
	case ModeRxTx:
		return "30 Hz in + tight-loop TX"
	}
	return m
}

func lat(c Cell, mode string) string {
	switch {
	case mode == ModeTx:
		return "–"
	case c.Err != "" || c.Target == "":
		return "n/a"
	case c.Rx.Count == 0:
		return "0 samples"
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f (%d)", c.Rx.P50, c.Rx.P95, c.Rx.P99, c.Rx.Count)
}

func tx(c Cell, mode string) string {
	switch {
	case mode == ModeRx:
		return "–"
	case c.Err != "" || c.Target == "":
		return "n/a"
	}
	return fmt.Sprintf("%.1f", c.TxRate)
}
