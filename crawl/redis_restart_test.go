package crawl

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/redistest"
	"github.com/layercrawl/layercrawl/internal/testweb"
	"github.com/layercrawl/layercrawl/storage"
)

// TestCrawlSurvivesRedisKill: two workers of a Redis-mode crawl, on a
// private redis-server with appendfsync always that is killed (SIGKILL)
// mid-crawl and started again on its append-only file 2.5s later. The
// workers pause and retry; meanwhile their Stats say the shared counters
// are unavailable (what the progress line prints); the crawl then
// completes with every URL fetched exactly once.
func TestCrawlSurvivesRedisKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a private redis-server: skipped in -short")
	}
	srv := redistest.Start(t, 0, "--appendonly", "yes", "--appendfsync", "always")
	w, want := startWeb(t, testweb.Options{Seed: 21, Hosts: 3, Pages: 300}, testweb.ExpectOptions{})
	dir := t.TempDir()
	var crawlers []*Crawler
	for i := range 2 {
		o := Options{Seeds: w.Seeds(), Dir: dir, Concurrency: 4, ExpectedURLs: 100_000}
		o.Politeness.Delay = 10 * time.Millisecond // the crawl lasts a few seconds
		o.Politeness.DelayFactor = -1
		o.Admission.MaxDepth = -1
		o.Fetch.AllowPrivate = true
		o.Fetch.Resolver = w.Resolver()
		// Beats of 500ms: a liveness of 1.5s, which the 2.5s outage
		// outlasts, and which a beat slowed by -race and fsyncs keeps.
		o.Redis = &RedisOptions{URL: "redis://" + srv.Addr(), Prefix: "kill:", Worker: "w" + string(rune('0'+i)), Heartbeat: 500 * time.Millisecond}
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		crawlers = append(crawlers, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(crawlers))
	for i, c := range crawlers {
		wg.Go(func() {
			errs[i] = c.Run(ctx)
			if err := c.Close(); errs[i] == nil {
				errs[i] = err
			}
		})
	}
	for crawlers[0].Stats().Fetch.Fetched < 50 {
		if ctx.Err() != nil {
			t.Fatal("the crawl did not reach 50 fetches")
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.Kill()
	killed := time.Now()
	sawDown := false
	for time.Since(killed) < 2500*time.Millisecond {
		if r := crawlers[0].Stats().Redis; r != nil && r.Err != nil {
			sawDown = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Start()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	if !sawDown {
		t.Error("during the outage the worker's Stats never said Redis was unavailable")
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "crawl-*.log.jsonl"))
	var entries []storage.Entry
	for _, l := range logs {
		entries = append(entries, readLog(t, l)...)
	}
	checkCoverage(t, w, want, entries)
	// Both workers' liveness expired in the outage; neither may take the
	// other's hosts for it.
	if r := crawlers[0].Stats().Redis; r == nil || r.Reaped != 0 || r.Requeued != 0 {
		t.Errorf("shared counters %+v: leases of a live worker were ended after the outage", r)
	}
	t.Logf("killed after %d fetches of worker 0; crawl of %d URLs done %v after the kill", crawlers[0].Stats().Fetch.Fetched, len(want.Fetched()), time.Since(killed).Round(time.Millisecond))
}
