package runner

import (
	"bufio"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Spread is the median and the range of one statistic over a cell's runs (one run per
// seed), in the statistic's unit. NaN values (a run without samples) are left out; all
// fields are NaN when no run had a value.
type Spread struct {
	Median, Min, Max float64
	N                int // runs with a value
}

// SpreadOf summarizes vs.
func SpreadOf(vs []float64) Spread {
	var xs []float64
	for _, v := range vs {
		if !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return Spread{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(xs)
	med := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		med = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return Spread{Median: med, Min: xs[0], Max: xs[len(xs)-1], N: len(xs)}
}

// Overlaps reports whether the two ranges share a value: two cells differ for real only
// when their ranges do not overlap (issue 27; with 3 runs each, the probability that two
// ranges of the same distribution miss each other is 2·3!·3!/6! = 10 %).
func (s Spread) Overlaps(o Spread) bool { return s.Min <= o.Max && o.Min <= s.Max }

// String is "median [min–max]" in ms with fmtMs's precision, or "—".
func (s Spread) String() string {
	if s.N == 0 {
		return "—"
	}
	if s.N == 1 {
		return fmtMs(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", fmtMs(s.Median), fmtMs(s.Min), fmtMs(s.Max))
}

// SeedCell is one experiment × system × level over its seeds.
type SeedCell struct {
	Exp, System, Level   string
	Cotenant             int // busy loops beside the runs (Config.Cotenant, BusyVariant)
	Seeds                []uint64
	P50, P95, P99        Spread // per-run critical latency percentiles, ms
	Delivered, Attempted int    // critical, summed over the runs
}

// SeedCells groups rows by experiment, system, level and busy loops, in the order they
// first appear; runs that failed or were not run are left out.
func SeedCells(rows []Row) []SeedCell {
	var cells []SeedCell
	idx := map[[4]string]int{}
	var p50, p95, p99 [][]float64
	for _, r := range rows {
		res := r.Res
		if res.Missing != "" || res.Err != nil {
			continue
		}
		k := [4]string{res.Exp, res.System, res.Level, fmt.Sprint(res.Cotenant)}
		i, ok := idx[k]
		if !ok {
			i = len(cells)
			idx[k] = i
			cells = append(cells, SeedCell{Exp: res.Exp, System: res.System, Level: res.Level, Cotenant: res.Cotenant})
			p50, p95, p99 = append(p50, nil), append(p95, nil), append(p99, nil)
		}
		c := &cells[i]
		c.Seeds = append(c.Seeds, res.Seed)
		c.Delivered += r.CritDelivery.Unique
		c.Attempted += r.Pub.Attempts
		p50[i] = append(p50[i], r.Crit.P50)
		p95[i] = append(p95[i], r.Crit.P95)
		p99[i] = append(p99[i], r.Crit.P99)
	}
	for i := range cells {
		cells[i].P50, cells[i].P95, cells[i].P99 = SpreadOf(p50[i]), SpreadOf(p95[i]), SpreadOf(p99[i])
	}
	return cells
}

// writeSeedTable writes the across-seed table when some cell ran more than once.
func writeSeedTable(w *bufio.Writer, rows []Row) {
	cells := SeedCells(rows)
	if !slices.ContainsFunc(cells, func(c SeedCell) bool { return len(c.Seeds) > 1 }) {
		return
	}
	fmt.Fprintf(w, "## Across seeds\n\nEach cell ran once per seed (the seed drives every impairment: loss chains, delays). Latencies: median [min–max] of the per-run critical percentiles. A difference between two cells is real only where their ranges do not overlap. Delivered/attempted: critical samples received / publication attempts, summed over the runs.\n\n")
	fmt.Fprintf(w, "| experiment | system | level | busy loops | seeds | critical p50 | critical p95 | critical p99 | critical delivered/attempted |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cells {
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %s | %s | %d/%d |\n", c.Exp, c.System, c.Level, c.Cotenant, seedList(c.Seeds),
			c.P50, c.P95, c.P99, c.Delivered, c.Attempted)
	}
	fmt.Fprintln(w)
}

func seedList(s []uint64) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.FormatUint(v, 10)
	}
	return strings.Join(parts, ",")
}
