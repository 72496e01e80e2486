package experiments

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/layercrawl/layercrawl/countmin"
	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/internal/linkweb"
	"github.com/layercrawl/layercrawl/internal/procs"
)

// OrderVariant is one crawl order measured by RunOrder.
type OrderVariant struct {
	// Name labels the variant in the CSV files, plots and report; default
	// Order.
	Name string
	// Order is the crawl order, as crawl --order takes it.
	Order string
	// ExpectedURLs is the crawl's --expected-urls, which sizes the
	// in-link sketch (and the duplicate filter's first generation); 0:
	// the crawl's default.
	ExpectedURLs uint64
}

// OrderConfig configures RunOrder.
type OrderConfig struct {
	// Web is the synthetic web crawled (its defaults: 100,000 pages on
	// 200 hosts; HostExponent 0 is equal hosts).
	Web linkweb.Options
	// Variants are the orders compared; default DefaultOrderVariants().
	Variants []OrderVariant
	// Runs is the number of crawls of each variant, interleaved (round r
	// starts with variant r mod len(Variants)); default 5.
	Runs int
	// Budget is the crawl's --max-pages as a share of the web's pages;
	// default 0.1.
	Budget float64
	// Concurrency is the crawl's --concurrency; default 32.
	Concurrency int
	// Points is the number of budget fractions at which the curves are
	// sampled (1/Points, 2/Points, ..., 1); default 20.
	Points int
	// TopShare is the share of pages, by in-degree, whose fetched share is
	// measured; default 0.01.
	TopShare float64
	// Crawler, when set, is the path of a crawler binary: each crawl then
	// runs as a child process ("Crawler crawl --max-pages ... --out DIR
	// ROOTS..."), its pages read from its crawl log and its CPU time
	// (user and system, from the child's rusage) the crawler's alone.
	// Default: the crawls run in this process, whose CPU time includes
	// the web server's.
	Crawler string
	// SimSketchWidths are the widths (counters per row, 4 rows) of the
	// count-min sketches (package countmin) with which the order is also
	// simulated on the graph, beside exact counts and fifo; default
	// 16,384, 4,096 and 1,024 (what --expected-urls 131,072, 32,768 and
	// 8,192 give); negative: no simulation.
	SimSketchWidths []int
	OutDir          string
	Command         string
	Log             io.Writer // progress messages; nil: none
}

// OrderRun is one crawl's result.
type OrderRun struct {
	Variant string
	Run     int
	// Fetched are the pages fetched (status 200), in the order their
	// fetches started.
	Fetched []int32
	// Requests is every fetch the crawl made (robots.txt included);
	// Failed those of the web's pages that did not end with status 200.
	Requests, Failed int
	CPU              time.Duration // of the whole process: crawler, web server and harness
	Wall             time.Duration
	// TopShare and PageRankSum are those of all Fetched.
	TopShare, PageRankSum float64
}

// CPUPerPage is the process CPU time per page fetched.
func (r OrderRun) CPUPerPage() time.Duration {
	if len(r.Fetched) == 0 {
		return 0
	}
	return r.CPU / time.Duration(len(r.Fetched))
}

// OrderPoint is one run's score after a share of its budget.
type OrderPoint struct {
	Variant     string
	Run         int
	Fraction    float64 // of the budget
	Pages       int     // pages fetched by then
	TopShare    float64 // of the top pages by in-degree, fetched by then
	PageRankSum float64 // over the pages fetched by then
}

// OrderResult is what RunOrder measured.
type OrderResult struct {
	Graph  *linkweb.Graph
	Budget int
	Top    []int
	Runs   []OrderRun
	Points []OrderPoint
	// Simulated are the simulations' results (SimSketchWidths).
	Simulated []OrderSimulation
	Files     []string
}

// OrderSimulation is the result of a crawl order simulated on the graph,
// without HTTP: rounds of Concurrency fetches on distinct hosts.
type OrderSimulation struct {
	Name                  string // "fifo", "exact" or "count-min 4x<width>"
	Counters              int    // of the sketch; 0 for fifo and exact
	TopShare, PageRankSum float64
}

