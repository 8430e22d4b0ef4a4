package report

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

func pngOK(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 1000)
	require.Equal(t, "\x89PNG", string(b[:4]))
}

func TestPlotsWritePNG(t *testing.T) {
	dir := t.TempDir()
	var x, y []float64
	for i := range 5000 {
		x = append(x, float64(i)/100+0.5)
		y = append(y, float64(i+1)/5000)
	}
	p := filepath.Join(dir, "cdf.png")
	require.NoError(t, Lines(p, "cdf", "ms", "fraction", true, []Series{{Name: "a", X: x, Y: y}, {Name: "empty"}}))
	pngOK(t, p)
	p = filepath.Join(dir, "cdf-flat.png")
	require.NoError(t, Lines(p, "flat", "ms", "fraction", true, []Series{{Name: "a", X: []float64{1, 1}, Y: []float64{0.5, 1}}}))
	pngOK(t, p)
	require.NoError(t, Lines(p, "none", "ms", "fraction", true, nil))
	p = filepath.Join(dir, "bars.png")
	require.NoError(t, Bars(p, "p95", "ms", []string{"clean", "mild"}, []string{"a", "b"}, [][]float64{{1, 2}, {math.NaN(), 3000}}, true))
	pngOK(t, p)
	p = filepath.Join(dir, "bars-ref.png")
	require.NoError(t, BarsRef(p, "p95", "level", "ms", []string{"clean", "mild"}, []string{"a", "b"}, [][]float64{{1, 2}, {math.NaN(), 3000}}, true,
		[]Ref{{Name: "paper 1.57 ms", Value: 1.57}, {Name: "paper 11.7 s", Value: 11700}}))
	pngOK(t, p)
	require.NoError(t, BarsRef(filepath.Join(dir, "rate.png"), "rate", "level", "Hz", []string{"clean"}, []string{"a"}, [][]float64{{30}}, false, []Ref{{Name: "30 Hz", Value: 30}}))
	pngOK(t, filepath.Join(dir, "rate.png"))
	p = filepath.Join(dir, "cdf-ref.png")
	require.NoError(t, LinesRef(p, "cdf", "ms", "fraction of samples", true, []Series{{Name: "a", X: x, Y: y}}, []Ref{{Name: "paper p95", Value: 1.57}}))
	pngOK(t, p)
	if out := os.Getenv("REPORT_PLOT_DIR"); out != "" { // look at them: REPORT_PLOT_DIR=/tmp/x go test ./eval/report
		for _, n := range []string{"cdf.png", "bars.png", "bars-ref.png", "cdf-ref.png", "rate.png"} {
			b, err := os.ReadFile(filepath.Join(dir, n))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(out, n), b, 0o644))
		}
	}
	// Latency against payload on log–log axes: NaN, zero and +Inf points are left out.
	p = filepath.Join(dir, "loglog.png")
	require.NoError(t, LinesLog(p, "p50 latency vs payload", "payload (bytes, log)", "ms (log)", true, true, []Series{
		{Name: "a", X: []float64{64, 1024, 16384, 1 << 20}, Y: []float64{0.2, math.NaN(), 3, 1500}},
		{Name: "b", X: []float64{64, 1024}, Y: []float64{0, math.Inf(1)}}}))
	pngOK(t, p)
	require.Equal(t, []Series{{Name: "a", X: []float64{64, 16384}, Y: []float64{0.2, 3}}, {Name: "b"}},
		positiveY([]Series{{Name: "a", X: []float64{64, 1024, 16384}, Y: []float64{0.2, -1, 3}}, {Name: "b", X: []float64{1}, Y: []float64{math.NaN()}}}))
	require.NoError(t, LinesLog(p, "none", "x", "y", true, true, nil))
	p = filepath.Join(dir, "steps.png")
	require.NoError(t, Steps(p, "state", "s", "device class", []string{"UNKNOWN", "NONCRITICAL", "CRITICAL"},
		[]Series{{Name: "dev", X: []float64{0, 2, 2, 60}, Y: []float64{0, 0, 2, 2}}}, [][2]float64{{10, 20}}))
	pngOK(t, p)
}

func TestThin(t *testing.T) {
	x := make([]float64, 10000)
	for i := range x {
		x[i] = float64(i)
	}
	xy := thin(x, x)
	require.LessOrEqual(t, len(xy), maxPoints+1)
	require.Equal(t, 9999.0, xy[len(xy)-1].X)
}

// TestSaveLeavesMargin: everything Save draws lies inside Margin: the border of the image
// is blank on all four sides (gonum alone draws the title and the widest tick label flush
// with the edge, where they were clipped), and the plot is drawn within it.
func TestSaveLeavesMargin(t *testing.T) {
	p := filepath.Join(t.TempDir(), "steps.png")
	require.NoError(t, Steps(p, "classifier state of the impaired device, a long run name", "time (s)", "device class",
		[]string{"UNKNOWN", "NONCRITICAL", "CRITICAL"},
		[]Series{{Name: "dev", X: []float64{0, 2, 2, 60}, Y: []float64{0, 0, 2, 2}}}, [][2]float64{{10, 60}}))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	b := img.Bounds()
	px := int(Margin.Dots(vgimg.DefaultDPI)) - 1 // the last pixel may be antialiased
	blank := func(x, y int) bool {
		r, g, bl, _ := img.At(x, y).RGBA()
		return r == 0xffff && g == 0xffff && bl == 0xffff
	}
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			border := x < b.Min.X+px || x >= b.Max.X-px || y < b.Min.Y+px || y >= b.Max.Y-px
			if border && !blank(x, y) {
				t.Fatalf("pixel (%d,%d) drawn within the %d px margin of a %v image", x, y, px, b)
			}
			if !border && !blank(x, y) {
				inked++
			}
		}
	}
	require.Greater(t, inked, b.Dx()*b.Dy()/50, "the plot is drawn inside the margin")
}

// TestBarsLegendBesidePlot: BarsRef draws its legend to the right of the plot area: the
// image is wider than Save's by the legend, the reference line (black) ends before the
// legend column except for the legend's own line sample, and the bars' colours appear in
// the legend column only as legend swatches (at its top), never below it.
func TestBarsLegendBesidePlot(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bars.png")
	// The first name is wider than 35 mm at 12 pt, so the column checked below lies inside
	// the legend's; the reference line lies below the legend's three entries.
	groups := []string{"a-system-name-longer-than-the-column", "b"}
	require.NoError(t, BarsRef(p, "t", "x", "y", []string{"c1", "c2"}, groups,
		[][]float64{{1, 1000}, {10, 100}}, true, []Ref{{Name: "a reference at 5", Value: 5}}))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	b := img.Bounds()
	require.Greater(t, b.Dx(), int(width.Dots(vgimg.DefaultDPI)), "wider than a plot with its legend inside")
	// The legend column: the rightmost part of the image, as wide as the legend text.
	lw := int((legendGap + 35*vg.Millimeter).Dots(vgimg.DefaultDPI))
	x0 := b.Max.X - int(Margin.Dots(vgimg.DefaultDPI)) - lw
	// Rows of the legend: three entries at the top (below the title); below them, the
	// column must be blank.
	legendBottom := b.Min.Y + int((Margin + 35*vg.Millimeter).Dots(vgimg.DefaultDPI))
	for y := legendBottom; y < b.Max.Y; y++ {
		for x := x0; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r != 0xffff || g != 0xffff || bl != 0xffff {
				t.Fatalf("pixel (%d,%d) drawn in the legend column below the legend (image %v)", x, y, b)
			}
		}
	}
}
