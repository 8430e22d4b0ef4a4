// Package report draws the evaluation's PNG plots with gonum.org/v1/plot: latency CDFs,
// grouped bars and step series. It knows nothing about experiments: callers pass series.
package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one line of a plot.
type Series struct {
	Name string
	X, Y []float64
}

// Ref is a reference value drawn across a plot as a thin black dashed line with its own
// legend entry: a vertical line at x = Value on LinesRef plots, a horizontal one at y = Value
// on BarsRef plots (in the plot's unit, before any log scaling). The evaluation uses it for
// the Adaptive Bridge paper's figures (the results table of evaluation.md).
type Ref struct {
	Name  string
	Value float64
}

// Size of every PNG.
const (
	width  = 18 * vg.Centimeter
	height = 11 * vg.Centimeter
)

// maxPoints caps the points drawn per series (a CDF of 5000 samples is thinned evenly).
const maxPoints = 1500

func thin(x, y []float64) plotter.XYs {
	n := len(x)
	step := 1
	if n > maxPoints {
		step = (n + maxPoints - 1) / maxPoints
	}
	var xy plotter.XYs
	for i := 0; i < n; i += step {
		xy = append(xy, plotter.XY{X: x[i], Y: y[i]})
	}
	if n > 0 && (n-1)%step != 0 {
		xy = append(xy, plotter.XY{X: x[n-1], Y: y[n-1]})
	}
	return xy
}

// Lines draws series as lines; logX uses a log10 x axis (values ≤ 0 are clamped to the
// smallest positive value).
func Lines(path, title, xlabel, ylabel string, logX bool, series []Series) error {
	return lines(path, title, xlabel, ylabel, logX, false, series, nil)
}

// LinesRef is Lines with reference values drawn as vertical lines. When ylabel starts with
// "fraction" (a CDF) the y axis is ticked at 0, 0.25, 0.5, 0.75 and 0.95 (and 1, unlabelled),
// so the p50 and p95 of each curve can be read off directly.
func LinesRef(path, title, xlabel, ylabel string, logX bool, series []Series, refs []Ref) error {
	return lines(path, title, xlabel, ylabel, logX, false, series, refs)
}

// LinesLog is Lines with an optional log10 y axis as well (y values ≤ 0 and NaN points
// are left out of a log y axis).
func LinesLog(path, title, xlabel, ylabel string, logX, logY bool, series []Series) error {
	return lines(path, title, xlabel, ylabel, logX, logY, series, nil)
}

func lines(path, title, xlabel, ylabel string, logX, logY bool, series []Series, refs []Ref) error {
	if logY {
		series = positiveY(series)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Legend.Top = false
	p.Legend.Left = false
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	drawn := 0
	for i, s := range series {
		if len(s.X) == 0 {
			continue
		}
		x := s.X
		if logX {
			x = make([]float64, len(s.X))
			for j, v := range s.X {
				x[j] = math.Max(v, 0.01)
			}
		}
		l, err := plotter.NewLine(thin(x, s.Y))
		if err != nil {
			return fmt.Errorf("report: %s: %w", s.Name, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i % 3)
		p.Add(l)
		if logY {
			// Few measured points per line (one per payload size): mark them, so a
			// one-point series is visible too.
			sc, err := plotter.NewScatter(thin(x, s.Y))
			if err != nil {
				return fmt.Errorf("report: %s: %w", s.Name, err)
			}
			sc.GlyphStyle.Color = l.Color
			sc.GlyphStyle.Shape = plotutil.Shape(i)
			sc.GlyphStyle.Radius = vg.Points(3)
			p.Add(sc)
			p.Legend.Add(s.Name, l, sc)
		} else {
			p.Legend.Add(s.Name, l)
		}
		drawn++
	}
	p.Add(plotter.NewGrid())
	if logX {
		// A log axis needs a positive, non-empty range (gonum pads a zero-width range
		// down to 0).
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range series {
			for _, v := range s.X {
				lo, hi = math.Min(lo, math.Max(v, 0.01)), math.Max(hi, math.Max(v, 0.01))
			}
		}
		if drawn == 0 || math.IsInf(lo, 0) {
			lo, hi = 0.1, 10
		}
		if hi < lo*1.5 {
			lo, hi = lo/2, hi*2
		}
		p.X.Min, p.X.Max = lo, hi
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range series {
			for _, v := range s.Y {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if math.IsInf(lo, 0) {
			lo, hi = 0.1, 10
		}
		if hi < lo*10 {
			lo, hi = lo/3, hi*3
		}
		p.Y.Min, p.Y.Max = lo, hi
	}
	if !logY && strings.HasPrefix(ylabel, "fraction") {
		p.Y.Min, p.Y.Max = 0, 1
		p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"},
			{Value: 0.5, Label: "0.5"}, {Value: 0.75, Label: "0.75"}, {Value: 0.95, Label: "0.95"}, {Value: 1}})
	}
	for i, r := range refs {
		x := r.Value
		if logX {
			x = math.Max(x, 0.01)
		}
		if err := addRef(p, r.Name, i, plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}}); err != nil {
			return err
		}
	}
	return Save(p, width, height, path)
}

