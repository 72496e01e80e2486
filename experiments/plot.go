package experiments

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// PlotFormats are the image formats every plot is written in.
var PlotFormats = []string{"png", "svg"}

const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
)

// legendWidth is the strip right of the data where the legend is drawn, so
// that it never hides a curve: one line per structure (the line styles are
// explained under the title), a sixth of the figure.
const legendWidth = 2 * vg.Inch

// Figure is one plot, written as Name.png and Name.svg.
type Figure struct {
	Name   string // file name without extension
	Title  string
	plot   *plot.Plot
	legend plot.Legend
	// upperBounds counts the rates of zero drawn as their interval's
	// upper bound.
	upperBounds int
}

// Figures builds the plots of a run: from the n sweep, FP rate vs n per
// workload (log scale, measured points and theory lines; the paper's Fig.
// 5), insert time vs n (Fig. 6) and query time vs n per workload (Fig. 7);
// from the memory sweep, when rows of it are present, FP rate vs bits per
// URL at fixed n per workload (log scale, measured points and theory
// lines).
func Figures(rows []Row) ([]Figure, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("experiments: no rows to plot: %w", ErrNoData)
	}
	structs := structureOrder(rows) // one colour per structure in every figure
	var nRows, memRows []Row
	for _, r := range rows {
		if r.IsMemorySweep() {
			memRows = append(memRows, r)
		} else {
			nRows = append(nRows, r)
		}
	}
	var figs []Figure
	if len(nRows) > 0 {
		for _, wl := range workloadOrder(nRows) {
			f, err := fpVsN(nRows, wl, structs)
			if err != nil {
				return nil, err
			}
			figs = append(figs, f)
		}
		f, err := timeVsN(nRows, WorkloadURLID, structs, "insert")
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
		for _, wl := range workloadOrder(nRows) {
			f, err := timeVsN(nRows, wl, structs, "query")
			if err != nil {
				return nil, err
			}
			figs = append(figs, f)
		}
	}
	for _, wl := range workloadOrder(memRows) {
		f, err := fpVsBits(memRows, wl, structs)
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	return figs, nil
}

// WriteFigures writes every figure in every PlotFormats format into dir and
// returns the file names written.
func WriteFigures(dir string, figs []Figure) ([]string, error) {
	var names []string
	for _, f := range figs {
		for _, format := range PlotFormats {
			name := f.Name + "." + format
			if err := writeFile(filepath.Join(dir, name), func(w io.Writer) error { return f.WriteTo(w, format) }); err != nil {
				return names, err
			}
			names = append(names, name)
		}
	}
	return names, nil
}

// WriteTo renders the figure in format ("png" or "svg") to w: the plot,
// with the legend in a strip on its right.
func (f Figure) WriteTo(w io.Writer, format string) error {
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.New(plotWidth+legendWidth, plotHeight)}
	case "svg":
		c = vgsvg.New(plotWidth+legendWidth, plotHeight)
	default:
		return fmt.Errorf("experiments: plot %s: unknown format %q: %w", f.Name, format, ErrInvalidOptions)
	}
	dc := draw.New(c)
	f.plot.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	f.legend.Draw(draw.Crop(dc, plotWidth, 0, 0, -0.6*vg.Inch))
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("experiments: plot %s: %w", f.Name, err)
	}
	return nil
}

func newPlot(title, x, y string) (*plot.Plot, plot.Legend) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(10)
	return p, leg
}

// logY puts the y axis on a log scale with readable tick labels.
func logY(p *plot.Plot) {
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: 1}
}

func fileSafe(s string) string { return strings.NewReplacer("+", "-", "/", "-", " ", "-").Replace(s) }

func fpVsN(rows []Row, wl string, structs []string) (Figure, error) {
	p, leg := newPlot(fmt.Sprintf("False-positive rate vs n (%s workload)", wl), "URLs inserted (n)", "false-positive rate (log)")
	return fpCurves(p, leg, "fp_vs_n_"+fileSafe(wl), rows, wl, structs, func(r Row) float64 { return float64(r.N) })
}

// fpVsBits plots the rate against bits per URL from the memory sweep's
// rows: n is fixed and every structure is rebuilt at each total memory, so
// bits per URL (total bits / n) moves with the memory alone.
func fpVsBits(rows []Row, wl string, structs []string) (Figure, error) {
	ns := make(map[int]bool)
	for _, r := range rows {
		if r.Workload == wl {
			ns[r.N] = true
		}
	}
	at := ""
	if len(ns) == 1 {
		for n := range ns {
			at = fmt.Sprintf(" at n = %d", n)
		}
	}
	p, leg := newPlot(fmt.Sprintf("False-positive rate vs bits per URL%s, memory varied (%s workload)", at, wl), "bits per URL (total bits / n)", "false-positive rate (log)")
	return fpCurves(p, leg, "fp_vs_bits_per_url_"+fileSafe(wl), rows, wl, structs, func(r Row) float64 { return r.BitsPerURL })
}

