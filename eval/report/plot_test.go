package report

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
	p = filepath.Join(dir, "steps.png")
	require.NoError(t, Steps(p, "state", "s", []string{"UNKNOWN", "NONCRITICAL", "CRITICAL"},
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
