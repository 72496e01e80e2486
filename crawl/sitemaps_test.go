package crawl

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/testweb"
)

// Faulty sitemaps each get their counted, specific error, and the crawl
// goes on: malformed XML, an HTML page posing as a sitemap, a gzip bomb
// (as a .gz file and as Content-Encoding: gzip), a file past the size
// limit, and indexes nested past MaxSitemapNesting.
func TestSitemapFaults(t *testing.T) {
	const limit = 64 << 10
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	urlset := func(locs ...string) []byte {
		var b strings.Builder
		b.WriteString(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, l := range locs {
			fmt.Fprintf(&b, "<url><loc>%s</loc><lastmod>2024-05-01</lastmod></url>", l)
		}
		b.WriteString("</urlset>")
		return []byte(b.String())
	}
	huge := append(urlset("http://x.test/"), bytes.Repeat([]byte("<!-- padding -->"), 2*limit/16)...)
	var srv *httptest.Server
	index := func(child string) []byte {
		return []byte(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>` + srv.URL + child + `</loc></sitemap></sitemapindex>`)
	}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; p {
		case "/robots.txt":
			for _, s := range []string{"/good.xml", "/malformed.xml", "/page.xml", "/bomb.xml.gz", "/bomb-encoded.xml", "/big.xml", "/i1.xml"} {
				fmt.Fprintf(w, "Sitemap: %s%s\n", srv.URL, s)
			}
		case "/":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html><body>home</body></html>"))
		case "/good.xml":
			w.Header().Set("Content-Type", "application/xml")
			w.Write(urlset(srv.URL + "/listed"))
		case "/malformed.xml":
			w.Header().Set("Content-Type", "application/xml")
			w.Write(append(bytes.TrimSuffix(urlset(srv.URL+"/before-fault"), []byte("</urlset>")), "<url><loc>oops</url"...))
		case "/page.xml":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html><body>not found</body></html>"))
		case "/bomb.xml.gz":
			w.Header().Set("Content-Type", "application/x-gzip")
			w.Write(gz(huge))
		case "/bomb-encoded.xml":
			w.Header().Set("Content-Type", "application/xml")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gz(huge))
		case "/big.xml":
			w.Header().Set("Content-Type", "application/xml")
			w.Write(huge)
		case "/i1.xml", "/i2.xml", "/i3.xml", "/i4.xml", "/i5.xml":
			w.Header().Set("Content-Type", "application/xml")
			w.Write(index(fmt.Sprintf("/i%d.xml", p[2]-'0'+1)))
		case "/listed", "/before-fault":
			w.Write([]byte("listed"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	o := Options{Seeds: []string{srv.URL + "/"}, Dir: dir, Concurrency: 2, ExpectedURLs: 10_000}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	o.Sitemap.MaxBytes = limit
	c, err := run(t, t.Context(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	entries := readLog(t, dir+"/crawl.log.jsonl")
	got := map[string]string{}
	for _, e := range entries {
		got[strings.TrimPrefix(e.URL, srv.URL)] = e.SitemapError
		if e.URL == srv.URL+"/listed" && (e.LastMod.IsZero() || e.HopPath != "SS") {
			t.Errorf("/listed: lastmod %v, hop path %q", e.LastMod, e.HopPath)
		}
	}
	for path, want := range map[string]string{
		"/good.xml": "", "/listed": "", "/before-fault": "", "/i1.xml": "", "/i4.xml": "sitemap-too-deep",
		"/malformed.xml": "sitemap-malformed", "/page.xml": "sitemap-content-type", "/bomb.xml.gz": "sitemap-gzip-bomb",
		"/bomb-encoded.xml": "sitemap-gzip-bomb", "/big.xml": "sitemap-too-large",
	} {
		e, ok := got[path]
		if !ok || !strings.HasPrefix(e, want) || (want == "") != (e == "") {
			t.Errorf("%s: logged %v, sitemap error %q; want %q", path, ok, e, want)
		}
	}
	if _, ok := got["/i5.xml"]; ok {
		t.Error("an index nested past MaxSitemapNesting was followed")
	}
	s := c.Stats().Fetch.Sitemaps
	if s.Malformed != 1 || s.ContentType != 1 || s.GzipBomb != 2 || s.TooLarge != 1 || s.TooDeep != 1 {
		t.Errorf("SitemapStats %+v: want 1 malformed, 1 content type, 2 gzip bombs, 1 too large, 1 too deep", s)
	}
}

// TestSitemapsInFlightBounded: with 16 workers and a sitemap index on each
// of 12 hosts, no more than maxSitemapsInFlight sitemaps are fetched at
// once (a sitemap body may be 50 MiB), and the crawl still reads them all.
func TestSitemapsInFlightBounded(t *testing.T) {
	var now, most atomic.Int32
	wrap := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "sitemap") {
				n := now.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(20 * time.Millisecond) // long enough for the workers to overlap
				defer now.Add(-1)
			}
			h.ServeHTTP(w, r)
		})
	}
	w, want := startWeb(t, testweb.Options{Seed: 4, Hosts: 12, Pages: 240, Sitemaps: true, Wrap: wrap}, testweb.ExpectOptions{Sitemaps: true})
	entries, _, _ := crawlWeb(t, w, func(o *Options) { o.Concurrency = 16 })
	checkCoverage(t, w, want, entries)
	if m := most.Load(); m > maxSitemapsInFlight || m < 1 {
		t.Errorf("%d sitemaps fetched at once, want 1..%d", m, maxSitemapsInFlight)
	}
}
