package redisfrontier

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layercrawl/layercrawl/countmin"
	"github.com/layercrawl/layercrawl/frontier"
)

// testOrder is the order openTestFrontier gives a frontier whose options
// name none; TestInlinksFrontierTests runs tests written for fifo with
// OrderInlinks. The package's tests do not run in parallel.
var testOrder = frontier.OrderFIFO

// TestInlinksFrontierTests runs the frontier's tests of leases, staged
// completions, lost replies, retries, Defer, throttling, trap limits and
// politeness with two workers with OrderInlinks: none of them depends on
// the order entries are handed out in.
func TestInlinksFrontierTests(t *testing.T) {
	defer func() { testOrder = frontier.OrderFIFO }()
	testOrder = frontier.OrderInlinks
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"CrawlsGraph", TestFrontierCrawlsGraph},
		{"Politeness", TestFrontierPoliteness},
		{"LeaseExpiry", TestFrontierLeaseExpiry},
		{"FinishesStagedCompletion", TestFrontierFinishesStagedCompletion},
		{"NextRetryAfterLostReply", TestNextRetryAfterLostReply},
		{"Retry", TestFrontierRetry},
		{"Throttle", TestFrontierThrottle},
		{"Defer", TestFrontierDefer},
		{"RetryFailed", TestFrontierRetryFailed},
		{"TrapLimits", TestFrontierTrapLimits},
		{"BeatReclaimsDeadWorkersLeases", TestBeatReclaimsDeadWorkersLeases},
		{"AddKnownOnce", TestAddKnownOnce},
	} {
		t.Run(tc.name, tc.fn)
	}
}

// inlinksFrontier opens an inlinks frontier on c without politeness
// delay.
func inlinksFrontier(t *testing.T, c *Client) *Frontier {
	t.Helper()
	return openTestFrontier(t, c, Options{Order: frontier.OrderInlinks, Politeness: frontier.PolitenessOptions{Delay: -1}})
}

func mustNext(t *testing.T, f *Frontier) frontier.Entry {
	t.Helper()
	e, err := f.Next(context.Background())
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return e
}

func mustDone(t *testing.T, f *Frontier, e frontier.Entry, links ...string) {
	t.Helper()
	if err := f.Done(context.Background(), e, frontier.Outcome{Fetched: true, Links: links}); err != nil {
		t.Fatalf("Done(%s): %v", e.URL, err)
	}
}

