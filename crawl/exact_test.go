package crawl

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/layercrawl/layercrawl/internal/testweb"
)

// crawlExactWeb crawls w into a new directory with a deliberately tiny
// duplicate filter (sized for 200 URLs, so that it is soon saturated and
// answers "maybe seen" for most new URLs) and returns the fetched URLs.
func crawlExactWeb(t *testing.T, w *testweb.Web, exact bool) ([]string, Stats) {
	t.Helper()
	dir := t.TempDir()
	o := Options{Seeds: w.Seeds(), Dir: dir, Concurrency: 8, ExpectedURLs: 200, FalsePositiveRate: 0.1, ExactDedup: exact}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	o.Fetch.Resolver = w.Resolver()
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return fetchedURLs(readLog(t, filepath.Join(dir, "crawl.log.jsonl"))), c.Stats()
}

// A saturated filter drops most of a testweb crawl; with ExactDedup every
// "maybe seen" answer is checked against the fingerprints on disk, and the
// crawl fetches exactly the expected URLs, each once.
func TestExactDedupCoverage(t *testing.T) {
	w, want := startExactWeb(t, testweb.Options{Seed: 15, Hosts: 6, Pages: 1500})

	lossy, s := crawlExactWeb(t, w, false)
	if len(lossy) >= len(want) || s.FalsePositives != 0 {
		t.Errorf("tiny filter alone fetched %d of %d URLs (false positives counted: %d); want URLs lost", len(lossy), len(want), s.FalsePositives)
	}

	got, s := crawlExactWeb(t, w, true)
	if d := slices.Compact(slices.Clone(got)); len(d) != len(got) {
		t.Errorf("%d URLs fetched twice", len(got)-len(d))
	}
	if !slices.Equal(got, want) {
		t.Errorf("with ExactDedup: fetched %d URLs, want %d; missing %v; unexpected %v",
			len(got), len(want), sampleOf(missingFrom(want, got)), sampleOf(missingFrom(got, want)))
	}
	if s.FalsePositives == 0 || s.ExactChecks < s.FalsePositives {
		t.Errorf("Stats: %d checks, %d false positives caught", s.ExactChecks, s.FalsePositives)
	}
	t.Logf("filter alone: %d of %d URLs; ExactDedup: %d, %d false positives caught in %d checks (estimated filter FP rate %.3g)",
		len(lossy), len(want), len(got), s.FalsePositives, s.ExactChecks, s.Filter.FalsePositiveRate)
}

func sampleOf(s []string) []string { return s[:min(len(s), 5)] }

// startExactWeb serves a testweb web for the test and returns it with the URLs
// a crawl of it with the default options fetches.
func startExactWeb(t *testing.T, o testweb.Options) (*testweb.Web, []string) {
	t.Helper()
	w, err := testweb.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	e, err := w.Expected(testweb.ExpectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return w, e.Fetched()
}
