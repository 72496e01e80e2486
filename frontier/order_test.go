package frontier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/countmin"
)

func TestParseOrder(t *testing.T) {
	for _, s := range []string{"fifo", "inlinks"} {
		o, err := ParseOrder(s)
		if err != nil || o.String() != s {
			t.Errorf("ParseOrder(%q) = %v, %v", s, o, err)
		}
	}
	if _, err := ParseOrder("pagerank"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ParseOrder(pagerank) = %v, want ErrInvalidOptions", err)
	}
	if OrderFIFO != 0 {
		t.Errorf("OrderFIFO is not the zero value")
	}
}

// linkMap is a web of pages by URL; a page not in it has no links.
type linkMap map[string][]string

// crawlSteps hands out n entries one at a time, completing each with its
// links, and returns their URLs in order.
func crawlSteps(t *testing.T, f *Frontier, web linkMap, n int) []string {
	t.Helper()
	var got []string
	for range n {
		e, err := f.Next(context.Background())
		if err != nil {
			t.Fatalf("Next after %v: %v", got, err)
		}
		if err := f.Done(context.Background(), e, Outcome{Fetched: true, Links: web[e.URL]}); err != nil {
			t.Fatalf("Done(%s): %v", e.URL, err)
		}
		got = append(got, e.URL)
		checkOrder(t, f)
	}
	return got
}

// checkOrder checks the inlinks bookkeeping of every host: the index of
// window entries by count key, each entry's rank (a seed's seedRank,
// otherwise never above the sketch's count), the host's best rank and its
// place in the heaps.
func checkOrder(t *testing.T, f *Frontier) {
	t.Helper()
	if f.counts == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, h := range f.hosts {
		var best uint32
		for i, e := range h.window {
			if j, ok := h.pos[e.ck]; !ok || j != i {
				t.Errorf("host %s: window[%d] %s indexed at %d, %v", name, i, e.URL, j, ok)
			}
			if e.ck != countKey(e.URL) {
				t.Errorf("host %s: %s has a wrong count key", name, e.URL)
			}
			if e.Via == "" && e.rank != seedRank || e.Via != "" && e.rank > f.counts.CountHash(e.ck) {
				t.Errorf("host %s: %s ranked %d, sketch %d", name, e.URL, e.rank, f.counts.CountHash(e.ck))
			}
			best = max(best, e.rank)
		}
		if len(h.pos) != len(h.window) {
			t.Errorf("host %s: %d indexed, %d in the window", name, len(h.pos), len(h.window))
		}
		if len(h.window) > 0 && h.best != best {
			t.Errorf("host %s: best %d, window's best %d", name, h.best, best)
		}
		if h.index >= 0 && h.pindex >= 0 {
			t.Errorf("host %s is in both heaps", name)
		}
		if h.pindex >= 0 && f.prio[h.pindex] != h || h.index >= 0 && f.ready[h.index] != h {
			t.Errorf("host %s: heap index out of date", name)
		}
	}
}

func addSeeds(t *testing.T, f *Frontier, seeds ...string) {
	t.Helper()
	if _, err := f.AddSeeds(context.Background(), seeds); err != nil {
		t.Fatal(err)
	}
}

// TestOrderInlinksWithinHost: on one host, a URL that gains a second
// in-link is fetched before those with one, and a page linking to a URL
// several times counts once.
func TestOrderInlinksWithinHost(t *testing.T) {
	web := linkMap{
		"http://a.test/":   {"/x1", "/x2", "/hub", "/y"},
		"http://a.test/x1": {"/hub", "/y", "/y#again", "y"}, // y thrice: one in-link
	}
	for _, tc := range []struct {
		order Order
		want  []string
	}{
		{OrderFIFO, []string{"/", "/x1", "/x2", "/hub", "/y"}},
		// After /x1: hub and y have 2 in-links, x2 one; hub was queued first.
		{OrderInlinks, []string{"/", "/x1", "/hub", "/y", "/x2"}},
	} {
		t.Run(tc.order.String(), func(t *testing.T) {
			f := openTest(t, Options{Order: tc.order})
			addSeeds(t, f, "http://a.test/")
			got := crawlSteps(t, f, web, len(tc.want))
			for i := range got {
				got[i] = strings.TrimPrefix(got[i], "http://a.test")
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v: fetched %v, want %v", tc.order, got, tc.want)
			}
			if tc.order == OrderInlinks {
				if n := f.Inlinks().CountHash(countKey("http://a.test/y")); n != 2 {
					t.Errorf("in-links of /y = %d, want 2", n)
				}
			} else if f.Inlinks() != nil {
				t.Errorf("a fifo frontier has a sketch")
			}
		})
	}
}

