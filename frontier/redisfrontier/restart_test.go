package redisfrontier

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/internal/redistest"
)

// restartCrawl is a crawl of a 900-page graph by two workers of three
// goroutines on a private redis-server, for the restart tests.
type restartCrawl struct {
	g       graph
	workers []*Frontier
	wait    func(t *testing.T)

	mu    sync.Mutex // protects count
	count []int      // fetches per page
	total atomic.Int64
	last  atomic.Int64 // when the last page was fetched, Unix ns
}

const restartGoroutines = 3

// startRestartCrawl starts the crawl on r and returns once 250 pages are
// fetched. The lease is far longer than a fetch (1ms) and the outage
// (700ms plus the restart), so no lease of a live worker may expire: a
// lease that does was left behind by a retry.
func startRestartCrawl(t *testing.T, ctx context.Context, r *redistest.Server, prefix string) *restartCrawl {
	t.Helper()
	rc := &restartCrawl{g: graph{n: 900}, workers: make([]*Frontier, 2)}
	rc.count = make([]int, rc.g.n)
	for i := range rc.workers {
		c, err := Dial(ctx, Config{URL: "redis://" + r.Addr(), Prefix: prefix, MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		rc.workers[i] = openTestFrontier(t, c, Options{Politeness: frontier.PolitenessOptions{Delay: -1}, Poll: 20 * time.Millisecond, Lease: 15 * time.Second})
	}
	if _, err := rc.workers[0].AddSeeds(ctx, rc.g.seeds()); err != nil {
		t.Fatal(err)
	}
	rc.wait = crawlWorkers(ctx, rc.workers, rc.g, restartGoroutines, func(i int) {
		rc.mu.Lock()
		rc.count[i]++
		rc.mu.Unlock()
		rc.total.Add(1)
		rc.last.Store(time.Now().UnixNano())
		time.Sleep(time.Millisecond)
	})
	for rc.total.Load() < 250 {
		if ctx.Err() != nil {
			t.Fatal("crawl did not reach 250 pages")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return rc
}

// inFlight is the most entries the workers hold at once.
func (rc *restartCrawl) inFlight() int { return len(rc.workers) * restartGoroutines }

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
	r := redistest.Start(t, 0, "--appendonly", "yes", "--appendfsync", "everysec")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	rc := startRestartCrawl(t, ctx, r, "restart:")
	r.Stop()
	atRestart := rc.total.Load()
	time.Sleep(700 * time.Millisecond)
	r.Start()
	rc.wait(t)
	_, twice := checkFetchCounts(t, rc.count, false)
	if twice > rc.inFlight() {
		t.Errorf("%d pages fetched twice, want at most the %d in flight", twice, rc.inFlight())
	}
	st, err := rc.workers[0].Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Requeued != 0 || st.Reclaimed != 0 {
		// A lease taken by a call whose reply was lost in the restart
		// and not recognised by its retry (TestNextRetryAfterLostReply).
		t.Errorf("%d entries re-queued and %d completions reclaimed after lease expiry, want 0: a lease of a live worker was orphaned",
			st.Requeued, st.Reclaimed)
	}
	if atRestart >= int64(rc.g.n) {
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
			r := redistest.Start(t, 0, "--appendonly", "yes", "--appendfsync", fsync)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			rc := startRestartCrawl(t, ctx, r, "crash:")
			r.Kill()
			killed := time.Now()
			atKill := rc.total.Load()
			time.Sleep(700 * time.Millisecond)
			r.Start()
			restarted := time.Now()
			for rc.total.Load() == atKill || rc.last.Load() < restarted.UnixNano() {
				if ctx.Err() != nil {
					t.Fatal("no page fetched after the restart")
				}
				time.Sleep(time.Millisecond)
			}
			resumed := time.Since(killed)
			rc.wait(t)
			lost, twice := checkFetchCounts(t, rc.count, fsync != "always")
			if twice > rc.inFlight() {
				t.Errorf("appendfsync %s: %d pages fetched twice; want at most %d (in flight)", fsync, twice, rc.inFlight())
			}
			if lost > rc.inFlight() {
				t.Errorf("appendfsync %s: %d pages lost: more than the writes of the last moments", fsync, lost)
			}
			t.Logf("appendfsync %s: killed after %d of %d pages; fetching resumed %v after the kill (700ms down); %d pages lost, %d fetched twice; crawl took %v",
				fsync, atKill, rc.g.n, resumed.Round(time.Millisecond), lost, twice, time.Since(start).Round(time.Millisecond))
		})
	}
}

// checkFetchCounts reports a page fetched more than twice, and one never
// fetched unless lostOK, and returns how many pages were never fetched
// and how many twice.
func checkFetchCounts(t *testing.T, count []int, lostOK bool) (lost, twice int) {
	t.Helper()
	for i, n := range count {
		switch {
		case n == 0:
			lost++
			if !lostOK {
				t.Errorf("page %d never fetched", i)
			}
		case n == 2:
			twice++
		case n > 2:
			t.Errorf("page %d fetched %d times", i, n)
		}
	}
	return lost, twice
}
