package frontier

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// web answers a fetch of an entry.
type web func(e Entry) Outcome

// driver runs workers over a frontier like the crawl command does and
// checks that no host ever has two entries out.
type driver struct {
	mu      sync.Mutex
	out     map[string]bool // host -> entry out
	fetched []Entry
	order   []string
	errs    []string
	stopped bool // set under mu: workers stop without fetching
	release bool // call Release between the fetch and Done
	// after is called after each Done with the count of completed entries.
	after func(n int)
}

func (d *driver) run(ctx context.Context, f *Frontier, workers int, w web) error {
	d.out = map[string]bool{}
	g, ctx := errgroup.WithContext(ctx)
	for range workers {
		g.Go(func() error {
			for {
				e, err := f.Next(ctx)
				if errors.Is(err, ErrExhausted) || errors.Is(err, ErrPageLimit) {
					return nil
				}
				if err != nil {
					return err
				}
				d.mu.Lock()
				if d.stopped {
					d.mu.Unlock()
					return nil
				}
				if d.out[e.host] {
					d.errs = append(d.errs, "two entries out for host "+e.host)
				}
				d.out[e.host] = true
				d.fetched = append(d.fetched, e)
				d.order = append(d.order, e.URL)
				d.mu.Unlock()
				o := w(e)
				d.mu.Lock()
				d.out[e.host] = false
				d.mu.Unlock()
				if d.release {
					if err := f.Release(e, o.Fetched, o.CrawlDelay); err != nil {
						return err
					}
				}
				if err := f.Done(ctx, e, o); err != nil {
					return err
				}
				if d.after != nil {
					d.mu.Lock()
					n := len(d.fetched)
					d.mu.Unlock()
					d.after(n)
				}
			}
		})
	}
	return g.Wait()
}

func (d *driver) urls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	u := make([]string, len(d.fetched))
	for i, e := range d.fetched {
		u[i] = e.URL
	}
	return u
}

func openTest(t *testing.T, opts Options) *Frontier {
	t.Helper()
	if opts.Store == nil {
		opts.Store = newMemStore()
	}
	if opts.Seen == nil {
		opts.Seen = newExactSeen()
	}
	if opts.Normalizer == nil {
		opts.Normalizer = simpleNorm{}
	}
	if opts.Politeness.Delay == 0 {
		opts.Politeness.Delay = -1
	}
	f, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return f
}

// graphSite is a site of n pages on each of the hosts: page i links to
// i+1, 2i and i/2 (cycles), to page i of the next host, to itself under
// another spelling (relative, with a fragment), to a redirect /r/i that
// goes to page i, to an out-of-scope host and to a denied path.
type graphSite struct {
	hosts []string
	n     int
}

func (s graphSite) page(host string, i int) string { return fmt.Sprintf("http://%s/p/%d", host, i) }

func (s graphSite) fetch(e Entry) Outcome {
	host := e.host
	path := strings.TrimPrefix(e.URL, "http://"+host)
	if r, ok := strings.CutPrefix(path, "/r/"); ok {
		return Outcome{Fetched: true, Redirect: "/p/" + r}
	}
	i, err := strconv.Atoi(strings.TrimPrefix(path, "/p/"))
	if err != nil || !strings.HasPrefix(path, "/p/") {
		return Outcome{Fetched: true, Failed: true}
	}
	next := s.hosts[(slices.Index(s.hosts, host)+1)%len(s.hosts)]
	links := []string{
		strconv.Itoa(i+1) + "#top",
		"/p/" + strconv.Itoa(2*i),
		"../p/" + strconv.Itoa(i/2),
		"HTTP://" + strings.ToUpper(next) + "/p/" + strconv.Itoa(i),
		"/r/" + strconv.Itoa((i*7)%s.n),
		"http://out.test/x",
		"/private/" + strconv.Itoa(i),
		"mailto:someone@example.com",
	}
	for k, l := range links {
		// Links beyond the site's pages point nowhere useful: keep the
		// site finite by pointing them back to page 0.
		if strings.Contains(l, "/p/") || !strings.Contains(l, ":") {
			if j, err := strconv.Atoi(strings.TrimSuffix(l[strings.LastIndex(l, "/")+1:], "#top")); err == nil && j >= s.n {
				links[k] = "/p/0"
			}
		}
	}
	return Outcome{Fetched: true, Links: links}
}

// expected returns the URLs a crawl from page 0 of the first host reaches:
// every page and redirect URL of every host.
func (s graphSite) expected() []string {
	var want []string
	for _, h := range s.hosts {
		for i := range s.n {
			want = append(want, s.page(h, i), fmt.Sprintf("http://%s/r/%d", h, i))
		}
	}
	slices.Sort(want)
	return want
}