func (cfg *OrderConfig) ensureDefaults() {
	if len(cfg.Variants) == 0 {
		cfg.Variants = DefaultOrderVariants()
	}
	for i := range cfg.Variants {
		if cfg.Variants[i].Name == "" {
			cfg.Variants[i].Name = cfg.Variants[i].Order
		}
	}
	if cfg.Runs == 0 {
		cfg.Runs = 5
	}
	if cfg.Budget == 0 {
		cfg.Budget = 0.1
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 32
	}
	if cfg.Points == 0 {
		cfg.Points = 20
	}
	if cfg.TopShare == 0 {
		cfg.TopShare = 0.01
	}
	if len(cfg.SimSketchWidths) == 0 {
		cfg.SimSketchWidths = []int{16384, 4096, 1024}
	}
}

func (cfg *OrderConfig) validate() error {
	names := map[string]bool{}
	for _, v := range cfg.Variants {
		if names[v.Name] || strings.ContainsAny(v.Name, ",\"\n") {
			return fmt.Errorf("%w: variant name %q repeated or not a CSV field", ErrInvalidOptions, v.Name)
		}
		names[v.Name] = true
	}
	switch {
	case cfg.Runs < 1 || cfg.Runs > 1000:
		return fmt.Errorf("%w: Runs %d not in [1, 1000]", ErrInvalidOptions, cfg.Runs)
	case !(cfg.Budget > 0 && cfg.Budget <= 1):
		return fmt.Errorf("%w: Budget %v not in (0, 1]", ErrInvalidOptions, cfg.Budget)
	case cfg.Concurrency < 1:
		return fmt.Errorf("%w: Concurrency %d below 1", ErrInvalidOptions, cfg.Concurrency)
	case cfg.Points < 1 || cfg.Points > 1000:
		return fmt.Errorf("%w: Points %d not in [1, 1000]", ErrInvalidOptions, cfg.Points)
	case !(cfg.TopShare > 0 && cfg.TopShare <= 1):
		return fmt.Errorf("%w: TopShare %v not in (0, 1]", ErrInvalidOptions, cfg.TopShare)
	case slices.ContainsFunc(cfg.SimSketchWidths, func(w int) bool { return w == 0 || w > countmin.MaxWidth }) && cfg.SimSketchWidths[0] > 0:
		return fmt.Errorf("%w: SimSketchWidths %v: a width is 0 or above %d", ErrInvalidOptions, cfg.SimSketchWidths, countmin.MaxWidth)
	case cfg.OutDir == "":
		return fmt.Errorf("%w: no output directory", ErrInvalidOptions)
	}
	return nil
}

