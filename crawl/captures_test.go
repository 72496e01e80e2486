package crawl

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/internal/testweb"
	"github.com/layercrawl/layercrawl/storage"
)

// crawlWeb crawls w as Expected models it (no depth limit) and returns the
// log and the Crawler.
func crawlWeb(t *testing.T, w *testweb.Web, tune func(*Options)) ([]storage.Entry, *Crawler, string) {
	t.Helper()
	dir := t.TempDir()
	o := Options{Seeds: w.Seeds(), Dir: dir, Concurrency: 8, ExpectedURLs: 100_000}
	o.Politeness.Delay = -1
	o.Admission.MaxDepth = -1
	o.Fetch.AllowPrivate = true
	o.Fetch.Resolver = w.Resolver()
	if tune != nil {
		tune(&o)
	}
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return readLog(t, filepath.Join(dir, "crawl.log.jsonl")), c, dir
}

// checkCoverage compares a crawl log with Expected: exactly the URLs it
// fetches, the robots.txt refusals, each URL once in the log and requested
// once from the web.
func checkCoverage(t *testing.T, w *testweb.Web, want *testweb.Expectation, entries []storage.Entry) {
	t.Helper()
	got := fetchedURLs(entries)
	if miss, extra := missingFrom(want.Fetched(), got), missingFrom(got, want.Fetched()); len(miss)+len(extra) > 0 {
		t.Errorf("fetched %d URLs, want %d; missing %d (first %q), unexpected %d (first %q)",
			len(got), len(want.Fetched()), len(miss), first(miss), len(extra), first(extra))
	}
	if d := dupes(got); len(d) > 0 {
		t.Errorf("%d URLs logged more than once, first %q", len(d), d[0])
	}
	var denied []string
	for _, e := range entries {
		if strings.HasPrefix(e.Error, "robots-disallowed") {
			denied = append(denied, e.URL)
		}
	}
	slices.Sort(denied)
	if !slices.Equal(denied, want.RobotsDenied) {
		t.Errorf("robots.txt refused %d URLs, want %d", len(denied), len(want.RobotsDenied))
	}
	for u, n := range w.Requests() {
		if n > 1 && !strings.HasSuffix(u, "/robots.txt") {
			t.Errorf("%s requested %d times", u, n)
		}
	}
	for _, u := range want.SitemapCut {
		if _, ok := slices.BinarySearch(got, u); ok {
			t.Errorf("%s fetched, but only a sitemap lists it past the per-file limit", u)
		}
	}
}

// startWeb serves a recorded testweb of opts (closed at the test's end)
// and returns what a crawl described by eo fetches from it.
func startWeb(t *testing.T, opts testweb.Options, eo testweb.ExpectOptions) (*testweb.Web, *testweb.Expectation) {
	t.Helper()
	opts.Record = true
	w, err := testweb.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	want, err := w.Expected(eo)
	if err != nil {
		t.Fatal(err)
	}
	return w, want
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// dupes returns the repeated elements of a sorted slice.
func dupes(s []string) []string {
	var d []string
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			d = append(d, s[i])
		}
	}
	return d
}

// TestCrawlEmbeds crawls a web whose pages have requisites, on and off
// their host (a CDN, with a stylesheet whose font is a second embed hop):
// coverage is exactly Expected's, nothing is fetched twice, and every
// requisite's hop path ends in an embed hop.
func TestCrawlEmbeds(t *testing.T) {
	w, want := startWeb(t, testweb.Options{Seed: 3, Hosts: 4, Pages: 160, Embeds: true}, testweb.ExpectOptions{Embeds: true})
	if len(want.Embeds) == 0 {
		t.Fatal("the web has no requisites")
	}
	entries, _, dir := crawlWeb(t, w, nil)
	checkCoverage(t, w, want, entries)
	outlinks := checkMetadata(t, dir, entries)
	for _, kind := range []string{" L a/@href", " E img/@src", " E link/@href", " E script/@src"} {
		if !slices.ContainsFunc(outlinks, func(s string) bool { return strings.HasSuffix(s, kind) }) {
			t.Errorf("no outlink line ending %q in the metadata records", kind)
		}
	}
	hops := map[string]string{}
	for _, e := range entries {
		hops[e.URL] = e.HopPath
		if len(e.HopPath) != e.Depth {
			t.Errorf("%s: hop path %q at depth %d", e.URL, e.HopPath, e.Depth)
		}
	}
	cdn := 0
	for _, u := range want.Embeds {
		if h := hops[u]; !strings.HasSuffix(h, "E") {
			t.Errorf("requisite %s logged with hop path %q", u, h)
		}
		if strings.Contains(u, "cdn") {
			cdn++
		}
	}
	if cdn == 0 {
		t.Error("no off-host requisite among the expected ones")
	}
	for _, u := range want.Pages {
		if h := hops[u]; strings.Contains(h, "S") {
			t.Errorf("page %s logged with hop path %q", u, h)
		}
	}
}