// addRef draws one reference line (black, dashed by its index) and names it in the legend.
func addRef(p *plot.Plot, name string, i int, xy plotter.XYs) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return fmt.Errorf("report: reference %s: %w", name, err)
	}
	l.Color = color.Black
	l.Width = vg.Points(1)
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(2 + 2*float64(i%3))}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// positiveY drops points whose y is not a positive number.
func positiveY(series []Series) []Series {
	out := make([]Series, len(series))
	for i, s := range series {
		out[i].Name = s.Name
		for j := range s.Y {
			if s.Y[j] > 0 && !math.IsInf(s.Y[j], 0) {
				out[i].X = append(out[i].X, s.X[j])
				out[i].Y = append(out[i].Y, s.Y[j])
			}
		}
	}
	return out
}

// Bars draws grouped bars: one group per category (x axis), one bar per group name; values
// [group][category]; NaN bars are left out. logY uses a log10 y axis.
func Bars(path, title, ylabel string, categories, groups []string, values [][]float64, logY bool) error {
	return BarsRef(path, title, "", ylabel, categories, groups, values, logY, nil)
}

// BarsRef is Bars with an x axis label and reference values drawn as horizontal lines. The
// legend is drawn to the right of the plot area (SaveLegendRight), so it covers neither a bar
// nor a reference line; the y axis gets a little headroom above the tallest bar or line (one
// decade on a log axis, 15 % on a linear one).
func BarsRef(path, title, xlabel, ylabel string, categories, groups []string, values [][]float64, logY bool, refs []Ref) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Legend.Left = true
	// A log y axis is drawn by hand: bars start at 0, which a log scale cannot map, so
	// values are plotted as log10(v/logBase) with ticks labelled in the original unit.
	const logBase = 0.01
	if logY {
		var ticks []plot.Tick
		for k := 0; k <= 8; k++ {
			ticks = append(ticks, plot.Tick{Value: float64(k), Label: fmt.Sprintf("%.10g", logBase*math.Pow(10, float64(k)))})
		}
		p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	}
	w := vg.Points(float64(60) / float64(max(1, len(groups))))
	top := 0.0
	for i, g := range groups {
		vs := make(plotter.Values, len(categories))
		for j := range categories {
			v := values[i][j]
			if math.IsNaN(v) {
				v = 0
			}
			if logY {
				v = math.Log10(math.Max(v, logBase) / logBase)
			}
			vs[j] = v
			top = math.Max(top, v)
		}
		b, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return fmt.Errorf("report: %s: %w", g, err)
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = vg.Length(0)
		b.Offset = w * vg.Length(float64(i)-float64(len(groups)-1)/2)
		p.Add(b)
		p.Legend.Add(g, b)
	}
	p.NominalX(categories...)
	p.Add(plotter.NewGrid())
	for _, r := range refs {
		if logY {
			top = math.Max(top, math.Log10(math.Max(r.Value, logBase)/logBase))
		} else {
			top = math.Max(top, r.Value)
		}
	}
	p.Y.Min = 0
	if logY {
		p.Y.Max = math.Ceil(top) + 1 // whole decades, one above the tallest bar or line
	} else {
		p.Y.Max = math.Max(top*1.15, 1)
	}
	for i, r := range refs {
		y := r.Value
		if logY {
			y = math.Log10(math.Max(y, logBase) / logBase)
		}
		if err := addRef(p, r.Name, i, plotter.XYs{{X: -0.5, Y: y}, {X: float64(len(categories)) - 0.5, Y: y}}); err != nil {
			return err
		}
	}
	return SaveLegendRight(p, width, height, path)
}

// Steps draws step series (already expanded into corners) with named y levels (the y axis
// labelled ylabel), and vertical shaded spans (e.g. the impaired periods of a toggle run).
func Steps(path, title, xlabel, ylabel string, levels []string, series []Series, spans [][2]float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	var ticks []plot.Tick
	for i, l := range levels {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: l})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.5, float64(len(levels))-0.5
	for _, sp := range spans {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: sp[0], Y: -0.5}, {X: sp[1], Y: -0.5}, {X: sp[1], Y: float64(len(levels)) - 0.5}, {X: sp[0], Y: float64(len(levels)) - 0.5}})
		if err != nil {
			return err
		}
		poly.Color = color.RGBA{R: 255, G: 200, B: 200, A: 255}
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	for i, s := range series {
		l, err := plotter.NewLine(thin(s.X, s.Y))
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(2)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	if len(spans) > 0 {
		sw, _ := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}})
		sw.Color = color.RGBA{R: 255, G: 200, B: 200, A: 255}
		p.Legend.Add("impaired", sw)
	}
	p.Legend.Top = true
	return Save(p, width, height, path)
}
