package crawl

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/changeweb"
	"github.com/layercrawl/layercrawl/revisit"
)

// TestContinuousPolicies runs one continuous crawl per revisit policy, at
// the same budget, side by side in real time, each against its own copy
// of one changing web (same seed, same start: the same change times), and
// scores each from the web's record of versions: time-averaged freshness
// and age over the window after the first pass. It checks that every
// policy keeps to the budget and that the scores are sane; with
// LAYERCRAWL_CONTINUOUS_E2E set to a duration (e.g. 20m) it is the
// end-to-end experiment of docs (its numbers are logged; run with -v), on
// the web of LAYERCRAWL_CONTINUOUS_E2E_SEED (default 35).
func TestContinuousPolicies(t *testing.T) {
	run := 3 * time.Second
	pages, budget := 12, 8.0
	minI, maxI := 200*time.Millisecond, 3*time.Second
	fastest, slowest := 500*time.Millisecond, time.Minute
	if v := os.Getenv("LAYERCRAWL_CONTINUOUS_E2E"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		run = d
		pages, budget = 60, 0.5 // half the pages a minute
		minI, maxI = 5*time.Second, 10*time.Minute
		fastest, slowest = 2*time.Second, 10*time.Minute
	}
	seed := uint64(35)
	if v := os.Getenv("LAYERCRAWL_CONTINUOUS_E2E_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = n
	}
	start := time.Now()
	policies := []revisit.Policy{revisit.Uniform, revisit.Proportional, revisit.Adaptive}
	type result struct {
		fetches        int
		fresh, meanAge float64
		planned        float64 // revisits/s the schedule planned at the end
	}
	results := make([]result, len(policies))
	warm := time.Duration(float64(pages)/budget*float64(time.Second)) + 5*time.Second // the first pass
	var wg sync.WaitGroup
	for i, pol := range policies {
		w := startChangeWeb(t, changeweb.Options{Seed: seed, Pages: pages, Hosts: 4, Fastest: fastest, Slowest: slowest, Start: start})
		dir := t.TempDir()
		o := continuousOptions(w, dir, ContinuousOptions{Budget: budget, Revisit: revisit.Options{Min: minI, Max: maxI, Policy: pol}})
		o.Concurrency = 4
		wg.Go(func() {
			ctx, cancel := context.WithDeadline(context.Background(), start.Add(run))
			defer cancel()
			c, err := New(o)
			if err != nil {
				t.Error(err)
				return
			}
			c.Run(ctx)
			if err := c.Close(); err != nil {
				t.Error(err)
			}
			planned := c.Stats().Continuous.PlannedRate
			end := start.Add(run)
			from := start.Add(min(warm, run/2))
			captures := map[int][]time.Time{}
			n := 0
			for _, e := range readLog(t, filepath.Join(dir, "crawl.log.jsonl")) {
				p, ok := w.PageOf(e.URL)
				if !ok || e.Status != 200 && e.Status != 304 {
					continue
				}
				n++
				captures[p] = append(captures[p], e.FetchedAt)
			}
			var fresh, age float64
			window := end.Sub(from)
			for p := range pages {
				s := w.Score(p, captures[p], from, end)
				fresh += s.Fresh.Seconds() / window.Seconds()
				age += s.AgeSeconds / window.Seconds()
			}
			results[i] = result{fetches: n, fresh: fresh / float64(pages), meanAge: age / float64(pages), planned: planned}
		})
	}
	wg.Wait()
	for i, pol := range policies {
		r := results[i]
		t.Logf("%-12s fetches %4d (%.2f/s, budget %.2f/s, planned at the end %.2f/s)  freshness %.3f  mean age %.1fs",
			pol, r.fetches, float64(r.fetches)/run.Seconds(), budget, r.planned, r.fresh, r.meanAge)
		if r.fresh < 0 || r.fresh > 1 || r.meanAge < 0 {
			t.Errorf("%s: freshness %v, age %v out of range", pol, r.fresh, r.meanAge)
		}
		if float64(r.fetches) > budget*run.Seconds()+1 {
			t.Errorf("%s: %d fetches in %v, budget %v/s", pol, r.fetches, run, budget)
		}
		if r.fetches < pages/2 {
			t.Errorf("%s: %d fetches, not half a pass over %d pages", pol, r.fetches, pages)
		}
	}
	if u, a := results[0].fresh, results[2].fresh; u > 0 {
		t.Logf("adaptive / uniform freshness: %.2f", a/u)
	}
}