// TestOrderInlinksHostChoice: among ready hosts, the one whose best URL
// has the most in-links is served first; seeds go before everything.
func TestOrderInlinksHostChoice(t *testing.T) {
	web := linkMap{
		"http://a.test/": {"/1", "http://c.test/1"},
		"http://b.test/": {"/1", "http://c.test/1"},
		"http://c.test/": {"http://c.test/1", "http://a.test/1"},
	}
	for _, tc := range []struct {
		order Order
		want  string
	}{
		{OrderFIFO, "http://a.test/1"},    // round-robin: a waited longest
		{OrderInlinks, "http://c.test/1"}, // three in-links; a/1 two, b/1 one
	} {
		t.Run(tc.order.String(), func(t *testing.T) {
			f := openTest(t, Options{Order: tc.order})
			addSeeds(t, f, "http://a.test/", "http://b.test/", "http://c.test/")
			got := crawlSteps(t, f, web, 4)
			if !slices.Equal(got[:3], []string{"http://a.test/", "http://b.test/", "http://c.test/"}) {
				t.Errorf("seeds fetched as %v, want first and in order", got[:3])
			}
			if got[3] != tc.want {
				t.Errorf("after the seeds: %s, want %s", got[3], tc.want)
			}
		})
	}
}

// TestOrderInlinksSeedsFirst: a seed added during the crawl goes before
// the host's linked URLs, however many in-links they have.
func TestOrderInlinksSeedsFirst(t *testing.T) {
	web := linkMap{"http://a.test/": {"/1", "/2", "/3"}, "http://a.test/1": {"/2", "/3"}}
	f := openTest(t, Options{Order: OrderInlinks})
	addSeeds(t, f, "http://a.test/")
	crawlSteps(t, f, web, 2)
	addSeeds(t, f, "http://a.test/late")
	if got := crawlSteps(t, f, web, 1); got[0] != "http://a.test/late" {
		t.Errorf("after a late seed: %s, want the seed", got[0])
	}
}

// TestOrderInlinksResumeKeepsCounts: a frontier reopened with the saved
// sketch orders as the first one would have; without it, it cannot.
func TestOrderInlinksResumeKeepsCounts(t *testing.T) {
	web := linkMap{
		"http://a.test/": {"/1", "/2"},
		"http://b.test/": {"http://a.test/2"},
	}
	store := newMemStore()
	f := openTest(t, Options{Order: OrderInlinks, Store: store})
	addSeeds(t, f, "http://a.test/", "http://b.test/")
	crawlSteps(t, f, web, 2)
	saved, err := f.Inlinks().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		load bool
		want string
	}{
		{"with the sketch", true, "http://a.test/2"},
		{"without", false, "http://a.test/1"}, // no counts: discovery order
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Order: OrderInlinks, Store: store.clone()}
			if tc.load {
				opts.Inlinks = new(countmin.Sketch)
				if err := opts.Inlinks.UnmarshalBinary(saved); err != nil {
					t.Fatal(err)
				}
			}
			g := openTest(t, opts)
			if n := g.Inlinks().CountHash(countKey("http://a.test/2")); tc.load && n != 2 {
				t.Errorf("in-links of a.test/2 after resume = %d, want 2", n)
			}
			if got := crawlSteps(t, g, web, 1); got[0] != tc.want {
				t.Errorf("first after resume: %s, want %s", got[0], tc.want)
			}
		})
	}
}

