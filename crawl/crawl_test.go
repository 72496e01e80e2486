package crawl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gocolly/colly/v2"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/internal/testsite"
	"github.com/layercrawl/layercrawl/storage"
)

// testOptions returns the options of a fast local crawl of site into dir.
func testOptions(site *testsite.Site, dir string) Options {
	o := Options{Seeds: site.Roots(), Dir: dir, Concurrency: 6, ExpectedURLs: 100_000}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	return o
}

func run(t *testing.T, ctx context.Context, o Options) (*Crawler, error) {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	err = c.Run(ctx)
	if cerr := c.Close(); cerr != nil {
		t.Errorf("Close: %v", cerr)
	}
	return c, err
}

func readLog(t *testing.T, path string) []storage.Entry {
	t.Helper()
	entries, err := storage.ReadCrawlLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// fetchedURLs returns the sorted URLs of the log's fetches (robots.txt
// refusals left out).
func fetchedURLs(entries []storage.Entry) []string {
	var u []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Error, "robots-") {
			u = append(u, e.URL)
		}
	}
	slices.Sort(u)
	return u
}

// missingFrom returns the elements of want absent from got (both sorted).
func missingFrom(want, got []string) []string {
	var m []string
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok {
			m = append(m, w)
		}
	}
	return m
}

func TestCrawlSite(t *testing.T) {
	site, hosts := testsite.Start(t, 600)
	want, _ := site.Expected()
	dir := t.TempDir()
	c, err := run(t, context.Background(), testOptions(site, dir))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := fetchedURLs(readLog(t, filepath.Join(dir, "crawl.log.jsonl")))
	if !slices.Equal(got, want) {
		t.Errorf("fetched %d URLs, want %d", len(got), len(want))
	}
	for h, hs := range hosts {
		for u, n := range hs.Requests() {
			if n > 1 && !strings.HasSuffix(u, "/robots.txt") {
				t.Errorf("host %d: %s requested %d times", h, u, n)
			}
		}
	}
	s := c.Stats()
	if s.Pages != uint64(len(want)) || s.Fetch.Fetched != uint64(len(want)) || s.Queued != 0 {
		t.Errorf("Stats: pages %d fetched %d queued %d; want %d, %d, 0", s.Pages, s.Fetch.Fetched, s.Queued, len(want), len(want))
	}
	if s.Filter.EstimatedURLs < float64(len(want))/2 || s.Filter.ExpectedURLs != 100_000 {
		t.Errorf("Stats.Filter = %+v", s.Filter)
	}
	warcs, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
	if len(warcs) == 0 {
		t.Error("no WARC file written")
	}
}

// OnPage sees every fetch, may veto links (not followed) and add links
// (followed); its error stops the crawl, and the page it failed on is
// fetched again on resume.
func TestOnPage(t *testing.T) {
	site, _ := testsite.Start(t, 300)
	dir := t.TempDir()
	o := testOptions(site, dir)
	o.Seeds = site.Roots()[:1]
	extra := site.PageURL(3) // on the seed's host
	var mu sync.Mutex
	seen := map[string]int{}
	o.OnPage = func(p *Page) error {
		mu.Lock()
		seen[p.URL]++
		mu.Unlock()
		if p.Via == "" { // the seed: follow nothing it links to, only extra
			p.Links = p.Links[:0]
			p.AddLink(extra)
		}
		return nil
	}
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	got := fetchedURLs(readLog(t, filepath.Join(dir, "crawl.log.jsonl")))
	if !slices.Contains(got, extra) {
		t.Errorf("the link OnPage added was not fetched: %v", got[:min(len(got), 5)])
	}
	for _, u := range got {
		if seen[u] != 1 {
			t.Errorf("OnPage saw %s %d times, want 1", u, seen[u])
		}
	}
	// The seed's own links were vetoed: only the added one has it as Via.
	for _, e := range readLog(t, filepath.Join(dir, "crawl.log.jsonl")) {
		if e.Via == site.Roots()[0] && e.URL != extra {
			t.Errorf("%s followed from the seed after OnPage removed its links", e.URL)
		}
	}

	// An error stops the crawl; the page is not marked done.
	dir2 := t.TempDir()
	o = testOptions(site, dir2)
	errStop := errors.New("stop here")
	fail := site.Roots()[1]
	o.OnPage = func(p *Page) error {
		if p.URL == fail {
			return errStop
		}
		return nil
	}
	if _, err := run(t, context.Background(), o); !errors.Is(err, errStop) {
		t.Fatalf("Run = %v, want %v", err, errStop)
	}
	o.OnPage = nil
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatalf("resumed Run: %v", err)
	}
	if !c.Resumed() {
		t.Error("the second run did not resume")
	}
	n := 0
	for _, e := range readLog(t, filepath.Join(dir2, "crawl.log.jsonl")) {
		if e.URL == fail {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%s logged %d times, want 2 (the failed hook, then the resume)", fail, n)
	}
}

