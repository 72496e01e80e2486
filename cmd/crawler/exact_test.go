package main

import (
	"context"
	"fmt"
	"github.com/layercrawl/layercrawl/internal/testsite"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExactDedupKill9 crawls with a duplicate filter sized for 200 URLs
// (saturated: nearly every new URL is a false positive) and the default
// exact check, kills the crawl with SIGKILL twice and resumes it: the
// union of the logs must still be exactly the site, with only the fetches
// in flight at the kills repeated. The fingerprints are written in the
// batch that queues their URLs, so the kill cannot separate them from the
// queue, and the memory tables are loaded from them on resume.
func TestExactDedupKill9(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages in child processes, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the engine's concurrency is race-tested in package crawl")
	}
	stdout, stderr := crawlKill9Resume(t, "--filter-growth=false", "--expected-urls", "200", "--fp-target", "0.1")
	if !strings.Contains(stdout+stderr, "pages lost        0 to the duplicate filter") {
		t.Errorf("summary has no lost-pages line:\n%s%s", stdout, stderr)
	}
}

// crawlKill9Resume crawls a 2,000-page site with the extra flags and
// checkpoints every 100 ms, kills the crawl with SIGKILL twice and resumes
// it to the end; the union of the logs must be exactly the site, with only
// the fetches in flight at the kills repeated. It returns the last run's
// output.
func crawlKill9Resume(t *testing.T, extra ...string) (stdout, stderr string) {
	t.Helper()
	if testing.Short() {
		t.Skip("kill -9 test skipped in -short mode")
	}
	site, hosts := testsite.Start(t, 2000)
	wantFetched, _ := site.Expected()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Roots())
	const concurrency = 4
	args := append([]string{"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private",
		"--concurrency", fmt.Sprint(concurrency), "--checkpoint-interval", "100ms"}, extra...)
	logPath := filepath.Join(out, "crawl.log.jsonl")

	kills := crawlKilled(t, args, logPath, 300, 1200)
	code, stdout, stderr := runCrawler(t, context.Background(), args...)
	if code != 0 {
		t.Fatalf("resumed crawl exited %d:\n%s", code, stderr)
	}
	entries := readLog(t, logPath)
	fetched, _ := splitLog(entries)
	all := slices.Compact(slices.Clone(fetched))
	if !slices.Equal(all, wantFetched) {
		t.Errorf("union of logs: %d URLs, want %d; missing %v; unexpected %v",
			len(all), len(wantFetched), sample(missing(wantFetched, all)), sample(missing(all, wantFetched)))
	}
	if d := dupes(fetched); len(d) > kills*concurrency {
		t.Errorf("%d URLs fetched twice, want at most %d (in flight at %d kills): %v", len(d), kills*concurrency, kills, sample(d))
	}
	checkServed(t, hosts, wantFetched, kills*concurrency, kills+1)
	return stdout, stderr
}
