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

// TestCrawlSurvivesRedisCrash: as TestCrawlSurvivesRedisRestart, but the
// server is killed (SIGKILL, no shutdown) mid-crawl and started again on
// its append-only file 700ms later, once with appendfsync always and once
// with everysec. The workers retry meanwhile and the crawl completes. With
// always, every acknowledged write is in the file: no page is lost and at
// most those in flight are fetched twice. With everysec, Redis may answer
// before its write reaches the file (it postpones the write while an fsync
// is slow), so a lost write is possible: the test reports what was lost
// instead of failing on it. A killed process loses nothing the kernel
// already has; the second of writes everysec may lose is lost only when the
// machine itself goes down, which a test cannot do.
func TestCrawlSurvivesRedisCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a private redis-server: skipped in -short")
	}
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			r := startPrivateRedis(t, 0, "--appendonly", "yes", "--appendfsync", fsync)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			g := graph{n: 900}
			const goroutines = 3
			var mu sync.Mutex
			count := make([]int, g.n)
			var total atomic.Int64
			var last atomic.Int64 // when the last page was fetched, Unix ns
			fetched := func(i int) {
				mu.Lock()
				count[i]++
				mu.Unlock()
				total.Add(1)
				last.Store(time.Now().UnixNano())
				time.Sleep(time.Millisecond)
			}
			workers := make([]*Frontier, 2)
			for i := range workers {
				c, err := Dial(ctx, Config{URL: "redis://" + r.addr(), Prefix: "crash:", MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
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
			r.kill()
			killed := time.Now()
			atKill := total.Load()
			time.Sleep(700 * time.Millisecond)
			r.start()
			restarted := time.Now()
			for total.Load() == atKill || last.Load() < restarted.UnixNano() {
				if ctx.Err() != nil {
					t.Fatal("no page fetched after the restart")
				}
				time.Sleep(time.Millisecond)
			}
			resumed := time.Since(killed)
			wait(t)
			lost, twice := 0, 0
			for _, n := range count {
				switch {
				case n == 0:
					lost++
				case n == 2:
					twice++
				case n > 2:
					t.Errorf("a page fetched %d times", n)
				}
			}
			inFlight := len(workers) * goroutines
			if fsync == "always" && (lost > 0 || twice > inFlight) {
				t.Errorf("appendfsync always: %d pages lost, %d fetched twice; want none lost, at most %d (in flight) twice", lost, twice, inFlight)
			}
			if lost > inFlight || twice > 2*inFlight {
				t.Errorf("appendfsync %s: %d pages lost, %d fetched twice: more than the writes of the last moments", fsync, lost, twice)
			}
			t.Logf("appendfsync %s: killed after %d of %d pages; fetching resumed %v after the kill (700ms down); %d pages lost, %d fetched twice; crawl took %v",
				fsync, atKill, g.n, resumed.Round(time.Millisecond), lost, twice, time.Since(start).Round(time.Millisecond))
		})
	}
}
