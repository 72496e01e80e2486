package redisfrontier

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/layercrawl/layercrawl/frontier"
)

// TestAddKnownOnce: two workers queue the same batches of an earlier
// crawl's URLs; one of them dies between the seen-set and the queue on
// the first batch. Every URL is queued exactly once, at its recorded
// depth and hop path, except those already seen (a seed) and those Deny
// refuses.
func TestAddKnownOnce(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	g := graph{n: 40}
	opts := Options{Politeness: frontier.PolitenessOptions{Delay: -1}}
	opts.Admission.Deny = []*regexp.Regexp{regexp.MustCompile(`/p39\.html$`)}
	a := openTestFrontier(t, c, opts)
	b := openTestFrontier(t, c, opts)
	if _, err := a.AddSeeds(ctx, g.seeds()[:1]); err != nil {
		t.Fatal(err)
	}
	var first, second []frontier.Known
	for i := range g.n {
		k := frontier.Known{URL: g.url(i), Depth: 1 + i%4, Hops: strings.Repeat("L", 1+i%4)}
		if i < g.n/2 {
			first = append(first, k)
		} else {
			second = append(second, k)
		}
	}

	// a dies half-way through the first batch: its URLs are in the
	// seen-set, not queued.
	id, cands := a.knownBatch(first)
	if _, _, _, err := a.check(ctx, id, cands); err != nil {
		t.Fatal(err)
	}
	// b, given the same batch, replays a's answers and queues them.
	if n, err := b.AddKnown(ctx, first); err != nil || n != len(first)-1 {
		t.Fatalf("b.AddKnown(first) = %d, %v; want %d (all but the seed), nil", n, err, len(first)-1)
	}
	// a (restarted) gives it again: nothing more.
	if n, err := a.AddKnown(ctx, first); err != nil || n != 0 {
		t.Fatalf("a.AddKnown(first) again = %d, %v; want 0, nil", n, err)
	}
	// Both give the second batch at once: queued once between them.
	var wg sync.WaitGroup
	ns := make([]int, 2)
	errs := make([]error, 2)
	for i, f := range []*Frontier{a, b} {
		wg.Go(func() { ns[i], errs[i] = f.AddKnown(ctx, second) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got, want := ns[0]+ns[1], len(second)-1; got != want {
		t.Errorf("AddKnown(second) by both workers queued %d + %d, want %d in all (Deny refuses one)", ns[0], ns[1], want)
	}

	handed := make(map[string]int)
	for {
		e, err := b.Next(ctx)
		if errors.Is(err, frontier.ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		handed[e.URL]++
		i, ok := g.index(e.URL)
		if !ok {
			t.Fatalf("handed out %q", e.URL)
		}
		if i != 0 && (e.Depth != 1+i%4 || e.Hops != strings.Repeat("L", 1+i%4)) {
			t.Errorf("%s: depth %d hops %q, want %d %q", e.URL, e.Depth, e.Hops, 1+i%4, strings.Repeat("L", 1+i%4))
		}
		if err := b.Done(ctx, e, frontier.Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range g.n {
		want := 1
		if i == g.n-1 {
			want = 0 // denied
		}
		if handed[g.url(i)] != want {
			t.Errorf("%s handed out %d times, want %d", g.url(i), handed[g.url(i)], want)
		}
	}
}