// RunOrder crawls a linkweb web with each variant, Runs times, interleaved,
// each crawl cut at Budget of the web's pages, and scores the pages each
// fetched against the web's known graph: the share of the top pages by
// in-degree fetched and the PageRank fetched, after every 1/Points of the
// budget. It writes order_runs.csv, order_curves.csv, the plots and
// report.md to OutDir. The crawls are in this process (crawl.New and Run,
// as crawl --delay -1 --concurrency N --max-pages B would run), their state
// in OutDir/crawls, removed after each run.
func RunOrder(ctx context.Context, cfg OrderConfig) (*OrderResult, error) {
	cfg.ensureDefaults()
	cfg.Web.EnsureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	for _, v := range cfg.Variants {
		if err := configureOrder(&crawl.Options{}, v); err != nil {
			return nil, err
		}
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "experiment order: "+format+"\n", args...)
		}
	}
	start := time.Now()
	loadStart := LoadAverage()
	g, err := linkweb.Generate(cfg.Web)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	logf("web of %d pages on %d hosts, %d links, generated with its PageRank in %v", g.Pages(), g.Hosts(), g.Links(), time.Since(start).Round(time.Millisecond))
	web, err := linkweb.Start(g, "")
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	defer web.Close()
	res := &OrderResult{Graph: g, Budget: max(1, int(math.Round(cfg.Budget*float64(g.Pages())))), Top: g.TopByInDegree(cfg.TopShare)}
	if cfg.SimSketchWidths[0] > 0 {
		t0 := time.Now()
		if err := res.simulate(cfg); err != nil {
			return nil, fmt.Errorf("experiments: %w", err)
		}
		logf("simulated fifo, exact and %d sketch sizes in %v", len(cfg.SimSketchWidths), time.Since(t0).Round(time.Millisecond))
	}
	crawls := filepath.Join(cfg.OutDir, "crawls")
	if err := os.MkdirAll(crawls, 0o755); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	defer os.Remove(crawls)
	for r := range cfg.Runs {
		for i := range cfg.Variants {
			v := cfg.Variants[(r+i)%len(cfg.Variants)]
			crawlFn := crawlOrder
			if cfg.Crawler != "" {
				crawlFn = crawlOrderChild
			}
			run, err := crawlFn(ctx, web, cfg, v, res.Budget, crawls)
			if err != nil {
				return nil, err
			}
			run.Run = r + 1
			res.score(&run, cfg.Points)
			logf("%s run %d: %d pages in %v, CPU %v per page, top %g%% fetched %.3f, PageRank %.3f",
				v.Name, r+1, len(run.Fetched), run.Wall.Round(time.Millisecond), run.CPUPerPage().Round(time.Microsecond), 100*cfg.TopShare, run.TopShare, run.PageRankSum)
			run.Fetched = slices.Clip(run.Fetched)
			res.Runs = append(res.Runs, run)
		}
	}
	// Runs in variant order, then run number, for the files.
	slices.SortStableFunc(res.Runs, func(a, b OrderRun) int {
		return variantIndex(cfg.Variants, a.Variant) - variantIndex(cfg.Variants, b.Variant)
	})
	slices.SortStableFunc(res.Points, func(a, b OrderPoint) int {
		if c := variantIndex(cfg.Variants, a.Variant) - variantIndex(cfg.Variants, b.Variant); c != 0 {
			return c
		}
		return a.Run - b.Run
	})
	loadEnd := LoadAverage()
	if err := res.write(cfg, time.Since(start), loadStart, loadEnd); err != nil {
		return nil, err
	}
	logf("wrote %s", cfg.OutDir)
	return res, nil
}

func variantIndex(vs []OrderVariant, name string) int {
	return slices.IndexFunc(vs, func(v OrderVariant) bool { return v.Name == name })
}

// fetchOrder is the Observer that records the pages a crawl fetched and
// when each fetch started.
type fetchOrder struct {
	web      *linkweb.Web
	mu       sync.Mutex // protects pages, requests and failed
	pages    []startedPage
	requests int
	failed   int
}

type startedPage struct {
	at   time.Time
	page int32
}

func (o *fetchOrder) Fetched(ev crawl.FetchEvent) {
	p, ok := o.web.PageOf(ev.URL)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests++
	switch {
	case ok && ev.Status == 200:
		o.pages = append(o.pages, startedPage{ev.At, int32(p)})
	case ok:
		o.failed++
	}
}

func (o *fetchOrder) Checkpointed(crawl.CheckpointEvent) {}

// order returns the pages in the order their fetches started: the order
// the frontier handed them out in. (Observer calls come in the order the
// fetches completed and were archived, which a slow fetch or archive
// write can reorder.)
func (o *fetchOrder) order() []int32 {
	slices.SortStableFunc(o.pages, func(a, b startedPage) int { return a.at.Compare(b.at) })
	out := make([]int32, len(o.pages))
	for i, p := range o.pages {
		out[i] = p.page
	}
	return out
}

