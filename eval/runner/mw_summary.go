package runner

import (
	"bufio"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/picobridge/picobridge/eval/measure"
	"github.com/picobridge/picobridge/eval/report"
)

// MWRow is the summary of one middleware comparison run.
type MWRow struct {
	Res       *Result
	Lat       measure.LatencyStats // of the delivered messages
	Sent      int                  // publications that returned without error
	Delivered int                  // distinct messages the subscriber got
	MsgsPerS  float64              // delivered / (last reception − first send)
	MBPerS    float64              // delivered bytes (MB = 1e6 B) / the same span
}

// SummarizeMW computes the measures of a middleware run.
func SummarizeMW(r *Result) MWRow {
	row := MWRow{Res: r}
	if r.Missing != "" || r.Err != nil || r.MW == nil {
		return row
	}
	ss := measure.ByConsumer(r.Samples)[mwConsumer]
	row.Lat = measure.Latency(ss)
	d := measure.CheckDelivery(r.Published, ss)
	row.Sent, row.Delivered = d.Published, d.Unique
	if span := float64(r.MW.LastRecv-r.StartNs) / 1e9; row.Delivered > 0 && span > 0 {
		row.MsgsPerS = float64(row.Delivered) / span
		row.MBPerS = row.MsgsPerS * float64(r.MW.Size) / 1e6
	}
	return row
}

func (r MWRow) oneLine() string {
	if r.Res.Err != nil {
		return "error: " + r.Res.Err.Error()
	}
	return fmt.Sprintf("%d/%d delivered at %.1f msg/s offered, p50 %s p95 %s, %.1f msg/s %.3f MB/s",
		r.Delivered, r.Sent, r.Res.MW.OfferedHz, fmtMs(r.Lat.P50), fmtMs(r.Lat.P95), r.MsgsPerS, r.MBPerS)
}

// rankLatency is the p-quantile (0..1) of latency over all sent messages, a lost message
// counting as infinitely late: +Inf when more than 1−p of them were lost, NaN without
// data. Used to pick the fastest system, so that losing the slow messages never wins.
func (r MWRow) rankLatency(p float64) float64 {
	if r.Sent == 0 || r.Delivered == 0 {
		return math.NaN()
	}
	ss := measure.ByConsumer(r.Res.Samples)[mwConsumer]
	lat := make([]float64, 0, r.Sent)
	seen := map[uint64]bool{}
	for _, s := range ss {
		if !seen[s.Seq] {
			seen[s.Seq] = true
			lat = append(lat, s.LatencyMs())
		}
	}
	slices.Sort(lat)
	k := int(math.Ceil(p*float64(r.Sent))) - 1 // nearest rank over all sent
	k = max(k, 0)
	if k >= len(lat) {
		return math.Inf(1)
	}
	return lat[k]
}

// mwLabel is the system name of a run in tables and plots: "<system>" or "<system>+tls".
func mwLabel(r *Result) string {
	if r.MW != nil && r.MW.TLS {
		return r.System + "+tls"
	}
	return r.System
}

func okMW(r MWRow) bool { return r.Res.Missing == "" && r.Res.Err == nil && r.Res.MW != nil }

