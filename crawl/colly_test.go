package crawl_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gocolly/colly/v2"

	"github.com/layercrawl/layercrawl/crawl"
)

// callbackLog records what a colly program's callbacks saw: one line per
// call, with the request's URL path and depth.
type callbackLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *callbackLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *callbackLog) sorted() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.lines)
	slices.Sort(s)
	return s
}

// typicalCallbacks registers the callbacks of a typical colly program on
// c: every title, every response and error, and a Visit of every link.
func typicalCallbacks(c *colly.Collector, log *callbackLog) {
	c.OnResponse(func(r *colly.Response) {
		log.add("response %s depth %d status %d", r.Request.URL.Path, r.Request.Depth, r.StatusCode)
	})
	c.OnHTML("title", func(e *colly.HTMLElement) {
		log.add("title %s depth %d %q", e.Request.URL.Path, e.Request.Depth, e.Text)
	})
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		log.add("link %s depth %d -> %s", e.Request.URL.Path, e.Request.Depth, e.Attr("href"))
		_ = e.Request.Visit(e.Attr("href"))
	})
	c.OnError(func(r *colly.Response, err error) {
		log.add("error %s depth %d status %d", r.Request.URL.Path, r.Request.Depth, r.StatusCode)
	})
	c.OnScraped(func(r *colly.Response) {
		log.add("scraped %s depth %d", r.Request.URL.Path, r.Request.Depth)
	})
}