// crawlOrder runs one crawl of web with variant v.
func crawlOrder(ctx context.Context, web *linkweb.Web, cfg OrderConfig, v OrderVariant, budget int, parent string) (OrderRun, error) {
	dir, err := os.MkdirTemp(parent, v.Name+"-")
	if err != nil {
		return OrderRun{}, fmt.Errorf("experiments: %w", err)
	}
	defer os.RemoveAll(dir)
	obs := &fetchOrder{web: web, pages: make([]startedPage, 0, budget)}
	o := crawl.Options{
		Seeds:       web.Roots(),
		Dir:         dir,
		Concurrency: cfg.Concurrency,
		MaxPages:    int64(budget),
		Observer:    obs,
	}
	o.Fetch.AllowPrivate = true // the web is on loopback
	o.Politeness.Delay = -1
	if err := configureOrder(&o, v); err != nil {
		return OrderRun{}, err
	}
	c, err := crawl.New(o)
	if err != nil {
		return OrderRun{}, fmt.Errorf("experiments: order %s: %w", v.Name, err)
	}
	cpu0, cerr := procs.CPUTime()
	t0 := time.Now()
	err = c.Run(ctx)
	wall := time.Since(t0)
	cpu1, cerr1 := procs.CPUTime()
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return OrderRun{}, fmt.Errorf("experiments: order %s: %w", v.Name, err)
	}
	run := OrderRun{Variant: v.Name, Fetched: obs.order(), Requests: obs.requests, Failed: obs.failed, Wall: wall}
	if cerr == nil && cerr1 == nil {
		run.CPU = cpu1 - cpu0
	}
	return run, nil
}

// score fills run's totals and appends its curve to res.Points.
func (res *OrderResult) score(run *OrderRun, points int) {
	inTop := make(map[int32]bool, len(res.Top))
	for _, p := range res.Top {
		inTop[int32(p)] = true
	}
	top, pr := 0, 0.0
	next := 1
	for i, p := range run.Fetched {
		if inTop[p] {
			top++
		}
		pr += res.Graph.PageRank(int(p))
		// The point at fraction k/points is after the first
		// ceil(k/points·budget) pages (or all, when the crawl fetched
		// fewer).
		for next <= points && (i+1 >= int(math.Ceil(float64(next)/float64(points)*float64(res.Budget))) || i == len(run.Fetched)-1) {
			res.Points = append(res.Points, OrderPoint{
				Variant: run.Variant, Run: run.Run, Fraction: float64(next) / float64(points), Pages: i + 1,
				TopShare: float64(top) / float64(len(res.Top)), PageRankSum: pr,
			})
			next++
		}
	}
	run.TopShare, run.PageRankSum = float64(top)/float64(len(res.Top)), pr
}

// simulate runs simulateOrder in fifo order, with exact in-link counts
// and with each sketch width.
func (res *OrderResult) simulate(cfg OrderConfig) error {
	add := func(name string, counters int, o simOptions) {
		o.budget, o.concurrency = res.Budget, cfg.Concurrency
		run := OrderRun{Fetched: simulateOrder(res.Graph, o)}
		keep := res.Points
		res.score(&run, 1)
		res.Points = keep
		res.Simulated = append(res.Simulated, OrderSimulation{Name: name, Counters: counters, TopShare: run.TopShare, PageRankSum: run.PageRankSum})
	}
	exact := func() inlinkCounter { return make(exactCounter, res.Graph.Pages()) }
	add("fifo", 0, simOptions{})
	add("exact", 0, simOptions{counter: exact()})
	add("exact, hosts in turn", 0, simOptions{counter: exact(), hostsInTurn: true})
	w := frontier.DefaultInlinksHostWindow
	add(fmt.Sprintf("exact, window %d", w), 0, simOptions{counter: exact(), window: w})
	for _, w := range cfg.SimSketchWidths {
		s, err := countmin.New(countmin.Options{Rows: 4, Width: w})
		if err != nil {
			return err
		}
		add(fmt.Sprintf("count-min 4x%d", w), 4*w, simOptions{counter: sketchCounter{s}})
	}
	return nil
}

// summary is the mean, its 95% Student-t interval and the median of xs.
type summary struct{ mean, lo, hi, median float64 }

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	mean := 0.0
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	if len(s) < 2 {
		return summary{mean, mean, mean, med}
	}
	v := 0.0
	for _, x := range s {
		v += (x - mean) * (x - mean)
	}
	se := math.Sqrt(v / float64(len(s)-1) / float64(len(s)))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(s) - 1)}.Quantile(1 - (1-confidence)/2)
	return summary{mean, mean - t*se, mean + t*se, med}
}

func (res *OrderResult) runsOf(name string) []OrderRun {
	var rs []OrderRun
	for _, r := range res.Runs {
		if r.Variant == name {
			rs = append(rs, r)
		}
	}
	return rs
}

