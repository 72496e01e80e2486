package testweb

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/urlnorm"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// allFeatures is a small web with every option on.
func allFeatures(a Addressing) Options {
	return Options{Seed: 7, Hosts: 12, Pages: 400, Embeds: true, Sitemaps: true, NearDuplicates: true, Addressing: a}
}

func start(t *testing.T, o Options) *Web {
	t.Helper()
	w, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func mustBuild(t testing.TB, o Options, port int) *Web {
	t.Helper()
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return build(o, port)
}

func TestHostSizes(t *testing.T) {
	for _, tc := range []struct{ hosts, pages, limit int }{
		{1, 1, 10}, {3, 3, 1}, {10, 1000, 10_000}, {10_000, 1_000_000, 50_000}, {100, 5000, 60}, {7, 70, 10},
	} {
		sizes := hostSizes(1, tc.hosts, tc.pages, tc.limit, DefaultSizeExponent)
		sum := 0
		for _, s := range sizes {
			if s < 1 || int(s) > tc.limit {
				t.Fatalf("%+v: a host of %d pages", tc, s)
			}
			sum += int(s)
		}
		if sum != tc.pages {
			t.Errorf("%+v: %d pages in all, want %d", tc, sum, tc.pages)
		}
	}
	// Heavy tail: at 10,000 hosts and a mean of 100 pages, the median
	// host is small and the largest hundred hold a large share.
	sizes := hostSizes(1, 10_000, 1_000_000, 50_000, DefaultSizeExponent)
	sorted := slices.Clone(sizes)
	slices.Sort(sorted)
	top := 0
	for _, s := range sorted[len(sorted)-100:] {
		top += int(s)
	}
	median := sorted[len(sorted)/2]
	t.Logf("10,000 hosts, 1M pages: median %d, max %d, top 1%% hold %.0f%%", median, sorted[len(sorted)-1], float64(top)/1e4)
	if median >= 100 || top < 200_000 {
		t.Errorf("not heavy-tailed: median %d, top 100 hosts hold %d pages", median, top)
	}
	if !slices.Equal(sizes, hostSizes(1, 10_000, 1_000_000, 50_000, DefaultSizeExponent)) {
		t.Error("sizes differ between two draws with one seed")
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{Hosts: -1}, {Hosts: 3, Pages: 2}, {MaxHostPages: MaxHostPages + 1}, {Hosts: 2, Pages: 30, MaxHostPages: 10},
		{SizeExponent: -1}, {SizeExponent: math.NaN()}, {CrossLinks: 51}, {Duplicates: 1.5}, {Addressing: 9},
		{Addressing: Loopback, Hosts: MaxLoopbackHosts + 1},
	} {
		o.EnsureDefaults()
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: err %v, want ErrInvalidOptions", o, err)
		}
	}
	if _, err := Start(Options{Hosts: 2, Pages: 1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Start with bad options: %v", err)
	}
	var o Options
	o.EnsureDefaults()
	if err := o.Validate(); err != nil || o.Hosts != DefaultHosts || o.Pages != DefaultHosts*DefaultPagesPerHost {
		t.Errorf("zero Options: %+v, %v", o, err)
	}
}

// TestSpellings checks every link the web writes, in every addressing and
// on the default port too: the href resolves (urlnorm, with the default
// options) to the canonical URL of its target, and that URL routes back
// to the target. This is what lets Expected count a URL once however it
// is spelled.
func TestSpellings(t *testing.T) {
	norm, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []Addressing{Names, Loopback} {
		for _, port := range []int{8080, 80} {
			o := allFeatures(a)
			o.Duplicates = 1 // every link in another spelling
			w := mustBuild(t, o, port)
			e, err := w.Expected(ExpectOptions{Embeds: true, Sitemaps: true, Scope: frontier.ScopeAny,
				MaxURLLength: -1, MaxPathSegments: -1, MaxSegmentRepeats: -1})
			if err != nil {
				t.Fatal(err)
			}
			checked, spellings := 0, map[string]bool{}
			for _, u := range e.Fetched() {
				n, ok := w.parse(u)
				if !ok {
					t.Fatalf("%s does not route", u)
				}
				for _, l := range w.links(nil, n) {
					if l.target.kind == kNone {
						continue
					}
					want := w.url(l.target)
					got, err := norm.Resolve(u, l.href)
					if err != nil || got != want {
						t.Fatalf("%s on %s: resolves to %q (%v), want %q", l.href, u, got, err, want)
					}
					if back, ok := w.parse(want); !ok || back != l.target {
						t.Fatalf("%s routes to %+v, %v; want %+v", want, back, ok, l.target)
					}
					checked++
					spellings[strings.ToLower(l.href)[:min(len(l.href), 6)]] = true
				}
			}
			if checked < 10_000 {
				t.Errorf("%v port %d: only %d links checked", a, port, checked)
			}
		}
	}
}

// TestRoute checks that only the canonical spelling of a path is served.
func TestRoute(t *testing.T) {
	w := mustBuild(t, allFeatures(Names), 8080)
	for _, tc := range []struct {
		path, query string
		ok          bool
	}{
		{"/", "", true},
		{"/d0/p1.html", "", true},
		{"/d0/p1.html", "x=1", false},
		{"/d1/p1.html", "", false}, // wrong directory
		{"/d0/p01.html", "", false},
		{"/d00/", "", false},
		{"/d0/p100000.html", "", false},
		{"/shop/i3.html", "", true},
		{"/shop/i3.html", "sid=" + w.sessionID(2), true},
		{"/shop/i3.html", "sid=" + strings.ToUpper(w.sessionID(2)), false},
		{"/shop/i3.html", "sid=zz", false},
		{"/calendar/2000/01/", "", true},
		{"/calendar/2000/1/", "", false},
		{"/calendar/2010/01/", "", false}, // past the 120 months
		{"/loop/a/a/", "", true},
		{"/loop/a/b/", "", false},
		{"/long/" + strings.Repeat("x", 2*longStep), "", true},
		{"/long/" + strings.Repeat("x", 2*longStep+1), "", false},
		{"/static/site.css", "", true},
		{"/img/i3@2x.png", "", true},
		{"/img/i3@3x.png", "", false},
		{"/sitemaps/pages-0.xml.gz", "", true},
		{"/sitemaps/pages-0.xml", "", false},
		{"/sitemaps/big.xml", "", true},
	} {
		n, ok := w.route(0, tc.path, tc.query)
		if ok != tc.ok {
			t.Errorf("%s?%s: routed %v (%+v), want %v", tc.path, tc.query, ok, n, tc.ok)
		}
	}
	if _, ok := w.route(1, "/sitemaps/big.xml", ""); ok {
		t.Error("host 1 serves the oversized sitemap")
	}
	for _, name := range []string{"h1.web.test", "h11.web.test"} {
		if w.hostIndex(name) == noHost {
			t.Errorf("%s is no host", name)
		}
	}
	for _, name := range []string{"h01.web.test", "h12.web.test", "h-1.web.test", "web.test", "h1.web.test.", "x.h1.web.test"} {
		if h := w.hostIndex(name); h != noHost {
			t.Errorf("%s is host %d", name, h)
		}
	}
}

// FuzzRoute checks the server's parsing of host names and paths: never a
// panic, and whatever it routes, it routes from the canonical spelling.
func FuzzRoute(f *testing.F) {
	f.Add("h1.web.test", "/d0/p1.html", "")
	f.Add("h0.web.test", "/shop/i3.html", "sid=00000000")
	f.Add("127.1.1.2", "/calendar/2001/12/", "")
	f.Add("static.cdn.test", "/lib/v3/lib.js", "")
	f.Add("h0.web.test", "/grow/s1/s2/", "")
	f.Add("h+0.web.test", "/shop/i+3.html", "") // signs and leading zeros are other names
	names := mustBuild(f, allFeatures(Names), 8080)
	loop := mustBuild(f, allFeatures(Loopback), 8080)
	f.Fuzz(func(t *testing.T, host, path, query string) {
		for _, w := range []*Web{names, loop} {
			h := w.hostIndex(host)
			if h == noHost {
				continue
			}
			if got := hostOnly(w.authority(h)); got != host {
				t.Fatalf("host %q is %d, named %q", host, h, got)
			}
			n, ok := w.route(h, path, query)
			if !ok {
				continue
			}
			want := path
			if query != "" {
				want += "?" + query
			}
			if got := w.path(n); got != want || !w.exists(n) {
				t.Fatalf("%s?%s routes to %+v, whose path is %q", path, query, n, got)
			}
		}
	})
}

func TestDeterministic(t *testing.T) {
	render := func(o Options, u string) []byte {
		w := mustBuild(t, o, 8080)
		n, ok := w.parse(u)
		if !ok {
			t.Fatalf("%s does not route", u)
		}
		return w.html(nil, n, w.links(nil, n))
	}
	o := allFeatures(Names)
	u := "http://h3.web.test:8080/d0/p2.html"
	a, b := render(o, u), render(o, u)
	if !bytes.Equal(a, b) {
		t.Error("one seed, two pages")
	}
	o.Seed++
	if bytes.Equal(a, render(o, u)) {
		t.Error("another seed, the same page")
	}
	if len(a) < 2000 || len(a) > 8000 {
		t.Errorf("a page of %d bytes, want a few KiB", len(a))
	}
}

// TestServe checks statuses, content types and bodies over HTTP.
func TestServe(t *testing.T) {
	w := start(t, Options{Seed: 3, Hosts: 4, Pages: 200, Embeds: true, Sitemaps: true, Record: true})
	tr := &http.Transport{DialContext: dialer(w)}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	root := w.Root(0)
	for _, tc := range []struct {
		url, ctype string
		status     int
		contains   string
	}{
		{root, "text/html", 200, `<title>Home of h0.web.test:`},
		{w.PageURL(0, 1), "text/html", 200, "<title>Page 1</title>"},
		{root + "d0/%70%31.html", "text/html", 200, "<title>Page 1</title>"}, // decoded as servers do
		{root + "old/p1", "text/html", 301, ""},
		{root + "gone/1.html", "text/html", 404, ""},
		{root + "nowhere", "text/html", 404, ""},
		{"http://" + w.Addr() + "/", "text/html", 404, ""}, // no host of the web
		{root + "robots.txt", "text/plain", 200, "Sitemap: " + root + "sitemap_index.xml"},
		{root + "sitemap_index.xml", "application/xml", 200, "<sitemap><loc>" + root + "sitemaps/pages-0.xml.gz</loc>"},
		{root + "static/site.css", "text/css", 200, `@import "base.css";`},
		{root + "img/i1.png", "image/png", 200, "PNG"},
		{"http://" + CDNName + ":" + fmt.Sprint(w.Port()) + "/css/cdn.css", "text/css", 200, "url(../fonts/f.woff2)"},
	} {
		res, err := c.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.ctype) || !bytes.Contains(body, []byte(tc.contains)) {
			t.Errorf("%s: %d %s %.80q; want %d %s containing %q", tc.url, res.StatusCode, res.Header.Get("Content-Type"), body, tc.status, tc.ctype, tc.contains)
		}
	}
	res, err := c.Get(root + "sitemaps/pages-0.xml.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	xmlBody, _ := io.ReadAll(zr)
	if n := bytes.Count(xmlBody, []byte("<url>")); n != w.HostPages(0)+hiddenPages {
		t.Errorf("gzip sitemap lists %d URLs, want %d", n, w.HostPages(0)+hiddenPages)
	}
	if got := w.Requests()[root+"d0/%70%31.html"]; got != 1 {
		t.Errorf("Requests counted the encoded spelling %d times, want 1", got)
	}
	if s := w.Stats(); s.Requests != 13 || s.Bytes == 0 {
		t.Errorf("stats %+v", s)
	}
}

// dialer connects every name of the web to its listener, as a client
// with w.Resolver does.
func dialer(w *Web) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Resolver: w.Resolver()}
	return d.DialContext
}

