package demo

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/picobridge/picobridge/eval/report"
)

// writeOutputs writes summary.json, samples.csv and the two plots into dir.
func writeOutputs(dir string, r *Result, col *collector, start time.Time) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	samples := col.snapshot()
	if err := writeSamplesCSV(filepath.Join(dir, "samples.csv"), samples, start); err != nil {
		return err
	}
	var names []string
	for _, d := range r.Devices {
		names = append(names, d.Name)
	}
	if err := plotLatencyCDF(filepath.Join(dir, "latency_cdf.png"), names, samples); err != nil {
		return fmt.Errorf("latency plot: %w", err)
	}
	end := time.Since(start)
	if err := plotClasses(filepath.Join(dir, "class_timeline.png"), names, col, end, r.ReplayFrom, r.ReplayTo); err != nil {
		return fmt.Errorf("class plot: %w", err)
	}
	return nil
}

func writeSamplesCSV(path string, samples []sampleRec, start time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(f)
	_ = w.Write([]string{"device", "key", "stamp_ns", "received_s", "delivered_s", "latency_ms", "size", "outcome"})
	rel := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatFloat(t.Sub(start).Seconds(), 'f', 6, 64)
	}
	for _, s := range samples {
		lat := ""
		if l := s.latency(); l > 0 {
			lat = strconv.FormatFloat(float64(l)/1e6, 'f', 3, 64)
		}
		_ = w.Write([]string{s.Device, s.Key, strconv.FormatInt(s.Stamp, 10), rel(s.Received), rel(s.Delivered), lat, strconv.Itoa(s.Size), s.Outcome})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return f.Close()
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// plotLatencyCDF: one empirical CDF of delivery latency per device (log x).
func plotLatencyCDF(path string, names []string, samples []sampleRec) error {
	p := plot.New()
	p.Title.Text = "Latency (delivery to the device application − DDS send), per device"
	p.X.Label.Text = "latency (ms, log scale)"
	p.Y.Label.Text = "fraction of delivered samples"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	have := false
	for i, name := range names {
		var lat []float64
		for _, s := range samples {
			if s.Device == name {
				if l := s.latency(); l > 0 {
					lat = append(lat, max(float64(l)/1e6, 0.01))
				}
			}
		}
		if len(lat) == 0 {
			continue
		}
		have = true
		sort.Float64s(lat)
		pts := make(plotter.XYs, len(lat))
		for j, v := range lat {
			pts[j].X, pts[j].Y = v, float64(j+1)/float64(len(lat))
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (n=%d)", name, len(lat)), l)
	}
	if !have {
		p.X.Scale = plot.LinearScale{}
		p.X.Tick.Marker = plot.DefaultTicks{}
	}
	return report.Save(p, 8*vg.Inch, 5*vg.Inch, path)
}

func classLevel(c string) float64 {
	switch c {
	case "CRITICAL":
		return 2
	case "NONCRITICAL":
		return 1
	}
	return 0
}

type classTicks struct{}

func (classTicks) Ticks(min, max float64) []plot.Tick {
	return []plot.Tick{{Value: 0, Label: "UNKNOWN"}, {Value: 1, Label: "NONCRITICAL"}, {Value: 2, Label: "CRITICAL"}}
}

// plotClasses: each device's class over time (step lines, slightly offset
// so that devices in the same class stay visible).
func plotClasses(path string, names []string, col *collector, end time.Duration, replayFrom, replayTo float64) error {
	p := plot.New()
	p.Title.Text = "Device class over time (probe classifier)"
	p.X.Label.Text = "time since the fleet started (s)"
	p.Y.Label.Text = "device class"
	p.Y.Tick.Marker = classTicks{}
	p.Y.Min, p.Y.Max = -0.3, 2.3
	p.X.Min = 0
	p.X.Max = end.Seconds()
	p.Legend.Top = false
	p.Add(plotter.NewGrid())
	if replayTo > replayFrom {
		band := plotter.XYs{{X: replayFrom, Y: -0.25}, {X: replayTo, Y: -0.25}}
		l, err := plotter.NewLine(band)
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 0x80}
		l.Width = vg.Points(6)
		p.Add(l)
		p.Legend.Add("bag replay", l)
	}
	for i, name := range names {
		tl := col.classTimeline(name)
		if len(tl) == 0 {
			continue
		}
		off := (float64(i) - float64(len(names)-1)/2) * 0.06
		var pts plotter.XYs
		for j, c := range tl {
			y := classLevel(c.Class) + off
			x := max(c.At.Seconds(), 0)
			if j > 0 {
				pts = append(pts, plotter.XY{X: x, Y: pts[len(pts)-1].Y})
			}
			pts = append(pts, plotter.XY{X: x, Y: y})
		}
		pts = append(pts, plotter.XY{X: end.Seconds(), Y: pts[len(pts)-1].Y})
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(2)
		p.Add(l)
		p.Legend.Add(name, l)
	}
	return report.Save(p, 8*vg.Inch, 4*vg.Inch, path)
}