func (res *OrderResult) write(cfg OrderConfig, took time.Duration, loadStart, loadEnd string) error {
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	if err := writeFile(filepath.Join(cfg.OutDir, "order_runs.csv"), func(w io.Writer) error {
		var b strings.Builder
		b.WriteString("variant,order,expected_urls,run,pages,requests,failed,top_share,pagerank_sum,cpu_s,cpu_us_per_page,wall_s\n")
		for _, r := range res.Runs {
			v := cfg.Variants[variantIndex(cfg.Variants, r.Variant)]
			fmt.Fprintf(&b, "%s,%s,%d,%d,%d,%d,%d,%.5f,%.5f,%.3f,%.1f,%.3f\n", r.Variant, v.Order, v.ExpectedURLs, r.Run, len(r.Fetched), r.Requests, r.Failed,
				r.TopShare, r.PageRankSum, r.CPU.Seconds(), float64(r.CPUPerPage())/1e3, r.Wall.Seconds())
		}
		_, err := io.WriteString(w, b.String())
		return err
	}); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(cfg.OutDir, "order_curves.csv"), func(w io.Writer) error {
		var b strings.Builder
		b.WriteString("variant,run,budget_fraction,pages,top_share,pagerank_sum\n")
		for _, p := range res.Points {
			fmt.Fprintf(&b, "%s,%d,%.4f,%d,%.5f,%.5f\n", p.Variant, p.Run, p.Fraction, p.Pages, p.TopShare, p.PageRankSum)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}); err != nil {
		return err
	}
	res.Files = []string{"order_runs.csv", "order_curves.csv"}
	figs, err := res.figures(cfg)
	if err != nil {
		return err
	}
	return writeFiguresAndReport(cfg.OutDir, &res.Files, figs, func() string { return res.report(cfg, took, loadStart, loadEnd) })
}

