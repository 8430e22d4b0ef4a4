package report

import (
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Margin is the blank border Save leaves around a plot, so that the title, the outermost
// tick labels and the axis labels lie inside the image (gonum draws them flush with the
// canvas edge, where a viewer or a scaled-down rendering clips them).
const Margin = 8 * vg.Millimeter

// titlePadding separates the title from the plot area below it.
const titlePadding = 2 * vg.Millimeter

// Save writes p as an image of w × h (format from path's extension: .png, .svg, .pdf …),
// drawn inside Margin on every side. Every plot of the evaluation and the demo goes through
// it.
func Save(p *plot.Plot, w, h vg.Length, path string) (err error) {
	return save(p, w, h, path, false)
}

// SaveLegendRight is Save with the legend drawn to the right of the plot area instead of
// inside it, so that it can cover neither a bar nor a reference line; the image is wider
// than w by the legend's width, so the plot area keeps the size Save gives it.
func SaveLegendRight(p *plot.Plot, w, h vg.Length, path string) error {
	return save(p, w, h, path, true)
}

// legendGap separates the plot area from a legend drawn beside it.
const legendGap = 4 * vg.Millimeter

func save(p *plot.Plot, w, h vg.Length, path string, legendRight bool) (err error) {
	p.Title.Padding = titlePadding
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	var lw vg.Length
	if legendRight {
		lw = p.Legend.Rectangle(draw.Canvas{}).Size().X + legendGap
	}
	c, err := draw.NewFormattedCanvas(w+lw, h, format)
	if err != nil {
		return err
	}
	dc := draw.Crop(draw.New(c), Margin, -Margin, Margin, -Margin)
	if legendRight {
		l := p.Legend
		p.Legend = plot.NewLegend() // no entries: Plot.Draw draws none
		p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
		l.Top, l.Left = true, true
		// below the title, level with the top of the plot area
		top := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		l.Draw(draw.Crop(dc, dc.Size().X-lw+legendGap, 0, 0, -top))
	} else {
		p.Draw(dc)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if e := f.Close(); err == nil {
			err = e
		}
	}()
	_, err = c.WriteTo(f)
	return err
}
