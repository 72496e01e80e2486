package experiments

import (
	"container/heap"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/layercrawl/layercrawl/internal/changeweb"
	"github.com/layercrawl/layercrawl/revisit"
)

// FreshnessVariant is one revisit schedule compared by RunFreshness.
type FreshnessVariant struct {
	// Name labels the variant in the files; default the policy's name,
	// with "-known" when Known.
	Name   string
	Policy revisit.Policy
	// Known schedules with the true change rates (revisit.Plan over the
	// web's rates) instead of rates estimated from the visits: the
	// reference an estimating schedule approaches.
	Known bool
	// Undated estimates the rates without the pages' Last-Modified (as
	// for a server that sends none): from whether each visit found a
	// change only.
	Undated bool
}

// DefaultFreshnessVariants are uniform (the baseline), proportional and
// adaptive with estimated rates, adaptive estimating without Last-Modified,
// and adaptive with the true rates.
func DefaultFreshnessVariants() []FreshnessVariant {
	return []FreshnessVariant{
		{Policy: revisit.Uniform}, {Policy: revisit.Proportional}, {Policy: revisit.Adaptive},
		{Policy: revisit.Adaptive, Undated: true}, {Policy: revisit.Adaptive, Known: true},
	}
}

// FreshnessConfig configures RunFreshness.
type FreshnessConfig struct {
	// Web is the changing web (package changeweb; its defaults: 1,000
	// pages on 10 hosts, 20% never change, the others with mean intervals
	// log-uniform in [5s, 1 day]). Run r (from 0) uses seed Web.Seed + r;
	// every variant of a run sees the same web, change for change.
	Web changeweb.Options
	// Variants are the schedules compared, the first the baseline;
	// default DefaultFreshnessVariants().
	Variants []FreshnessVariant
	// Runs is the number of webs simulated; default 5.
	Runs int
	// Duration is the simulated time of each run; default 48 hours.
	Duration time.Duration
	// BudgetShare is the fetch budget in fetches per minute as a share of
	// the pages (0.1: a tenth of the pages a minute); default 0.03.
	BudgetShare float64
	// Min and Max bound the revisit intervals (revisit.Options); defaults
	// revisit.DefaultMin and DefaultMax (1 minute and 24 hours).
	Min, Max time.Duration
	// Samples is the number of times the freshness is sampled over the
	// run, for the curves; default 144.
	Samples int
	OutDir  string
	Command string
	Log     io.Writer // progress messages; nil: none
}

func (cfg *FreshnessConfig) ensureDefaults() {
	if len(cfg.Variants) == 0 {
		cfg.Variants = DefaultFreshnessVariants()
	}
	for i := range cfg.Variants {
		if cfg.Variants[i].Name == "" {
			cfg.Variants[i].Name = cfg.Variants[i].Policy.String()
			if cfg.Variants[i].Undated {
				cfg.Variants[i].Name += "-undated"
			}
			if cfg.Variants[i].Known {
				cfg.Variants[i].Name += "-known"
			}
		}
	}
	if cfg.Runs == 0 {
		cfg.Runs = 5
	}
	if cfg.Duration == 0 {
		cfg.Duration = 48 * time.Hour
	}
	if cfg.BudgetShare == 0 {
		cfg.BudgetShare = 0.03
	}
	if cfg.Min == 0 {
		cfg.Min = revisit.DefaultMin
	}
	if cfg.Max == 0 {
		cfg.Max = revisit.DefaultMax
	}
	if cfg.Samples == 0 {
		cfg.Samples = 144
	}
}

func (cfg *FreshnessConfig) validate() error {
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
	case cfg.Duration < time.Minute || cfg.Duration > 365*24*time.Hour:
		return fmt.Errorf("%w: Duration %v not in [1m, 1 year]", ErrInvalidOptions, cfg.Duration)
	case !(cfg.BudgetShare > 0 && cfg.BudgetShare <= 1000):
		return fmt.Errorf("%w: BudgetShare %v not in (0, 1000]", ErrInvalidOptions, cfg.BudgetShare)
	case cfg.Samples < 2 || cfg.Samples > 100_000:
		return fmt.Errorf("%w: Samples %d not in [2, 100000]", ErrInvalidOptions, cfg.Samples)
	case cfg.OutDir == "":
		return fmt.Errorf("%w: no output directory", ErrInvalidOptions)
	}
	o := revisit.Options{Min: cfg.Min, Max: cfg.Max, Budget: 1}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	return nil
}