// TestCrawlNoEmbeds: with Fetch.NoEmbeds the crawl follows links only, as
// Expected without Embeds says.
func TestCrawlNoEmbeds(t *testing.T) {
	w, want := startWeb(t, testweb.Options{Seed: 3, Hosts: 3, Pages: 90, Embeds: true}, testweb.ExpectOptions{})
	entries, _, _ := crawlWeb(t, w, func(o *Options) { o.Fetch.NoEmbeds = true; o.NoSitemaps = true })
	checkCoverage(t, w, want, entries)
}

// checkMetadata reads the crawl's WARC files: every HTML page logged with
// status 200 has one metadata record, concurrent to its response, whose
// outlink lines are Heritrix's "URL HOP CONTEXT"; it returns the outlink
// lines of all pages.
func checkMetadata(t *testing.T, dir string, entries []storage.Entry) []string {
	t.Helper()
	html := map[string]string{} // response record ID -> URL
	for _, e := range entries {
		if e.Status == 200 && strings.HasPrefix(e.ContentType, "text/html") {
			html[e.WARCRecordID] = e.URL
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
	var outlinks []string
	metas := map[string]int{}
	for _, name := range files {
		if err := storage.ReadWARCFile(name, func(rec *storage.WARCRecord) error {
			if rec.Header.Get("WARC-Type") != "metadata" {
				return nil
			}
			to := rec.Header.Get("WARC-Concurrent-To")
			u, ok := html[to]
			if !ok || rec.Header.Get("WARC-Target-URI") != u {
				t.Errorf("metadata record of %s concurrent to %s, not an HTML page's response", rec.Header.Get("WARC-Target-URI"), to)
			}
			metas[to]++
			for _, line := range strings.Split(strings.TrimSuffix(string(rec.Block), "\r\n"), "\r\n") {
				name, value, _ := strings.Cut(line, ": ")
				switch name {
				case "outlink":
					if f := strings.Fields(value); len(f) != 3 || len(f[1]) != 1 || !strings.Contains("LER", f[1]) || !strings.Contains(f[2], "/") {
						t.Errorf("%s: outlink line %q", u, line)
					}
					outlinks = append(outlinks, value)
				case "via", "hopsFromSeed":
				default:
					t.Errorf("%s: metadata line %q", u, line)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for id, u := range html {
		if metas[id] != 1 {
			t.Errorf("%s: %d metadata records, want 1", u, metas[id])
		}
	}
	return outlinks
}

// TestCrawlCaptures is the end-to-end test of captures that replay: a web with requisites
// and sitemaps (robots.txt Sitemap lines, an index, a gzip child, pages
// only a sitemap lists, an oversized sitemap) is crawled exactly as
// Expected says, nothing twice, with the sitemap hops and the cut
// counted.
func TestCrawlCaptures(t *testing.T) {
	w, want := startWeb(t, testweb.Options{Seed: 5, Hosts: 4, Pages: 200, Embeds: true, Sitemaps: true}, testweb.ExpectOptions{Embeds: true, Sitemaps: true})
	if len(want.Sitemaps) == 0 || len(want.SitemapOnly) == 0 || len(want.SitemapCut) == 0 || len(want.Embeds) == 0 {
		t.Fatalf("the web lacks sitemaps, sitemap-only pages, a cut or requisites: %d, %d, %d, %d",
			len(want.Sitemaps), len(want.SitemapOnly), len(want.SitemapCut), len(want.Embeds))
	}
	entries, c, _ := crawlWeb(t, w, nil)
	checkCoverage(t, w, want, entries)
	byURL := map[string]storage.Entry{}
	for _, e := range entries {
		byURL[e.URL] = e
	}
	cut, lastmod := 0, 0
	for _, u := range want.Sitemaps {
		e := byURL[u]
		if !strings.HasSuffix(e.HopPath, "S") || e.SitemapError != "" || e.SitemapURLs == 0 {
			t.Errorf("sitemap %s: hop path %q, %d URLs, error %q", u, e.HopPath, e.SitemapURLs, e.SitemapError)
		}
		cut += e.SitemapCut
	}
	for _, u := range want.SitemapOnly {
		e := byURL[u]
		if !strings.Contains(e.HopPath, "S") {
			t.Errorf("sitemap-only page %s: hop path %q", u, e.HopPath)
		}
		if !e.LastMod.IsZero() {
			lastmod++
		}
	}
	s := c.Stats().Fetch.Sitemaps
	if lastmod == 0 {
		t.Error("no sitemap-only page logged with its <lastmod>")
	}
	if cut == 0 || s.Cut != uint64(cut) || s.Files != uint64(len(want.Sitemaps)) {
		t.Errorf("sitemap stats %+v; the log says %d cut in %d files", s, cut, len(want.Sitemaps))
	}
	if s.Malformed+s.ContentType+s.TooLarge+s.GzipBomb+s.TooDeep != 0 {
		t.Errorf("sitemap errors on a well-formed web: %+v", s)
	}
	t.Logf("%d sitemaps, %d sitemap-only pages (%d with a lastmod), %d URLs cut, %d requisites",
		len(want.Sitemaps), len(want.SitemapOnly), lastmod, cut, len(want.Embeds))
}