// serveSite serves pages (path -> HTML) and redirects (path -> target);
// anything else is a 404.
func serveSite(t *testing.T, pages, redirects map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to, ok := redirects[r.URL.Path]; ok {
			http.Redirect(w, r, to, http.StatusMovedPermanently)
			return
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// plainColly crawls seed with colly alone, to depth maxDepth (colly's
// count: the seed is 1).
func plainColly(t *testing.T, seed string, maxDepth int) []string {
	t.Helper()
	var log callbackLog
	c := colly.NewCollector(colly.MaxDepth(maxDepth))
	typicalCallbacks(c, &log)
	if err := c.Visit(seed); err != nil {
		t.Fatalf("colly: %v", err)
	}
	c.Wait()
	return log.sorted()
}

// bridgedColly crawls seed with the crawl, the same callbacks on a
// Collector, to the same depth.
func bridgedColly(t *testing.T, seed string, maxDepth int) []string {
	t.Helper()
	var log callbackLog
	c := colly.NewCollector()
	typicalCallbacks(c, &log)
	o := exampleOptions(seed, t.TempDir())
	o.Collector = c
	o.Fetch.NoEmbeds = true // colly fetches only what the callbacks Visit
	o.NoSitemaps = true
	o.Admission.MaxDepth = maxDepth - 1
	cr, err := crawl.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	if err := cr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return log.sorted()
}

// TestCollectorMatchesPlainColly runs a typical colly program's callbacks
// under plain colly and through the crawl, on a local site without
// fragments or redirects, with a depth limit that cuts the site: the same
// callbacks fire on the same pages, at the same depths. Links go down the
// tree or back to pages already seen: a page reachable at two depths
// would get, under colly's depth-first order, the depth of the path it
// took first, and through the crawl's breadth-first order the shortest.
func TestCollectorMatchesPlainColly(t *testing.T) {
	site := serveSite(t, map[string]string{
		"/":         `<title>Home</title><a href="/a">A</a> <a href="/b">B</a> <a href="/missing">gone</a>`,
		"/a":        `<title>A</title><a href="/a/1">A1</a>`,
		"/b":        `<title>B</title><a href="/">Home</a>`,
		"/a/1":      `<title>A1</title><a href="/a/1/x">X</a>`,
		"/a/1/x":    `<title>X</title><a href="/a/1/x/y">Y</a>`,
		"/a/1/x/y":  `<title>Y</title>`,
		"/unlinked": `<title>never visited</title>`,
	}, nil)
	const maxDepth = 3 // colly's: /, then /a /b /missing, then /a/1
	want := plainColly(t, site.URL+"/", maxDepth)
	got := bridgedColly(t, site.URL+"/", maxDepth)
	if !slices.Equal(got, want) {
		t.Errorf("callbacks through the crawl:\n%s\nunder plain colly:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The comparison means something only if the site was crawled and
	// the limit cut it.
	for _, line := range []string{`title /a/1 depth 3 "A1"`, "error /missing depth 2 status 404"} {
		if !slices.Contains(want, line) {
			t.Errorf("plain colly did not log %q", line)
		}
	}
	for _, line := range want {
		if strings.Contains(line, "/a/1/x depth") {
			t.Errorf("plain colly went past depth %d: %q", maxDepth, line)
		}
	}
}

// TestCollectorRedirect checks that a redirect is reported as colly
// reports it: no error, and the callbacks of the page it leads to, under
// that page's URL and at the depth of the link that led to the redirect.
func TestCollectorRedirect(t *testing.T) {
	site := serveSite(t, map[string]string{
		"/":    `<title>Home</title><a href="/old">moved</a>`,
		"/new": `<title>New</title><a href="/">Home</a>`,
	}, map[string]string{"/old": "/new"})
	want := plainColly(t, site.URL+"/", 0)
	got := bridgedColly(t, site.URL+"/", 0)
	if !slices.Equal(got, want) {
		t.Errorf("callbacks through the crawl:\n%s\nunder plain colly:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Contains(want, `title /new depth 2 "New"`) {
		t.Errorf("plain colly did not report the redirect's target at depth 2:\n%s", strings.Join(want, "\n"))
	}
}

// TestCollectorSettingsRejected checks that a Collector setting that would
// make colly skip pages the crawl fetches is refused by Validate, with the
// crawl option to use instead.
func TestCollectorSettingsRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *colly.Collector)
		want string // in the error
	}{
		{"AllowedDomains", func(c *colly.Collector) { c.AllowedDomains = []string{"example.org"} }, "Admission.Scope"},
		{"DisallowedDomains", func(c *colly.Collector) { c.DisallowedDomains = []string{"example.org"} }, "Admission.Deny"},
		{"URLFilters", func(c *colly.Collector) { c.URLFilters = []*regexp.Regexp{regexp.MustCompile(`/docs/`)} }, "Admission.Allow"},
		{"DisallowedURLFilters", func(c *colly.Collector) { c.DisallowedURLFilters = []*regexp.Regexp{regexp.MustCompile(`\.pdf$`)} }, "Admission.Deny"},
		{"MaxDepth", func(c *colly.Collector) { c.MaxDepth = 3 }, "Admission.MaxDepth to 2"},
		{"MaxRequests", func(c *colly.Collector) { c.MaxRequests = 10 }, "MaxPages"},
		{"UserAgent", func(c *colly.Collector) { c.UserAgent = "mybot/1.0" }, "Fetch.UserAgent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := colly.NewCollector()
			tc.set(c)
			o := crawl.Options{Seeds: []string{"https://example.org/"}, Dir: t.TempDir(), Collector: c}
			o.EnsureDefaults()
			err := o.Validate()
			if !errors.Is(err, crawl.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want ErrInvalidOptions naming %s and %s", err, tc.name, tc.want)
			}
		})
	}
	// The same User-Agent on both sides is no conflict, nor is colly's
	// default.
	for _, ua := range []string{"mybot/1.0", ""} {
		c := colly.NewCollector()
		o := crawl.Options{Seeds: []string{"https://example.org/"}, Dir: t.TempDir(), Collector: c}
		if ua != "" {
			c.UserAgent, o.Fetch.UserAgent = ua, ua
		}
		o.EnsureDefaults()
		if err := o.Validate(); err != nil {
			t.Errorf("User-Agent %q on both sides: %v", ua, err)
		}
	}
}