func TestCrawlCoverage(t *testing.T) {
	site := graphSite{hosts: []string{"a.test", "b.test", "c.test"}, n: 300}
	f := openTest(t, Options{
		Admission:  AdmissionOptions{Scope: ScopeHost, Deny: []*regexp.Regexp{regexp.MustCompile(`/private/`)}},
		HostWindow: 8, MemoryWindow: 20,
	})
	seeds := make([]string, len(site.hosts))
	for i, h := range site.hosts {
		seeds[i] = site.page(h, 0)
	}
	if n, err := f.AddSeeds(context.Background(), append(seeds, seeds[0])); err != nil || n != 3 {
		t.Fatalf("AddSeeds = %d, %v; want 3, nil", n, err)
	}
	d := driver{release: true}
	if err := d.run(context.Background(), f, 8, site.fetch); err != nil {
		t.Fatal(err)
	}
	if len(d.errs) > 0 {
		t.Fatalf("politeness broken: %v", d.errs[:1])
	}
	got := d.urls()
	slices.Sort(got)
	if dup := duplicates(got); len(dup) > 0 {
		t.Errorf("fetched twice: %v", dup[:min(5, len(dup))])
	}
	want := site.expected()
	if !slices.Equal(slices.Compact(got), want) {
		t.Errorf("coverage: got %d URLs, want %d; missing %v; extra %v", len(got), len(want), diff(want, got), diff(got, want))
	}
	st := f.Stats()
	if st.Queued != 0 || st.InFlight != 0 || st.Hosts != 0 {
		t.Errorf("stats after the crawl: %+v", st)
	}
	if st.Pages != uint64(len(want)) || st.New != uint64(len(want)) {
		t.Errorf("Pages = %d, New = %d; want %d", st.Pages, st.New, len(want))
	}
	if st.OutOfScope == 0 || st.Filtered == 0 || st.Invalid == 0 || st.Duplicates == 0 {
		t.Errorf("rejection counters not all exercised: %+v", st)
	}
}

func duplicates(sorted []string) []string {
	var d []string
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			d = append(d, sorted[i])
		}
	}
	return d
}

// diff returns the elements of a missing from b (both sorted).
func diff(a, b []string) []string {
	var d []string
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			d = append(d, x)
		}
	}
	if len(d) > 5 {
		d = d[:5]
	}
	return d
}

// chain is a site where page i links only to page i+1 and /r/i redirects
// through r/i-1 ... to page 0: depths and hop counts are unique.
func chainFetch(e Entry) Outcome {
	path := e.URL[strings.Index(e.URL[len("http://"):], "/")+len("http://"):]
	if r, ok := strings.CutPrefix(path, "/r/"); ok {
		i, _ := strconv.Atoi(r)
		if i == 0 {
			return Outcome{Fetched: true, Redirect: "/p/0"}
		}
		return Outcome{Fetched: true, Redirect: "/r/" + strconv.Itoa(i-1)}
	}
	i, _ := strconv.Atoi(strings.TrimPrefix(path, "/p/"))
	if i >= 100 {
		return Outcome{Fetched: true}
	}
	return Outcome{Fetched: true, Links: []string{strconv.Itoa(i + 1)}}
}

func TestDepthAndRedirectLimits(t *testing.T) {
	tests := []struct {
		name         string
		seed         string
		maxDepth     int
		maxRedirects int
		want         int // entries handed out
	}{
		// Bug guarded: a limit of N must admit exactly N hops.
		{"no depth limit", "http://a.test/p/0", -1, 0, 101},
		{"depth 1", "http://a.test/p/0", 1, 0, 2},
		{"depth 5", "http://a.test/p/0", 5, 0, 6},
		{"default depth 20", "http://a.test/p/0", 0, 0, 21},
		{"redirects within the limit", "http://a.test/r/2", 0, 3, 3 + 1 + 17},
		{"redirect chain cut", "http://a.test/r/9", 0, 3, 4},
		{"no redirect limit", "http://a.test/r/12", 0, -1, 13 + 1 + 7},
		{"default 10 redirect hops", "http://a.test/r/12", 0, 0, 11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := openTest(t, Options{Admission: AdmissionOptions{MaxDepth: tc.maxDepth, MaxRedirects: tc.maxRedirects}})
			if _, err := f.AddSeeds(context.Background(), []string{tc.seed}); err != nil {
				t.Fatal(err)
			}
			var d driver
			if err := d.run(context.Background(), f, 2, chainFetch); err != nil {
				t.Fatal(err)
			}
			if got := len(d.fetched); got != tc.want {
				t.Errorf("fetched %d entries, want %d: %v", got, tc.want, d.urls())
			}
		})
	}
}

// ScopeSeeds fetches the seeds and the redirects they lead to on their
// hosts, and follows no link.
func TestScopeSeeds(t *testing.T) {
	for _, tc := range []struct {
		seed string
		want int
	}{
		{"http://a.test/p/0", 1},
		{"http://a.test/r/2", 4}, // r/2, r/1, r/0, p/0
	} {
		f := openTest(t, Options{Admission: AdmissionOptions{Scope: ScopeSeeds}})
		if _, err := f.AddSeeds(context.Background(), []string{tc.seed}); err != nil {
			t.Fatal(err)
		}
		var d driver
		if err := d.run(context.Background(), f, 2, chainFetch); err != nil {
			t.Fatal(err)
		}
		if got := len(d.fetched); got != tc.want {
			t.Errorf("seed %s: fetched %d entries, want %d: %v", tc.seed, got, tc.want, d.urls())
		}
		if got := f.Stats().OutOfScope; got != 1 {
			t.Errorf("seed %s: %d links out of scope, want 1", tc.seed, got)
		}
	}
}

