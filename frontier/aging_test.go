package frontier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// agingFrontier opens a continuous frontier with an aging exact set of
// window w over st, behind a seen-set that never forgets (as a Bloom
// filter: every URL seen once answers "maybe seen" for ever).
func agingFrontier(t *testing.T, st *memStore, seen *exactSeen, clk *manualClock, w time.Duration) *Frontier {
	t.Helper()
	return openTest(t, Options{Store: st, Seen: seen, Now: clk.now, Continuous: true, ExactDedup: true, AgeWindow: w})
}

// TestAgingForgets checks the aging seen-set's contract: a URL fetched
// every interval (below the window) is never forgotten, nor one linked
// at least once a window; a URL that left the schedule and that no link
// names is forgotten within two windows, and admitted again when a link
// leads to it.
func TestAgingForgets(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newMemStore()
	f := agingFrontier(t, st, newExactSeen(), clk, time.Hour)
	ctx := context.Background()
	const page, kept, lost = "http://a.test/1", "http://a.test/kept", "http://a.test/lost"
	if _, err := f.AddSeeds(ctx, []string{page, kept, lost}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e := nextNow(t, f)
		var out Outcome
		if e.URL == page {
			out = Outcome{Fetched: true, Schedule: &Schedule{Due: clk.t.Add(50 * time.Minute)}}
		} else {
			out = Outcome{Fetched: true, Failed: true} // gone: dropped from the schedule
		}
		if err := f.Done(ctx, e, out); err != nil {
			t.Fatal(err)
		}
	}
	// Eight revisits of page, 50 minutes apart: it links to kept each
	// time, never to lost.
	for range 8 {
		clk.t = clk.t.Add(50 * time.Minute)
		e := nextNow(t, f)
		if e.URL != page {
			t.Fatalf("Next = %s, want %s", e.URL, page)
		}
		if err := f.Done(ctx, e, Outcome{Fetched: true, Links: []string{kept}, Schedule: &Schedule{Due: clk.t.Add(50 * time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		nextWaits(t, f)
	}
	s := f.Stats()
	if s.FalsePositives != 0 || s.Aged != 1 || s.New != 3 {
		t.Fatalf("after 400 minutes: stats %+v; want lost aged out, nothing admitted again", s)
	}
	// Now page links to all three: only lost is new again.
	clk.t = clk.t.Add(50 * time.Minute)
	e := nextNow(t, f)
	if err := f.Done(ctx, e, Outcome{Fetched: true, Links: []string{kept, lost, page}, Schedule: &Schedule{Due: clk.t.Add(50 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.FalsePositives != 1 || s.New != 4 || s.Queued != 1 {
		t.Fatalf("stats %+v; want lost admitted again (queued), kept and the scheduled page duplicates", s)
	}
	if e := nextNow(t, f); e.URL != lost {
		t.Fatalf("Next = %s, want %s", e.URL, lost)
	}
	if n := st.countPrefix(prefixFingerprint); n != 3 {
		t.Errorf("%d fingerprints in the store, want 3", n)
	}
}

// TestAgingScheduledLate checks that a scheduled URL whose revisit is
// late by more than the window, so that its fingerprint ages out, is not
// queued a second time by a link found before its due time: its visit
// record says it is scheduled (in a loaded CI run such a link made a
// continuous crawl fetch a page twice 87 ms apart).
func TestAgingScheduledLate(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newMemStore()
	f := agingFrontier(t, st, newExactSeen(), clk, time.Hour)
	ctx := context.Background()
	const page, late = "http://a.test/", "http://a.test/late"
	if _, err := f.AddSeeds(ctx, []string{page, late}); err != nil {
		t.Fatal(err)
	}
	lateDue := clk.t.Add(5 * time.Hour)
	for range 2 {
		e := nextNow(t, f)
		due := clk.t.Add(50 * time.Minute)
		if e.URL == late {
			due = lateDue
		}
		if err := f.Done(ctx, e, Outcome{Fetched: true, Schedule: &Schedule{Due: due}}); err != nil {
			t.Fatal(err)
		}
	}
	// Four revisits of page, 50 minutes apart, then one that links to
	// late, 250 minutes after late's fetch: late's fingerprint has aged
	// out by then.
	for i := range 5 {
		clk.t = clk.t.Add(50 * time.Minute)
		e := nextNow(t, f)
		if e.URL != page {
			t.Fatalf("Next = %s, want %s", e.URL, page)
		}
		var links []string
		if i == 4 {
			links = []string{late}
		}
		if err := f.Done(ctx, e, Outcome{Fetched: true, Links: links, Schedule: &Schedule{Due: clk.t.Add(50 * time.Minute)}}); err != nil {
			t.Fatal(err)
		}
	}
	s := f.Stats()
	if s.Aged == 0 {
		t.Fatalf("stats %+v: late's fingerprint did not age out; the test needs it to", s)
	}
	if s.Queued != 0 || s.New != 2 || s.AgedScheduled != 1 || s.FalsePositives != 0 {
		t.Fatalf("stats %+v: want the link to late a duplicate (nothing queued, AgedScheduled 1, no false positive)", s)
	}
	nextWaits(t, f)
	// At its due time late is handed out, once.
	clk.t = lateDue
	var got []string
	for range 2 {
		e := nextNow(t, f)
		got = append(got, e.URL)
		if err := f.Done(ctx, e, Outcome{Fetched: true, Schedule: &Schedule{Due: clk.t.Add(50 * time.Minute)}}); err != nil {
			t.Fatal(err)
		}
	}
	nextWaits(t, f)
	if slices.Sort(got); !slices.Equal(got, []string{page, late}) {
		t.Errorf("handed out %v at late's due time, want page and late once each", got)
	}
}

// TestAgingMemoryFlat runs a site whose pages link to a new URL every
// half hour, each fetched once and gone: the fingerprints in the store
// and in memory stay bounded by the URLs of the last two windows, not the
// URLs ever seen. A resume keeps the generation.
func TestAgingMemoryFlat(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newMemStore()
	seen := newExactSeen()
	f := agingFrontier(t, st, seen, clk, time.Hour)
	ctx := context.Background()
	const page = "http://a.test/"
	if _, err := f.AddSeeds(ctx, []string{page}); err != nil {
		t.Fatal(err)
	}
	const rounds = 60
	maxKeys := 0
	for i := range rounds {
		e := nextNow(t, f)
		if e.URL != page {
			t.Fatalf("round %d: Next = %s, want %s", i, e.URL, page)
		}
		link := fmt.Sprintf("http://a.test/n%d", i)
		if err := f.Done(ctx, e, Outcome{Fetched: true, Links: []string{link}, Schedule: &Schedule{Due: clk.t.Add(30 * time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		n := nextNow(t, f)
		if n.URL != link {
			t.Fatalf("round %d: Next = %s, want the new link", i, n.URL)
		}
		if err := f.Done(ctx, n, Outcome{Fetched: true, Failed: true}); err != nil {
			t.Fatal(err)
		}
		maxKeys = max(maxKeys, st.countPrefix(prefixFingerprint))
		clk.t = clk.t.Add(30 * time.Minute)
		if i == rounds/2 {
			// Resume on a copy of the store: the generation goes on.
			g := f.exact.gen.Load()
			f = agingFrontier(t, st.clone(), seen.clone(), clk, time.Hour)
			st = f.opts.Store.(*memStore)
			if got := f.exact.gen.Load(); got != g {
				t.Fatalf("resumed at generation %d, want %d", got, g)
			}
		}
	}
	// Two windows of an hour hold at most 4 half-hourly URLs, one more
	// before the rotation that drops them, and the page.
	if maxKeys > 7 {
		t.Errorf("up to %d fingerprints in the store after %d URLs, want at most 7", maxKeys, rounds+1)
	}
	if mem := f.exact.inMemory.Load(); mem > 7 {
		t.Errorf("%d fingerprints in memory, want at most 7", mem)
	}
}

// TestAgingLongStop checks that a crawl resumed after a stop longer than
// the window rotates once, forgetting nothing seen in the generation
// before the stop.
func TestAgingLongStop(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := newMemStore()
	seen := newExactSeen()
	f := agingFrontier(t, st, seen, clk, time.Hour)
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/", "http://a.test/x"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e := nextNow(t, f)
		if err := f.Done(ctx, e, Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	clk.t = clk.t.Add(30 * 24 * time.Hour)
	f = agingFrontier(t, st.clone(), seen.clone(), clk, time.Hour)
	// Next rotates once (and ends: nothing is queued or scheduled).
	if e, err := f.Next(ctx); !errors.Is(err, ErrExhausted) {
		t.Fatalf("Next = %q, %v; want ErrExhausted", e.URL, err)
	}
	if g := f.exact.gen.Load(); g != 1 {
		t.Fatalf("generation %d after a long stop, want 1", g)
	}
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/x"}); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Queued != 0 || s.FalsePositives != 0 {
		t.Errorf("stats %+v: a URL of the generation before the stop was forgotten", s)
	}
}

func TestAgingNeedsExact(t *testing.T) {
	_, err := Open(context.Background(), Options{Store: newMemStore(), Seen: newExactSeen(), Normalizer: simpleNorm{}, AgeWindow: time.Hour})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open with AgeWindow and no ExactDedup = %v, want ErrInvalidOptions", err)
	}
}

func FuzzAgeRecord(f *testing.F) {
	f.Add(encodeAge(3, time.Unix(0, 1_764_000_000_000_000_000)))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, v []byte) {
		gen, began, err := decodeAge(v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		g2, b2, err := decodeAge(encodeAge(gen, began))
		if err != nil || g2 != gen || !b2.Equal(began) {
			t.Fatalf("%x: generation %d began %v re-decodes as %d, %v, %v", v, gen, began, g2, b2, err)
		}
		if _, err := decodeTag(nil, v, 0); err == nil && len(v) != 4 && len(v) != 0 {
			t.Fatalf("tag %x accepted", v)
		}
	})
}
