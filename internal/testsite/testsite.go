// Package testsite generates a deterministic multi-host web site for
// end-to-end crawl tests and benchmarks, and computes exactly which URLs a
// correct crawl of it requests.
//
// The site has Pages pages spread over three hosts (page i lives on host
// i%3 at /d<i/100>/p<i>.html) and exercises what a crawler must get right:
//
//   - cycles: every page links to its predecessor and successor;
//   - one page under several spellings: relative paths with dot segments,
//     percent-encoded unreserved characters, a fragment, the IPv4 host
//     written as 127.1 or 0x7f.0.0.1, and <base href> resolution;
//   - redirects: /go/j (301 to page j, possibly on another host), /go2/j
//     (302 to /go/j, a two-hop chain) and a redirect loop /loop/a <-> /loop/b;
//   - robots.txt: /private/ is disallowed on every host, *.pdf$ on host 1;
//   - a sitemap-like hub (/hub.html) listing every 7th page of its host;
//   - 404s, non-HTML files, rel=nofollow links, out-of-scope hosts and
//     non-http schemes.
//
// Site.Expected walks the same link structure and returns the URLs a crawl
// from the three roots must request and those robots.txt must stop. Each
// Host records the requests it served, so a test can check that nothing
// was fetched twice and nothing disallowed was fetched at all.
//
// Hosts are safe for concurrent use.
package testsite

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// NumHosts is the number of hosts of a Site.
const NumHosts = 3

// Site is a generated site of Pages pages over NumHosts hosts whose
// authorities ("127.0.0.1:port") are Addrs.
type Site struct {
	Pages int
	Addrs [NumHosts]string
	// Plain leaves out the spellings of the host that tools without a URL
	// normalizer cannot tell are 127.0.0.1 (127.1, 0x7f.0.0.1), so that
	// such a tool (wget -D 127.0.0.1) can reach every page too.
	Plain bool
}

// HostOf returns the host index of page i.
func HostOf(i int) int { return i % NumHosts }

// PagePath returns the path of page i.
func PagePath(i int) string { return fmt.Sprintf("/d%d/p%d.html", i/100, i) }

// PageURL returns the canonical URL of page i.
func (s *Site) PageURL(i int) string { return "http://" + s.Addrs[HostOf(i)] + PagePath(i) }

// Roots returns the seed URLs: the root of every host.
func (s *Site) Roots() []string {
	r := make([]string, NumHosts)
	for h := range r {
		r[h] = "http://" + s.Addrs[h] + "/"
	}
	return r
}

// link is one <a> of a generated page.
type link struct {
	href     string // as written
	target   string // canonical URL it resolves to ("" when never followed)
	nofollow bool
}

// page returns the links and optional <base href> of page i.
func (s *Site) page(i int) (base string, links []link) {
	h := HostOf(i)
	self := "http://" + s.Addrs[h]
	n := s.Pages
	dbl := (2*i + 1) % n
	if i%9 == 8 {
		// The successor-by-doubling link is relative to <base href>.
		base = "http://" + s.Addrs[HostOf(dbl)] + fmt.Sprintf("/d%d/", dbl/100)
	}
	abs := base != "" // with a base, everything else is written absolute
	add := func(href, target string) { links = append(links, link{href: href, target: target}) }
	if i+1 < n {
		j := i + 1
		var href string
		switch {
		case abs:
			href = s.PageURL(j)
		case HostOf(j) != h:
			// Another host, spelled differently by i.
			alt := []string{"127.0.0.1", "127.1", "0x7f.0.0.1", "127.0.0.1"}[i%4]
			if s.Plain {
				alt = "127.0.0.1"
			}
			port := s.Addrs[HostOf(j)][strings.LastIndex(s.Addrs[HostOf(j)], ":"):]
			href = "http://" + alt + port + PagePath(j) + "#from" + strconv.Itoa(i)
		}
		add(href, s.PageURL(j))
	}
	if i > 0 {
		j := i - 1
		href := "http://" + s.Addrs[HostOf(j)] + fmt.Sprintf("/d%d/./%%70%d.html", j/100, j)
		add(href, s.PageURL(j))
	}
	if base != "" {
		add(fmt.Sprintf("p%d.html", dbl), s.PageURL(dbl))
	} else {
		add(s.PageURL(dbl), s.PageURL(dbl))
	}
	// Same-host links, relative when no base is set.
	rel := func(path string) string {
		if abs {
			return self + path
		}
		return path
	}
	if j := i + 3; j < n {
		// Same host as i: a relative path with a dot-dot segment.
		href := fmt.Sprintf("../d%d/p%d.html", j/100, j)
		if abs {
			href = s.PageURL(j)
		}
		add(href, s.PageURL(j))
	}
	switch i % 10 {
	case 3:
		j := (i * 13) % n
		add(rel("/go/"+strconv.Itoa(j)), self+"/go/"+strconv.Itoa(j))
	case 7:
		j := (i * 17) % n
		add(rel("/go2/"+strconv.Itoa(j)), self+"/go2/"+strconv.Itoa(j))
	}
	if i%50 == 1 {
		add(rel("/missing/"+strconv.Itoa(i)), self+"/missing/"+strconv.Itoa(i))
	}
	if i%20 == 5 {
		add(rel(fmt.Sprintf("/files/doc%d.pdf", i)), self+fmt.Sprintf("/files/doc%d.pdf", i))
	}
	if i%30 == 2 {
		add(rel("/private/"+strconv.Itoa(i)), self+"/private/"+strconv.Itoa(i))
	}
	if i%25 == 4 {
		links = append(links, link{href: rel("/nofollow/" + strconv.Itoa(i)), nofollow: true})
	}
	if i%40 == 6 {
		add("http://example.invalid/x"+strconv.Itoa(i), "")
	}
	if i%11 == 0 {
		add("mailto:webmaster@example.invalid", "")
	}
	add(rel("/hub.html"), self+"/hub.html")
	return base, links
}

