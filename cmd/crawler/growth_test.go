package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/internal/testsite"
)

// TestFilterGrowthKill9 crawls 2,000 pages with a duplicate filter first
// sized for 200 URLs (so it grows to four or more generations), kills the
// crawl with SIGKILL twice and resumes it: the snapshots of a growing
// filter, taken every 100 ms while it grows, and the journal replayed into
// it lose no URL, and the summary says how it grew.
func TestFilterGrowthKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test skipped in -short mode")
	}
	site, hosts := testsite.Start(t, 2000)
	wantFetched, _ := site.Expected()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Roots())
	const concurrency = 4
	args := []string{"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private",
		"--concurrency", fmt.Sprint(concurrency), "--expected-urls", "200", "--fp-target", "1e-6", "--checkpoint-interval", "100ms"}
	logPath := filepath.Join(out, "crawl.log.jsonl")

	kills := crawlKilled(t, args, logPath, 300, 1200)
	code, stdout, stderr := runCrawler(t, context.Background(), args...)
	if code != 0 {
		t.Fatalf("resumed crawl exited %d:\n%s", code, stderr)
	}
	m := regexp.MustCompile(`duplicate filter  \d+ URLs in (\d+) generations`).FindStringSubmatch(stdout + stderr)
	if m == nil {
		t.Fatalf("summary has no growing filter line:\n%s%s", stdout, stderr)
	}
	if g, _ := strconv.Atoi(m[1]); g < 4 {
		t.Errorf("%d generations for %d URLs from 200", g, len(wantFetched))
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
	if strings.Contains(stdout+stderr, "WARNING") {
		t.Errorf("a growing filter warned about its rate:\n%s%s", stdout, stderr)
	}
}
