package fleet

import "math"

// Slope is a least-squares line through (x, y) points.
type Slope struct {
	N         int
	PerX      float64 // slope, y units per x unit
	StdErr    float64 // its standard error (NaN below 3 points)
	Intercept float64
}

// FitSlope fits y = a + b·x by ordinary least squares: b = Sxy / Sxx, a = ȳ − b·x̄, and
// the standard error of b = sqrt(SSR / (n − 2) / Sxx). Fewer than 2 points or all x
// equal: N set, the rest 0 (StdErr NaN).
func FitSlope(x, y []float64) Slope {
	n := min(len(x), len(y))
	s := Slope{N: n, StdErr: math.NaN()}
	if n < 2 {
		return s
	}
	var mx, my float64
	for i := range n {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy float64
	for i := range n {
		dx := x[i] - mx
		sxx += dx * dx
		sxy += dx * (y[i] - my)
	}
	if sxx == 0 {
		return s
	}
	s.PerX = sxy / sxx
	s.Intercept = my - s.PerX*mx
	if n > 2 {
		var ssr float64
		for i := range n {
			r := y[i] - s.Intercept - s.PerX*x[i]
			ssr += r * r
		}
		s.StdErr = math.Sqrt(ssr / float64(n-2) / sxx)
	}
	return s
}
