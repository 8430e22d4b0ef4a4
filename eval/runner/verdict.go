package runner

import (
	"bufio"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Verdicts of the seed papers' claims (issue 27 item 6).
const (
	Reproduced    = "reproduced"
	NotReproduced = "not reproduced"
	Partly        = "partly"
	NotJudged     = "not judged"
)

// Claim is one claim of the two seed papers and what this evaluation says of it.
type Claim struct {
	Claim   string // the paper's statement
	Verdict string // Reproduced, NotReproduced, Partly or NotJudged
	Numbers string // the figures behind the verdict, with their ranges over seeds
}

// bridgeP95Bar and bridgeRateBar are the Adaptive Bridge paper's claim: under every
// impairment level the critical stream keeps p95 ≤ 1.57 ms at 30 Hz (evaluation.md's
// reference table; "30 Hz" read as at least 29.7 Hz, 1 % below).
const (
	bridgeP95Bar  = 1.57 // ms
	bridgeRateBar = 29.7 // Hz
	hopPaperMs    = 0.4  // ms at p50
)

// Claims judges the seed papers' claims on rows (experiments 1–6 over any number of
// seeds) and mwRows (the middleware comparison). A claim whose runs are missing is
// NotJudged with the reason.
//
// Only the quietest runs are judged: with a busy-host variant (Config.BusyVariant) the
// rows with the fewest busy loops.
func Claims(rows []Row, mwRows []MWRow) []Claim {
	var out []Claim
	rows = quietest(rows)

	// 1. The bridge keeps critical p95 ≤ 1.57 ms and 30 Hz under impairment.
	c := Claim{Claim: fmt.Sprintf("Adaptive Bridge: critical p95 ≤ %.2f ms and 30 Hz at every impairment level (mild, moderate, strong)", bridgeP95Bar)}
	var held, failed int
	var parts []string
	for _, cell := range SeedCells(rows) {
		if cell.Exp != "exp3" || cell.System != "picobridge" || (cell.Level != "mild" && cell.Level != "moderate" && cell.Level != "strong") {
			continue
		}
		minRate := math.Inf(1)
		for _, r := range rows {
			if r.Res.Exp == cell.Exp && r.Res.System == cell.System && r.Res.Level == cell.Level && okRow(r) {
				minRate = math.Min(minRate, r.Pub.Rate)
			}
		}
		ok := cell.P95.N > 0 && cell.P95.Max <= bridgeP95Bar && minRate >= bridgeRateBar
		bad := cell.P95.N == 0 || cell.P95.Min > bridgeP95Bar || minRate < bridgeRateBar
		switch {
		case ok:
			held++
		case bad:
			failed++
		}
		parts = append(parts, fmt.Sprintf("%s: p95 %s, publisher ≥ %.1f Hz, delivered %d/%d", cell.Level, cell.P95, minRate, cell.Delivered, cell.Attempted))
	}
	c.Verdict, c.Numbers = judge(held, failed, len(parts)), strings.Join(parts, "; ")
	if len(parts) == 0 {
		c.Numbers = "exp3 picobridge at mild/moderate/strong not run"
	}
	out = append(out, c)

	// 2. The bridge hop costs +0.4 ms at p50.
	c = Claim{Claim: fmt.Sprintf("Adaptive Bridge: the bridge hop adds ≈ %.1f ms at p50 (read as: at most %.1f ms)", hopPaperMs, hopPaperMs)}
	var hops []float64
	for _, r := range rows {
		if okRow(r) && r.Direct.N > 0 && r.Crit.N > 0 {
			hops = append(hops, r.Crit.P50-r.Direct.P50)
		}
	}
	if sp := SpreadOf(hops); sp.N > 0 {
		held, failed = 0, 0
		switch {
		case sp.Max <= hopPaperMs:
			held = 1
		case sp.Min > hopPaperMs:
			failed = 1
		}
		c.Verdict = judge(held, failed, 1)
		c.Numbers = fmt.Sprintf("hop overhead at p50 %s over %d runs (exp6)", signedSpread(sp), sp.N)
	} else {
		c.Verdict, c.Numbers = NotJudged, "exp6 not run"
	}
	out = append(out, c)

	// 3–4. Cyclone DDS best on Ethernet; Zenoh best on Wi-Fi and 4G.
	profiles, sizes, _ := mwPresent(mwRows)
	for _, claim := range []struct {
		text  string
		links []string
	}{
		{"Zhang et al.: Cyclone DDS has the lowest latency on Ethernet", []string{"ethernet"}},
		{"Zhang et al.: Zenoh has the lowest latency on Wi-Fi and 4G", []string{"wifi", "4g"}},
	} {
		c = Claim{Claim: claim.text}
		held, failed = 0, 0
		parts = nil
		judged := 0
		for _, link := range claim.links {
			if !slices.Contains(profiles, link) {
				continue
			}
			w50, n50, c50, _ := mwWinner(mwRows, link, sizes, 0.50)
			w95, n95, c95, _ := mwWinner(mwRows, link, sizes, 0.95)
			if c50 == 0 {
				continue
			}
			judged++
			seed := seedWinner[link]
			switch {
			case w50 == seed && w95 == seed:
				held++
			case w50 != seed && w95 != seed:
				failed++
			}
			parts = append(parts, fmt.Sprintf("%s: lowest p50 %s (%d of %d sizes), lowest p95 %s (%d of %d)", link, orTie(w50), n50, c50, orTie(w95), n95, c95))
		}
		c.Verdict = judge(held, failed, judged)
		c.Numbers = strings.Join(parts, "; ")
		if judged == 0 {
			c.Numbers = "mw not run on " + strings.Join(claim.links, ", ")
		} else {
			if n := mwSeeds(mwRows); n > 1 {
				c.Numbers += fmt.Sprintf(" (%d seeds per cell; a size is won only where the ranges over seeds do not overlap)", n)
			} else {
				c.Numbers += " (one run per cell)"
			}
		}
		out = append(out, c)
	}

	// 5. TLS cost: measured, not judged (evaluation.md gives no reference figure).
	c = Claim{Claim: "TLS cost (the seed compared without security; no reference figure in evaluation.md)", Verdict: NotJudged}
	parts = nil
	for _, sys := range MWSystems {
		var ratios []float64
		for _, link := range profiles {
			for _, size := range sizes {
				plain, tls := findMWTLS(mwRows, sys, link, size, false), findMWTLS(mwRows, sys, link, size, true)
				if plain != nil && tls != nil && plain.Lat.P50 > 0 && !math.IsNaN(tls.Lat.P50) {
					ratios = append(ratios, tls.Lat.P50/plain.Lat.P50)
				}
			}
		}
		if sp := SpreadOf(ratios); sp.N > 0 {
			parts = append(parts, fmt.Sprintf("%s: p50 with TLS / without ×%.2f [×%.2f–×%.2f] over %d link×size cells", sys, sp.Median, sp.Min, sp.Max, sp.N))
		}
	}
	c.Numbers = strings.Join(parts, "; ")
	if c.Numbers == "" {
		c.Numbers = "mw with TLS not run"
	}
	out = append(out, c)
	return out
}

// quietest keeps the rows with the fewest busy loops beside them.
func quietest(rows []Row) []Row {
	least := math.MaxInt
	for _, r := range rows {
		least = min(least, r.Res.Cotenant)
	}
	var out []Row
	for _, r := range rows {
		if r.Res.Cotenant == least {
			out = append(out, r)
		}
	}
	return out
}

// judge turns counts of sub-claims held and failed (of n judged) into a verdict.
func judge(held, failed, n int) string {
	switch {
	case n == 0:
		return NotJudged
	case held == n:
		return Reproduced
	case failed == n:
		return NotReproduced
	}
	return Partly
}

func signedSpread(s Spread) string {
	if s.N == 1 {
		return fmt.Sprintf("%+.2f ms", s.Median)
	}
	return fmt.Sprintf("%+.2f ms [%+.2f – %+.2f]", s.Median, s.Min, s.Max)
}

func orTie(w string) string {
	if w == "" {
		return "none (ties)"
	}
	return w
}

// findMWTLS is the mw row of system, link and size with TLS on or off.
func findMWTLS(rows []MWRow, system, link string, size int, tls bool) *MWRow {
	if tls {
		system += "+tls"
	}
	return findMW(rows, system, link, size)
}

// writeVerdicts writes the verdict table, the first thing of summary.md.
func writeVerdicts(w *bufio.Writer, rows []Row, mwRows []MWRow) {
	fmt.Fprintf(w, "## Verdicts on the seed papers' claims\n\n| claim | verdict | numbers |\n|---|---|---|\n")
	for _, c := range Claims(rows, mwRows) {
		fmt.Fprintf(w, "| %s | **%s** | %s |\n", c.Claim, c.Verdict, c.Numbers)
	}
	fmt.Fprintln(w)
}
