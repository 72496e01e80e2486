package main

import (
	"regexp"
	"strconv"
	"testing"
)

// TestFilterGrowthKill9 crawls 2,000 pages with a duplicate filter first
// sized for 200 URLs (so it grows to four or more generations), kills the
// crawl with SIGKILL twice and resumes it: the snapshots of a growing
// filter, taken every 100 ms while it grows, and the journal replayed into
// it lose no URL, and the summary says how it grew.
func TestFilterGrowthKill9(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages in child processes, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the engine's concurrency is race-tested in package crawl")
	}
	stdout, stderr := crawlKill9Resume(t, "--filter-only", "--expected-urls", "200", "--fp-target", "1e-6")
	m := regexp.MustCompile(`duplicate filter  \d+ URLs in (\d+) generations`).FindStringSubmatch(stdout + stderr)
	if m == nil {
		t.Fatalf("summary has no growing filter line:\n%s%s", stdout, stderr)
	}
	if g, _ := strconv.Atoi(m[1]); g < 4 {
		t.Errorf("%d generations for 2,000 pages from 200", g)
	}
	// The summary's rate, estimated from each generation's fill, stays
	// near the target. Not under it on every run: with 200 keys and about
	// 20 hash functions a generation's estimate moves by a fifth with a 1%
	// change in its fill, and each generation may take up to
	// concurrency-1 keys beyond its capacity while the next is allocated.
	// Ten runs on a loaded machine gave 1.3e-7 to 1.15e-6, a CI run
	// 1.73e-6 (a progress line then warned). A filter that stopped
	// growing after a resume would be far above.
	r := regexp.MustCompile(`estimated false-positive rate (\S+) \(target (\S+)\)`).FindStringSubmatch(stdout + stderr)
	if r == nil {
		t.Fatalf("summary has no estimated rate:\n%s%s", stdout, stderr)
	}
	rate, _ := strconv.ParseFloat(r[1], 64)
	target, _ := strconv.ParseFloat(r[2], 64)
	if target != 1e-6 || rate > 3*target {
		t.Errorf("estimated false-positive rate %g, want at most 3 x the target %g:\n%s%s", rate, target, stdout, stderr)
	}
}
