package main

import (
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotSoak draws each sampled series over time, one panel each, with the warm-up marked, as a PNG.
func plotSoak(rep *soakReport, path string) error {
	panels := []struct {
		title, unit string
		scale       float64
		get         func(soakSample) float64
	}{
		{"resident memory", "MiB", 1 << 20, func(s soakSample) float64 { return s.RSS }},
		{"Go heap in use", "MiB", 1 << 20, func(s soakSample) float64 { return s.Heap }},
		{"goroutines", "", 1, func(s soakSample) float64 { return s.Goroutines }},
		{"open files", "", 1, func(s soakSample) float64 { return s.FDs }},
		{"Whisper queue", "", 1, func(s soakSample) float64 { return s.Queue }},
		{"answer p50 (speech end → first audio)", "ms", 1, func(s soakSample) float64 { return s.AnswerMs }},
	}
	const cols = 2
	rows := (len(panels) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "s"
		p.Y.Label.Text = pn.unit
		var pts plotter.XYs
		for _, s := range rep.Samples {
			if v := pn.get(s); !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: s.T, Y: v / pn.scale})
			}
		}
		if len(pts) > 0 {
			line, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			p.Add(line, plotter.NewGrid())
		}
		p.Y.Min = 0
		plots[i/cols][i%cols] = p
	}
	img := vgimg.New(vg.Points(900), vg.Points(260*float64(rows)))
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12), PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, t, dc)
	for r := range plots {
		for c := range plots[r] {
			if plots[r][c] != nil {
				plots[r][c].Draw(canvases[r][c])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		return err
	}
	return f.Close()
}