// A colly user's callbacks run on every page, and what they Visit is
// followed through the frontier.
func TestCollector(t *testing.T) {
	site, _ := testsite.Start(t, 300)
	want, _ := site.Expected()
	dir := t.TempDir()
	o := testOptions(site, dir)
	cc := colly.NewCollector()
	var mu sync.Mutex
	titles := map[string]string{}
	cc.OnHTML("title", func(e *colly.HTMLElement) {
		mu.Lock()
		titles[e.Request.URL.String()] = e.Text
		mu.Unlock()
	})
	visits := 0
	cc.OnHTML("a[href]", func(e *colly.HTMLElement) {
		if e.Request.Visit(e.Attr("href")) == nil {
			mu.Lock()
			visits++
			mu.Unlock()
		}
	})
	o.Collector = cc
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	got := fetchedURLs(readLog(t, filepath.Join(dir, "crawl.log.jsonl")))
	// The callbacks Visit every a[href], rel="nofollow" ones too (colly
	// does not read rel): what they add is the user's choice, followed
	// through the same checks.
	if m := missingFrom(want, got); len(m) > 0 {
		t.Errorf("with a Collector: %d URLs missing, e.g. %v", len(m), m[:min(len(m), 3)])
	}
	for _, u := range missingFrom(got, want) {
		if !strings.Contains(u, "/nofollow/") {
			t.Errorf("fetched %s, neither expected nor a nofollow link the callbacks visited", u)
		}
	}
	if len(titles) < len(want)/2 || visits == 0 {
		t.Errorf("colly callbacks: %d titles, %d visits", len(titles), visits)
	}
	if title := titles[site.Roots()[0]]; title == "" {
		t.Errorf("no title recorded for the seed %s", site.Roots()[0])
	}
}

// With the page's own links vetoed, only what the colly callbacks Visit is
// followed: the colly user keeps full control of what to crawl.
func TestCollectorVisitsAreFollowed(t *testing.T) {
	site, _ := testsite.Start(t, 300)
	dir := t.TempDir()
	o := testOptions(site, dir)
	o.Seeds = site.Roots()[:1]
	target := site.PageURL(3)
	cc := colly.NewCollector()
	cc.OnHTML("html", func(e *colly.HTMLElement) {
		if e.Request.URL.String() == site.Roots()[0] {
			e.Request.Visit(target)
		}
	})
	o.Collector = cc
	o.OnPage = func(p *Page) error {
		// Keep only the links colly visited.
		p.Links = slices.DeleteFunc(p.Links, func(l fetch.Link) bool { return l.Tag != "colly" })
		return nil
	}
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	got := fetchedURLs(readLog(t, filepath.Join(dir, "crawl.log.jsonl")))
	if !slices.Contains(got, target) {
		t.Errorf("the URL colly visited was not fetched: %v", got)
	}
}

// Add queues URLs while the crawl runs, and fails outside Run.
func TestAdd(t *testing.T) {
	site, _ := testsite.Start(t, 300)
	dir := t.TempDir()
	o := testOptions(site, dir)
	o.Seeds = site.Roots()[:1]
	o.Admission.Scope = frontier.ScopeSeeds
	late := site.Roots()[2]
	var c *Crawler
	var once sync.Once
	var addErr error
	o.OnPage = func(p *Page) error {
		once.Do(func() { _, addErr = c.Add(context.Background(), late) })
		return nil
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(context.Background(), late); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Add before Run = %v, want ErrNotRunning", err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if addErr != nil {
		t.Fatalf("Add during Run: %v", addErr)
	}
	got := fetchedURLs(readLog(t, filepath.Join(dir, "crawl.log.jsonl")))
	if !slices.Contains(got, late) || len(got) != 2 {
		t.Errorf("fetched %v, want the seed and the added URL", got)
	}
	if err := c.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
}

// A crawl stopped through its context resumes where it stopped: every
// page once.
func TestStopAndResume(t *testing.T) {
	site, hosts := testsite.Start(t, 900)
	want, _ := site.Expected()
	dir := t.TempDir()
	o := testOptions(site, dir)
	o.Concurrency = 3
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("enough")
	var n int
	var mu sync.Mutex
	o.OnPage = func(p *Page) error {
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 100 {
			cancel(stop)
		}
		return nil
	}
	if _, err := run(t, ctx, o); !errors.Is(err, stop) {
		t.Fatalf("first Run = %v, want the cancel cause %v", err, stop)
	}
	o.OnPage = nil
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatalf("resumed Run: %v", err)
	}
	got := fetchedURLs(readLog(t, filepath.Join(dir, "crawl.log.jsonl")))
	if d := len(got) - len(slices.Compact(slices.Clone(got))); d > 0 {
		t.Errorf("%d URLs fetched twice after a clean stop", d)
	}
	if !slices.Equal(slices.Compact(got), want) {
		t.Errorf("fetched %d distinct URLs, want %d", len(slices.Compact(got)), len(want))
	}
	for h, hs := range hosts {
		for u, n := range hs.Requests() {
			if n > 1 && !strings.HasSuffix(u, "/robots.txt") {
				t.Errorf("host %d: %s requested %d times", h, u, n)
			}
		}
	}
}

