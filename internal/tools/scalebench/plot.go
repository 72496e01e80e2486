package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sync/atomic"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

type atomicInt struct{ v atomic.Int64 }

func (a *atomicInt) load() int64   { return a.v.Load() }
func (a *atomicInt) store(v int64) { a.v.Store(v) }

// plotWindows draws four panels over the crawl's pages: pages per second
// (each sample's rate, and each tenth's), RSS, state and WARC bytes on
// disk, and the bucket bound of the longest frontier update in each
// sampling interval; as scale.png and scale.svg in dir.
func plotWindows(dir string, ss []sample, ws []window) error {
	x := func(s sample) float64 { return s.Pages / 1e3 }
	xl := "pages processed (thousands)"
	rate, rss, state, warc, done := plotter.XYs{}, plotter.XYs{}, plotter.XYs{}, plotter.XYs{}, plotter.XYs{}
	bounds := doneBounds()
	// Rates over 5-sample spans: a one-second rate jumps with scheduling.
	const span = 5
	for i, s := range ss {
		if i >= span {
			a := ss[i-span]
			if dt := s.T - a.T; dt > 0 {
				rate = append(rate, plotter.XY{X: x(s), Y: (s.Pages - a.Pages) / dt})
			}
		}
		rss = append(rss, plotter.XY{X: x(s), Y: s.RSS / (1 << 20)})
		state = append(state, plotter.XY{X: x(s), Y: s.StateBytes / (1 << 30)})
		warc = append(warc, plotter.XY{X: x(s), Y: s.WARCBytes / (1 << 30)})
		if i > 0 && len(s.DoneBuckets) == len(bounds) {
			a := ss[i-1]
			n := s.DoneCount - a.DoneCount
			if n > 0 && len(a.DoneBuckets) == len(bounds) {
				y := bounds[len(bounds)-1] * 4 // above every bound
				for j := range bounds {
					if s.DoneBuckets[j]-a.DoneBuckets[j] >= n {
						y = bounds[j]
						break
					}
				}
				done = append(done, plotter.XY{X: x(s), Y: y * 1e3})
			}
		}
	}
	var tenths plotter.XYs
	for _, w := range ws {
		tenths = append(tenths, plotter.XY{X: (w.From.Pages + w.To.Pages) / 2e3, Y: w.PagesPerSec})
	}
	panel := func(title, y string) *plot.Plot {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xl, y
		p.Add(plotter.NewGrid())
		return p
	}
	p1 := panel("crawl rate", "pages/s")
	if err := addLine(p1, rate, "5 s spans", 0); err != nil {
		return err
	}
	sc, err := plotter.NewScatter(tenths)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = draw.BoxGlyph{}, vg.Points(3)
	p1.Add(sc)
	p1.Legend.Add("tenths", sc)
	p1.Legend.Top = true
	p1.Y.Min = 0
	p2 := panel("memory", "RSS (MiB)")
	if err := addLine(p2, rss, "", 1); err != nil {
		return err
	}
	p2.Y.Min = 0
	p3 := panel("disk", "GiB")
	if err := addLine(p3, warc, "WARC", 2); err != nil {
		return err
	}
	if err := addLine(p3, state, "state", 3); err != nil {
		return err
	}
	p3.Legend.Top, p3.Legend.Left = true, true
	p4 := panel("longest frontier update per second (bucket bound)", "ms")
	if len(done) > 0 {
		s, err := plotter.NewScatter(done)
		if err != nil {
			return err
		}
		s.GlyphStyle.Radius = vg.Points(1.5)
		p4.Add(s)
		p4.Y.Scale = plot.LogScale{}
		p4.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	plots := [][]*plot.Plot{{p1, p2}, {p3, p4}}
	for _, format := range []string{"png", "svg"} {
		w, h := 11*vg.Inch, 7*vg.Inch
		var c vg.CanvasWriterTo
		if format == "png" {
			c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
		} else {
			c = vgsvg.New(w, h)
		}
		dc := draw.New(c)
		t := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
			PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
		canvases := plot.Align(plots, t, dc)
		for i := range plots {
			for j := range plots[i] {
				plots[i][j].Draw(canvases[i][j])
			}
		}
		f, err := os.Create(filepath.Join(dir, "scale."+format))
		if err != nil {
			return err
		}
		if _, err := c.WriteTo(f); err != nil {
			f.Close()
			return fmt.Errorf("write scale.%s: %w", format, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func addLine(p *plot.Plot, xy plotter.XYs, name string, color int) error {
	if len(xy) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color = plotColors[color%len(plotColors)]
	if name != "" {
		p.Legend.Add(name, l)
	}
	p.Add(l)
	return nil
}

// plotColors are ColorBrewer's Set1, as in experiments' plots.
var plotColors = []color.RGBA{
	{0xe4, 0x1a, 0x1c, 0xff}, {0x37, 0x7e, 0xb8, 0xff}, {0x4d, 0xaf, 0x4a, 0xff}, {0x98, 0x4e, 0xa3, 0xff},
}
