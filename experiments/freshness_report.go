package experiments

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/layercrawl/layercrawl/revisit"
)

// figures draws the freshness and the age over time (mean over runs with
// its 95% Student-t interval) and the intervals of run 1's final schedule
// against the true change rates.
func (res *FreshnessResult) figures(cfg FreshnessConfig) ([]Figure, error) {
	o := cfg.Web
	web := fmt.Sprintf("changeweb: %d pages, %.0f%% never change, mean change intervals log-uniform in [%v, %v]\nbudget %.3g fetches/s (%.3g of the pages a minute); intervals in [%v, %v]; %d runs",
		o.Pages, 100*max(o.Never, 0), o.Fastest, o.Slowest, res.Budget, cfg.BudgetShare, cfg.Min, cfg.Max, cfg.Runs)
	var figs []Figure
	for _, m := range []struct {
		name, title, y string
		get            func(FreshnessPoint) float64
		log            bool
	}{
		{"freshness_over_time", "Freshness of the collection over simulated time", "share of pages whose latest capture is current", func(p FreshnessPoint) float64 { return p.Freshness }, false},
		{"age_over_time", "Mean age of the collection over simulated time", "mean age (minutes, log scale)", func(p FreshnessPoint) float64 { return p.Age / 60 }, true},
	} {
		title := m.title + "\n" + web + "\nlines: mean over runs, bars: 95% Student-t interval"
		p, leg := newPlot(title, "simulated time (hours)", m.y)
		if m.log {
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		}
		for i, v := range cfg.Variants {
			var xys plotter.XYs
			var errs plotter.YErrors
			for k := 1; k <= cfg.Samples; k++ {
				at := time.Duration(float64(cfg.Duration) * float64(k) / float64(cfg.Samples))
				var ys []float64
				for _, pt := range res.Points {
					if pt.Variant == v.Name && (pt.At-at).Abs() < time.Second {
						ys = append(ys, m.get(pt))
					}
				}
				if len(ys) == 0 {
					continue
				}
				s := summarize(ys)
				if m.log {
					if !(s.mean > 0) {
						continue
					}
					s.lo = max(s.lo, s.mean/10) // the log axis has no room below 0
				}
				xys = append(xys, plotter.XY{X: at.Hours(), Y: s.mean})
				errs = append(errs, struct{ Low, High float64 }{s.mean - s.lo, s.hi - s.mean})
			}
			if len(xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("experiments: plot: %w", err)
			}
			bars, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{xys, errs})
			if err != nil {
				return nil, fmt.Errorf("experiments: plot: %w", err)
			}
			c := structColor(i)
			l.Color, bars.Color = c, c
			if v.Known {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l, bars)
			leg.Add(v.Name, l)
		}
		p.X.Min = 0
		if !m.log {
			p.Y.Min = 0
		}
		figs = append(figs, Figure{Name: m.name, Title: title, plot: p, legend: leg})
	}
	// The final intervals against the true rates, run 1.
	title := "Revisit interval at the end of run 1 against the page's true change rate\n" + web + "\npages that never change are not drawn (log axes)"
	p, leg := newPlot(title, "true change rate (changes per hour)", "interval (minutes)")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	for i, v := range cfg.Variants {
		final := res.Final[v.Name]
		var xys plotter.XYs
		for pg, iv := range final {
			if res.Rates[pg] > 0 && iv > 0 {
				xys = append(xys, plotter.XY{X: res.Rates[pg] * 3600, Y: iv.Minutes()})
			}
		}
		if len(xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("experiments: plot: %w", err)
		}
		sc.Color, sc.Shape, sc.Radius = structColor(i), plotutil.Shape(i), vg.Points(1.5)
		p.Add(sc)
		leg.Add(v.Name, sc)
	}
	figs = append(figs, Figure{Name: "freshness_intervals", Title: title, plot: p, legend: leg})
	return figs, nil
}