func TestScope(t *testing.T) {
	domain := func(h string) (string, error) {
		labels := strings.Split(h, ".")
		if len(labels) < 2 {
			return "", errors.New("no domain")
		}
		return strings.Join(labels[len(labels)-2:], "."), nil
	}
	links := []string{
		"http://www.site.test/1", "http://site.test:8080/2", "http://cdn.site.test/3",
		"http://other.test/4", "https://www.site.test/5",
	}
	tests := []struct {
		scope Scope
		allow string
		deny  string
		want  []string
	}{
		{ScopeHost, "", "", []string{"http://site.test:8080/2"}},
		{ScopeDomain, "", "", []string{"http://cdn.site.test/3", "http://site.test:8080/2", "http://www.site.test/1", "https://www.site.test/5"}},
		{ScopeAny, "", "", []string{"http://cdn.site.test/3", "http://other.test/4", "http://site.test:8080/2", "http://www.site.test/1", "https://www.site.test/5"}},
		{ScopeAny, `^https?://www\.`, `/5$`, []string{"http://www.site.test/1"}},
	}
	for _, tc := range tests {
		t.Run(tc.scope.String()+tc.allow, func(t *testing.T) {
			opts := Options{Admission: AdmissionOptions{Scope: tc.scope}, Domain: domain}
			if tc.allow != "" {
				opts.Admission.Allow = []*regexp.Regexp{regexp.MustCompile(tc.allow), regexp.MustCompile(`^http://site\.test/$`)}
			}
			if tc.deny != "" {
				opts.Admission.Deny = []*regexp.Regexp{regexp.MustCompile(tc.deny)}
			}
			f := openTest(t, opts)
			if _, err := f.AddSeeds(context.Background(), []string{"http://site.test/"}); err != nil {
				t.Fatal(err)
			}
			var d driver
			err := d.run(context.Background(), f, 1, func(e Entry) Outcome {
				if e.Depth == 0 {
					return Outcome{Fetched: true, Links: links}
				}
				return Outcome{Fetched: true}
			})
			if err != nil {
				t.Fatal(err)
			}
			got := d.urls()[1:]
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseScope(t *testing.T) {
	for _, s := range []string{"host", "domain", "any"} {
		got, err := ParseScope(s)
		if err != nil || got.String() != s {
			t.Errorf("ParseScope(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseScope("world"); err == nil {
		t.Error("ParseScope(world): no error")
	}
}

func TestPoliteness(t *testing.T) {
	const delay = 40 * time.Millisecond
	var mu sync.Mutex
	last := map[string]time.Time{} // host -> end of its last fetch
	var gaps []string
	f := openTest(t, Options{Politeness: PolitenessOptions{Delay: delay, MaxCrawlDelay: 60 * time.Millisecond}})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/p/0", "http://b.test/p/0", "http://slow.test/p/0"}); err != nil {
		t.Fatal(err)
	}
	var d driver
	err := d.run(context.Background(), f, 6, func(e Entry) Outcome {
		now := time.Now()
		want := delay
		if e.host == "slow.test" {
			want = 60 * time.Millisecond // robots Crawl-delay 10s, capped
		}
		mu.Lock()
		if l, ok := last[e.host]; ok && now.Sub(l) < want-2*time.Millisecond {
			gaps = append(gaps, fmt.Sprintf("%s after %v, want >= %v", e.URL, now.Sub(l), want))
		}
		mu.Unlock()
		i, _ := strconv.Atoi(e.URL[strings.LastIndex(e.URL, "/")+1:])
		o := Outcome{Fetched: true}
		if i < 5 {
			o.Links = []string{strconv.Itoa(i + 1)}
		}
		if e.host == "slow.test" {
			o.CrawlDelay = 10 * time.Second
		}
		mu.Lock()
		last[e.host] = time.Now()
		mu.Unlock()
		return o
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.errs) > 0 || len(gaps) > 0 {
		t.Errorf("politeness broken: %v %v", d.errs, gaps)
	}
	if len(d.fetched) != 18 {
		t.Errorf("fetched %d, want 18", len(d.fetched))
	}
}

func TestRoundRobin(t *testing.T) {
	f := openTest(t, Options{})
	var seeds []string
	for i := range 50 {
		seeds = append(seeds, fmt.Sprintf("http://big.test/%d", i))
	}
	for i := range 5 {
		seeds = append(seeds, fmt.Sprintf("http://small.test/%d", i))
	}
	if _, err := f.AddSeeds(context.Background(), seeds); err != nil {
		t.Fatal(err)
	}
	var d driver
	if err := d.run(context.Background(), f, 1, func(Entry) Outcome { return Outcome{Fetched: true} }); err != nil {
		t.Fatal(err)
	}
	// With one worker and no delay the two hosts alternate until the small
	// one runs out, and each host is served in discovery order.
	for i := range 10 {
		wantHost := []string{"big.test", "small.test"}[i%2]
		if !strings.Contains(d.order[i], wantHost) {
			t.Fatalf("order[%d] = %s, want host %s; order %v", i, d.order[i], wantHost, d.order[:10])
		}
	}
	if !strings.HasSuffix(d.order[len(d.order)-1], "big.test/49") {
		t.Errorf("last = %s, want big.test/49", d.order[len(d.order)-1])
	}
}

func TestSpillKeepsOrderAndBoundsMemory(t *testing.T) {
	const perHost = 400
	store := newMemStore()
	f := openTest(t, Options{Store: store, HostWindow: 4, MemoryWindow: 6})
	var seeds []string
	for _, h := range []string{"a.test", "b.test", "c.test"} {
		for i := range perHost {
			seeds = append(seeds, fmt.Sprintf("http://%s/%d", h, i))
		}
	}
	if _, err := f.AddSeeds(context.Background(), seeds); err != nil {
		t.Fatal(err)
	}
	if got := store.countPrefix(prefixQueue); got != 3*perHost {
		t.Fatalf("store holds %d queue entries, want %d", got, 3*perHost)
	}
	maxMem := 0
	var d driver
	d.after = func(int) { maxMem = max(maxMem, f.Stats().Memory) }
	if err := d.run(context.Background(), f, 1, func(Entry) Outcome { return Outcome{Fetched: true} }); err != nil {
		t.Fatal(err)
	}
	if maxMem > 6 {
		t.Errorf("memory window reached %d entries, want <= 6", maxMem)
	}
	next := map[string]int{}
	for _, u := range d.order {
		h := u[len("http://"):strings.LastIndex(u, "/")]
		i, _ := strconv.Atoi(u[strings.LastIndex(u, "/")+1:])
		if i != next[h] {
			t.Fatalf("host %s served %d, want %d (FIFO)", h, i, next[h])
		}
		next[h]++
	}
	if len(d.order) != 3*perHost {
		t.Errorf("served %d, want %d", len(d.order), 3*perHost)
	}
	if got := store.countPrefix(prefixQueue) + store.countPrefix(prefixHost); got != 0 {
		t.Errorf("store still holds %d queue records", got)
	}
}

// TestResumeAfterCrash crashes a crawl at many points (the store as it was
// at one instant, the seen-set as the last checkpoint saved it), resumes,
// and checks that every page is fetched and that only entries out at the
// crash are fetched twice.
func TestResumeAfterCrash(t *testing.T) {
	site := graphSite{hosts: []string{"a.test", "b.test", "c.test"}, n: 150}
	want := site.expected()
	const workers = 4
	for _, crashAt := range []int{1, 7, 100, 333, 700} {
		t.Run(strconv.Itoa(crashAt), func(t *testing.T) {
			store := newMemStore()
			seen := newExactSeen()
			var snapMu sync.Mutex
			var snap *exactSeen // the last saved checkpoint
			var snapGen uint64
			// capture copies the seen-set with inserts stopped; persist
			// makes the copy "durable" later, with inserts running.
			save := func(gen uint64) (func(context.Context) error, error) {
				c := seen.clone()
				return func(context.Context) error {
					snapMu.Lock()
					defer snapMu.Unlock()
					snap, snapGen = c, gen
					return nil
				}, nil
			}
			opts := Options{Admission: AdmissionOptions{Deny: []*regexp.Regexp{regexp.MustCompile(`/private/`)}}, HostWindow: 5}
			opts.Store, opts.Seen = store, seen
			f := openTest(t, opts)
			seeds := []string{site.page("a.test", 0), site.page("b.test", 0), site.page("c.test", 0)}
			if _, err := f.AddSeeds(context.Background(), seeds); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var crashed *memStore
			var crashSnap *exactSeen
			var once sync.Once
			d := driver{release: crashAt%2 == 1}
			d.after = func(n int) {
				if n%50 == 0 {
					if err := f.Checkpoint(ctx, save); err != nil && ctx.Err() == nil {
						t.Errorf("Checkpoint: %v", err)
					}
				}
				if n >= crashAt {
					once.Do(func() {
						// The crash: nothing fetched after this instant
						// counts, the store is as it is now.
						d.mu.Lock()
						d.stopped = true
						snapMu.Lock()
						crashSnap = snap
						crashed = store.clone()
						snapMu.Unlock()
						d.mu.Unlock()
						cancel()
					})
				}
			}
			if err := d.run(ctx, f, workers, site.fetch); err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			first := d.urls()
			if crashed == nil {
				t.Fatalf("crawl ended before the crash point (%d fetched)", len(first))
			}
			gen, err := CheckpointGeneration(crashed)
			if err != nil {
				t.Fatal(err)
			}
			seen2 := newExactSeen()
			if gen > 0 {
				if crashSnap == nil || snapGen < gen {
					t.Fatalf("store at generation %d but no snapshot saved", gen)
				}
				seen2 = crashSnap.clone()
			}
			opts.Store, opts.Seen = crashed, seen2
			f2 := openTest(t, opts)
			if _, err := f2.AddSeeds(context.Background(), seeds); err != nil {
				t.Fatal(err)
			}
			var d2 driver
			if err := d2.run(context.Background(), f2, workers, site.fetch); err != nil {
				t.Fatal(err)
			}
			second := d2.urls()
			all := append(slices.Clone(first), second...)
			slices.Sort(all)
			if got := slices.Compact(slices.Clone(all)); !slices.Equal(got, want) {
				t.Errorf("union: %d URLs, want %d; missing %v", len(got), len(want), diff(want, got))
			}
			// Fetched in both runs: only what was out at the crash, at
			// most one per worker (plus those that completed after the
			// store snapshot but before the cancel reached them).
			slices.Sort(first)
			var again []string
			for _, u := range second {
				if _, ok := slices.BinarySearch(first, u); ok {
					again = append(again, u)
				}
			}
			if len(again) > workers {
				t.Errorf("%d URLs fetched again after resume, want <= %d: %v", len(again), workers, again[:min(len(again), 10)])
			}
			if dup := duplicates(first); len(dup) > 0 {
				t.Errorf("first run fetched twice: %v", dup)
			}
		})
	}
}

func TestCheckpointTrimsJournal(t *testing.T) {
	t.Run("range", func(t *testing.T) { testCheckpointTrimsJournal(t, false) })
	t.Run("key by key", func(t *testing.T) { testCheckpointTrimsJournal(t, true) })
}

// testCheckpointTrimsJournal: a checkpoint deletes the journal its copy
// covers, with one range deletion where the store's Writer has one, else
// key by key.
func testCheckpointTrimsJournal(t *testing.T, noRange bool) {
	store := newMemStore()
	store.noRange = noRange
	f := openTest(t, Options{Store: store})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1", "http://a.test/2"}); err != nil {
		t.Fatal(err)
	}
	if got := store.countPrefix(prefixJournal); got != 2 {
		t.Fatalf("journal holds %d records, want 2", got)
	}
	var gens []uint64
	save := func(g uint64) (func(context.Context) error, error) {
		return func(context.Context) error { gens = append(gens, g); return nil }, nil
	}
	for range 2 {
		if err := f.Checkpoint(context.Background(), save); err != nil {
			t.Fatal(err)
		}
	}
	if got := store.countPrefix(prefixJournal); got != 0 {
		t.Errorf("journal holds %d records after checkpoint, want 0", got)
	}
	if !slices.Equal(gens, []uint64{1, 2}) {
		t.Errorf("generations %v, want [1 2]", gens)
	}
	if g, err := CheckpointGeneration(store); err != nil || g != 2 {
		t.Errorf("CheckpointGeneration = %d, %v; want 2", g, err)
	}
	if j := f.Stats().Journal; j != 0 {
		t.Errorf("Stats.Journal = %d after a checkpoint, want 0", j)
	}
	// A failed save trims nothing and keeps the generation.
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/3"}); err != nil {
		t.Fatal(err)
	}
	errDisk := errors.New("disk full")
	for _, capture := range []func(uint64) (func(context.Context) error, error){
		func(uint64) (func(context.Context) error, error) { return nil, errDisk },
		func(uint64) (func(context.Context) error, error) {
			return func(context.Context) error { return errDisk }, nil
		},
	} {
		if err := f.Checkpoint(context.Background(), capture); !errors.Is(err, errDisk) {
			t.Errorf("Checkpoint error = %v, want %v", err, errDisk)
		}
	}
	if got := store.countPrefix(prefixJournal); got != 1 {
		t.Errorf("journal holds %d records after a failed checkpoint, want 1", got)
	}
	if j := f.Stats().Journal; j != 1 {
		t.Errorf("Stats.Journal = %d, want 1", j)
	}
	if g, _ := CheckpointGeneration(store); g != 2 {
		t.Errorf("generation %d after a failed checkpoint, want 2", g)
	}
}

func TestJournalReplayedOnOpen(t *testing.T) {
	store := newMemStore()
	f := openTest(t, Options{Store: store})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1", "http://a.test/2"}); err != nil {
		t.Fatal(err)
	}
	seen := newExactSeen()
	f2 := openTest(t, Options{Store: store.clone(), Seen: seen})
	if seen.len() != 2 || f2.Stats().Journal != 2 {
		t.Errorf("replayed %d URLs into the seen-set (Stats.Journal %d), want 2", seen.len(), f2.Stats().Journal)
	}
	if n, err := f2.AddSeeds(context.Background(), []string{"http://a.test/2", "http://a.test/3"}); err != nil || n != 1 {
		t.Errorf("AddSeeds after reopen = %d, %v; want 1", n, err)
	}
	if st := f2.Stats(); st.Queued != 3 || st.Hosts != 1 {
		t.Errorf("stats after reopen: %+v", st)
	}
}

func TestStoreFailureBreaksFrontier(t *testing.T) {
	store := newMemStore()
	f := openTest(t, Options{Store: store})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1"}); err != nil {
		t.Fatal(err)
	}
	e, err := f.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	errIO := errors.New("i/o error")
	store.failAt, store.failErr = store.writes+1, errIO
	if err := f.Done(context.Background(), e, Outcome{Fetched: true, Links: []string{"/2"}}); !errors.Is(err, errIO) {
		t.Fatalf("Done = %v, want %v", err, errIO)
	}
	if _, err := f.Next(context.Background()); !errors.Is(err, errIO) {
		t.Errorf("Next after a failed write = %v, want %v", err, errIO)
	}
	nop := func(uint64) (func(context.Context) error, error) {
		return func(context.Context) error { return nil }, nil
	}
	if err := f.Checkpoint(context.Background(), nop); !errors.Is(err, errIO) {
		t.Errorf("Checkpoint after a failed write = %v, want %v", err, errIO)
	}
}

func TestSeenFailureBreaksFrontier(t *testing.T) {
	seen := newExactSeen()
	f := openTest(t, Options{Seen: seen})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1"}); err != nil {
		t.Fatal(err)
	}
	e, err := f.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	errDown := errors.New("redis down")
	seen.err = errDown
	if err := f.Done(context.Background(), e, Outcome{Fetched: true, Links: []string{"/2"}}); !errors.Is(err, errDown) {
		t.Fatalf("Done = %v, want %v", err, errDown)
	}
	if _, err := f.Next(context.Background()); !errors.Is(err, errDown) {
		t.Errorf("Next = %v, want %v", err, errDown)
	}
}

func TestDoneTwice(t *testing.T) {
	f := openTest(t, Options{})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1"}); err != nil {
		t.Fatal(err)
	}
	e, err := f.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Done(context.Background(), e, Outcome{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Done(context.Background(), e, Outcome{}); !errors.Is(err, ErrNotOut) {
		t.Errorf("second Done = %v, want ErrNotOut", err)
	}
	if err := f.Done(context.Background(), Entry{URL: "http://x.test/"}, Outcome{}); !errors.Is(err, ErrNotOut) {
		t.Errorf("Done of a foreign entry = %v, want ErrNotOut", err)
	}
}

func TestRelease(t *testing.T) {
	f := openTest(t, Options{MaxPages: 2})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"}); err != nil {
		t.Fatal(err)
	}
	e1, err := f.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Release(e1, true, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Release(e1, true, 0); !errors.Is(err, ErrNotOut) {
		t.Errorf("second Release = %v, want ErrNotOut", err)
	}
	// The host is free again before e1 is done.
	e2, err := f.Next(context.Background())
	if err != nil || e2.URL != "http://a.test/2" {
		t.Fatalf("Next after Release = %v, %v; want a.test/2", e2.URL, err)
	}
	// Two fetched (one released, one out): the page limit holds.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := f.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Next beyond MaxPages = %v, want to wait", err)
	}
	// Done takes "fetched" from Release, whatever the Outcome says.
	if err := f.Done(context.Background(), e1, Outcome{Fetched: false}); err != nil {
		t.Fatal(err)
	}
	if err := f.Done(context.Background(), e2, Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); st.Pages != 2 || st.Queued != 1 || st.InFlight != 0 {
		t.Errorf("stats %+v, want 2 pages, 1 queued, none out", st)
	}
	if _, err := f.Next(context.Background()); !errors.Is(err, ErrPageLimit) {
		t.Errorf("Next = %v, want ErrPageLimit", err)
	}
	if err := f.Done(context.Background(), e1, Outcome{}); !errors.Is(err, ErrNotOut) {
		t.Errorf("Done after Done = %v, want ErrNotOut", err)
	}
}

func TestMaxPages(t *testing.T) {
	f := openTest(t, Options{MaxPages: 7})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/p/0", "http://b.test/p/0"}); err != nil {
		t.Fatal(err)
	}
	var d driver
	if err := d.run(context.Background(), f, 3, chainFetch); err != nil {
		t.Fatal(err)
	}
	if len(d.fetched) != 7 {
		t.Errorf("fetched %d, want 7", len(d.fetched))
	}
	if _, err := f.Next(context.Background()); !errors.Is(err, ErrPageLimit) {
		t.Errorf("Next = %v, want ErrPageLimit", err)
	}
}

