package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/internal/testsite"
)

// --order takes fifo or inlinks.
func TestCrawlOrderUsage(t *testing.T) {
	args := []string{"--out", t.TempDir(), "--order", "pagerank", "http://127.0.0.34:1/"}
	code, _, stderr := runCrawler(t, context.Background(), args...)
	if want := `unknown order "pagerank"`; code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("crawl %v exited %d, stderr %q; want %d and %q", args, code, stderr, exitUsage, want)
	}
}

// --order inlinks works with --redis; a worker given another order than
// the crawl's exits 1, naming --order.
func TestCrawlOrderRedis(t *testing.T) {
	_, prefix := statusRedis(t) // skips without Redis unless CI=true; deletes the keys after
	site, _ := testsite.Start(t, 200)
	wantFetched, wantDenied := site.Expected()
	dir := t.TempDir()
	args := []string{"--seeds", writeSeeds(t, dir, site.Roots()), "--delay", "-1", "--allow-private", "--concurrency", "4",
		"--expected-urls", "100000", "--progress-interval", "-1", "--redis", "redis://" + statusTestRedis, "--redis-prefix", prefix}
	out := filepath.Join(dir, "inlinks")
	code, stdout, stderr := runCrawler(t, context.Background(), append(args, "--order", "inlinks", "--out", out)...)
	if code != 0 {
		t.Fatalf("crawl --redis --order inlinks exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	logs, err := filepath.Glob(filepath.Join(out, "crawl-*.log.jsonl"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("crawl logs %v, %v; want one", logs, err)
	}
	fetched, denied := splitLog(readLog(t, logs[0]))
	if d := dupes(fetched); len(d) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %v", len(d), sample(d))
	}
	checkCoverage(t, fetched, denied, wantFetched, wantDenied)

	code, _, stderr = runCrawler(t, context.Background(), append(args, "--order", "fifo", "--out", filepath.Join(dir, "fifo"))...)
	if want := "every worker of a crawl needs the same --order"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("a fifo worker on an inlinks crawl exited %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}
