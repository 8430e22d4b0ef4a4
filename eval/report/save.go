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
	p.Title.Padding = titlePadding
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	p.Draw(draw.Crop(draw.New(c), Margin, -Margin, Margin, -Margin))
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