func TestNextHonoursContext(t *testing.T) {
	f := openTest(t, Options{Politeness: PolitenessOptions{Delay: time.Hour}})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1", "http://a.test/2"}); err != nil {
		t.Fatal(err)
	}
	e, err := f.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Done(context.Background(), e, Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := f.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Next during the delay = %v, want DeadlineExceeded", err)
	}
	// A canceled context wins over a ready host too.
	g := openTest(t, Options{})
	if _, err := g.AddSeeds(context.Background(), []string{"http://a.test/1"}); err != nil {
		t.Fatal(err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := g.Next(done); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with a canceled context = %v, want Canceled", err)
	}
}

func TestCorruptState(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		value   []byte
		atOpen  bool
		wantKey string
	}{
		{"state version", keyState, []byte{9, 1, 1}, true, keyState},
		{"state truncated", keyState, []byte{stateVersion, 1}, true, keyState},
		{"host count", prefixHost + "a.test", []byte{0x80}, true, prefixHost + "a.test"},
		{"journal record", prefixJournal + "x", []byte("http://a.test/"), true, prefixJournal + "x"},
		{"queue entry", string(queueKey("a.test", 1)), []byte{entryVersion, 0, 0, 200}, false, string(queueKey("a.test", 1))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			f := openTest(t, Options{Store: store})
			if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1"}); err != nil {
				t.Fatal(err)
			}
			store.m[tc.key] = tc.value
			f, err := Open(context.Background(), Options{Store: store, Seen: newExactSeen(), Normalizer: simpleNorm{}})
			if tc.atOpen {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Key != tc.wantKey || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open = %v, want a CorruptError at %q", err, tc.wantKey)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Next(context.Background()); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Next = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	base := Options{Store: newMemStore(), Seen: newExactSeen(), Normalizer: simpleNorm{}}
	tests := []struct {
		name string
		edit func(*Options)
		ok   bool
	}{
		{"complete", func(*Options) {}, true},
		{"no store", func(o *Options) { o.Store = nil }, false},
		{"no seen", func(o *Options) { o.Seen = nil }, false},
		{"no normalizer", func(o *Options) { o.Normalizer = nil }, false},
		{"domain scope without Domain", func(o *Options) { o.Admission.Scope = ScopeDomain }, false},
		{"bad scope", func(o *Options) { o.Admission.Scope = 7 }, false},
		{"negative depth: no limit", func(o *Options) { o.Admission.MaxDepth = -1 }, true},
		{"negative window", func(o *Options) { o.HostWindow = -1 }, false},
	}
	for _, tc := range tests {
		o := base
		tc.edit(&o)
		o.EnsureDefaults()
		err := o.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: Validate() = %v, does not wrap ErrInvalidOptions", tc.name, err)
		}
	}
}

