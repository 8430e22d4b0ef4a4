package runner

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/picobridge/picobridge/eval/measure"
	"github.com/picobridge/picobridge/eval/report"
)

// paperTable is the reference table of evaluation.md (Adaptive Bridge paper, Fast DDS).
const paperTable = `| condition | publisher rate | critical p50 | critical p95 |
|---|---|---|---|
| baseline, clean | 30.0 Hz | 0.65 ms | sub-ms |
| baseline, impaired (mild/moderate/strong) | 19.2–21.4 Hz (−29…36 %), std 8.5–8.7 Hz | ≈ 1 ms | 11.7–15.0 s |
| bridge, all levels | 30.0 Hz, std 0.0 | 1.07–1.10 ms | ≤ 1.57 ms (strong: 1.55 ms) |
| bridge hop overhead, clean | — | +0.4 ms | — |
| ablation (split, no classifier) | 30.0 Hz | 1.09 ms | 1.57 ms |
`

// seedsLabel is "seed N" or "seeds A,B,C" for the summary's header.
func seedsLabel(cfg Config) string {
	if len(cfg.Seeds) > 1 {
		return "seeds " + seedList(cfg.Seeds)
	}
	return fmt.Sprintf("seed %d", cfg.Seed)
}

// critDelivered is a row's "delivered/attempted" and "lost (cause)" cells for the
// critical consumer: every publication attempt counts (issue 27: a failed write is a lost
// sample, so "lost 0" appears only where every attempt arrived).
func critDelivered(r Row) (delivered, lost string) {
	attempted := r.Pub.Attempts
	d := r.CritDelivery
	delivered = fmt.Sprintf("%d/%d", d.Unique, attempted)
	n := attempted - d.Unique
	var causes []string
	if r.Pub.Errors > 0 {
		causes = append(causes, fmt.Sprintf("writes failed %d", r.Pub.Errors))
	}
	if d.Missing > 0 {
		causes = append(causes, fmt.Sprintf("written, not delivered %d", d.Missing))
	}
	if d.Reordered > 0 || d.Duplicates > 0 {
		causes = append(causes, fmt.Sprintf("reordered %d, duplicates %d", d.Reordered, d.Duplicates))
	}
	lost = fmt.Sprint(n)
	if len(causes) > 0 {
		lost += " (" + strings.Join(causes, "; ") + ")"
	}
	return delivered, lost
}

// WriteReport writes summary.md and the PNG plots of results into cfg.Out and returns the
// names of the plots written.
func WriteReport(cfg Config, results []*Result) error {
	cfg = cfg.withDefaults()
	var rows []Row
	var mwRows []MWRow
	for _, r := range results {
		if r.Exp == MWExp {
			mwRows = append(mwRows, SummarizeMW(r))
			continue
		}
		rows = append(rows, Summarize(r))
	}
	plots, perr := writePlots(cfg.Out, rows)
	mwPlots, mwErr := writeMWPlots(cfg.Out, mwRows)
	err := writeFile(filepath.Join(cfg.Out, "summary.md"), func(w *bufio.Writer) {
		writeSummary(w, cfg, rows, mwRows, plots)
		writeMWSection(w, cfg, mwRows, mwPlots)
	})
	if err != nil {
		return err
	}
	if err := writeResultsJSON(cfg, time.Now().UTC().Format(time.RFC3339), rows, mwRows); err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	return mwErr
}