// budget is the fetch budget in fetches per second.
func (cfg *FreshnessConfig) budget() float64 {
	return cfg.BudgetShare * float64(cfg.Web.Pages) / 60
}

// FreshnessRun is one variant's simulation on one web.
type FreshnessRun struct {
	Variant string
	Run     int // from 1
	Seed    uint64
	// Fetches counts every fetch; Changed those answered 200 after the
	// first capture, Unchanged those answered 304.
	Fetches, Changed, Unchanged int
	// IdleSlots counts the budget's fetch slots left unused because no
	// page was due.
	IdleSlots int
	// MeanLate is the mean time a fetch waited past its due time for a
	// slot of the budget.
	MeanLate time.Duration
	// Freshness and Age are time-averaged over the run after the first
	// pass (From), from the web's record of changes: the share of pages
	// whose latest capture is current, and the mean age in seconds.
	Freshness, Age float64
	// FreshnessLate and AgeLate are the same over the second half.
	FreshnessLate, AgeLate float64
	// NeverPages are the pages that never change; NeverFetches their
	// fetches; NeverAllowed the fetches Max allows them: 1 + the time
	// since their first capture divided by Max, summed; NeverWorst the
	// largest ratio of one page's fetches to its allowance.
	NeverPages, NeverFetches, NeverAllowed int
	NeverWorst                             float64
	// NeverAtMax is how many of the NeverPages had the interval Max at
	// the end.
	NeverAtMax int
	// SchedulerBytes is the scheduler's size (its struct, whose
	// population summary is a fixed array) and StateBytes its encoded
	// state, both checked at every sample: MinStateBytes and
	// MaxStateBytes.
	SchedulerBytes               int
	MinStateBytes, MaxStateBytes int
	// PlannedRate is the scheduler's planned fetch rate at the end.
	PlannedRate float64
	Wall        time.Duration
}

// FreshnessPoint is one sample of a run.
type FreshnessPoint struct {
	Variant   string
	Run       int
	At        time.Duration // since the start
	Freshness float64       // share of the pages whose latest capture is current
	Age       float64       // mean age of the pages, seconds
	Captured  int           // pages captured at least once
}

// FreshnessResult is what RunFreshness measured.
type FreshnessResult struct {
	Budget float64 // fetches per second
	From   time.Duration
	Runs   []FreshnessRun
	Points []FreshnessPoint
	// Expected is, per variant and run, the steady-state freshness
	// revisit.Freshness predicts for the schedule revisit.Plan gives the
	// web's true rates under the variant's policy (estimation aside).
	Expected map[string][]float64
	// Final are the intervals each variant had set at the end of run 1,
	// per page, with the web's true rates.
	Final map[string][]time.Duration
	Rates []float64 // of run 1's web
	Files []string
}