// TestOrderInlinksCoverage crawls the graph site with inlinks order,
// small windows (so queues spill) and concurrent workers: every URL once,
// never two entries of a host out at once.
func TestOrderInlinksCoverage(t *testing.T) {
	site := graphSite{hosts: []string{"a.test", "b.test", "c.test", "d.test"}, n: 250}
	f := openTest(t, Options{
		Order:      OrderInlinks,
		Admission:  AdmissionOptions{Scope: ScopeHost, Deny: []*regexp.Regexp{regexp.MustCompile(`/private/`)}},
		HostWindow: 8, MemoryWindow: 20,
	})
	var seeds []string
	for _, h := range site.hosts {
		seeds = append(seeds, site.page(h, 0))
	}
	addSeeds(t, f, seeds...)
	d := driver{release: true, after: func(int) { checkOrder(t, f) }}
	if err := d.run(context.Background(), f, 8, site.fetch); err != nil {
		t.Fatal(err)
	}
	if len(d.errs) > 0 {
		t.Fatalf("politeness broken: %v", d.errs[:1])
	}
	got := d.urls()
	if first := slices.Sorted(slices.Values(got[:len(seeds)])); !slices.Equal(first, seeds) {
		t.Errorf("the first fetches %v are not the seeds", got[:len(seeds)])
	}
	slices.Sort(got)
	if dup := duplicates(got); len(dup) > 0 {
		t.Errorf("fetched twice: %v", dup[:min(5, len(dup))])
	}
	if want := site.expected(); !slices.Equal(got, want) {
		t.Errorf("coverage: got %d URLs, want %d; missing %v", len(got), len(want), diff(want, got))
	}
	if st := f.Stats(); st.Queued != 0 || st.Memory != 0 || st.InFlight != 0 {
		t.Errorf("stats after the crawl: %+v", st)
	}
}

// TestOrderInlinksPopularFirst: under a page budget, inlinks fetches more
// of the most linked-to pages than fifo on a site where a few pages are
// linked from everywhere but sit deep in discovery order.
func TestOrderInlinksPopularFirst(t *testing.T) {
	const n = 400
	web := linkMap{}
	page := func(i int) string { return fmt.Sprintf("http://a.test/p/%d", i) }
	for i := range n {
		// A chain with a fan-out of 3, and every page links to the hubs
		// 390-399, which the chain reaches last.
		links := []string{page(min(3*i+1, n-1)), page(min(3*i+2, n-1)), page(min(3*i+3, n-1))}
		for h := n - 10; h < n; h++ {
			if i >= 20 {
				links = append(links, page(h))
			}
		}
		web[page(i)] = links
	}
	fetchedHubs := map[Order]int{}
	for _, order := range []Order{OrderFIFO, OrderInlinks} {
		f := openTest(t, Options{Order: order})
		addSeeds(t, f, page(0))
		for _, u := range crawlSteps(t, f, web, 60) {
			var i int
			fmt.Sscanf(u, "http://a.test/p/%d", &i)
			if i >= n-10 {
				fetchedHubs[order]++
			}
		}
	}
	if fetchedHubs[OrderInlinks] != 10 || fetchedHubs[OrderFIFO] != 0 {
		t.Errorf("hubs fetched in 60 pages: fifo %d, inlinks %d; want 0 and 10", fetchedHubs[OrderFIFO], fetchedHubs[OrderInlinks])
	}
}

// TestOrderInlinksWindowSlides: when a host's queue spilled past its
// window, a serve frees a place that the next queued entry takes at once,
// ranked by its count; it used to wait until the window was empty, so a
// spilled URL that gained in-links was not a candidate, and its host was
// ranked among the others by its window's leftovers.
func TestOrderInlinksWindowSlides(t *testing.T) {
	web := linkMap{
		// Window of 2: /1 and /2 held, /hot and /3 spilled.
		"http://a.test/": {"/1", "/2", "/hot", "/3"},
		// /hot gains in-links from b while it waits in the store.
		"http://b.test/":  {"/1", "/2", "http://a.test/hot"},
		"http://b.test/1": {"http://a.test/hot"},
	}
	f := openTest(t, Options{Order: OrderInlinks, HostWindow: 2})
	addSeeds(t, f, "http://a.test/", "http://b.test/")
	got := crawlSteps(t, f, web, 5)
	// After the seeds every URL has one in-link but /hot, with two: a/1
	// goes first (a waited longest), and frees the place /hot takes; /hot
	// then outranks b's URLs. Refilled only once empty, the window served
	// a/1, b/1, a/2 and only then a/hot.
	want := []string{"http://a.test/", "http://b.test/", "http://a.test/1", "http://a.test/hot", "http://b.test/1"}
	if !slices.Equal(got, want) {
		t.Errorf("fetched %v, want %v", got, want)
	}
}

