package crawl

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/layercrawl/layercrawl/internal/testweb"
	"github.com/layercrawl/layercrawl/storage"
)

// redisWebURLs crawls w with n Redis workers under a fresh prefix and a
// fixed duplicate filter of the given size, and returns the URLs fetched
// (sorted, repeats kept) and the first worker's Stats.
func redisWebURLs(t *testing.T, w *testweb.Web, n int, expected uint64, rate float64, filterOnly bool) ([]string, Stats) {
	t.Helper()
	dir := t.TempDir()
	o := Options{Seeds: w.Seeds(), Dir: dir, Concurrency: 4, ExpectedURLs: expected, FalsePositiveRate: rate,
		FixedFilter: true, FilterOnly: filterOnly}
	o.Politeness.Delay = -1
	o.Admission.MaxDepth = 0
	o.Fetch.AllowPrivate = true
	o.Fetch.Resolver = w.Resolver()
	stats := runRedisWorkers(t, n, o, testRedisPrefix(t, "exact"))
	logs, _ := filepath.Glob(filepath.Join(dir, "crawl-*.log.jsonl"))
	var entries []storage.Entry
	for _, l := range logs {
		entries = append(entries, readLog(t, l)...)
	}
	return fetchedURLs(entries), stats[0]
}

// TestRedisExactDedupCoverage is TestExactDedupCoverage in Redis mode,
// with two workers: a saturated filter drops much of the web filter-only,
// and Stats estimates the loss; by default every "maybe seen" answer is
// checked against the fingerprints in Redis, in the seen-set's script, and
// the workers together fetch exactly the expected URLs, each once.
func TestRedisExactDedupCoverage(t *testing.T) {
	if raceEnabled {
		t.Skip("a statistical crawl of thousands of pages, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the same code paths are race-tested on smaller crawls")
	}
	w, expect := startWeb(t, testweb.Options{Seed: 15, Hosts: 6, Pages: 1500}, testweb.ExpectOptions{})
	want := expect.Fetched()

	lossy, s := redisWebURLs(t, w, 2, 200, 0.1, true)
	if len(lossy) >= len(want) || s.FalsePositives != 0 || !s.FilterOnly {
		t.Errorf("filter-only with a tiny filter fetched %d of %d URLs (false positives counted: %d, filter-only %v); want URLs lost",
			len(lossy), len(want), s.FalsePositives, s.FilterOnly)
	}
	if lost := float64(len(want) - len(lossy)); s.LostToFilter < lost/2 {
		t.Errorf("LostToFilter = %.0f, want at least about the %.0f URLs lost", s.LostToFilter, lost)
	}
	t.Logf("filter alone: %d of %d URLs; estimated lost %.0f", len(lossy), len(want), s.LostToFilter)

	got, s := redisWebURLs(t, w, 2, 200, 0.1, false)
	checkExactCrawl(t, got, want, s)
	t.Logf("exact: %d, %d false positives caught in %d checks", len(got), s.FalsePositives, s.ExactChecks)
}

// TestRedisFilterOnlySaltedLosses is TestFilterOnlySaltedLosses in Redis
// mode: two filter-only crawls of one web (one worker each) lose different
// URLs, as each new crawl's first worker salts the seen-set afresh.
func TestRedisFilterOnlySaltedLosses(t *testing.T) {
	if raceEnabled {
		t.Skip("a statistical crawl of thousands of pages, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the same code paths are race-tested on smaller crawls")
	}
	w, expect := startWeb(t, testweb.Options{Seed: 17, Hosts: 4, Pages: 1500}, testweb.ExpectOptions{})
	want := expect.Fetched()
	lost := func() []string {
		got, s := redisWebURLs(t, w, 1, uint64(len(want)), 0.05, true)
		if !s.FilterOnly || s.LostToFilter == 0 {
			t.Errorf("filter-only %v, estimated lost %g", s.FilterOnly, s.LostToFilter)
		}
		return missingFrom(want, got)
	}
	a, b := lost(), lost()
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("lost %d and %d URLs: the filter is too good for the test", len(a), len(b))
	}
	if slices.Equal(a, b) {
		t.Errorf("both crawls lost the same %d URLs: %v", len(a), sampleOf(a))
	}
	t.Logf("lost %d and %d of %d URLs", len(a), len(b), len(want))
}