// mwPresent returns the profiles, sizes and system labels that have runs, in the
// canonical order.
func mwPresent(rows []MWRow) (profiles []string, sizes []int, labels []string) {
	for _, r := range rows {
		if !okMW(r) {
			continue
		}
		if !slices.Contains(profiles, r.Res.Level) {
			profiles = append(profiles, r.Res.Level)
		}
		if !slices.Contains(sizes, r.Res.MW.Size) {
			sizes = append(sizes, r.Res.MW.Size)
		}
		if l := mwLabel(r.Res); !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	order := func(list []string, canon []string) {
		slices.SortStableFunc(list, func(a, b string) int {
			ia, ib := slices.Index(canon, a), slices.Index(canon, b)
			if ia < 0 {
				ia = len(canon)
			}
			if ib < 0 {
				ib = len(canon)
			}
			return ia - ib
		})
	}
	order(profiles, MWProfiles)
	canonLabels := slices.Clone(MWSystems)
	for _, s := range MWSystems {
		canonLabels = append(canonLabels, s+"+tls")
	}
	order(labels, canonLabels)
	slices.Sort(sizes)
	return profiles, sizes, labels
}

// findMWAll is every completed run of label, profile and size (one per seed).
func findMWAll(rows []MWRow, label, profile string, size int) []*MWRow {
	var out []*MWRow
	for i := range rows {
		r := &rows[i]
		if okMW(*r) && mwLabel(r.Res) == label && r.Res.Level == profile && r.Res.MW.Size == size {
			out = append(out, r)
		}
	}
	return out
}

// findMW is the first completed run of label, profile and size (the first seed's).
func findMW(rows []MWRow, label, profile string, size int) *MWRow {
	for i := range rows {
		r := &rows[i]
		if okMW(*r) && mwLabel(r.Res) == label && r.Res.Level == profile && r.Res.MW.Size == size {
			return r
		}
	}
	return nil
}

// seedWinner is the seed paper's conclusion per link class (Zhang et al.,
// arXiv:2309.07496, abstract: "CycloneDDS performs better under Ethernet while Zenoh
// performs better under Wi-Fi and 4G").
var seedWinner = map[string]string{"ethernet": MWCyclone, "wifi": MWZenoh, "4g": MWZenoh}

// mwTieRatio: at one payload size, a system is the fastest only when the next one's
// quantile is more than 5 % higher; closer is a tie (one host, one run per cell: the
// scheduler's noise is of that order).
const mwTieRatio = 1.05

// mwWinner picks, among the non-TLS systems of profile, the one with the lowest
// q-quantile (rankLatency) at the most payload sizes. With one run per cell, a size where
// the best two are within mwTieRatio is a tie and counts for nobody; with several seeds
// per cell (the runs of one system, profile and size), the size is won only when the
// fastest system's range over its seeds lies wholly below the next one's (their ranges do
// not overlap), else it is a tie. Systems are ordered by the median over seeds. Equal win
// counts are broken by the lower geometric mean of those medians over the sizes where
// every candidate has a finite value. It returns the winner ("" when nobody won a size),
// its wins, the sizes compared and, per size, "SIZE SYSTEM" or "SIZE A≈B" for a tie.
func mwWinner(rows []MWRow, profile string, sizes []int, q float64) (winner string, wins, compared int, perSize []string) {
	var cands []string
	for _, s := range MWSystems {
		for _, size := range sizes {
			if findMW(rows, s, profile, size) != nil {
				cands = append(cands, s)
				break
			}
		}
	}
	if len(cands) < 2 {
		return "", 0, 0, nil
	}
	count := map[string]int{}
	logSum := map[string]float64{}
	for _, size := range sizes {
		type cv struct {
			c  string
			sp Spread
		}
		var vs []cv
		all := true
		for _, c := range cands {
			var vals []float64
			for _, r := range findMWAll(rows, c, profile, size) {
				vals = append(vals, r.rankLatency(q))
			}
			sp := SpreadOf(vals)
			if sp.N == 0 || math.IsInf(sp.Median, 0) {
				all = false
			}
			if sp.N > 0 {
				vs = append(vs, cv{c, sp})
			}
		}
		if len(vs) == 0 || math.IsInf(vs[0].sp.Median, 1) && len(vs) == 1 {
			continue
		}
		slices.SortStableFunc(vs, func(a, b cv) int {
			switch {
			case a.sp.Median < b.sp.Median:
				return -1
			case a.sp.Median > b.sp.Median:
				return 1
			}
			return 0
		})
		compared++
		won := len(vs) == 1
		if len(vs) > 1 {
			best, next := vs[0].sp, vs[1].sp
			if best.N > 1 && next.N > 1 {
				won = best.Max < next.Min
			} else {
				won = next.Median > best.Median*mwTieRatio
			}
		}
		if won {
			count[vs[0].c]++
			perSize = append(perSize, SizeLabel(size)+" "+vs[0].c)
		} else {
			perSize = append(perSize, SizeLabel(size)+" "+vs[0].c+"≈"+vs[1].c)
		}
		if all {
			for _, x := range vs {
				logSum[x.c] += math.Log(math.Max(x.sp.Median, 1e-6))
			}
		}
	}
	for _, c := range cands {
		switch {
		case count[c] > wins:
			winner, wins = c, count[c]
		case count[c] == wins && wins > 0 && logSum[c] < logSum[winner]:
			winner = c
		}
	}
	return winner, wins, compared, perSize
}

// mwSeeds is the largest number of runs (seeds) of one mw cell.
func mwSeeds(rows []MWRow) int {
	n := map[string]int{}
	most := 0
	for _, r := range rows {
		if okMW(r) {
			k := fmt.Sprint(mwLabel(r.Res), r.Res.Level, r.Res.MW.Size)
			n[k]++
			most = max(most, n[k])
		}
	}
	return most
}

// mwTieRule says when a size counts as won (mwWinner).
func mwTieRule(rows []MWRow) string {
	if n := mwSeeds(rows); n > 1 {
		return fmt.Sprintf("With %d seeds per cell, a size is won only where the fastest system's range (min–max over its seeds) lies wholly below the next one's; overlapping ranges are a tie (systems ordered by their median).", n)
	}
	return fmt.Sprintf("A size where the best two are within %.0f %% is a tie (one run per cell).", 100*(mwTieRatio-1))
}

// mwParagraph states per profile which system had the lowest p50 and p95 and whether the
// seed's conclusion reproduces, computed from rows.
func mwParagraph(rows []MWRow) string {
	profiles, sizes, _ := mwPresent(rows)
	var b strings.Builder
	// how a tie was decided: the ranges over seeds (mwWinner with more than one seed per
	// cell) or the one-run 5 % rule.
	tied := fmt.Sprintf("ties within %.0f %%", 100*(mwTieRatio-1))
	if n := mwSeeds(rows); n > 1 {
		tied = fmt.Sprintf("ties: ranges over %d seeds overlap", n)
	}
	say := func(q string, w string, n, c int, by []string) string {
		if w == "" {
			return fmt.Sprintf("no lowest %s (%s at all %d sizes: %s)", q, tied, c, strings.Join(by, ", "))
		}
		return fmt.Sprintf("lowest %s %s (at %d of %d payload sizes: %s)", q, w, n, c, strings.Join(by, ", "))
	}
	for _, prof := range profiles {
		w50, n50, c50, by50 := mwWinner(rows, prof, sizes, 0.50)
		w95, n95, c95, by95 := mwWinner(rows, prof, sizes, 0.95)
		if c50 == 0 {
			fmt.Fprintf(&b, "- **%s**: fewer than two systems ran; no comparison.\n", prof)
			continue
		}
		fmt.Fprintf(&b, "- **%s**: %s; %s.", prof, say("p50", w50, n50, c50, by50), say("p95", w95, n95, c95, by95))
		seed, ok := seedWinner[prof]
		if !ok {
			b.WriteString("\n")
			continue
		}
		seedName := map[string]string{MWCyclone: "Cyclone DDS", MWZenoh: "Zenoh"}[seed]
		claim := fmt.Sprintf("The seed's conclusion (%s best on %s)", seedName, prof)
		switch {
		case w50 == seed && w95 == seed:
			fmt.Fprintf(&b, " %s **reproduces**.", claim)
		case w50 == seed || w95 == seed:
			fmt.Fprintf(&b, " %s **reproduces in part** (only at %s).", claim, map[bool]string{true: "p50", false: "p95"}[w50 == seed])
		case seed == MWZenoh && (w50 == MWPicobridge || w95 == MWPicobridge):
			fmt.Fprintf(&b, " %s reproduces for the Zenoh protocol through picobridge's router, **not** for the Rust router.", claim)
		case w50 == "" && w95 == "":
			fmt.Fprintf(&b, " %s is **not borne out**: no system was clearly fastest.", claim)
		default:
			fmt.Fprintf(&b, " %s **does not reproduce**.", claim)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeMWSection writes the "Middleware comparison" section of summary.md.
func writeMWSection(w *bufio.Writer, cfg Config, rows []MWRow, plots []string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "## Middleware comparison\n\n")
	fmt.Fprintf(w, "After the second seed paper (Zhang et al., arXiv:2309.07496: Cyclone DDS best on Ethernet, Zenoh best on Wi-Fi and 4G). One publisher and one subscriber per system; the subscriber's TCP link runs through linkemu with the link class's profile (profiles.yaml cites each figure), the publisher's link is clean loopback. Open loop: a fixed offered rate per payload (at most %d msg/s and at most %.0f %% of the link's bandwidth, at least %d messages per run); latency = receive time − send stamp in the payload (one host clock), percentiles over the delivered messages; throughput = delivered messages (and bytes, MB = 10⁶ B) per second from the first send to the last reception. Broker CPU = utime+stime of the broker process over the run (/proc). How DDS crosses the proxy and the deviations: docs/eval.md.\n\n",
		mwMaxRateHz, 100*mwLinkShare, mwMinMessages)
	fmt.Fprintf(w, "Fastest system per link class, computed from the table below: among the runs without TLS (the seed compared without security), per payload size the lowest p50 / p95 over all sent messages (a lost message counts as infinitely late); %s\n\n%s\n", mwTieRule(rows), mwParagraph(rows))
	fmt.Fprintf(w, "| run | system | link | payload | TLS | offered msg/s | delivered/attempted | p50 | p95 | p99 | delivered msg/s | MB/s | broker CPU | link loss produced (expected) | busy loops |\n")
	fmt.Fprintf(w, "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, r := range rows {
		if !okMW(r) {
			continue
		}
		res := r.Res
		cpu := "—"
		if res.Gateway != nil {
			cpu = fmt.Sprintf("%.2f s", res.Gateway.CPU.Seconds())
		}
		loss := "—"
		if !math.IsNaN(res.ProducedLoss) {
			loss = fmt.Sprintf("%.2f %% (%.2f %%)", 100*res.ProducedLoss, 100*res.ExpectedLoss)
		}
		attempted := max(len(res.Attempts), r.Sent)
		deliv := fmt.Sprintf("%d/%d", r.Delivered, attempted)
		if r.Delivered < attempted {
			deliv = "**" + deliv + "**"
			if failed := attempted - r.Sent; failed > 0 {
				deliv += fmt.Sprintf(" (writes failed %d)", failed)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %.2f | %.3f | %s | %s | %d |\n",
			res.Run, res.System, res.Level, SizeLabel(res.MW.Size), map[bool]string{true: "on", false: "off"}[res.MW.TLS],
			res.MW.OfferedHz, deliv, fmtMs(r.Lat.P50), fmtMs(r.Lat.P95), fmtMs(r.Lat.P99), r.MsgsPerS, r.MBPerS, cpu, loss, res.Cotenant)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		if okMW(r) {
			for _, l := range r.Res.Load {
				if l > 0 {
					lo, hi = math.Min(lo, l), math.Max(hi, l)
				}
			}
		}
	}
	if !math.IsInf(lo, 0) {
		fmt.Fprintf(w, "\nHost load average (1 min) over these runs: %.2f–%.2f.\n", lo, hi)
	}
	fmt.Fprintf(w, "\n")
	var notRun, failed []string
	seen := map[string]bool{}
	for _, r := range rows {
		key := mwLabel(r.Res)
		switch {
		case r.Res.Missing != "" && !seen[key]:
			seen[key] = true
			notRun = append(notRun, fmt.Sprintf("- %s (all its runs, e.g. %s): not run (missing %s)", key, r.Res.Run, r.Res.Missing))
		case r.Res.Err != nil:
			failed = append(failed, fmt.Sprintf("- %s: failed: %v", r.Res.Run, r.Res.Err))
		}
	}
	writeList(w, "Not run:", notRun)
	writeList(w, "Failed:", failed)
	fmt.Fprintf(w, "How each run was set up:\n\n")
	for _, r := range rows {
		if !okMW(r) {
			continue
		}
		fmt.Fprintf(w, "- **%s**: %s; %s", r.Res.Run, r.Res.Impairment, strings.Join(r.Res.Notes, "; "))
		for c, n := range r.Res.Unknown {
			if n > 0 {
				fmt.Fprintf(w, "; %d receptions by %s with an unknown stamp", n, c)
			}
		}
		fmt.Fprintf(w, "\n")
	}
	if len(plots) > 0 {
		fmt.Fprintf(w, "\n")
		for _, p := range plots {
			fmt.Fprintf(w, "![%s](%s)\n\n", p, p)
		}
	}
}

// writeMWPlots draws, per profile, p50 and p95 latency against payload size (one line
// per system) and delivered throughput bars (MB/s per payload, one bar per system).
func writeMWPlots(dir string, rows []MWRow) ([]string, error) {
	profiles, sizes, labels := mwPresent(rows)
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
	cats := make([]string, len(sizes))
	for i, s := range sizes {
		cats[i] = SizeLabel(s)
	}
	for _, prof := range profiles {
		for _, q := range []struct {
			name string
			get  func(MWRow) float64
		}{{"p50", func(r MWRow) float64 { return r.Lat.P50 }}, {"p95", func(r MWRow) float64 { return r.Lat.P95 }}} {
			var series []report.Series
			for _, l := range labels {
				var s report.Series
				s.Name = l
				for _, size := range sizes {
					if r := findMW(rows, l, prof, size); r != nil {
						s.X = append(s.X, float64(size))
						s.Y = append(s.Y, q.get(*r))
					}
				}
				if len(s.X) > 0 {
					series = append(series, s)
				}
			}
			name := fmt.Sprintf("mw-latency-%s-%s.png", q.name, prof)
			keep(name, report.LinesLog(filepath.Join(dir, name), fmt.Sprintf("%s latency vs payload, %s link", q.name, prof),
				"payload (bytes, log)", q.name+" latency (ms, log)", true, true, series))
		}
		vals := make([][]float64, len(labels))
		for i, l := range labels {
			for _, size := range sizes {
				v := math.NaN()
				if r := findMW(rows, l, prof, size); r != nil {
					v = r.MBPerS * 1e3
				}
				vals[i] = append(vals[i], v)
			}
		}
		name := "mw-throughput-" + prof + ".png"
		keep(name, report.Bars(filepath.Join(dir, name), "delivered throughput per payload (open loop), "+prof+" link", "kB/s delivered (kB = 10³ B, log)", cats, labels, vals, true))
	}
	return plots, firstErr
}
