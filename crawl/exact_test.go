package crawl

import (
	"slices"
	"testing"

	"github.com/layercrawl/layercrawl/internal/testweb"
)

// crawlExactWeb crawls w into a new directory with a deliberately tiny
// duplicate filter (sized for 200 URLs, so that it is soon saturated and
// answers "maybe seen" for most new URLs) and returns the fetched URLs.
func crawlExactWeb(t *testing.T, w *testweb.Web, exact bool) ([]string, Stats) {
	t.Helper()
	entries, c, _ := crawlWeb(t, w, func(o *Options) {
		o.ExpectedURLs, o.FalsePositiveRate, o.ExactDedup = 200, 0.1, exact
		o.FixedFilter = true     // saturated, as the test needs: a growing filter would not be
		o.Admission.MaxDepth = 0 // the default depth limit, as these tests were written
	})
	return fetchedURLs(entries), c.Stats()
}

// A saturated filter drops most of a testweb crawl; with ExactDedup every
// "maybe seen" answer is checked against the fingerprints on disk, and the
// crawl fetches exactly the expected URLs, each once.
func TestExactDedupCoverage(t *testing.T) {
	w, expect := startWeb(t, testweb.Options{Seed: 15, Hosts: 6, Pages: 1500}, testweb.ExpectOptions{})
	want := expect.Fetched()

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