func writeSummary(w *bufio.Writer, cfg Config, rows []Row, mwRows []MWRow, plots []string) {
	fmt.Fprintf(w, "# picoeval summary\n\n")
	profile := cfg.Profile
	switch {
	case cfg.Quick:
		profile = "quick"
	case profile == "":
		profile = "standard"
	}
	gen := time.Now().UTC().Format("2006-01-02 15:04 MST")
	if len(rows) == 0 {
		fmt.Fprintf(w, "Generated %s by `picoeval` (%s profile, %s). Definitions and deviations: docs/eval.md.\n\n", gen, profile, seedsLabel(cfg))
	} else {
		fmt.Fprintf(w, "Generated %s by `picoeval` (%s profile, %s). Bag `%s`, topic `%s` replayed at %.0f Hz (looping, header stamps rewritten to the send time). Latency = receive time − header stamp, one host clock. Definitions and deviations from the paper: docs/eval.md.\n\n",
			gen, profile, seedsLabel(cfg), bagLabel(cfg.Bag), cfg.Topic, cfg.RateHz)
	}
	if cfg.Command != "" {
		fmt.Fprintf(w, "Command: `%s`.\n\n", cfg.Command)
	}
	if cfg.hostStart != "" {
		fmt.Fprintf(w, "Host at the start: %s. At the end: %s.\n\n", cfg.hostStart, hostLine())
	}
	if len(rows) > 0 || len(mwRows) > 0 {
		writeVerdicts(w, rows, mwRows)
	}
	if cfg.Cotenant > 0 {
		fmt.Fprintf(w, "**Busy host**: %d CPU busy loops (separate `sh -c 'while :; do :; done'` processes) ran beside the systems under test during every run and were stopped after it (`--cotenant %d`).\n\n", cfg.Cotenant, cfg.Cotenant)
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "## Reference (Adaptive Bridge paper, Fast DDS, Docker + tc netem)\n\n%s\n", paperTable)
	fmt.Fprintf(w, "## Our runs\n\n")
	fmt.Fprintf(w, "| run | system | level | s | publisher rate (std) | pub errors | blocked writes | critical p50 | critical p95 | critical p99 | device receive p95 | critical delivered/attempted | critical lost (cause) | impaired recv (rate) | impaired p50 | classifier transitions | detect / recover | gateway CPU | peak RSS | loss produced (expected) |\n")
	fmt.Fprintf(w, "|---|---|---|---:|---|---:|---|---:|---:|---:|---:|---|---:|---|---:|---|---|---:|---:|---|\n")
	for _, r := range rows {
		res := r.Res
		if res.Missing != "" || res.Err != nil {
			continue
		}
		dur := float64(res.EndNs-res.StartNs) / 1e9
		blocked := fmt.Sprintf("%d (%.1f s, max %s)", r.Pub.Blocked, r.Pub.BlockedFor.Seconds(), fmtMs(float64(r.Pub.MaxBlock)/1e6))
		crit, lost := critDelivered(r)
		imp := fmt.Sprintf("%d (%.1f Hz)", r.ImpDelivery.Unique, r.ImpRate)
		trans, dr := "—", "—"
		if strings.HasPrefix(res.System, "picobridge") || len(res.Transitions) > 0 {
			trans = fmt.Sprint(len(res.Transitions))
		}
		if len(res.Toggles) > 0 {
			dr = fmt.Sprintf("%s / %s", durOr(r.Detect, r.HasDetect), durOr(r.Recover, r.HasRecover))
		}
		cpu, rss := "—", "—"
		if res.Gateway != nil {
			cpu = fmt.Sprintf("%.2f s", res.Gateway.CPU.Seconds())
			rss = fmt.Sprintf("%.1f MB", float64(res.Gateway.PeakRSS)/(1<<20))
		}
		devRecv := "—"
		if res.HasDeviceRecv {
			devRecv = fmtMs(res.DeviceRecvP95Ms)
		}
		loss := "—"
		if !math.IsNaN(res.ProducedLoss) {
			loss = fmt.Sprintf("%.2f %% (%.2f %%)", 100*res.ProducedLoss, 100*res.ExpectedLoss)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.1f Hz (%.1f) | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			res.Run, res.System, res.Level, dur, r.Pub.Rate, r.Pub.RateStd, r.Pub.Errors, blocked,
			fmtMs(r.Crit.P50), fmtMs(r.Crit.P95), fmtMs(r.Crit.P99), devRecv, crit, lost, imp, fmtMs(r.Imp.P50), trans, dr, cpu, rss, loss)
	}
	fmt.Fprintf(w, "\nColumns: publisher rate = publication attempts per second over the run, std over 5 s windows sliding by 1 s; blocked writes = publish calls longer than %v (total and longest); device receive = the simulated critical device's own share of the critical latency, p95 (sim/devsim: from its read task's callback to its application taking the sample; the rest is the gateway and the link); critical delivered/attempted = distinct samples the critical consumer received / publication attempts (a write that failed is a lost sample); critical lost = attempted − delivered, with its cause: writes that failed, samples written but never delivered (and any reordering or duplicates seen); gateway = the process between publisher and consumers (split: the ddspath.Split process; zenoh-router: the Python process hosting the Rust router; zenohd, ros2dds: zenohd, with the plugin in ros2dds), CPU over the publication window, peak RSS = VmHWM.\n\n", measure.BlockThreshold)
	writeSideBySide(w, rows)
	writeSeedTable(w, rows)

	for _, r := range rows {
		if !okRow(r) || r.Direct.N == 0 {
			continue
		}
		fmt.Fprintf(w, "**Hop overhead (%s)**: DDS reader directly p50 %s / p95 %s (%d samples); device through picobridge p50 %s / p95 %s (%d samples): **%+.2f ms at p50** (paper: +0.4 ms; our bar ≤ 0.15 ms).\n\n",
			r.Res.Run, fmtMs(r.Direct.P50), fmtMs(r.Direct.P95), r.Direct.N, fmtMs(r.Crit.P50), fmtMs(r.Crit.P95), r.Crit.N, r.Crit.P50-r.Direct.P50)
	}
	var notRun, failed []string
	for _, r := range rows {
		switch {
		case r.Res.Missing != "":
			notRun = append(notRun, fmt.Sprintf("- %s: not run (missing %s)", r.Res.Run, r.Res.Missing))
		case r.Res.Err != nil:
			failed = append(failed, fmt.Sprintf("- %s: failed: %v", r.Res.Run, r.Res.Err))
		}
	}
	writeList(w, "## Not run", notRun)
	writeList(w, "## Failed", failed)
	fmt.Fprintf(w, "## How each run was impaired\n\n")
	seen := map[string]bool{}
	for _, r := range rows {
		res := r.Res
		if res.Missing != "" || res.Err != nil {
			continue
		}
		fmt.Fprintf(w, "- **%s**: %s", res.Run, res.Impairment)
		for _, n := range res.Notes {
			if seen[res.Run+n] {
				continue
			}
			seen[res.Run+n] = true
			fmt.Fprintf(w, "; %s", n)
		}
		for c, n := range res.Unknown {
			fmt.Fprintf(w, "; %d receptions by %s with an unknown stamp", n, c)
		}
		if tr := classChanges(res); tr != "" {
			fmt.Fprintf(w, "; class changes: %s", tr)
		}
		if res.Cotenant > 0 {
			fmt.Fprintf(w, "; %d CPU busy loops beside it", res.Cotenant)
		}
		if res.Load[0] > 0 || res.Load[1] > 0 {
			fmt.Fprintf(w, "; host load average (1 min) %.2f at the start, %.2f at the end", res.Load[0], res.Load[1])
		}
		fmt.Fprintf(w, "\n")
	}
	if len(plots) > 0 {
		fmt.Fprintf(w, "\n## Plots\n\n")
		if len(cfg.Seeds) > 1 {
			fmt.Fprintf(w, "One run per system and level (`plotRow`): the run with the fewest busy loops beside it and the lowest seed (here seed %d of %d); the across-seed table gives the spread.\n\n", slices.Min(cfg.Seeds), len(cfg.Seeds))
		}
		for _, p := range plots {
			fmt.Fprintf(w, "![%s](%s)\n\n", p, p)
		}
	}
}