// RunFreshness simulates a continuous crawl of a changeweb web in
// simulated time, once per variant and run: the budget's fetch slots come
// every 1/Budget seconds; each takes the page whose revisit is most
// overdue (none: the slot is idle), fetches it through the web's HTTP
// handler (in process, conditional on the ETag of the last capture), and
// schedules its next visit with a revisit.Scheduler fed by what the
// fetches found (or, for Known variants, with revisit.Plan over the true
// rates). Freshness and age come from the web's own record of its
// changes. It writes freshness_runs.csv, freshness_curves.csv, the plots
// and report.md to OutDir.
func RunFreshness(ctx context.Context, cfg FreshnessConfig) (*FreshnessResult, error) {
	cfg.Web.EnsureDefaults() // Clock and Start are replaced per run
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := cfg.Web.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "experiment freshness: "+format+"\n", args...)
		}
	}
	start := time.Now()
	loadStart := LoadAverage()
	res := &FreshnessResult{Budget: cfg.budget(), Expected: map[string][]float64{}, Final: map[string][]time.Duration{}}
	res.From = time.Duration(float64(cfg.Web.Pages) / res.Budget * float64(time.Second))
	if res.From >= cfg.Duration/2 {
		return nil, fmt.Errorf("%w: the first pass (%v at %.3g fetches/s) takes half the Duration %v or more", ErrInvalidOptions, res.From, res.Budget, cfg.Duration)
	}
	for r := range cfg.Runs {
		for i := range cfg.Variants {
			v := cfg.Variants[(r+i)%len(cfg.Variants)]
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			run, points, final, rates, err := simulateFreshness(ctx, cfg, v, r, res)
			if err != nil {
				return nil, err
			}
			if r == 0 {
				res.Final[v.Name], res.Rates = final, rates
			}
			res.Runs = append(res.Runs, run)
			res.Points = append(res.Points, points...)
			logf("%s run %d: %d fetches (%d changed, %d unchanged), freshness %.4f, age %.0f s, never-changing pages fetched %d times (Max allows %d), in %v",
				v.Name, r+1, run.Fetches, run.Changed, run.Unchanged, run.Freshness, run.Age, run.NeverFetches, run.NeverAllowed, run.Wall.Round(time.Millisecond))
		}
	}
	idx := func(name string) int {
		return slices.IndexFunc(cfg.Variants, func(v FreshnessVariant) bool { return v.Name == name })
	}
	slices.SortStableFunc(res.Runs, func(a, b FreshnessRun) int {
		if c := idx(a.Variant) - idx(b.Variant); c != 0 {
			return c
		}
		return a.Run - b.Run
	})
	slices.SortStableFunc(res.Points, func(a, b FreshnessPoint) int {
		if c := idx(a.Variant) - idx(b.Variant); c != 0 {
			return c
		}
		return a.Run - b.Run
	})
	loadEnd := LoadAverage()
	if err := res.write(cfg, time.Since(start), loadStart, loadEnd); err != nil {
		return nil, err
	}
	return res, nil
}

// due is a page waiting for its next visit.
type due struct {
	at   time.Time
	page int
}

type dueHeap []due

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].page < h[j].page
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

var freshnessEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// simulateFreshness runs one variant on run r's web.
func simulateFreshness(ctx context.Context, cfg FreshnessConfig, v FreshnessVariant, r int, res *FreshnessResult) (FreshnessRun, []FreshnessPoint, []time.Duration, []float64, error) {
	wall := time.Now()
	clock := changeweb.NewSimClock(freshnessEpoch)
	wo := cfg.Web
	wo.Seed += uint64(r)
	wo.Clock, wo.Start = clock, freshnessEpoch
	web, err := changeweb.New(wo)
	if err != nil {
		return FreshnessRun{}, nil, nil, nil, fmt.Errorf("experiments: %w", err)
	}
	n := web.Pages()
	rates := make([]float64, n)
	for p := range rates {
		rates[p] = web.Rate(p)
	}
	ro := revisit.Options{Min: cfg.Min, Max: cfg.Max, Budget: res.Budget, Policy: v.Policy}
	sched, err := revisit.New(ro)
	if err != nil {
		return FreshnessRun{}, nil, nil, nil, fmt.Errorf("experiments: %w", err)
	}
	plan, err := revisit.Plan(rates, ro)
	if err != nil {
		return FreshnessRun{}, nil, nil, nil, fmt.Errorf("experiments: %w", err)
	}
	exp := 0.0
	for p, iv := range plan {
		exp += revisit.Freshness(rates[p], 1/iv.Seconds())
	}
	res.Expected[v.Name] = append(res.Expected[v.Name], exp/float64(n)) // runs of a variant come in order

	run := FreshnessRun{Variant: v.Name, Run: r + 1, Seed: wo.Seed, SchedulerBytes: int(unsafe.Sizeof(*sched)), MinStateBytes: math.MaxInt}
	recs := make([]revisit.Record, n)
	etags := make([]string, n)
	version := make([]int, n) // captured version, -1 before the first capture
	captures := make([][]time.Time, n)
	h := make(dueHeap, n)
	for p := range h {
		h[p] = due{freshnessEpoch, p}
		version[p] = -1
	}
	heap.Init(&h)
	end := freshnessEpoch.Add(cfg.Duration)
	slot := 1 / res.Budget // seconds
	var points []FreshnessPoint
	nextSample := 1
	sampleAt := func(k int) time.Time {
		return freshnessEpoch.Add(time.Duration(float64(cfg.Duration) * float64(k) / float64(cfg.Samples)))
	}
	sample := func(at time.Time) {
		pt := FreshnessPoint{Variant: v.Name, Run: r + 1, At: at.Sub(freshnessEpoch)}
		var age float64
		for p := range n {
			if version[p] < 0 {
				age += at.Sub(freshnessEpoch).Seconds()
				continue
			}
			pt.Captured++
			last := captures[p][len(captures[p])-1]
			fresh, a := web.FreshAt(p, last, at)
			if fresh {
				pt.Freshness++
			}
			age += a.Seconds()
		}
		pt.Freshness /= float64(n)
		pt.Age = age / float64(n)
		points = append(points, pt)
		b, _ := sched.MarshalBinary()
		run.MinStateBytes, run.MaxStateBytes = min(run.MinStateBytes, len(b)), max(run.MaxStateBytes, len(b))
	}
	// lastSlot is the index of the run's last slot (the loop stops after it).
	lastSlot := int(math.Floor(cfg.Duration.Seconds() / slot))
	var late time.Duration
	for k := 0; ; k++ {
		t := freshnessEpoch.Add(time.Duration(float64(k) * slot * float64(time.Second)))
		for nextSample <= cfg.Samples && !sampleAt(nextSample).After(t) {
			sample(sampleAt(nextSample))
			nextSample++
		}
		if t.After(end) {
			break
		}
		if k%4096 == 0 && ctx.Err() != nil {
			return FreshnessRun{}, nil, nil, nil, ctx.Err()
		}
		if h[0].at.After(t) {
			// Idle until the next page is due.
			next := int(math.Ceil(h[0].at.Sub(freshnessEpoch).Seconds() / slot))
			// Slots past the end of the run are not idle slots of it.
			run.IdleSlots += max(min(next, lastSlot+1)-k, 1)
			k = max(next, k+1) - 1
			continue
		}
		d := heap.Pop(&h).(due)
		p := d.page
		late += t.Sub(d.at)
		clock.Set(t)
		req := httptest.NewRequest(http.MethodGet, web.URL(p), nil)
		if etags[p] != "" {
			req.Header.Set("If-None-Match", etags[p])
		}
		rec := httptest.NewRecorder()
		web.ServeHTTP(rec, req)
		run.Fetches++
		changed := false
		var modified time.Time
		if !v.Undated {
			modified = revisit.ModifiedFromHeader(t, rec.Header())
		}
		switch rec.Code {
		case http.StatusOK:
			changed = etags[p] != ""
			if changed {
				run.Changed++
			}
			etags[p] = rec.Header().Get("ETag")
			version[p] = web.Version(p, t)
		case http.StatusNotModified:
			run.Unchanged++
		default:
			return FreshnessRun{}, nil, nil, nil, fmt.Errorf("experiments: %s: status %d", web.URL(p), rec.Code)
		}
		captures[p] = append(captures[p], t)
		old := recs[p]
		recs[p].ObserveModified(t, changed, modified)
		sched.Update(old, recs[p])
		iv := plan[p]
		if !v.Known {
			iv = sched.Interval(recs[p])
		}
		recs[p].Interval = iv
		heap.Push(&h, due{t.Add(iv), p})
	}
	if run.Fetches > 0 {
		run.MeanLate = late / time.Duration(run.Fetches)
	}
	from := freshnessEpoch.Add(res.From)
	mid := freshnessEpoch.Add(res.From + (cfg.Duration-res.From)/2)
	var fresh, lateFresh time.Duration
	var age, lateAge float64
	for p := range n {
		s := web.Score(p, captures[p], from, end)
		fresh += s.Fresh
		age += s.AgeSeconds
		s = web.Score(p, captures[p], mid, end)
		lateFresh += s.Fresh
		lateAge += s.AgeSeconds
		if rates[p] == 0 && len(captures[p]) > 0 {
			allowed := 1 + int(end.Sub(captures[p][0])/cfg.Max)
			run.NeverPages++
			run.NeverFetches += len(captures[p])
			run.NeverAllowed += allowed
			run.NeverWorst = max(run.NeverWorst, float64(len(captures[p]))/float64(allowed))
			if recs[p].Interval == cfg.Max {
				run.NeverAtMax++
			}
		}
	}
	window, lateWindow := end.Sub(from), end.Sub(mid)
	run.Freshness = fresh.Seconds() / window.Seconds() / float64(n)
	run.Age = age / window.Seconds() / float64(n)
	run.FreshnessLate = lateFresh.Seconds() / lateWindow.Seconds() / float64(n)
	run.AgeLate = lateAge / lateWindow.Seconds() / float64(n)
	run.PlannedRate = sched.PlannedRate()
	if v.Known {
		run.PlannedRate = 0
		for _, iv := range plan {
			run.PlannedRate += 1 / iv.Seconds()
		}
	}
	final := make([]time.Duration, n)
	for p := range final {
		final[p] = recs[p].Interval
	}
	run.Wall = time.Since(wall)
	return run, points, final, rates, nil
}