// confidence is the level of the intervals drawn on false-positive rates.
const confidence = 0.95

// fpCurves draws, per structure, the measured rates with their 95%
// Clopper-Pearson intervals, a rate of zero as a downward triangle at its
// interval's upper bound (a log axis has no zero: leaving such points out
// hid 17 of them), and the formula's rate dashed.
func fpCurves(p *plot.Plot, leg plot.Legend, name string, rows []Row, wl string, structs []string, x func(Row) float64) (Figure, error) {
	logY(p)
	lo, hi := math.Inf(1), 0.0
	type series struct {
		name           string
		measured, theo plotter.XYs
		errs           plotter.YErrors // interval around each measured rate, as deltas
		zeros          plotter.XYs     // rate 0: the interval's upper bound
	}
	var all []series
	for _, s := range structs {
		var se series
		se.name = s
		for _, r := range rows {
			if r.Workload != wl || r.Structure != s {
				continue
			}
			ciLo, ciHi := clopperPearson(r.FalsePositives, r.Queries, confidence)
			if r.FPRate > 0 {
				se.measured = append(se.measured, plotter.XY{X: x(r), Y: r.FPRate})
				se.errs = append(se.errs, struct{ Low, High float64 }{r.FPRate - ciLo, ciHi - r.FPRate})
				lo, hi = math.Min(lo, ciLo), math.Max(hi, ciHi)
			} else if r.Queries > 0 {
				se.zeros = append(se.zeros, plotter.XY{X: x(r), Y: ciHi})
				lo, hi = math.Min(lo, ciHi), math.Max(hi, ciHi)
			}
			se.theo = append(se.theo, plotter.XY{X: x(r), Y: r.TheoryFPRate})
			if r.TheoryFPRate > 0 {
				hi = math.Max(hi, r.TheoryFPRate)
			}
		}
		all = append(all, se)
	}
	// A log axis cannot show 0; the floor sits a decade under the least
	// point drawn (theory lines below it are clipped to it).
	if math.IsInf(lo, 1) || lo <= 0 {
		lo = 1e-6
	}
	floor := lo / 10
	if hi <= floor {
		hi = floor * 100
	}
	zeroDrawn, bounds := false, 0
	for i, se := range all {
		c := structColor(structIndex(structs, se.name))
		var entry []plot.Thumbnailer
		if len(se.theo) > 0 {
			theo := make(plotter.XYs, len(se.theo))
			for j, xy := range se.theo {
				theo[j] = plotter.XY{X: xy.X, Y: math.Max(xy.Y, floor)}
			}
			l, err := plotter.NewLine(theo)
			if err != nil {
				return Figure{}, fmt.Errorf("experiments: plot: %w", err)
			}
			l.Color = c
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
			entry = append(entry, l)
		}
		if len(se.measured) > 0 {
			l, pts, err := plotter.NewLinePoints(se.measured)
			if err != nil {
				return Figure{}, fmt.Errorf("experiments: plot: %w", err)
			}
			l.Color = c
			pts.Color = c
			pts.Shape = plotutil.Shape(i)
			bars, err := plotter.NewYErrorBars(errorPoints{se.measured, se.errs, floor})
			if err != nil {
				return Figure{}, fmt.Errorf("experiments: plot: %w", err)
			}
			bars.Color = c
			p.Add(l, bars, pts)
			entry = []plot.Thumbnailer{l, pts}
		}
		if len(se.zeros) > 0 {
			sc, err := plotter.NewScatter(se.zeros)
			if err != nil {
				return Figure{}, fmt.Errorf("experiments: plot: %w", err)
			}
			sc.Color, sc.Shape, sc.Radius = c, downTriangle{}, vg.Points(4)
			p.Add(sc)
			zeroDrawn = true
			bounds += len(se.zeros)
			if len(se.measured) == 0 {
				entry = append(entry, sc)
			}
		}
		if len(entry) > 0 {
			leg.Add(se.name, entry...)
		}
	}
	if zeroDrawn {
		sc, _ := plotter.NewScatter(plotter.XYs{{}})
		sc.Color, sc.Shape, sc.Radius = color.Gray{Y: 80}, downTriangle{}, vg.Points(4)
		leg.Add("0 observed", sc)
	}
	p.Y.Min, p.Y.Max = floor, hi*2
	p.Title.Text += fmt.Sprintf("\nsolid: measured, bars: %.0f%% Clopper-Pearson interval; dashed: formula (1)/(4)", 100*confidence)
	if zeroDrawn {
		p.Title.Text += "\ntriangles pointing down: no false positive observed, drawn at the interval's upper bound"
	}
	return Figure{Name: name, Title: p.Title.Text, plot: p, legend: leg, upperBounds: bounds}, nil
}