// TestNextWakesOneWaiter checks the hand-off between workers: a change
// wakes one waiting Next (not all of them), a waiter whose context ends
// passes on a wake-up it may have taken, and the end of the crawl reaches
// every waiter.
func TestNextWakesOneWaiter(t *testing.T) {
	f := openTest(t, Options{})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1", "http://a.test/2"}); err != nil {
		t.Fatal(err)
	}
	e1, err := f.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waiting := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			f.mu.Lock()
			got := len(f.waiters)
			f.mu.Unlock()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d Next calls waiting, want %d", got, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	type result struct {
		e   Entry
		err error
	}
	results := make(chan result, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The oldest waiter, first in line for the next wake-up, gives up.
	first, stopFirst := context.WithCancel(ctx)
	go func() {
		e, err := f.Next(first)
		results <- result{e, err}
	}()
	waiting(1)
	const others = 7
	for range others {
		go func() {
			e, err := f.Next(ctx)
			results <- result{e, err}
		}()
	}
	waiting(1 + others)
	stopFirst()
	if err := f.Release(e1, true, 0); err != nil {
		t.Fatal(err)
	}
	var e2 Entry
	canceled := 0
	for e2.URL == "" {
		r := <-results
		switch {
		case errors.Is(r.err, context.Canceled):
			canceled++
		case r.err != nil:
			t.Fatalf("Next = %v, want a.test/2", r.err)
		default:
			e2 = r.e
		}
	}
	if e2.URL != "http://a.test/2" || canceled > 1 {
		t.Fatalf("got %q and %d canceled, want a.test/2 and at most the canceled waiter", e2.URL, canceled)
	}
	if canceled == 0 {
		if r := <-results; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("canceled waiter: Next = %v, %v; want Canceled", r.e.URL, r.err)
		}
	}
	// One wake-up for one entry: the other waiters are still asleep.
	waiting(others - 1)
	for _, e := range []Entry{e1, e2} {
		if err := f.Done(context.Background(), e, Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	for range others - 1 {
		if r := <-results; !errors.Is(r.err, ErrExhausted) {
			t.Errorf("waiter at the end: Next = %q, %v; want ErrExhausted", r.e.URL, r.err)
		}
	}
}

// syncStore is a memStore that is a Syncer and records the order of its
// writes, syncs and the calls of a checkpoint's capture.
type syncStore struct {
	*memStore
	mu     sync.Mutex
	events []string
}

func (s *syncStore) event(e string) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *syncStore) Write(fn func(Writer) error) error {
	s.event("write")
	return s.memStore.Write(fn)
}