// Within a host: seeds first, then the most linked-to URL, the oldest
// among equals; a page linking twice to a URL counts once, and a URL
// already queued moves up as its count grows.
func TestInlinksOrderWithinHost(t *testing.T) {
	f := inlinksFrontier(t, testClient(t))
	ctx := context.Background()
	u := func(p string) string { return "http://h.test/" + p }
	if _, err := f.AddSeeds(ctx, []string{u("s1"), u("s2")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	next := func() frontier.Entry {
		e := mustNext(t, f)
		got = append(got, e.URL)
		return e
	}
	mustDone(t, f, next(), u("a"), u("b"), u("c"))  // s1: a, b, c at 1
	mustDone(t, f, next(), u("c"), u("b"), u("c"))  // s2: b and c at 2, c once
	mustDone(t, f, next())                          // b: 2, older than c
	mustDone(t, f, next(), u("d"), u("d"), u("s1")) // c: d at 1
	mustDone(t, f, next(), u("d"))                  // a: 1, older than d; d at 2
	mustDone(t, f, next())                          // d
	if _, err := f.Next(ctx); !errors.Is(err, frontier.ErrExhausted) {
		t.Fatalf("Next after the last page = %v, want ErrExhausted", err)
	}
	want := []string{u("s1"), u("s2"), u("b"), u("c"), u("a"), u("d")}
	if !slices.Equal(got, want) {
		t.Errorf("handed out %v, want %v", got, want)
	}
	counts, err := f.inlinkCounts(ctx, []string{u("a"), u("b"), u("c"), u("d"), u("s1")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{1, 2, 2, 2, 1}; !slices.Equal(counts, want) {
		t.Errorf("counts of a, b, c, d, s1 = %v, want %v", counts, want)
	}
}

// Among ready hosts: the one whose best queued URL has the most in-links
// goes first, the one served longest ago among equals; a link that
// raises a queued URL raises its host, ready already, too.
func TestInlinksOrderAmongHosts(t *testing.T) {
	f := inlinksFrontier(t, testClient(t))
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://x.test/", "http://y.test/", "http://z.test/"}); err != nil {
		t.Fatal(err)
	}
	// Name the hosts by the order their seeds were served in: Z first
	// (served longest ago), then X, then Y.
	seeds := []frontier.Entry{mustNext(t, f), mustNext(t, f), mustNext(t, f)}
	Z, X, Y := seeds[0].URL, seeds[1].URL, seeds[2].URL
	mustDone(t, f, seeds[0], Z+"1")
	mustDone(t, f, seeds[1], X+"1", Y+"1")
	mustDone(t, f, seeds[2], Y+"1", X+"2")
	// Y's best has 2 in-links, X's and Z's 1.
	y1 := mustNext(t, f)
	if y1.URL != Y+"1" {
		t.Fatalf("after the seeds Next = %s, want %s (2 in-links)", y1.URL, Y+"1")
	}
	// X and Z are ready, tied at 1, Z served longer ago: X2's second
	// link puts X ahead.
	mustDone(t, f, y1, X+"2", X+"2")
	var got []string
	for range 3 {
		e := mustNext(t, f)
		got = append(got, e.URL)
		mustDone(t, f, e)
	}
	if want := []string{X + "2", Z + "1", X + "1"}; !slices.Equal(got, want) {
		t.Errorf("then handed out %v, want %v", got, want)
	}
}

// The Redis sketch counts as a countmin.Sketch of its shape and seed:
// every page's distinct links once, conservative update. The web is
// large enough (3,000 URLs on one host, 6,000 pages' links) for the
// smallest sketch (4 × 1,024) to collide.
func TestInlinkSketchAgreesWithCountmin(t *testing.T) {
	c := testClient(t)
	f := openTestFrontier(t, c, Options{Order: frontier.OrderInlinks, ExpectedURLs: 1, Politeness: frontier.PolitenessOptions{Delay: -1}})
	if f.order.cms.Width != countmin.MinWidth {
		t.Fatalf("sketch width %d, want %d", f.order.cms.Width, countmin.MinWidth)
	}
	ref, err := countmin.New(f.order.cms)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 3000
	u := func(i int) string { return fmt.Sprintf("http://h.test/p%d", i) }
	rng := rand.New(rand.NewPCG(34, 1))
	// Each page handed out links to 20 URLs drawn with a skew, some
	// twice.
	if _, err := f.AddSeeds(ctx, []string{u(0)}); err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := range n {
		all = append(all, u(i))
	}
	for range 300 {
		e := mustNext(t, f)
		var links []string
		seen := map[string]bool{}
		var keys []uint64
		for range 20 {
			l := u(int(rng.Float64() * rng.Float64() * n)) // skewed
			links = append(links, l)
			if !seen[l] {
				seen[l] = true
				keys = append(keys, countKey(l))
			}
		}
		ref.AddHashes(keys, nil)
		mustDone(t, f, e, links...)
	}
	got, err := f.inlinkCounts(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range all {
		if want := ref.CountHash(countKey(l)); got[i] != want {
			t.Fatalf("%s: redis count %d, countmin %d", l, got[i], want)
		}
	}
}

// Every worker of a crawl must use its order; a later worker takes the
// sketch's shape and seed from Redis, and the counts outlive a worker.
func TestInlinksOrderStored(t *testing.T) {
	c := testClient(t)
	ctx := context.Background()
	a := openTestFrontier(t, c, Options{Order: frontier.OrderInlinks, ExpectedURLs: 1 << 20, Politeness: frontier.PolitenessOptions{Delay: -1}})
	if _, err := a.AddSeeds(ctx, []string{"http://h.test/"}); err != nil {
		t.Fatal(err)
	}
	mustDone(t, a, mustNext(t, a), "http://h.test/a", "http://h.test/a")

	// A restarted worker, sized otherwise, gets the stored sketch.
	b := openTestFrontier(t, c, Options{Order: frontier.OrderInlinks, ExpectedURLs: 1, Politeness: frontier.PolitenessOptions{Delay: -1}})
	if b.order != a.order {
		t.Errorf("second worker's sketch %v, first's %v", b.order, a.order)
	}
	if got, err := b.inlinkCounts(ctx, []string{"http://h.test/a"}); err != nil || got[0] != 1 {
		t.Errorf("count of a read by a new worker = %v, %v; want 1", got, err)
	}

	s, err := OpenSeen(ctx, c, SeenOptions{Filter: crawlFilter, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, c, Options{Seen: s, Normalizer: testNormalizer(t), Order: frontier.OrderFIFO})
	if !errors.Is(err, ErrOrderMismatch) {
		t.Errorf("Open with fifo on an inlinks crawl = %v, want ErrOrderMismatch", err)
	}

	// A crawl begun fifo, by a layercrawl that stored no order, is fifo.
	c2 := testClient(t)
	old := openTestFrontier(t, c2, Options{})
	if _, err := old.AddSeeds(ctx, []string{"http://h.test/"}); err != nil {
		t.Fatal(err)
	}
	if err := c2.rdb.Del(ctx, old.key("order")).Err(); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenSeen(ctx, c2, SeenOptions{Filter: crawlFilter, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, c2, Options{Seen: s2, Normalizer: testNormalizer(t), Order: frontier.OrderInlinks})
	if !errors.Is(err, ErrOrderMismatch) {
		t.Errorf("Open with inlinks on a fifo crawl without a stored order = %v, want ErrOrderMismatch", err)
	}
}

func TestParseOrderMeta(t *testing.T) {
	for _, m := range []orderMeta{
		{order: frontier.OrderFIFO},
		{order: frontier.OrderInlinks, cms: countmin.Options{Rows: 4, Width: 131072, Seed: 0xfeedface12345678}},
	} {
		got, err := parseOrderMeta(m.String())
		if err != nil || got != m {
			t.Errorf("parseOrderMeta(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
	for _, s := range []string{"", "lifo", "inlinks v1 rows=4 width=131072", "inlinks v2 rows=4 width=131072 seed=1",
		"inlinks v1 rows=0 width=131072 seed=1", "inlinks v1 rows=4 width=x seed=1", "inlinks v1 rows=4 width=8 seed=1 extra=2",
		"inlinks v1 rows=4 width=99999999999 seed=1", "inlinks v1 rows=4 width=8 bits=1"} {
		if _, err := parseOrderMeta(s); !errors.Is(err, ErrCorrupt) {
			t.Errorf("parseOrderMeta(%q) = %v, want ErrCorrupt", s, err)
		}
	}
}

func FuzzParseOrderMeta(f *testing.F) {
	f.Add("fifo")
	f.Add("inlinks v1 rows=4 width=1024 seed=00000000000000ff")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseOrderMeta(s)
		if err != nil {
			return
		}
		again, err := parseOrderMeta(m.String())
		if err != nil || again != m {
			t.Errorf("%q parsed as %v, which reads back as %v, %v", s, m, again, err)
		}
	})
}
