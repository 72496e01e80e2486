package redisfrontier

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
)

// TestCrawlSurvivesRedisRestart: two workers crawl a 900-page graph on a
// private Redis with AOF persistence, which is shut down mid-crawl and
// started again 700ms later. The workers retry meanwhile and the crawl
// completes with every page fetched; at most the entries in flight at the
// restart are fetched twice.
func TestCrawlSurvivesRedisRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a private redis-server: skipped in -short")
	}
	// The append-only file, fsynced every second (a clean shutdown flushes it).
	r := startPrivateRedis(t, 0, "--appendonly", "yes", "--appendfsync", "everysec")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	g := graph{n: 900}
	const goroutines = 3
	var mu sync.Mutex
	count := make([]int, g.n)
	var total atomic.Int64
	fetched := func(i int) {
		mu.Lock()
		count[i]++
		mu.Unlock()
		total.Add(1)
		time.Sleep(time.Millisecond)
	}
	workers := make([]*Frontier, 2)
	for i := range workers {
		c, err := Dial(ctx, Config{URL: "redis://" + r.addr(), Prefix: "restart:", MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The lease is far longer than a fetch (1ms) and the outage
		// (700ms plus the restart), so no lease of a live worker may
		// expire: a lease that does was left behind by a retry.
		workers[i] = openTestFrontier(t, c, Options{Politeness: frontier.PolitenessOptions{Delay: -1}, Poll: 20 * time.Millisecond, Lease: 15 * time.Second})
	}
	if _, err := workers[0].AddSeeds(ctx, g.seeds()); err != nil {
		t.Fatal(err)
	}
	wait := crawlWorkers(ctx, workers, g, goroutines, fetched)
	for total.Load() < 250 {
		if ctx.Err() != nil {
			t.Fatal("crawl did not reach 250 pages")
		}
		time.Sleep(2 * time.Millisecond)
	}
	r.stop()
	atRestart := total.Load()
	time.Sleep(700 * time.Millisecond)
	r.start()
	wait(t)
	twice := 0
	for i, n := range count {
		switch {
		case n == 0:
			t.Errorf("page %d never fetched", i)
		case n > 2:
			t.Errorf("page %d fetched %d times", i, n)
		case n == 2:
			twice++
		}
	}
	if twice > len(workers)*goroutines {
		t.Errorf("%d pages fetched twice, want at most the %d in flight", twice, len(workers)*goroutines)
	}
	st, err := workers[0].Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Requeued != 0 || st.Reclaimed != 0 {
		// A lease taken by a call whose reply was lost in the restart
		// and not recognised by its retry (TestNextRetryAfterLostReply).
		t.Errorf("%d entries re-queued and %d completions reclaimed after lease expiry, want 0: a lease of a live worker was orphaned",
			st.Requeued, st.Reclaimed)
	}
	if atRestart >= int64(g.n) {
		t.Errorf("the restart came after the crawl had ended (%d pages)", atRestart)
	}
	t.Logf("restart after %d pages; pages fetched twice: %d; crawl took %v", atRestart, twice, time.Since(start).Round(time.Millisecond))
}
