package frontier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestScheduleAdmitsWhenDue checks that a scheduled URL is handed out
// again exactly when due, not a moment before, that a link to it found in
// between is a duplicate (it is not queued a second time), and that the
// frontier waits rather than ending while only the schedule holds URLs.
func TestScheduleAdmitsWhenDue(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := openTest(t, Options{Now: clk.now, Continuous: true})
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/1", "http://b.test/1"}); err != nil {
		t.Fatal(err)
	}
	a := nextNow(t, f)
	if err := f.Done(ctx, a, Outcome{Fetched: true, Schedule: &Schedule{Due: clk.t.Add(time.Minute), Record: []byte("r1")}}); err != nil {
		t.Fatal(err)
	}
	b := nextNow(t, f)
	// b links to a: a is scheduled, so the link is a duplicate.
	if err := f.Done(ctx, b, Outcome{Fetched: true, Links: []string{"http://a.test/1"}, Schedule: &Schedule{Due: clk.t.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Scheduled != 2 || s.Queued != 0 || s.Duplicates != 1 || s.New != 2 {
		t.Fatalf("stats %+v, want 2 scheduled, none queued, 1 duplicate", s)
	}
	nextWaits(t, f) // not exhausted, nothing due
	clk.t = clk.t.Add(time.Minute - time.Nanosecond)
	nextWaits(t, f)
	clk.t = clk.t.Add(time.Nanosecond)
	e := nextNow(t, f)
	if e.URL != "http://a.test/1" || e.Attempt != 0 || e.Depth != a.Depth {
		t.Fatalf("due entry %+v, want a.test/1", e)
	}
	due, rec, ok, err := f.ScheduleRecord(e.URL)
	if err != nil || !ok || string(rec) != "r1" || !due.Equal(clk.t) {
		t.Fatalf("ScheduleRecord = %v, %q, %v, %v; want the record kept with it", due, rec, ok, err)
	}
	nextWaits(t, f) // a is out, b not due
	// Dropped from the schedule: never handed out again.
	if err := f.Done(ctx, e, Outcome{Fetched: true, Failed: true}); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Scheduled != 1 {
		t.Fatalf("scheduled %d after a drop, want 1", s.Scheduled)
	}
	clk.t = clk.t.Add(time.Hour)
	b = nextNow(t, f)
	if b.URL != "http://b.test/1" {
		t.Fatalf("Next = %s, want b.test/1", b.URL)
	}
	nextWaits(t, f)
	// b dropped too: nothing queued, out or scheduled, the crawl ends.
	if err := f.Done(ctx, b, Outcome{Fetched: true, Failed: true}); err != nil {
		t.Fatal(err)
	}
	if e, err := f.Next(ctx); !errors.Is(err, ErrExhausted) {
		t.Fatalf("Next with an empty schedule = %q, %v; want ErrExhausted", e.URL, err)
	}
}

// TestScheduleNoDuplicateFetch drives many URLs through several rounds
// at a moving clock and checks that no URL is handed out before its due
// time, every one is handed out in every round, and the store's keys do
// not grow with the rounds (memory flat).
func TestScheduleNoDuplicateFetch(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newMemStore()
	f := openTest(t, Options{Store: st, Now: clk.now, Continuous: true, Order: OrderFIFO})
	ctx := context.Background()
	const n = 300
	var seeds []string
	for i := range n {
		seeds = append(seeds, fmt.Sprintf("http://h%d.test/%d", i%7, i))
	}
	if _, err := f.AddSeeds(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	interval := func(u string) time.Duration { return time.Duration(1+len(u)%3) * time.Minute }
	due := map[string]time.Time{}
	fetches := map[string]int{}
	keys := 0
	for round := range 12 {
		for {
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			e, err := f.Next(cctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := due[e.URL]; ok && clk.t.Before(d) {
				t.Fatalf("%s handed out at %v, due %v", e.URL, clk.t, d)
			}
			fetches[e.URL]++
			due[e.URL] = clk.t.Add(interval(e.URL))
			if err := f.Done(ctx, e, Outcome{Fetched: true, Schedule: &Schedule{Due: due[e.URL]}}); err != nil {
				t.Fatal(err)
			}
		}
		if round == 2 {
			keys = len(st.m)
		}
		if round > 2 && len(st.m) != keys {
			t.Fatalf("round %d: %d store keys, %d after round 2: the store grows with revisits", round, len(st.m), keys)
		}
		clk.t = clk.t.Add(time.Minute)
	}
	for _, u := range seeds {
		// 12 rounds a minute apart: an interval of k minutes gives
		// 1 + floor(11/k) fetches.
		if want := 1 + 11/int(interval(u)/time.Minute); fetches[u] != want {
			t.Errorf("%s fetched %d times, want %d", u, fetches[u], want)
		}
	}
	if s := f.Stats(); s.Scheduled != n || s.New != n {
		t.Errorf("stats %+v, want %d scheduled", s, n)
	}
}

// TestScheduleSurvivesResume checks that the schedule is part of the
// stored state: a frontier opened on a copy of the store (what a kill -9
// leaves) hands the scheduled URLs out when due, and an entry out at the
// crash (promoted, not done) is handed out again at once.
func TestScheduleSurvivesResume(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newMemStore()
	f := openTest(t, Options{Store: st, Now: clk.now, Continuous: true})
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/1", "http://b.test/1", "http://c.test/1"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e := nextNow(t, f)
		if err := f.Done(ctx, e, Outcome{Fetched: true, Schedule: &Schedule{Due: clk.t.Add(time.Duration(i+1) * time.Minute), Record: []byte(e.URL)}}); err != nil {
			t.Fatal(err)
		}
	}
	clk.t = clk.t.Add(time.Minute)
	out := nextNow(t, f) // promoted and out at the "crash"
	f2 := openTest(t, Options{Store: st.clone(), Now: clk.now, Continuous: true})
	if s := f2.Stats(); s.Scheduled != 3 || s.Queued != 1 {
		t.Fatalf("resumed stats %+v, want 3 scheduled, 1 queued", s)
	}
	if e := nextNow(t, f2); e.URL != out.URL {
		t.Fatalf("Next = %s, want %s again", e.URL, out.URL)
	}
	nextWaits(t, f2)
	var got []string
	for range 2 {
		clk.t = clk.t.Add(time.Minute)
		e := nextNow(t, f2)
		got = append(got, e.URL)
		_, rec, _, err := f2.ScheduleRecord(e.URL)
		if err != nil || string(rec) != e.URL {
			t.Fatalf("record of %s: %q, %v", e.URL, rec, err)
		}
		nextWaits(t, f2)
	}
	if len(got) != 2 || got[0] == got[1] || got[0] == out.URL || got[1] == out.URL {
		t.Errorf("resumed schedule handed out %q", got)
	}
}

// TestScheduleWindow checks a schedule larger than memory holds: entries
// beyond the window are read from the store as it empties, in due order,
// and entries scheduled meanwhile are neither lost nor handed out twice.
func TestScheduleWindow(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := openTest(t, Options{Now: clk.now, Continuous: true})
	ctx := context.Background()
	const n = 2*scheduleWindow + 500
	seeds := make([]string, n)
	for i := range seeds {
		seeds[i] = fmt.Sprintf("http://h%d.test/", i)
	}
	if _, err := f.AddSeeds(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	// Due times in reverse order of fetching, so that the later ones
	// scheduled go into memory in place of earlier ones.
	for i := range n {
		e := nextNow(t, f)
		if err := f.Done(ctx, e, Outcome{Fetched: true, Schedule: &Schedule{Due: clk.t.Add(time.Duration(n-i) * time.Second)}}); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	held := len(f.sched.items)
	f.mu.Unlock()
	if held >= 2*scheduleWindow {
		t.Fatalf("memory holds %d scheduled entries, want fewer than %d", held, 2*scheduleWindow)
	}
	clk.t = clk.t.Add(time.Duration(n+1) * time.Second)
	seen := map[string]bool{}
	for range n {
		e := nextNow(t, f)
		if seen[e.URL] {
			t.Fatalf("%s handed out twice", e.URL)
		}
		seen[e.URL] = true
		if err := f.Done(ctx, e, Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	if e, err := f.Next(ctx); !errors.Is(err, ErrExhausted) {
		t.Fatalf("Next after dropping every URL = %q, %v; want ErrExhausted", e.URL, err)
	}
	if s := f.Stats(); s.Scheduled != 0 {
		t.Errorf("scheduled %d after dropping every URL, want 0", s.Scheduled)
	}
}

func TestScheduleBadRecord(t *testing.T) {
	f := openTest(t, Options{Continuous: true})
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/"}); err != nil {
		t.Fatal(err)
	}
	e := nextNow(t, f)
	err := f.Done(ctx, e, Outcome{Fetched: true, Schedule: &Schedule{}})
	if !errors.Is(err, ErrScheduleRecord) {
		t.Fatalf("Done with a zero due time = %v, want ErrScheduleRecord", err)
	}
}

func FuzzScheduleCodec(f *testing.F) {
	e := Entry{URL: "http://a.test/x", Depth: 2, Via: "http://a.test/", Hops: "LL", host: "a.test"}
	due := time.Unix(0, 1_764_000_000_123_456_789)
	f.Add(dueKey(due, e.URL), encodeDue(&e), encodeVisit(due, []byte("rec")))
	f.Add([]byte("t/"), []byte{}, []byte{1})
	f.Fuzz(func(t *testing.T, k, v, visit []byte) {
		if e, err := decodeDue(k, v); err == nil {
			due, _, _ := parseDueKey(k)
			k2 := dueKey(due, e.URL)
			if !bytes.Equal(k2, k) {
				t.Fatalf("key %q re-encodes as %q", k, k2)
			}
			e2, err := decodeDue(k2, encodeDue(&e))
			if err != nil || e2 != e {
				t.Fatalf("entry %+v re-decodes as %+v, %v", e, e2, err)
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeDue error %v does not match ErrCorrupt", err)
		}
		due, rec, err := decodeVisit(nil, visit)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeVisit error %v does not match ErrCorrupt", err)
			}
			return
		}
		if got := encodeVisit(due, rec); !bytes.Equal(got, visit) {
			t.Fatalf("visit record %x re-encodes as %x", visit, got)
		}
	})
}