// TestOrderInlinksServesBestCandidate checks every serve of a crawl of a
// random web with many hosts ready at once against a model of the order:
// each host's candidates are the first HostWindow URLs of its queue in
// discovery order, and the URL served has the most in-links (counted
// exactly, one per linking page) among the candidates of its host and of
// every other host, seeds above all.
func TestOrderInlinksServesBestCandidate(t *testing.T) {
	const hosts, pages, window = 6, 40, 3
	rng := rand.New(rand.NewPCG(34, 1))
	name := func(h, i int) string { return fmt.Sprintf("http://h%d.test/p%d", h, i) }
	web := linkMap{}
	var seeds []string
	for h := range hosts {
		seeds = append(seeds, name(h, 0))
		for i := range pages {
			var links []string
			for range 2 + rng.IntN(5) {
				// Mostly on the same host, targets skewed to low numbers.
				th := h
				if rng.IntN(4) == 0 {
					th = rng.IntN(hosts)
				}
				links = append(links, name(th, int(float64(pages)*rng.Float64()*rng.Float64())))
			}
			web[name(h, i)] = links
		}
	}
	f := openTest(t, Options{Order: OrderInlinks, HostWindow: window})
	addSeeds(t, f, seeds...)
	// The model: queues in discovery order, exact in-link counts.
	queue := map[string][]string{}
	hostOf := func(u string) string { return strings.SplitN(u, "/", 4)[2] }
	seen := map[string]bool{}
	for _, s := range seeds {
		queue[hostOf(s)] = append(queue[hostOf(s)], s)
		seen[s] = true
	}
	count := map[string]int{}
	rank := func(u string) int {
		if slices.Contains(seeds, u) {
			return math.MaxInt
		}
		return count[u]
	}
	best := func(h string) int {
		b := -1
		for _, u := range queue[h][:min(window, len(queue[h]))] {
			b = max(b, rank(u))
		}
		return b
	}
	for step := 0; ; step++ {
		e, err := f.Next(context.Background())
		if errors.Is(err, ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		h := hostOf(e.URL)
		i := slices.Index(queue[h], e.URL)
		switch {
		case i < 0 || i >= window:
			t.Fatalf("step %d: served %s, at %d in its host's queue, window %d", step, e.URL, i, window)
		case rank(e.URL) != best(h):
			t.Fatalf("step %d: served %s with %d in-links, its host's candidates have %d", step, e.URL, rank(e.URL), best(h))
		}
		for o := range queue {
			if b := best(o); o != h && b > rank(e.URL) {
				t.Fatalf("step %d: served %s with %d in-links, host %s has a candidate with %d", step, e.URL, rank(e.URL), o, b)
			}
		}
		queue[h] = slices.Delete(queue[h], i, i+1)
		links := web[e.URL]
		for _, l := range slices.Compact(slices.Sorted(slices.Values(links))) {
			count[l]++
		}
		for _, l := range links {
			if !seen[l] {
				seen[l] = true
				queue[hostOf(l)] = append(queue[hostOf(l)], l)
			}
		}
		if err := f.Done(context.Background(), e, Outcome{Fetched: true, Links: links}); err != nil {
			t.Fatal(err)
		}
		checkOrder(t, f)
	}
	if len(seen) < hosts*pages/2 {
		t.Errorf("the crawl reached %d URLs, a weak test", len(seen))
	}
}

// TestInlinksSketchShape: the default sketch is sized for ExpectedURLs,
// or for MaxPages × InlinksKeysPerPage keys when that is less, and Open
// builds it so.
func TestInlinksSketchShape(t *testing.T) {
	for _, tc := range []struct {
		expected uint64
		maxPages int64
		width    int
	}{
		{10_000_000, 0, 1 << 21},         // no cap: ExpectedURLs
		{10_000_000, -1, 1 << 21},        // negative: no cap
		{10_000_000, 10_000, 1 << 17},    // 1,000,000 keys
		{10_000_000, 1_000_000, 1 << 21}, // the cap is above ExpectedURLs
		{10_000, 10_000, 1 << 11},        // ExpectedURLs is less
		{10_000_000, 1, countmin.MinWidth},
	} {
		rows, width := InlinksSketchShape(tc.expected, tc.maxPages)
		if rows != countmin.DefaultRows || width != tc.width {
			t.Errorf("InlinksSketchShape(%d, %d) = %d × %d, want %d × %d", tc.expected, tc.maxPages, rows, width, countmin.DefaultRows, tc.width)
		}
	}
	f := openTest(t, Options{Order: OrderInlinks, MaxPages: 10_000})
	if w := f.Inlinks().Width(); w != 1<<17 {
		t.Errorf("a frontier capped at 10,000 pages has a sketch %d wide, want %d", w, 1<<17)
	}
}