func (res *FreshnessResult) report(cfg FreshnessConfig, took time.Duration, loadStart, loadEnd string) string {
	var b strings.Builder
	m := DescribeMachine(context.Background())
	o := cfg.Web
	fmt.Fprintf(&b, "# Freshness experiment report\n\nCommand:\n\n```sh\n%s\n```\n\n", cfg.Command)
	fmt.Fprintf(&b, "Machine: %s, %d cores, %s; commit %s; run time %v; load average at start %s, at end %s.\n\n",
		m.CPUModel, m.Cores, m.GoVersion, m.Commit, took.Round(time.Second), loadStart, loadEnd)
	fmt.Fprintf(&b, "## The web\n\n")
	fmt.Fprintf(&b, "internal/changeweb, seeds %d to %d (one per run; every variant of a run sees the same changes): %d pages on %d hosts; %.0f%% never change, "+
		"the others change as Poisson processes with mean intervals log-uniform in [%v, %v]. Every page sends an ETag, a Last-Modified and a Date by the simulated clock; "+
		"version 0 is dated before the run began (a never-changing page up to %v before, uniformly; a changing page by its process, an exponential gap of its rate). Freshness and age are computed from the web's own record of its changes "+
		"(a page is fresh while no change has followed its latest capture; its age is the time since the first such change).\n\n",
		o.Seed, o.Seed+uint64(cfg.Runs)-1, o.Pages, o.Hosts, 100*max(o.Never, 0), o.Fastest, o.Slowest, o.History)
	fmt.Fprintf(&b, "## The simulation\n\n")
	fmt.Fprintf(&b, "%v of simulated time per run. A fetch slot every 1/%.4g s (the budget: %.3g of the pages a minute); each slot fetches the page most overdue, if any is due, "+
		"through the web's HTTP handler in process (no sockets; If-None-Match with the ETag of the last capture: 200 is a change, 304 none), "+
		"then revisit.Record.ObserveModified (with the Last-Modified on the simulated clock, revisit.ModifiedAt), Scheduler.Update and Scheduler.Interval set its next visit, within [%v, %v]. "+
		"The first pass over all pages takes %v; time-averaged figures are over the rest of the run, and over its second half. No per-host politeness (the crawler's business).\n\n",
		cfg.Duration, res.Budget, cfg.BudgetShare, cfg.Min, cfg.Max, res.From.Round(time.Second))
	fmt.Fprintf(&b, "Variants: uniform, proportional and adaptive are revisit's policies with rates estimated from the visits and the pages' Last-Modified; *-undated estimate from the visits alone (a server without Last-Modified); *-known schedule with revisit.Plan over the true rates. "+
		"\"expected\" is the steady-state freshness revisit.Freshness predicts for revisit.Plan over the true rates under the variant's policy.\n\n")
	b.WriteString("| variant | freshness, mean [95% CI] | median | second half, median | expected (known rates) | age, median | fetches | 304s | never-changing: fetches / allowed by Max (worst page) | never-changing at Max at the end | mean wait for a slot |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	med := map[string][2]float64{}
	for _, v := range cfg.Variants {
		rs := res.runsOf(v.Name)
		var f, fl, a, fetch, unch, late []float64
		nf, na, np, atMax, worst := 0, 0, 0, 0, 0.0
		for _, r := range rs {
			f = append(f, r.Freshness)
			fl = append(fl, r.FreshnessLate)
			a = append(a, r.Age)
			fetch = append(fetch, float64(r.Fetches))
			unch = append(unch, float64(r.Unchanged))
			late = append(late, r.MeanLate.Seconds())
			nf += r.NeverFetches
			na += r.NeverAllowed
			np += r.NeverPages
			atMax += r.NeverAtMax
			worst = max(worst, r.NeverWorst)
		}
		sf := summarize(f)
		med[v.Name] = [2]float64{sf.median, summarize(fl).median}
		fmt.Fprintf(&b, "| %s | %.4f [%.4f, %.4f] | %.4f | %.4f | %.4f | %.0f s | %.0f | %.0f | %d / %d = %.2f (%.2f) | %.0f%% | %.0f s |\n",
			v.Name, sf.mean, sf.lo, sf.hi, sf.median, summarize(fl).median, summarize(res.Expected[v.Name]).median, summarize(a).median,
			summarize(fetch).median, summarize(unch).median, nf, na, float64(nf)/float64(max(na, 1)), worst, 100*float64(atMax)/float64(max(np, 1)), summarize(late).median)
	}
	b.WriteString("\n")
	base := cfg.Variants[0].Name
	if len(cfg.Variants) > 1 {
		fmt.Fprintf(&b, "Freshness relative to %s, per run (paired: same web), and of the medians:\n\n| variant | ratio per run, mean [95%% CI] | ratio of medians | second half, ratio of medians |\n|---|---:|---:|---:|\n", base)
		baseRuns := res.runsOf(base)
		for _, v := range cfg.Variants[1:] {
			var ratios []float64
			for i, r := range res.runsOf(v.Name) {
				if i < len(baseRuns) && baseRuns[i].Freshness > 0 {
					ratios = append(ratios, r.Freshness/baseRuns[i].Freshness)
				}
			}
			s := summarize(ratios)
			fmt.Fprintf(&b, "| %s | %.3fx [%.3f, %.3f] | %.3fx | %.3fx |\n", v.Name, s.mean, s.lo, s.hi, med[v.Name][0]/med[base][0], med[v.Name][1]/med[base][1])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "## The scheduler's memory\n\n")
	minB, maxB, size := math.MaxInt, 0, 0
	for _, r := range res.Runs {
		minB, maxB, size = min(minB, r.MinStateBytes), max(maxB, r.MaxStateBytes), max(size, r.SchedulerBytes)
	}
	fmt.Fprintf(&b, "The scheduler is %d bytes (its population summary a fixed array), whatever the pages and the time; its encoded state, checked at each of the %d samples of every run, was between %d and %d bytes. "+
		"The crawl keeps a revisit.Record of %d bytes encoded per page. The planned fetch rate at the end of each run (revisit.Scheduler.PlannedRate) against the budget %.4g/s: ",
		size, cfg.Samples, minB, maxB, revisit.RecordSize, res.Budget)
	var planned []string
	for _, r := range res.Runs {
		if r.Run == 1 {
			planned = append(planned, fmt.Sprintf("%s %.4g", r.Variant, r.PlannedRate))
		}
	}
	b.WriteString(strings.Join(planned, ", "))
	b.WriteString(" (run 1).\n\n## Files\n\n")
	for _, f := range res.Files {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	return b.String()
}
