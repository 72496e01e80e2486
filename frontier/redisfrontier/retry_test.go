package redisfrontier

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
)

// TestFrontierRetry: a URL whose fetch failed transiently waits in its
// host's retry set: the host's other URL is served at once, the frontier
// is not exhausted while the retry waits, and the URL comes back when due
// as the next attempt. A retry survives the worker: it is in Redis.
func TestFrontierRetry(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	opts := Options{Politeness: frontier.PolitenessOptions{Delay: -1}, Lease: time.Minute, Poll: 10 * time.Millisecond}
	a := openTestFrontier(t, c, opts)
	g := graph{n: 6}
	if _, err := a.AddSeeds(ctx, []string{g.url(0), g.url(3)}); err != nil { // one host: h0.test
		t.Fatal(err)
	}
	e, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const wait = 300 * time.Millisecond
	due := time.Now().Add(wait)
	if err := a.Done(ctx, e, frontier.Outcome{Failed: true, RetryAt: due}); err != nil {
		t.Fatal(err)
	}
	// A second worker serves the host's other URL at once.
	b := openTestFrontier(t, c, opts)
	start := time.Now()
	e2, err := b.Next(ctx)
	if err != nil || e2.URL == e.URL || time.Since(start) > wait/2 {
		t.Fatalf("Next = %q, %v after %v; want the other URL at once", e2.URL, err, time.Since(start))
	}
	if st, err := b.Stats(ctx); err != nil || st.Retrying != 1 || st.Retried != 1 {
		t.Errorf("Stats = %+v, %v; want 1 retry waiting", st, err)
	}
	if err := b.Done(ctx, e2, frontier.Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	// Then the retry, when due, as attempt 1.
	e3, err := b.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e3.URL != e.URL || e3.Attempt != 1 || time.Now().Before(due) {
		t.Fatalf("Next = %+v at %v; want %s as attempt 1 at %v or later", e3, time.Now(), e.URL, due)
	}
	if err := b.Done(ctx, e3, frontier.Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Next(ctx); !errors.Is(err, frontier.ErrExhausted) {
		t.Fatalf("Next after the retry = %v, want ErrExhausted", err)
	}
	if st, err := b.Stats(ctx); err != nil || st.Retrying != 0 || st.Done != 3 {
		t.Errorf("Stats = %+v, %v; want no retry waiting, 3 done", st, err)
	}
}

func TestRecordAttempt(t *testing.T) {
	e := frontier.Entry{URL: "http://a.test/x", Attempt: 2}
	got, err := decodeRecord(encodeRecord(e))
	if err != nil || got.Attempt != 2 {
		t.Fatalf("round trip of attempt 2: %+v, %v", got, err)
	}
	for _, bad := range []string{`{"u":"http://a.test/","a":-1}`, `{"u":"http://a.test/","a":1001}`} {
		if _, err := decodeRecord(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeRecord(%s) = %v, want ErrCorrupt", bad, err)
		}
	}
}

// TestFrontierThrottle: adaptive politeness across workers. A host that
// answers 429 (Outcome.Throttled) waits at least 250ms (the throttle's
// floor) before any worker gets its next URL, the crawl counts it slowed,
// and the next answer that does not throttle halves the wait.
func TestFrontierThrottle(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	opts := Options{Politeness: frontier.PolitenessOptions{Delay: 50 * time.Millisecond, MaxDelay: time.Minute}, Lease: time.Minute, Poll: 5 * time.Millisecond}
	a := openTestFrontier(t, c, opts)
	b := openTestFrontier(t, c, opts)
	g := graph{n: 9}
	if _, err := a.AddSeeds(ctx, []string{g.url(0), g.url(3), g.url(6)}); err != nil { // one host: h0.test
		t.Fatal(err)
	}
	e, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := time.Now()
	if err := a.Done(ctx, e, frontier.Outcome{Fetched: true, Throttled: true}); err != nil {
		t.Fatal(err)
	}
	if st, err := b.Stats(ctx); err != nil || st.Slowed != 1 || st.EverSlowed != 1 || st.Throttled != 1 {
		t.Errorf("Stats = %+v, %v; want one host slowed after one throttling answer", st, err)
	}
	e2, err := b.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Redis schedules in whole milliseconds: up to one earlier.
	if waited := time.Since(done); waited < 249*time.Millisecond {
		t.Errorf("the throttled host's next URL came after %v, want at least 250ms", waited)
	}
	done = time.Now()
	if err := b.Done(ctx, e2, frontier.Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	e3, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(done); waited < 124*time.Millisecond {
		t.Errorf("after an answer that does not throttle, the wait was %v, want the throttle halved to 125ms", waited)
	}
	if thr, err := c.rdb.HGet(ctx, a.key("thr"), "h0.test").Result(); err != nil || thr != "125" {
		t.Errorf("the host's throttle is %q (%v), want 125 (ms)", thr, err)
	}
	if err := a.Done(ctx, e3, frontier.Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	if st, err := b.Stats(ctx); err != nil || st.Slowed != 1 || st.EverSlowed != 1 {
		t.Errorf("Stats = %+v, %v; want the host still slowed (62ms > the 50ms delay)", st, err)
	}
}

// TestFrontierDefer: a deferred entry goes back to the head of its host's
// queue with its attempt count unchanged, and no worker gets the host's
// entries before the time given, while other hosts go on; nothing is
// counted done.
func TestFrontierDefer(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	// The delay keeps the other host from being served again before the
	// deferred one, whichever host the order serves first.
	opts := Options{Politeness: frontier.PolitenessOptions{Delay: 2 * time.Second}, Lease: time.Minute, Poll: 10 * time.Millisecond}
	a := openTestFrontier(t, c, opts)
	g := graph{n: 6}
	// h0.test: 0 and 3; h1.test: 1 and 4.
	if _, err := a.AddSeeds(ctx, []string{g.url(0), g.url(3), g.url(1), g.url(4)}); err != nil {
		t.Fatal(err)
	}
	e, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const wait = 300 * time.Millisecond
	until := time.Now().Add(wait)
	if err := a.Defer(ctx, e, until); err != nil {
		t.Fatal(err)
	}
	if err := a.Defer(ctx, e, until); !errors.Is(err, frontier.ErrNotOut) {
		t.Errorf("Defer twice = %v, want ErrNotOut", err)
	}
	b := openTestFrontier(t, c, opts)
	start := time.Now()
	other, err := b.Next(ctx)
	if err != nil || time.Since(start) > wait/2 {
		t.Fatalf("Next = %q, %v after %v; want the other host's URL at once", other.URL, err, time.Since(start))
	}
	if err := b.Done(ctx, other, frontier.Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	again, err := b.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.URL != e.URL || again.Attempt != 0 || time.Now().Before(until) {
		t.Fatalf("Next = %+v at %v; want %s, attempt 0, at %v or later", again, time.Now(), e.URL, until)
	}
	if err := b.Done(ctx, again, frontier.Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	st, err := b.Stats(ctx)
	if err != nil || st.Done != 2 || st.Retried != 0 {
		t.Errorf("Stats = %+v, %v; want 2 done, none retried", st, err)
	}
}

// TestFrontierRetryFailed: an entry done as failed without a retry leaves
// a failure record (one with a retry, or fetched, does not); RetryFailed
// from two workers at once queues each failed URL once, as attempt 0, and
// deletes its record.
func TestFrontierRetryFailed(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	opts := Options{Politeness: frontier.PolitenessOptions{Delay: -1}, Lease: time.Minute, Poll: 10 * time.Millisecond}
	a := openTestFrontier(t, c, opts)
	g := graph{n: 6}
	if _, err := a.AddSeeds(ctx, []string{g.url(0), g.url(1), g.url(2), g.url(3)}); err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for i := 0; i < 4; i++ {
		e, err := a.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out frontier.Outcome
		switch i {
		case 0, 1:
			out = frontier.Outcome{Fetched: true, Failed: true}
			failed[e.URL] = true
		case 2:
			out = frontier.Outcome{Fetched: true, Failed: true, RetryAt: time.Now().Add(time.Hour)}
		default:
			out = frontier.Outcome{Fetched: true}
		}
		if err := a.Done(ctx, e, out); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.rdb.HLen(ctx, a.key("failed")).Result(); err != nil || n != 2 {
		t.Fatalf("%d failure records, %v; want 2", n, err)
	}
	b := openTestFrontier(t, c, opts)
	var na, nb int
	var ea, eb error
	var wg sync.WaitGroup
	wg.Go(func() { na, ea = a.RetryFailed(ctx) })
	wg.Go(func() { nb, eb = b.RetryFailed(ctx) })
	wg.Wait()
	if ea != nil || eb != nil || na+nb != 2 {
		t.Fatalf("RetryFailed = %d, %v and %d, %v; want 2 queued in all", na, ea, nb, eb)
	}
	for range 2 {
		e, err := b.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !failed[e.URL] || e.Attempt != 0 {
			t.Errorf("Next = %+v, want a failed URL as attempt 0", e)
		}
		delete(failed, e.URL)
		if err := b.Done(ctx, e, frontier.Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.rdb.HLen(ctx, a.key("failed")).Result(); err != nil || n != 0 {
		t.Errorf("%d failure records after the retries, %v; want 0", n, err)
	}
	if n, err := a.RetryFailed(ctx); err != nil || n != 0 {
		t.Errorf("RetryFailed again = %d, %v; want 0", n, err)
	}
}
