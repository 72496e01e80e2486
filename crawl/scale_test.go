package crawl

import (
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/testweb"
)

// TestCrawlScale50k is a CI-sized scale crawl: a 50,000-page synthetic
// web of 500 hosts (heavy-tailed host sizes, cross-host links, duplicates
// under several spellings, calendar and shop traps), crawled with the
// default filter (sized for 10 million URLs) and checkpoints every two
// seconds. Coverage is checked
// exactly: every URL Expected fetches is fetched, once, and nothing else.
// The 1,000,000-page run is docs/bench-scale.sh's (docs/BENCHMARKS.md, "Scale: the million-page crawl").
// About 35 s of CPU: skipped under -race and -short, and run again
// without the race detector by .ci/run.
func TestCrawlScale50k(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("a 50,000-page crawl: run without -race and -short")
	}
	w, want := startWeb(t, testweb.Options{Seed: 5, Hosts: 500, Pages: 50_000}, testweb.ExpectOptions{})
	entries, c, _ := crawlWeb(t, w, func(o *Options) {
		o.Concurrency = 16
		o.ExpectedURLs = 0 // the default, as crawler crawl has it
		o.CheckpointInterval = 2 * time.Second
	})
	checkCoverage(t, w, want, entries)
	s := c.Stats()
	if n := len(want.Fetched()); n < 50_000 {
		t.Errorf("the web has %d URLs to fetch, want at least 50,000", n)
	}
	if s.Checkpoint < 2 {
		t.Errorf("%d checkpoints, want at least 2 during the crawl", s.Checkpoint)
	}
	if s.Fetch.Done.Count != uint64(len(entries)) {
		t.Errorf("Stats.Fetch.Done counts %d frontier updates, want one per log line: %d", s.Fetch.Done.Count, len(entries))
	}
	t.Logf("%d log lines, %d checkpoints, longest frontier update %v (mean %v)", len(entries), s.Checkpoint,
		s.Fetch.Done.Max, s.Fetch.Done.Sum/time.Duration(max(1, s.Fetch.Done.Count)))
}