// clopperPearson returns the exact (Clopper-Pearson) two-sided interval at
// level conf for a binomial rate of x successes in n trials: the
// conf-interval that never covers less than conf, from the Beta
// distribution's quantiles. n <= 0 gives [0, 1].
func clopperPearson(x, n int64, conf float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	x = min(max(x, 0), n)
	a := (1 - conf) / 2
	lo, hi = 0, 1
	if x > 0 {
		lo = distuv.Beta{Alpha: float64(x), Beta: float64(n - x + 1)}.Quantile(a)
	}
	if x < n {
		hi = distuv.Beta{Alpha: float64(x + 1), Beta: float64(n - x)}.Quantile(1 - a)
	}
	return lo, hi
}

// errorPoints are measured rates with their intervals for
// plotter.NewYErrorBars, the lower ends held above the log axis's floor.
type errorPoints struct {
	plotter.XYs
	errs  plotter.YErrors
	floor float64
}

func (e errorPoints) YError(i int) (float64, float64) {
	low, high := e.errs.YError(i)
	return math.Min(low, e.XYs[i].Y-e.floor), high
}

// downTriangle draws a downward-pointing triangle: an upper bound.
type downTriangle struct{}

func (downTriangle) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.8)})
	r := sty.Radius
	var path vg.Path
	path.Move(vg.Point{X: pt.X - r, Y: pt.Y + r/2})
	path.Line(vg.Point{X: pt.X + r, Y: pt.Y + r/2})
	path.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	path.Close()
	c.Stroke(path)
}

func timeVsN(rows []Row, wl string, structs []string, what string) (Figure, error) {
	var title, ylabel, name string
	if what == "insert" {
		title, ylabel, name = "Insert time vs n (mean over the first n insertions)", "ns per inserted URL", "insert_time_vs_n"
	} else {
		title, ylabel, name = fmt.Sprintf("Query time vs n (%s workload)", wl), "ns per query", "query_time_vs_n_"+fileSafe(wl)
	}
	p, leg := newPlot(title, "URLs inserted (n)", ylabel)
	for i, s := range structs {
		var xys plotter.XYs
		for _, r := range rows {
			if r.Workload == wl && r.Structure == s {
				y := r.QueryNsPerURL
				if what == "insert" {
					y = r.InsertNsPerURL
				}
				xys = append(xys, plotter.XY{X: float64(r.N), Y: y})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return Figure{}, fmt.Errorf("experiments: plot: %w", err)
		}
		l.Color, pts.Color, pts.Shape = structColor(i), structColor(i), plotutil.Shape(i)
		p.Add(l, pts)
		leg.Add(s, l, pts)
	}
	p.Y.Min = 0
	return Figure{Name: name, Title: title, plot: p, legend: leg}, nil
}

func structureOrder(rows []Row) []string {
	var s []string
	for _, r := range rows {
		if !slices.Contains(s, r.Structure) {
			s = append(s, r.Structure)
		}
	}
	return s
}

func workloadOrder(rows []Row) []string {
	var w []string
	for _, r := range rows {
		if !slices.Contains(w, r.Workload) {
			w = append(w, r.Workload)
		}
	}
	return w
}

func structIndex(structs []string, s string) int { return slices.Index(structs, s) }

// palette is ColorBrewer's Set1: unlike plotutil's soft colours, no two of
// the first six (one per structure) are easily confused.
var palette = []color.RGBA{
	{228, 26, 28, 255}, {77, 175, 74, 255}, {55, 126, 184, 255}, {255, 127, 0, 255},
	{152, 78, 163, 255}, {90, 90, 90, 255}, {166, 86, 40, 255}, {247, 129, 191, 255},
}

func structColor(i int) color.Color { return palette[(i%len(palette)+len(palette))%len(palette)] }

// writeFiguresAndReport writes figs into dir, adds their file names to
// *files, then writes dir/report.md from report, which may list *files.
func writeFiguresAndReport(dir string, files *[]string, figs []Figure, report func() string) error {
	names, err := WriteFigures(dir, figs)
	if err != nil {
		return err
	}
	*files = append(*files, names...)
	return writeText(filepath.Join(dir, "report.md"), report())
}

// writeText writes s to path as writeFile does.
func writeText(path, s string) error {
	return writeFile(path, func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	})
}

// writeFile writes path through a temporary file renamed into place, so a
// failed run never leaves a truncated output behind.
func writeFile(path string, fn func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fn(f); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	return nil
}