// TestCrawl crawls the web over HTTP with the project's own fetch,
// urlnorm and frontier admission, and checks that it fetches exactly
// what Expected says, in each crawl mode.
func TestCrawl(t *testing.T) {
	names := start(t, Options{Seed: 7, Hosts: 8, Pages: 200, Embeds: true, Sitemaps: true, NearDuplicates: true})
	for _, tc := range []struct {
		name string
		o    ExpectOptions
	}{
		{"links", ExpectOptions{}},
		{"embeds-sitemaps", ExpectOptions{Embeds: true, Sitemaps: true}},
		{"domain-one-seed-no-sessions", ExpectOptions{Scope: frontier.ScopeDomain, Seeds: []string{names.PageURL(5, 0)}, RemoveSessionParams: true}},
		{"any-limits", ExpectOptions{Scope: frontier.ScopeAny, Seeds: []string{names.Root(0)},
			MaxSegmentRepeats: 3, MaxPathSegments: 8, MaxURLLength: 400, Embeds: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := names.Expected(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			checkCrawl(t, names, tc.o, e)
		})
	}
	t.Run("loopback", func(t *testing.T) {
		w := start(t, Options{Seed: 9, Hosts: 6, Pages: 150, Addressing: Loopback, Embeds: true})
		o := ExpectOptions{Embeds: true}
		e, err := w.Expected(o)
		if err != nil {
			t.Fatal(err)
		}
		checkCrawl(t, w, o, e)
	})
}

func checkCrawl(t *testing.T, w *Web, o ExpectOptions, e *Expectation) {
	t.Helper()
	got := crawl(t, w, o)
	if !slices.Equal(got.fetched, e.Fetched()) {
		t.Errorf("fetched %d URLs, Expected %d; first differences:\n%s", len(got.fetched), len(e.Fetched()), diff(got.fetched, e.Fetched()))
	}
	if !slices.Equal(got.denied, e.RobotsDenied) {
		t.Errorf("robots.txt denied %d, Expected %d:\n%s", len(got.denied), len(e.RobotsDenied), diff(got.denied, e.RobotsDenied))
	}
	if !slices.Equal(got.cut, e.SitemapCut) {
		t.Errorf("sitemap cut %v, Expected %v", got.cut, e.SitemapCut)
	}
	if len(e.Pages) == 0 || (o.Embeds && len(e.Embeds) == 0) ||
		(o.Sitemaps && (len(e.Sitemaps) == 0 || len(e.SitemapOnly) == 0)) {
		t.Errorf("an empty list: %d pages, %d embeds, %d sitemaps, %d sitemap-only",
			len(e.Pages), len(e.Embeds), len(e.Sitemaps), len(e.SitemapOnly))
	}
	t.Logf("%d fetched (%d pages, %d embeds, %d sitemaps, %d sitemap-only), %d denied, %d cut, %d near-duplicate groups",
		len(got.fetched), len(e.Pages), len(e.Embeds), len(e.Sitemaps), len(e.SitemapOnly), len(e.RobotsDenied), len(e.SitemapCut), len(e.NearDuplicates))
}

func diff(a, b []string) string {
	var out []string
	ma, mb := map[string]bool{}, map[string]bool{}
	for _, s := range a {
		ma[s] = true
	}
	for _, s := range b {
		mb[s] = true
	}
	for _, s := range a {
		if !mb[s] && len(out) < 10 {
			out = append(out, "  only crawled:  "+s)
		}
	}
	for _, s := range b {
		if !ma[s] && len(out) < 20 {
			out = append(out, "  only expected: "+s)
		}
	}
	return strings.Join(out, "\n")
}

type crawlResult struct{ fetched, denied, cut []string }

// crawl is a small breadth-first crawler built from the project's parts:
// fetch for HTTP, robots.txt and <a>/<link> extraction, frontier's
// Admission for normalization, scope and trap limits, and x/net/html plus
// two regular expressions (enough for this web's CSS) for requisites and
// encoding/xml for sitemaps, which fetch does not read yet. Each wave of
// the queue is fetched concurrently.
func crawl(t *testing.T, w *Web, o ExpectOptions) crawlResult {
	t.Helper()
	ctx := context.Background()
	f, err := fetch.New(fetch.Options{AllowPrivate: true, Resolver: w.Resolver(), MaxOutlinks: -1, FetchTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	norm, err := urlnorm.New(urlnorm.Options{RemoveSessionParams: o.RemoveSessionParams})
	if err != nil {
		t.Fatal(err)
	}
	limits := frontier.Limits{MaxURLLength: o.MaxURLLength, MaxPathSegments: o.MaxPathSegments, MaxSegmentRepeats: o.MaxSegmentRepeats}
	admission := func(scope frontier.Scope) *frontier.Admission {
		a, err := frontier.NewAdmission(norm, urlnorm.RegistrableDomain, frontier.AdmissionOptions{
			Scope: scope, MaxDepth: -1, Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	links, embeds := admission(o.Scope), admission(frontier.ScopeAny) // requisites come from any host
	seeds := o.Seeds
	if seeds == nil {
		seeds = w.Seeds()
	}
	type entry struct {
		frontier.Entry
		embed bool // a requisite: CSS is read, nothing else
	}
	seen := map[string]bool{}
	var queue []entry
	queueAs := func(c frontier.Candidate, r frontier.Refusal, embed bool) {
		if r == frontier.Admitted && !seen[c.URL] {
			seen[c.URL] = true
			queue = append(queue, entry{frontier.Entry{URL: c.URL, Depth: c.Depth, Via: c.Via}, embed})
		}
	}
	add := func(c frontier.Candidate, r frontier.Refusal) { queueAs(c, r, false) }
	addEmbed := func(c frontier.Candidate, r frontier.Refusal) { queueAs(c, r, true) }
	maxEntries := o.MaxSitemapURLs
	if maxEntries == 0 {
		maxEntries = SitemapLimit
	}
	for _, s := range seeds {
		sd, err := links.ParseSeed(s)
		if err != nil {
			t.Fatal(err)
		}
		links.AddScope([]string{sd.Host}, []string{sd.Domain})
	}
	for _, s := range seeds {
		c, r := links.CheckSeed(s)
		add(c, r)
	}
	robots := map[string]*fetch.Robots{}
	var res crawlResult
	cut := map[string]bool{}
	for len(queue) > 0 {
		wave := queue
		queue = nil
		// robots.txt first, for every host of the wave.
		for _, e := range wave {
			site := siteOf(e.URL)
			if _, ok := robots[site]; ok {
				continue
			}
			r, _, err := f.FetchRobots(ctx, e.URL)
			if err != nil {
				t.Fatalf("robots.txt of %s: %v", site, err)
			}
			robots[site] = r
			if o.Sitemaps {
				for _, sm := range r.Sitemaps() {
					add(links.Link(frontier.Entry{URL: site + "/robots.txt"}, "", sm))
				}
			}
		}
		results := make([]*fetch.Result, len(wave))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i, e := range wave {
			pq := e.URL[len(siteOf(e.URL)):]
			if !robots[siteOf(e.URL)].Allowed("layercrawl", pq) {
				res.denied = append(res.denied, e.URL)
				continue
			}
			res.fetched = append(res.fetched, e.URL)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				r, err := f.Fetch(ctx, e.URL)
				if err != nil {
					t.Errorf("%s: %v", e.URL, err)
					return
				}
				results[i] = r
			}()
		}
		wg.Wait()
		for i, r := range results {
			if r == nil {
				continue
			}
			e := wave[i]
			switch ct := r.ContentType; {
			case r.Location != "":
				add(links.Redirect(e.Entry, r.Location))
			case e.embed:
				if o.Embeds && strings.HasPrefix(ct, "text/css") {
					for _, ref := range cssRefs(r.Body) {
						addEmbed(embeds.Link(e.Entry, r.URL, ref))
					}
				}
			case strings.HasPrefix(ct, "text/html"):
				for _, l := range r.Links {
					// Requisites (hop E) are the oracle's own below: it
					// reads them independently of fetch's extractor.
					if l.NoFollow || l.Hop == fetch.HopEmbed || (o.Embeds && l.Tag == "link") {
						continue
					}
					add(links.Link(e.Entry, r.Base.String(), l.Href))
				}
				if o.Embeds {
					for _, ref := range htmlRequisites(t, r.Body) {
						addEmbed(embeds.Link(e.Entry, r.Base.String(), ref))
					}
				}
			case o.Sitemaps && (strings.HasPrefix(ct, "application/xml") || strings.HasPrefix(ct, "application/gzip")):
				locs, isIndex := sitemapLocs(t, r.Body, ct)
				for j, loc := range locs {
					if !isIndex && j >= maxEntries && maxEntries > 0 {
						if u, err := norm.Normalize(loc); err == nil {
							cut[u] = true
						}
						continue
					}
					add(links.Link(e.Entry, r.URL, loc))
				}
			}
		}
	}
	for u := range cut {
		if !seen[u] {
			res.cut = append(res.cut, u)
		}
	}
	slices.Sort(res.fetched)
	slices.Sort(res.denied)
	slices.Sort(res.cut)
	return res
}

func siteOf(u string) string {
	i := strings.Index(u, "://") + 3
	return u[:i+strings.IndexByte(u[i:], '/')]
}

var (
	cssImport = regexp.MustCompile(`@import\s+"([^"]+)"`)
	cssURL    = regexp.MustCompile(`url\(\s*['"]?([^'")]+)['"]?\s*\)`)
)

func cssRefs(b []byte) []string {
	var refs []string
	for _, re := range []*regexp.Regexp{cssImport, cssURL} {
		for _, m := range re.FindAllSubmatch(b, -1) {
			refs = append(refs, string(m[1]))
		}
	}
	return refs
}

// htmlRequisites returns the requisite URLs of an HTML page: img src and
// srcset, source srcset, script src, link href (stylesheet, icon), and
// url() in style attributes and elements.
func htmlRequisites(t *testing.T, b []byte) []string {
	var refs []string
	srcset := func(v string) {
		for _, c := range strings.Split(v, ",") {
			if f := strings.Fields(c); len(f) > 0 {
				refs = append(refs, f[0])
			}
		}
	}
	z := html.NewTokenizer(bytes.NewReader(b))
	inStyle := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return refs
		case html.TextToken:
			if inStyle {
				refs = append(refs, cssRefs(z.Text())...)
			}
		case html.EndTagToken:
			inStyle = false
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			inStyle = tok.Data == "style"
			for _, a := range tok.Attr {
				switch {
				case a.Key == "style":
					refs = append(refs, cssRefs([]byte(a.Val))...)
				case a.Key == "srcset":
					srcset(a.Val)
				case a.Key == "src" && (tok.Data == "img" || tok.Data == "script"):
					refs = append(refs, a.Val)
				case a.Key == "href" && tok.Data == "link":
					refs = append(refs, a.Val)
				}
			}
		}
	}
}

// sitemapLocs returns the <loc> values of a sitemap or sitemap index.
func sitemapLocs(t *testing.T, body []byte, ctype string) (locs []string, index bool) {
	if strings.HasPrefix(ctype, "application/gzip") {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	// A scan for <loc> rather than encoding/xml: the oversized sitemap
	// has 50,010 entries, and the race detector makes a decoder slow.
	index = bytes.Contains(body, []byte("<sitemapindex"))
	for {
		i := bytes.Index(body, []byte("<loc>"))
		if i < 0 {
			return locs, index
		}
		body = body[i+len("<loc>"):]
		j := bytes.Index(body, []byte("</loc>"))
		if j < 0 {
			t.Fatalf("sitemap: <loc> without </loc>")
		}
		locs = append(locs, html.UnescapeString(string(body[:j])))
		body = body[j:]
	}
}

// TestNearDuplicates checks that the press releases of a host differ only
// in their date and counter.
func TestNearDuplicates(t *testing.T) {
	w := mustBuild(t, allFeatures(Names), 8080)
	e, err := w.Expected(ExpectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.NearDuplicates) == 0 {
		t.Fatal("no near-duplicate groups")
	}
	digits := regexp.MustCompile(`[0-9]+`)
	for _, g := range e.NearDuplicates {
		var first []byte
		for _, u := range g {
			n, _ := w.parse(u)
			body := w.html(nil, n, w.links(nil, n))
			if first == nil {
				first = body
				continue
			}
			if bytes.Equal(body, first) {
				t.Errorf("%s is an exact duplicate", u)
			}
			if !bytes.Equal(digits.ReplaceAll(body, nil), digits.ReplaceAll(first, nil)) {
				t.Errorf("%s differs from %s in more than numbers", u, g[0])
			}
		}
	}
}

// TestInDegree checks that links between hosts have a heavy-tailed
// in-degree: a few hosts draw many of them, the median host few.
func TestInDegree(t *testing.T) {
	w := mustBuild(t, Options{Seed: 2, Hosts: 1000, Pages: 20_000}, 8080)
	in := make([]int, w.Hosts())
	total := 0
	for h := range w.Hosts() {
		for j := range w.HostPages(h) {
			for _, l := range w.links(nil, w.page(h, j)) {
				if l.target.kind != kNone && int(l.target.host) != h && l.target.host != cdnHost {
					in[l.target.host]++
					total++
				}
			}
		}
	}
	slices.Sort(in)
	top := 0
	for _, n := range in[len(in)-10:] {
		top += n
	}
	median := in[len(in)/2]
	t.Logf("%d cross-host links; median host in-degree %d, max %d, top 1%% of hosts draw %.0f%%", total, median, in[len(in)-1], 100*float64(top)/float64(total))
	if in[len(in)-1] < 50*max(median, 1) || top < total/10 {
		t.Errorf("in-degree not heavy-tailed: median %d, max %d, top 10 hosts %d of %d", median, in[len(in)-1], top, total)
	}
}