// memLog and memArchive are a user's own sinks.
type memLog struct {
	mu      sync.Mutex
	entries []storage.Entry
	syncs   int
}

func (l *memLog) Write(e storage.Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	return nil
}
func (l *memLog) Flush() error { return nil }
func (l *memLog) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncs++
	return nil
}

type memArchive struct {
	mu   sync.Mutex
	uris []string
	fail error
}

func (a *memArchive) Write(ex *storage.Exchange) (storage.WARCRef, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		return storage.WARCRef{}, a.fail
	}
	a.uris = append(a.uris, ex.TargetURI)
	return storage.WARCRef{File: "mem", ResponseID: "<urn:uuid:x>"}, nil
}
func (a *memArchive) Sync() error { return nil }

// exactSeen is a user's own seen-set, exact and without snapshots.
type exactSeen struct {
	mu *sync.Mutex
	m  map[string]bool
}

func newExactSeen() exactSeen { return exactSeen{mu: &sync.Mutex{}, m: map[string]bool{}} }

func (s exactSeen) TestAndAdd(_ context.Context, seg []string) (bool, error) {
	k := strings.Join(seg, "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[k] {
		return true, nil
	}
	s.m[k] = true
	return false, nil
}

// Pluggable sinks and seen-set: the user's Log and Archive get every
// entry; a Seen without snapshots makes the journal replay on resume.
func TestPluggableParts(t *testing.T) {
	site, _ := testsite.Start(t, 300)
	want, _ := site.Expected()
	dir := t.TempDir()
	o := testOptions(site, dir)
	log, arch := &memLog{}, &memArchive{}
	o.Log, o.Archive = log, arch
	o.Seen = newExactSeen()
	o.CheckpointInterval = 1 // a checkpoint at every tick: no snapshot to write, the journal stays
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	got := fetchedURLs(log.entries)
	if !slices.Equal(got, want) {
		t.Errorf("user log: %d URLs, want %d", len(got), len(want))
	}
	if len(arch.uris) < len(want) { // robots.txt exchanges come on top
		t.Errorf("user archive: %d exchanges, want at least %d", len(arch.uris), len(want))
	}
	if _, err := os.Stat(filepath.Join(dir, "crawl.log.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a default log was written beside the user's: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", SnapshotFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a snapshot was written for a seen-set without snapshots: %v", err)
	}
	// Resume with a fresh, empty set: the journal refills it, so nothing
	// is fetched again.
	o.Seen = newExactSeen()
	log2 := &memLog{}
	o.Log = log2
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(log2.entries) != 0 || c.Stats().Journal < int64(len(want)) {
		t.Errorf("resume fetched %d URLs again, journal %d", len(log2.entries), c.Stats().Journal)
	}

	// An archive that fails stops the crawl with its error.
	o = testOptions(site, t.TempDir())
	errDisk := errors.New("disk full")
	o.Archive = &memArchive{fail: errDisk}
	if _, err := run(t, context.Background(), o); !errors.Is(err, errDisk) {
		t.Errorf("Run with a failing archive = %v, want %v", err, errDisk)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(o *Options)
	}{
		{"no dir", func(o *Options) { o.Dir = "" }},
		{"negative concurrency", func(o *Options) { o.Concurrency = -1 }},
		{"FP rate 1", func(o *Options) { o.FalsePositiveRate = 1 }},
		{"gzip level 10", func(o *Options) { o.WARC.GzipLevel = 10 }},
		{"bad scope", func(o *Options) { o.Admission.Scope = 9 }},
		{"negative body cap", func(o *Options) { o.Fetch.MaxBodySize = -1 }},
		{"negative sitemap size cap", func(o *Options) { o.Sitemap.MaxBytes = -1 }},
		{"bad seed", func(o *Options) { o.Seeds = []string{"mailto:a@b"} }},
		{"no seeds on a fresh directory", func(o *Options) { o.Seeds = nil }},
	} {
		o := Options{Dir: t.TempDir(), Seeds: []string{"http://example.com/"}}
		tc.edit(&o)
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: New = %v, want ErrInvalidOptions", tc.name, err)
		}
	}
	// Every limit off is valid.
	o := Options{Dir: t.TempDir(), Seeds: []string{"http://example.com/"}, MaxPages: -1, StopGrace: -1, RobotsWait: -1}
	o.Admission = frontier.AdmissionOptions{MaxDepth: -1, MaxRedirects: -1, MaxEmbedHops: -1,
		Limits: frontier.Limits{MaxURLLength: -1, MaxPathSegments: -1, MaxSegmentRepeats: -1, MaxHostURLs: -1, MaxChildren: -1}}
	o.Politeness = frontier.PolitenessOptions{Delay: -1, MaxCrawlDelay: -1}
	o.Sitemap.MaxURLs, o.Sitemap.MaxURLLength = -1, -1
	c, err := New(o)
	if err != nil {
		t.Fatalf("every limit off: %v", err)
	}
	c.Close()
}