// best returns, at each fraction of the budget, the most any order could
// have: the top share and PageRank of the pages of highest in-degree and
// of highest PageRank.
func (res *OrderResult) best(points int) (top, pr plotter.XYs) {
	ranks := make([]float64, res.Graph.Pages())
	for p := range ranks {
		ranks[p] = res.Graph.PageRank(p)
	}
	slices.SortFunc(ranks, func(a, b float64) int { return -cmpFloat(a, b) })
	sum, k := 0.0, 0
	for i := 1; i <= points; i++ {
		f := float64(i) / float64(points)
		n := int(math.Ceil(f * float64(res.Budget)))
		for ; k < n && k < len(ranks); k++ {
			sum += ranks[k]
		}
		top = append(top, plotter.XY{X: f, Y: math.Min(1, float64(n)/float64(len(res.Top)))})
		pr = append(pr, plotter.XY{X: f, Y: sum})
	}
	return top, pr
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// figures draws the top share and the PageRank sum against the fraction
// of the budget spent: per variant the mean over runs with its 95%
// Student-t interval, and the best any order could reach, dashed.
func (res *OrderResult) figures(cfg OrderConfig) ([]Figure, error) {
	bestTop, bestPR := res.best(cfg.Points)
	o := res.Graph.Options()
	web := fmt.Sprintf("%d pages, %d hosts, host-size exponent %g, budget %d pages, %d runs", o.Pages, o.Hosts, o.HostExponent, res.Budget, cfg.Runs)
	var figs []Figure
	for _, m := range []struct {
		name, title, y string
		get            func(OrderPoint) float64
		best           plotter.XYs
	}{
		{"order_top_share", fmt.Sprintf("Share of the top %g%% pages by in-degree fetched", 100*cfg.TopShare), "share fetched", func(p OrderPoint) float64 { return p.TopShare }, bestTop},
		{"order_pagerank", "PageRank of the pages fetched", "sum of PageRank", func(p OrderPoint) float64 { return p.PageRankSum }, bestPR},
	} {
		title := m.title + "\n" + web + "\nlines: mean over runs, bars: 95% Student-t interval; dashed: the best any order could do"
		p, leg := newPlot(title, "fraction of the page budget spent", m.y)
		for i, v := range cfg.Variants {
			var xys plotter.XYs
			var errs plotter.YErrors
			for k := 1; k <= cfg.Points; k++ {
				f := float64(k) / float64(cfg.Points)
				var ys []float64
				for _, pt := range res.Points {
					if pt.Variant == v.Name && math.Abs(pt.Fraction-f) < 1e-9 {
						ys = append(ys, m.get(pt))
					}
				}
				if len(ys) == 0 {
					continue
				}
				s := summarize(ys)
				xys = append(xys, plotter.XY{X: f, Y: s.mean})
				errs = append(errs, struct{ Low, High float64 }{s.mean - s.lo, s.hi - s.mean})
			}
			if len(xys) == 0 {
				continue
			}
			l, pts, err := plotter.NewLinePoints(xys)
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
			l.Color, pts.Color, pts.Shape, bars.Color = c, c, plotutil.Shape(i), c
			p.Add(l, bars, pts)
			leg.Add(v.Name, l, pts)
		}
		bl, err := plotter.NewLine(append(plotter.XYs{{}}, m.best...)) // from the origin
		if err != nil {
			return nil, fmt.Errorf("experiments: plot: %w", err)
		}
		bl.Color = structColor(5)
		bl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(bl)
		leg.Add("best possible", bl)
		p.X.Min, p.Y.Min = 0, 0
		figs = append(figs, Figure{Name: m.name, Title: title, plot: p, legend: leg})
	}
	return figs, nil
}

func (res *OrderResult) report(cfg OrderConfig, took time.Duration, loadStart, loadEnd string) string {
	var b strings.Builder
	m := DescribeMachine(context.Background())
	o := res.Graph.Options()
	fmt.Fprintf(&b, "# Crawl order experiment report\n\nCommand:\n\n```sh\n%s\n```\n\n", cfg.Command)
	fmt.Fprintf(&b, "Machine: %s, %d cores, %s; commit %s; run time %v; load average at start %s, at end %s.\n\n",
		m.CPUModel, m.Cores, m.GoVersion, m.Commit, took.Round(time.Second), loadStart, loadEnd)
	g := res.Graph
	degs := make([]int, g.Pages())
	for p := range degs {
		degs[p] = g.InDegree(p)
	}
	slices.Sort(degs)
	fmt.Fprintf(&b, "## The web\n\n")
	fmt.Fprintf(&b, "internal/linkweb, seed %d: %d pages on %d hosts, host sizes by Zipf's law with exponent %g (0: equal), largest host %d pages, smallest %d; "+
		"a random spanning tree per host from its root; %d-%d extra links per page, %.0f%% on the same host, targets Zipf-popular (exponent %g) within their host; %d distinct links in all. "+
		"In-degree: median %d, maximum %d; the top %g%% (%d pages) have in-degree %d or more. PageRank with damping %g over the whole graph. "+
		"Seeds: the %d host roots.\n\n",
		o.Seed, g.Pages(), g.Hosts(), o.HostExponent, g.HostStart(1)-g.HostStart(0), g.HostStart(g.Hosts())-g.HostStart(g.Hosts()-1),
		o.MinLinks, o.MaxLinks, 100*o.SameHost, o.TargetExponent, g.Links(),
		degs[len(degs)/2], degs[len(degs)-1], 100*cfg.TopShare, len(res.Top), g.InDegree(res.Top[len(res.Top)-1]), linkweb.Damping, g.Hosts())
	fmt.Fprintf(&b, "## The crawls\n\n")
	where, cpu := "In this process (crawl.New and Run), as", "CPU is that of the whole process (crawler, web server and this harness) during Run, divided by the pages fetched; the server's share is the same per page under every order, so it narrows the ratios of CPU per page."
	if cfg.Crawler != "" {
		where, cpu = "In a child process,", "CPU is the child's (user and system time of the crawler alone), divided by the pages fetched."
	}
	fmt.Fprintf(&b, "%s `crawler crawl --max-pages %d --delay -1 --concurrency %d --allow-private --order ORDER` with the defaults otherwise; %d runs of each variant, interleaved (round r starts with the r-th variant, cyclically). "+
		"A page counts as fetched when its fetch completed with status 200; the order is that in which the fetches started (the frontier's). %s\n\n",
		where, res.Budget, cfg.Concurrency, cfg.Runs, cpu)
	b.WriteString("| variant | order | in-link sketch | pages (median) | top share, median | mean [95% CI] | PageRank sum, median | mean [95% CI] | CPU per page, median | wall, median |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	meds := map[string][3]float64{}
	for _, v := range cfg.Variants {
		rs := res.runsOf(v.Name)
		var pages, top, pr, cpu, wall []float64
		for _, r := range rs {
			pages = append(pages, float64(len(r.Fetched)))
			top = append(top, r.TopShare)
			pr = append(pr, r.PageRankSum)
			cpu = append(cpu, float64(r.CPUPerPage().Microseconds()))
			wall = append(wall, r.Wall.Seconds())
		}
		st, sp, sc := summarize(top), summarize(pr), summarize(cpu)
		meds[v.Name] = [3]float64{st.median, sp.median, sc.median}
		sketch := sketchShape(v, res.Budget)
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.3f | %.3f [%.3f, %.3f] | %.3f | %.3f [%.3f, %.3f] | %.0f µs | %.2f s |\n",
			v.Name, v.Order, sketch, summarize(pages).median, st.median, st.mean, st.lo, st.hi, sp.median, sp.mean, sp.lo, sp.hi, sc.median, summarize(wall).median)
	}
	b.WriteString("\n")
	if base, ok := meds[cfg.Variants[0].Name]; ok && len(cfg.Variants) > 1 {
		fmt.Fprintf(&b, "Ratios of medians to %s:\n\n| variant | top share | PageRank sum | CPU per page |\n|---|---:|---:|---:|\n", cfg.Variants[0].Name)
		for _, v := range cfg.Variants[1:] {
			x := meds[v.Name]
			fmt.Fprintf(&b, "| %s | %.2fx | %.2fx | %.2fx |\n", v.Name, x[0]/base[0], x[1]/base[1], x[2]/base[2])
		}
		b.WriteString("\n")
	}
	bestTop, bestPR := res.best(1)
	fmt.Fprintf(&b, "The best any order could fetch in %d pages: top share %.3f, PageRank sum %.3f.\n\n", res.Budget, bestTop[0].Y, bestPR[0].Y)
	if len(res.Simulated) > 0 {
		fmt.Fprintf(&b, "## Simulated on the same graph\n\n"+
			"Without HTTP: rounds of %d fetches on distinct hosts (politeness: one fetch per host at a time), %d pages. "+
			"fifo: each host's queue first in, first out, hosts in turn. The others: each host's queued page with the most in-links counted so far first (its root before all), "+
			"the hosts whose best page has the most first; links counted once per fetched linking page when its round ends, exactly or in a count-min sketch of 4 rows with conservative update (it never underestimates). "+
			"\"hosts in turn\": the hosts served in turn as fifo does, only each host's queue ordered by the counts. \"window\": only the first %d queued pages of each host (in discovery order) are candidates, as the crawl's frontier holds that many of a host's queue in memory under inlinks (frontier.DefaultInlinksHostWindow).\n\n", cfg.Concurrency, res.Budget, frontier.DefaultInlinksHostWindow)
		b.WriteString("| simulated order | counters | top share | PageRank sum | top share / fifo | PageRank / fifo |\n|---|---:|---:|---:|---:|---:|\n")
		base := res.Simulated[0]
		for _, sim := range res.Simulated {
			counters := "-"
			if sim.Counters > 0 {
				counters = fmt.Sprintf("%d (%.2f per page)", sim.Counters, float64(sim.Counters)/float64(res.Graph.Pages()))
			}
			fmt.Fprintf(&b, "| %s | %s | %.3f | %.3f | %.2fx | %.2fx |\n", sim.Name, counters, sim.TopShare, sim.PageRankSum, sim.TopShare/base.TopShare, sim.PageRankSum/base.PageRankSum)
		}
		b.WriteString("\n")
	}
	b.WriteString(sketchNote(cfg.Variants, res.Budget))
	b.WriteString("## Files\n\n")
	for _, f := range res.Files {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	return b.String()
}