func (s *syncStore) Sync() error {
	s.event("sync")
	return nil
}

// TestCheckpointSyncsStore checks that Checkpoint syncs a Syncer store (one
// whose writes reach the disk only when synced) after capturing the
// seen-set, out of the barrier, but before persisting the copy and
// recording the generation, so that a snapshot never covers inserts the
// disk lacks.
func TestCheckpointSyncsStore(t *testing.T) {
	store := &syncStore{memStore: newMemStore()}
	f := openTest(t, Options{Store: store})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/1"}); err != nil {
		t.Fatal(err)
	}
	store.events = nil
	err := f.Checkpoint(context.Background(), func(uint64) (func(context.Context) error, error) {
		store.event("capture")
		return func(context.Context) error { store.event("persist"); return nil }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(store.events) < 4 || !slices.Equal(store.events[:4], []string{"capture", "sync", "persist", "write"}) {
		t.Errorf("checkpoint events %v, want capture, sync, persist, then the generation's write", store.events)
	}
}

// TestStatsMemory: Stats.Memory counts the entries held in memory windows,
// so Queued - InFlight - Memory is what is only on disk (crawl.Stats's
// Spilled): HostWindow 4 keeps 4 of a host's 10 entries in memory.
func TestStatsMemory(t *testing.T) {
	f := openTest(t, Options{HostWindow: 4})
	ctx := context.Background()
	var seeds []string
	for i := range 10 {
		seeds = append(seeds, fmt.Sprintf("http://a.test/%d", i))
	}
	if _, err := f.AddSeeds(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Queued != 10 || s.Memory != 4 || s.InFlight != 0 {
		t.Fatalf("after 10 seeds: queued %d, memory %d, in flight %d; want 10, 4, 0", s.Queued, s.Memory, s.InFlight)
	}
	e := nextNow(t, f)
	if s := f.Stats(); s.Queued-int64(s.InFlight)-int64(s.Memory) != 6 {
		t.Errorf("one out: queued %d, memory %d, in flight %d; want 6 on disk only", s.Queued, s.Memory, s.InFlight)
	}
	if err := f.Done(ctx, e, Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Queued != 9 || s.Queued-int64(s.InFlight)-int64(s.Memory) != 6 {
		t.Errorf("one done: queued %d, memory %d, in flight %d; want 9 queued, 6 on disk only", s.Queued, s.Memory, s.InFlight)
	}
}

// gateSeen blocks TestAndAdd of a key holding "slow" until release is
// closed, having closed entered.
type gateSeen struct {
	*exactSeen
	entered, release chan struct{}
	once             sync.Once
}

func (s *gateSeen) TestAndAdd(ctx context.Context, seg []string) (bool, error) {
	if strings.Contains(strings.Join(seg, "/"), "slow") {
		s.once.Do(func() { close(s.entered) })
		<-s.release
	}
	return s.exactSeen.TestAndAdd(ctx, seg)
}

// TestCheckpointDoesNotStopInserts: a checkpoint copies the seen-set while
// a batch is in progress (its insert blocked), and a batch that starts
// after it completes meanwhile: the checkpoint stops no insert. It records its generation only once the batch in progress at the
// copy is committed, so a crash in between resumes from the previous one.
func TestCheckpointDoesNotStopInserts(t *testing.T) {
	store := newMemStore()
	seen := &gateSeen{exactSeen: newExactSeen(), entered: make(chan struct{}), release: make(chan struct{})}
	f := openTest(t, Options{Store: store, Seen: seen})
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/1", "http://b.test/1"}); err != nil {
		t.Fatal(err)
	}
	ea, eb := nextNow(t, f), nextNow(t, f)
	if ea.host != "a.test" {
		ea, eb = eb, ea
	}
	slowDone := make(chan error, 1)
	go func() { slowDone <- f.Done(ctx, ea, Outcome{Fetched: true, Links: []string{"/slow"}}) }()
	<-seen.entered

	captured := make(chan *exactSeen, 1)
	persisted := make(chan uint64, 1)
	ckpt := make(chan error, 1)
	go func() {
		ckpt <- f.Checkpoint(ctx, func(gen uint64) (func(context.Context) error, error) {
			c := seen.clone()
			captured <- c
			return func(context.Context) error { persisted <- gen; return nil }, nil
		})
	}()
	var snap *exactSeen
	select {
	case snap = <-captured:
	case <-time.After(5 * time.Second):
		t.Fatal("the checkpoint waited for the batch in progress before copying the seen-set")
	}
	done := make(chan error, 1)
	go func() { done <- f.Done(ctx, eb, Outcome{Fetched: true, Links: []string{"/2"}}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a batch started after the copy waited for the checkpoint")
	}
	select {
	case gen := <-persisted:
		t.Fatalf("checkpoint %d persisted while a batch whose inserts it may hold was in progress", gen)
	case err := <-ckpt:
		t.Fatalf("checkpoint returned %v while a batch was in progress", err)
	case <-time.After(50 * time.Millisecond):
	}
	if gen, err := CheckpointGeneration(store); err != nil || gen != 0 {
		t.Fatalf("generation %d (%v) recorded before the batch in progress committed", gen, err)
	}
	close(seen.release)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	if err := <-ckpt; err != nil {
		t.Fatal(err)
	}
	if gen, err := CheckpointGeneration(store); err != nil || gen != 1 {
		t.Fatalf("generation %d (%v) after the checkpoint, want 1", gen, err)
	}
	if snap.len() < 2 {
		t.Errorf("the copy holds %d keys, want the two seeds at least", snap.len())
	}
}