// hub returns the links of host h's hub page: every 7th page of the host
// and the other hosts' hubs.
func (s *Site) hub(h int) []link {
	var links []link
	for i := h; i < s.Pages; i += NumHosts {
		if i%7 == 0 {
			links = append(links, link{href: PagePath(i), target: s.PageURL(i)})
		}
	}
	for o := range NumHosts {
		if o != h {
			u := "http://" + s.Addrs[o] + "/hub.html"
			links = append(links, link{href: u, target: u})
		}
	}
	return links
}

// root returns the links of host h's root page.
func (s *Site) root(h int) []link {
	self := "http://" + s.Addrs[h]
	return []link{
		{href: "hub.html", target: self + "/hub.html"},
		{href: PagePath(h), target: s.PageURL(h)},
		{href: "/loop/a", target: self + "/loop/a"},
		{href: "javascript:void(0)"},
	}
}

// disallowed reports whether robots.txt of host h disallows path.
func disallowed(h int, path string) bool {
	return strings.HasPrefix(path, "/private/") || (h == 1 && strings.HasSuffix(path, ".pdf"))
}

func robotsTxt(h int) string {
	s := "User-agent: *\nDisallow: /private/\n"
	if h == 1 {
		s += "Disallow: /*.pdf$\n"
	}
	return s
}

// Expected returns, sorted, the canonical URLs a crawl from Roots (scope
// host, default limits) requests, and those robots.txt stops.
func (s *Site) Expected() (requested, robotsDenied []string) {
	hostIndex := map[string]int{}
	for h, a := range s.Addrs {
		hostIndex[a] = h
	}
	seen := map[string]bool{}
	queue := append([]string(nil), s.Roots()...)
	for _, r := range queue {
		seen[r] = true
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		rest := strings.TrimPrefix(u, "http://")
		slash := strings.IndexByte(rest, '/')
		h, path := hostIndex[rest[:slash]], rest[slash:]
		if disallowed(h, path) {
			robotsDenied = append(robotsDenied, u)
			continue
		}
		requested = append(requested, u)
		for _, t := range s.targets(h, path) {
			if t != "" && !seen[t] {
				seen[t] = true
				queue = append(queue, t)
			}
		}
	}
	slices.Sort(requested)
	slices.Sort(robotsDenied)
	return requested, robotsDenied
}

// targets returns the canonical URLs a fetch of path on host h leads to:
// followed links, or a redirect target.
func (s *Site) targets(h int, path string) []string {
	self := "http://" + s.Addrs[h]
	var ls []link
	switch {
	case path == "/":
		ls = s.root(h)
	case path == "/hub.html":
		ls = s.hub(h)
	case path == "/loop/a":
		return []string{self + "/loop/b"}
	case path == "/loop/b":
		return []string{self + "/loop/a"}
	case strings.HasPrefix(path, "/go/"):
		j, _ := strconv.Atoi(path[len("/go/"):])
		return []string{s.PageURL(j)}
	case strings.HasPrefix(path, "/go2/"):
		return []string{self + "/go/" + path[len("/go2/"):]}
	default:
		i, ok := s.pageIndex(h, path)
		if !ok {
			return nil
		}
		_, ls = s.page(i)
	}
	var t []string
	for _, l := range ls {
		if !l.nofollow {
			t = append(t, l.target)
		}
	}
	return t
}