// classChanges lists a run's classifier transitions as "device FROM→TO at +t s" (time
// from the start of publication), at most 12 and then a count of the rest.
func classChanges(res *Result) string {
	const maxShown = 12
	var parts []string
	for i, t := range res.Transitions {
		if i == maxShown {
			parts = append(parts, fmt.Sprintf("… %d more", len(res.Transitions)-maxShown))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s→%s at %+.1f s", t.Device, t.From, t.To, float64(t.AtNs-res.StartNs)/1e9))
	}
	return strings.Join(parts, ", ")
}

func durOr(d time.Duration, ok bool) string {
	if !ok {
		return "none"
	}
	return d.Round(100 * time.Millisecond).String()
}

// bagLabel names the bag as a reader of the summary can find it, without this machine's
// absolute paths: the dataset's `../shared/data/…` path (shared/ sits beside the checkout,
// docs/eval.md), else the path relative to the working directory, else its base name.
func bagLabel(path string) string {
	p := filepath.ToSlash(path)
	if i := strings.LastIndex(p, "shared/data/"); i >= 0 {
		return "../" + p[i:]
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(path)
}

// The Adaptive Bridge paper's figures drawn as reference lines (the results table of
// evaluation.md, quoted as the summary's reference table): the bridge's critical p50 (1.07–1.10 ms,
// drawn at the upper end) and p95 (≤ 1.57 ms) on every level, the baseline's impaired critical
// p95 (11.7–15.0 s, drawn at the lower end) and publisher rate (19.2–21.4 Hz, lower end).
var (
	paperCDFRefs  = []report.Ref{{Name: "paper bridge p50 1.10 ms", Value: 1.10}, {Name: "paper bridge p95 1.57 ms", Value: 1.57}}
	paperP95Refs  = []report.Ref{{Name: "paper bridge p95 1.57 ms", Value: 1.57}, {Name: "paper baseline impaired p95 11.7 s", Value: 11700}}
	paperRateRefs = []report.Ref{{Name: "paper bridge 30 Hz", Value: 30}, {Name: "paper baseline impaired 19.2 Hz", Value: 19.2}}
)

// systemOrder fixes the order of systems in plots.
var systemOrder = []string{"dds-fastdds", "dds-cyclone", "zenoh-router", "zenohd", "ros2dds", "picobridge", "zenohd-pico", "ros2dds-pico", "picobridge-pico", "picobridge-noclassifier", "split"}

// okRow: the run ran and completed (not missing a component, no error); okMW is the same
// for the middleware rows.
func okRow(r Row) bool { return r.Res.Missing == "" && r.Res.Err == nil }

// plotRow is the run the per-level plots draw for system at level: among the runs that
// ran, the one with the fewest busy loops beside it (the quiet host, not the busy
// variant), then the lowest seed; nil when none ran.
func plotRow(rows []Row, system, level string) *Row {
	var best *Row
	for i := range rows {
		r := &rows[i]
		if !okRow(*r) || r.Res.System != system || r.Res.Level != level {
			continue
		}
		if best == nil || r.Res.Cotenant < best.Res.Cotenant ||
			(r.Res.Cotenant == best.Res.Cotenant && r.Res.Seed < best.Res.Seed) {
			best = r
		}
	}
	return best
}

func writePlots(dir string, rows []Row) ([]string, error) {
	var plots []string
	var firstErr error
	keep := func(name string, err error) {
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		plots = append(plots, name)
	}
	var systems []string
	for _, s := range systemOrder {
		for _, r := range rows {
			if okRow(r) && r.Res.System == s && !slices.Contains(systems, s) {
				systems = append(systems, s)
			}
		}
	}
	if len(systems) == 0 {
		return nil, nil
	}
	for _, level := range Levels {
		var series []report.Series
		for _, s := range systems {
			if r := plotRow(rows, s, level); r != nil {
				x, y := measure.CDF(measure.ByConsumer(r.Res.Samples)[Critical])
				series = append(series, report.Series{Name: s, X: x, Y: y})
			}
		}
		if len(series) == 0 {
			continue
		}
		name := "cdf-critical-" + level + ".png"
		keep(name, report.LinesRef(filepath.Join(dir, name), "critical latency CDF, "+level+" link", "latency (ms, log scale)", "fraction of samples", true, series, paperCDFRefs))
	}
	p95 := make([][]float64, len(systems))
	rate := make([][]float64, len(systems))
	for i, s := range systems {
		for _, level := range Levels {
			v, q := math.NaN(), math.NaN()
			if r := plotRow(rows, s, level); r != nil {
				v, q = r.Crit.P95, r.Pub.Rate
			}
			p95[i] = append(p95[i], v)
			rate[i] = append(rate[i], q)
		}
	}
	keep("p95-critical.png", report.BarsRef(filepath.Join(dir, "p95-critical.png"), "critical p95 latency per impairment level",
		"impairment level of the impaired device's link", "critical p95 latency (ms, log scale)", Levels, systems, p95, true, paperP95Refs))
	keep("publisher-rate.png", report.BarsRef(filepath.Join(dir, "publisher-rate.png"), "publisher rate per impairment level",
		"impairment level of the impaired device's link", "publication attempts per second (Hz)", Levels, systems, rate, false, paperRateRefs))
	for _, r := range rows {
		if !okRow(r) || r.Res.Level != "toggle" {
			continue
		}
		ts, lv := measure.StateSeries(r.Res.Transitions, Impaired, r.Res.StartNs, r.Res.EndNs, "UNKNOWN")
		var spans [][2]float64
		for i, tg := range r.Res.Toggles {
			if !tg.On {
				continue
			}
			end := r.Res.EndNs
			if i+1 < len(r.Res.Toggles) {
				end = r.Res.Toggles[i+1].AtNs
			}
			spans = append(spans, [2]float64{float64(tg.AtNs-r.Res.StartNs) / 1e9, float64(end-r.Res.StartNs) / 1e9})
		}
		name := "classifier-" + r.Res.Run + ".png"
		keep(name, report.Steps(filepath.Join(dir, name), "classifier state of the impaired device, "+r.Res.Run, "time (s)", "device class",
			[]string{"UNKNOWN", "NONCRITICAL", "CRITICAL"}, []report.Series{{Name: "impaired device", X: ts, Y: lv}}, spans))
	}
	return plots, firstErr
}

// writeList writes heading and the items one per line, each block followed by a blank
// line; nothing when there are no items (the "not run" and "failed" lists of both
// summaries).
func writeList(w io.Writer, heading string, items []string) {
	if len(items) > 0 {
		fmt.Fprintf(w, "%s\n\n%s\n\n", heading, strings.Join(items, "\n"))
	}
}
