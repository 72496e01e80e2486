package frontier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestDeferHoldsHost checks that a deferred entry goes back to the head of
// its host's queue with its attempt count untouched, that the host hands
// out nothing (neither queue nor retry) before the deferral ends while other
// hosts go on, and that nothing is written to the store.
func TestDeferHoldsHost(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newMemStore()
	f := openTest(t, Options{Store: st, Now: clk.now})
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/1", "http://a.test/2", "http://b.test/1", "http://b.test/2"}); err != nil {
		t.Fatal(err)
	}
	e := nextNow(t, f)
	if e.URL != "http://a.test/1" {
		t.Fatalf("first entry %s", e.URL)
	}
	// A retry of a.test, due before the deferral ends.
	if err := f.Done(ctx, e, Outcome{Fetched: true, RetryAt: clk.t}); err != nil {
		t.Fatal(err)
	}
	if b := nextNow(t, f); b.URL != "http://b.test/1" {
		t.Fatalf("second entry %s, want b.test/1", b.URL)
	} else if err := f.Done(ctx, b, Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	r := nextNow(t, f)
	if r.URL != "http://a.test/1" || r.Attempt != 1 {
		t.Fatalf("retry %+v", r)
	}
	before := st.clone()
	if err := f.Defer(r, clk.t.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := f.Defer(r, clk.t.Add(time.Minute)); !errors.Is(err, ErrNotOut) {
		t.Errorf("second Defer: %v, want ErrNotOut", err)
	}
	if !maps2Equal(before.m, st.m) {
		t.Error("Defer wrote to the store")
	}
	b := nextNow(t, f)
	if b.URL != "http://b.test/2" {
		t.Fatalf("Next = %s while a.test is held, want b.test/2", b.URL)
	}
	if err := f.Done(ctx, b, Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	nextWaits(t, f) // a.test/2 and the retry wait with their host
	if s := f.Stats(); s.Queued != 1 || s.Retrying != 1 || s.InFlight != 0 {
		t.Errorf("stats while held %+v, want 1 queued, 1 retrying, none out", s)
	}
	// A queue entry deferred goes back to the head of the queue.
	clk.t = clk.t.Add(time.Minute)
	r = nextNow(t, f)
	if r.URL != "http://a.test/1" || r.Attempt != 1 {
		t.Fatalf("after the hold: %+v, want the retry, attempt 1", r)
	}
	if err := f.Done(ctx, r, Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Second)
	q := nextNow(t, f)
	if err := f.Release(q, false, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Defer(q, clk.t.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	nextWaits(t, f)
	clk.t = clk.t.Add(time.Second)
	if again := nextNow(t, f); again.URL != q.URL || again.Attempt != 0 {
		t.Fatalf("deferred queue entry came back as %+v, want %s attempt 0", again, q.URL)
	} else if err := f.Done(ctx, again, Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Next(ctx); !errors.Is(err, ErrExhausted) {
		t.Errorf("Next = %v, want ErrExhausted", err)
	}
}

func maps2Equal(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// TestFailedSeedRequeued checks that a seed whose last attempt failed is
// queued again when given again, on the same frontier and on one opened
// again on its store, and that a seed that succeeded is not.
func TestFailedSeedRequeued(t *testing.T) {
	st := newMemStore()
	seen := newExactSeen()
	f := openTest(t, Options{Store: st, Seen: seen})
	ctx := context.Background()
	seeds := []string{"http://a.test/", "http://b.test/"}
	if n, err := f.AddSeeds(ctx, seeds); err != nil || n != 2 {
		t.Fatalf("AddSeeds = %d, %v", n, err)
	}
	for {
		e, err := f.Next(ctx)
		if errors.Is(err, ErrExhausted) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		// a.test fails after a retry; b.test succeeds.
		out := Outcome{Fetched: true}
		switch {
		case e.URL == "http://a.test/" && e.Attempt == 0:
			out.RetryAt = time.Now()
		case e.URL == "http://a.test/":
			out.Failed = true
		}
		if err := f.Done(ctx, e, out); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.countPrefix(prefixFailed); n != 1 {
		t.Fatalf("%d failure records, want 1", n)
	}
	f2 := openTest(t, Options{Store: st, Seen: seen.clone()})
	n, err := f2.AddSeeds(ctx, seeds)
	if err != nil || n != 1 {
		t.Fatalf("AddSeeds on resume = %d, %v; want the failed seed queued again", n, err)
	}
	e := nextNow(t, f2)
	if e.URL != "http://a.test/" || e.Attempt != 0 || e.Depth != 0 {
		t.Fatalf("requeued %+v, want a.test/ as a first attempt", e)
	}
	if n := st.countPrefix(prefixFailed); n != 0 {
		t.Errorf("%d failure records after the requeue, want 0", n)
	}
	if n, err := f2.AddSeeds(ctx, seeds); err != nil || n != 0 {
		t.Errorf("AddSeeds while it is out = %d, %v; want 0", n, err)
	}
	if err := f2.Done(ctx, e, Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	if n, err := f2.AddSeeds(ctx, seeds); err != nil || n != 0 {
		t.Errorf("AddSeeds after it succeeded = %d, %v; want 0", n, err)
	}
}

// TestRetryFailed checks that RetryFailed queues every failed URL again,
// in batches (more than one), with its depth and via, and none that
// succeeded.
func TestRetryFailed(t *testing.T) {
	st := newMemStore()
	f := openTest(t, Options{Store: st, Seen: newExactSeen()})
	ctx := context.Background()
	var seeds []string
	for i := range retryFailedBatch + 5 {
		seeds = append(seeds, fmt.Sprintf("http://h%d.test/", i%7)+fmt.Sprint(i))
	}
	if _, err := f.AddSeeds(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for i := range seeds {
		e := nextNow(t, f)
		fail := i%3 != 0
		if fail {
			failed = append(failed, e.URL)
		}
		if err := f.Done(ctx, e, Outcome{Fetched: true, Failed: fail}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := f.RetryFailed(ctx)
	if err != nil || n != len(failed) {
		t.Fatalf("RetryFailed = %d, %v; want %d", n, err, len(failed))
	}
	if s := f.Stats(); s.Queued != int64(len(failed)) {
		t.Errorf("queued %d, want %d", s.Queued, len(failed))
	}
	var got []string
	for range failed {
		e := nextNow(t, f)
		got = append(got, e.URL)
		if err := f.Done(ctx, e, Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	slices.Sort(failed)
	if !slices.Equal(got, failed) {
		t.Errorf("requeued %d URLs, want the %d failed ones", len(got), len(failed))
	}
	if n, err := f.RetryFailed(ctx); err != nil || n != 0 {
		t.Errorf("second RetryFailed = %d, %v; want 0", n, err)
	}
}

func FuzzParseFailedKey(f *testing.F) {
	f.Add(failedKey("a.test:8080", "http://a.test:8080/x"))
	f.Add([]byte("e/"))
	f.Add([]byte("e/\x00u"))
	f.Add([]byte("e/h\x00"))
	f.Fuzz(func(t *testing.T, key []byte) {
		host, err := parseFailedKey(key)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if host == "" || !bytes.HasPrefix(key, failedKey(host, "")) || len(key) <= len(failedKey(host, "")) {
			t.Fatalf("key %q parsed as host %q", key, host)
		}
	})
}
