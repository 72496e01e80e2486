package frontier

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// manualClock is a clock a test moves by hand.
type manualClock struct{ t time.Time }

func (c *manualClock) now() time.Time { return c.t }

// nextNow returns the entry Next hands out at once, failing if it would wait.
func nextNow(t *testing.T, f *Frontier) Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	e, err := f.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return e
}

// nextWaits checks that Next has nothing to hand out now.
func nextWaits(t *testing.T, f *Frontier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if e, err := f.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next = %q, %v; want it to wait", e.URL, err)
	}
}

// TestRetryDoesNotBlockHost checks that a URL waiting for its retry lets
// the host's other URLs go first, is handed out once due with its attempt
// count, and keeps the crawl from being exhausted while it waits.
func TestRetryDoesNotBlockHost(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := openTest(t, Options{Now: clk.now})
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"}); err != nil {
		t.Fatal(err)
	}
	e1 := nextNow(t, f)
	if e1.URL != "http://a.test/1" || e1.Attempt != 0 {
		t.Fatalf("first entry %+v", e1)
	}
	if err := f.Done(ctx, e1, Outcome{Fetched: true, Failed: true, RetryAt: clk.t.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); st.Retrying != 1 || st.Queued != 2 || st.Errors != 0 || st.Pages != 1 {
		t.Errorf("stats after the retry %+v, want 1 retrying, 2 queued, no error, 1 page", st)
	}
	for _, want := range []string{"http://a.test/2", "http://a.test/3"} {
		e := nextNow(t, f)
		if e.URL != want {
			t.Fatalf("Next = %s, want %s (the retry is not due)", e.URL, want)
		}
		if err := f.Done(ctx, e, Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	nextWaits(t, f) // not exhausted: the retry waits
	clk.t = clk.t.Add(time.Minute)
	r := nextNow(t, f)
	if r.URL != "http://a.test/1" || r.Attempt != 1 || r.Depth != e1.Depth {
		t.Fatalf("retry %+v, want a.test/1 attempt 1", r)
	}
	// A second retry, then a final failure.
	if err := f.Done(ctx, r, Outcome{Fetched: true, RetryAt: clk.t.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Second)
	r = nextNow(t, f)
	if r.Attempt != 2 {
		t.Fatalf("second retry attempt %d, want 2", r.Attempt)
	}
	if err := f.Done(ctx, r, Outcome{Fetched: true, Failed: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Next(ctx); !errors.Is(err, ErrExhausted) {
		t.Fatalf("Next = %v, want ErrExhausted", err)
	}
	if st := f.Stats(); st.Retrying != 0 || st.Queued != 0 || st.Errors != 1 || st.Pages != 5 || st.Hosts != 0 {
		t.Errorf("final stats %+v, want 5 pages (attempts), 1 error, nothing left", st)
	}
}

// TestRetryDueBeforeQueue checks that a due retry goes before the host's
// queue, and that other hosts are served while a host's retry waits.
func TestRetryDueBeforeQueue(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := openTest(t, Options{Now: clk.now})
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/1", "http://a.test/2", "http://b.test/1"}); err != nil {
		t.Fatal(err)
	}
	e := nextNow(t, f)
	if err := f.Done(ctx, e, Outcome{Fetched: true, RetryAt: clk.t.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(2 * time.Second)
	var got []string
	for range 3 {
		e := nextNow(t, f)
		got = append(got, e.URL)
		if err := f.Done(ctx, e, Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	// b.test waited longest; then a.test's due retry before a.test/2.
	want := []string{"http://b.test/1", "http://a.test/1", "http://a.test/2"}
	if !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
}

// TestRetrySurvivesResume checks that a retry is part of the stored state:
// a frontier opened again on a copy of the store (as a crash leaves it)
// hands it out when due, with its attempt count, and a retry that was out
// at the crash is handed out again.
func TestRetrySurvivesResume(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newMemStore()
	f := openTest(t, Options{Store: st, Now: clk.now})
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/1", "http://b.test/1"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e := nextNow(t, f)
		if err := f.Done(ctx, e, Outcome{Fetched: true, RetryAt: clk.t.Add(time.Duration(len(e.URL)) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.countPrefix(prefixRetry); n != 2 {
		t.Fatalf("%d retry records in the store, want 2", n)
	}
	clk.t = clk.t.Add(time.Hour)
	out := nextNow(t, f) // out at the "crash"
	f2 := openTest(t, Options{Store: st.clone(), Now: clk.now})
	if s := f2.Stats(); s.Retrying != 2 || s.Queued != 0 || s.Hosts != 2 {
		t.Fatalf("resumed stats %+v, want 2 retrying on 2 hosts", s)
	}
	got := map[string]int{}
	for range 2 {
		e := nextNow(t, f2)
		got[e.URL] = e.Attempt
		if err := f2.Done(ctx, e, Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	if got["http://a.test/1"] != 1 || got["http://b.test/1"] != 1 {
		t.Errorf("resumed retries %v, want both at attempt 1", got)
	}
	if _, err := f2.Next(ctx); !errors.Is(err, ErrExhausted) {
		t.Errorf("Next = %v, want ErrExhausted", err)
	}
	_ = out
}

func TestRetryRecordCodec(t *testing.T) {
	due := time.Unix(0, 1_764_000_000_123_456_789)
	e := Entry{URL: "http://a.test/x", Depth: 2, Redirects: 1, Via: "http://a.test/", Attempt: 3, retry: true, due: due}
	got, err := decodeEntry(nil, encodeEntry(&e))
	if err != nil || got != e {
		t.Fatalf("round trip %+v: got %+v, %v", e, got, err)
	}
	host, seq, err := parseRetryKey(retryKey("a.test:8080", 42))
	if err != nil || host != "a.test:8080" || seq != 42 {
		t.Fatalf("parseRetryKey = %q, %d, %v", host, seq, err)
	}
	for _, b := range [][]byte{
		{retryVersion, 0, 0, 0, 2, 1, 'x', 0},                 // attempt 0
		{retryVersion, 0, 0, 1, 0, 1, 'x', 0},                 // due 0
		{retryVersion, 0, 0, 1, 3},                            // truncated
		append(encodeEntry(&e), 0),                            // trailing byte
		{retryVersion, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 1}, // bad varint
	} {
		if _, err := decodeEntry([]byte("r/x"), b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeEntry(%x) = %v, want ErrCorrupt", b, err)
		}
	}
}

// TestCorruptRetryRecord checks that a retry record that does not decode
// stops Open with ErrCorrupt rather than being dropped.
func TestCorruptRetryRecord(t *testing.T) {
	st := newMemStore()
	f := openTest(t, Options{Store: st})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, val []byte }{
		{retryKey("a.test", 1), []byte{retryVersion, 1}},
		{[]byte("r/\x00\x00"), encodeEntry(&Entry{URL: "http://a.test/", Attempt: 1, retry: true, due: time.Unix(1, 0)})},
		{retryKey("a.test", 1<<40), encodeEntry(&Entry{URL: "http://a.test/", Attempt: 1, retry: true, due: time.Unix(1, 0)})},
		{retryKey("a.test", 1), encodeEntry(&Entry{URL: "http://a.test/"})},
	} {
		c := st.clone()
		c.m[string(tc.key)] = tc.val
		_, err := Open(context.Background(), Options{Store: c, Seen: newExactSeen(), Normalizer: simpleNorm{}})
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("Open with %q = %x: %v, want ErrCorrupt", tc.key, tc.val, err)
		}
	}
}

func FuzzParseRetryKey(f *testing.F) {
	f.Add(retryKey("a.test:8080", 42))
	f.Add([]byte("r/"))
	f.Add([]byte("r/\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("q/x\x00\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, key []byte) {
		host, seq, err := parseRetryKey(key)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if host == "" || !bytes.Equal(retryKey(host, seq), key) {
			t.Fatalf("key %q parsed as %q/%d, which encodes differently", key, host, seq)
		}
	})
}