func (res *FreshnessResult) runsOf(name string) []FreshnessRun {
	var rs []FreshnessRun
	for _, r := range res.Runs {
		if r.Variant == name {
			rs = append(rs, r)
		}
	}
	return rs
}

func (res *FreshnessResult) write(cfg FreshnessConfig, took time.Duration, loadStart, loadEnd string) error {
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	var runs strings.Builder
	runs.WriteString("variant,run,seed,fetches,changed,unchanged,idle_slots,mean_late_s,freshness,age_s,freshness_second_half,age_second_half_s,expected_freshness_known_rates,never_pages,never_fetches,never_allowed,never_worst_ratio,never_at_max,scheduler_bytes,state_bytes_min,state_bytes_max,planned_rate,budget,wall_s\n")
	for _, r := range res.Runs {
		exp := math.NaN()
		if e := res.Expected[r.Variant]; r.Run-1 < len(e) {
			exp = e[r.Run-1]
		}
		fmt.Fprintf(&runs, "%s,%d,%d,%d,%d,%d,%d,%.3f,%.5f,%.2f,%.5f,%.2f,%.5f,%d,%d,%d,%.3f,%d,%d,%d,%d,%.5f,%.5f,%.3f\n",
			r.Variant, r.Run, r.Seed, r.Fetches, r.Changed, r.Unchanged, r.IdleSlots, r.MeanLate.Seconds(), r.Freshness, r.Age, r.FreshnessLate, r.AgeLate, exp,
			r.NeverPages, r.NeverFetches, r.NeverAllowed, r.NeverWorst, r.NeverAtMax, r.SchedulerBytes, r.MinStateBytes, r.MaxStateBytes, r.PlannedRate, res.Budget, r.Wall.Seconds())
	}
	var curves strings.Builder
	curves.WriteString("variant,run,t_s,freshness,age_s,captured\n")
	for _, p := range res.Points {
		fmt.Fprintf(&curves, "%s,%d,%.0f,%.5f,%.2f,%d\n", p.Variant, p.Run, p.At.Seconds(), p.Freshness, p.Age, p.Captured)
	}
	for name, s := range map[string]string{"freshness_runs.csv": runs.String(), "freshness_curves.csv": curves.String()} {
		if err := writeText(filepath.Join(cfg.OutDir, name), s); err != nil {
			return err
		}
	}
	res.Files = []string{"freshness_runs.csv", "freshness_curves.csv"}
	figs, err := res.figures(cfg)
	if err != nil {
		return err
	}
	return writeFiguresAndReport(cfg.OutDir, &res.Files, figs, func() string { return res.report(cfg, took, loadStart, loadEnd) })
}