// pageIndex parses a page path of host h.
func (s *Site) pageIndex(h int, path string) (int, bool) {
	var b, i int
	if _, err := fmt.Sscanf(path, "/d%d/p%d.html", &b, &i); err != nil {
		return 0, false
	}
	if i < 0 || i >= s.Pages || HostOf(i) != h || PagePath(i) != path {
		return 0, false
	}
	return i, true
}

// Host serves one host of a Site and records the requests it answered.
type Host struct {
	site  *Site
	index int

	mu       sync.Mutex // protects requests
	requests map[string]int
}

// NewHost returns the handler of host index h of s. The site's Addrs may be
// filled in after the handler is made, but before it serves.
func NewHost(s *Site, h int) *Host {
	return &Host{site: s, index: h, requests: map[string]int{}}
}

// Requests returns how many times each URL (http://addr + request URI) was
// requested.
func (hs *Host) Requests() map[string]int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	m := make(map[string]int, len(hs.requests))
	for k, v := range hs.requests {
		m[k] = v
	}
	return m
}

func (hs *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s, h := hs.site, hs.index
	self := "http://" + s.Addrs[h]
	// Route on the decoded path, as servers do: /d0/%70N.html is page N.
	path := r.URL.Path
	hs.mu.Lock()
	hs.requests[self+r.URL.RequestURI()]++
	hs.mu.Unlock()
	switch {
	case path == "/robots.txt":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, robotsTxt(h))
	case path == "/":
		writePage(w, "root", "", s.root(h))
	case path == "/hub.html":
		writePage(w, "hub", "", s.hub(h))
	case path == "/loop/a":
		http.Redirect(w, r, "/loop/b", http.StatusMovedPermanently)
	case path == "/loop/b":
		http.Redirect(w, r, "/loop/a", http.StatusMovedPermanently)
	case strings.HasPrefix(path, "/go/"):
		j, err := strconv.Atoi(path[len("/go/"):])
		if err != nil || j < 0 || j >= s.Pages {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, s.PageURL(j), http.StatusMovedPermanently)
	case strings.HasPrefix(path, "/go2/"):
		http.Redirect(w, r, "/go/"+path[len("/go2/"):], http.StatusFound)
	case strings.HasPrefix(path, "/files/"):
		w.Header().Set("Content-Type", "application/pdf")
		fmt.Fprint(w, "%PDF-1.4\n% not really a pdf\n")
	case strings.HasPrefix(path, "/private/"), strings.HasPrefix(path, "/nofollow/"):
		writePage(w, "should not be fetched", "", nil)
	default:
		i, ok := s.pageIndex(h, path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		base, links := s.page(i)
		writePage(w, "page "+strconv.Itoa(i), base, links)
	}
}

func writePage(w http.ResponseWriter, title, base string, links []link) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</title>")
	if base != "" {
		fmt.Fprintf(&b, `<base href="%s">`, html.EscapeString(base))
	}
	b.WriteString("</head><body>\n")
	for _, l := range links {
		rel := ""
		if l.nofollow {
			rel = ` rel="nofollow"`
		}
		fmt.Fprintf(&b, "<p><a href=\"%s\"%s>link</a> lorem ipsum dolor sit amet</p>\n", html.EscapeString(l.href), rel)
	}
	b.WriteString("</body></html>\n")
	_, _ = w.Write([]byte(b.String()))
}

// Start serves a Site of pages pages on NumHosts loopback servers, closed
// when the test ends, and returns it with its hosts.
func Start(tb testing.TB, pages int) (*Site, []*Host) {
	tb.Helper()
	s := &Site{Pages: pages}
	hosts := make([]*Host, NumHosts)
	for h := range hosts {
		hosts[h] = NewHost(s, h)
		srv := httptest.NewServer(hosts[h])
		tb.Cleanup(srv.Close)
		s.Addrs[h] = strings.TrimPrefix(srv.URL, "http://")
	}
	return s, hosts
}
