// Package hostile serves a hostile web of several hosts for end-to-end
// crawler tests: every trap of issue #6 reachable by links from one seed,
// spread over hosts so that the slow ones do not queue behind each other
// (a crawler fetches one page of a host at a time).
//
// The hosts are httptest servers on loopback ports of 127.0.0.1, so one
// host name puts them all in a host-scoped crawl, while each port has its
// own queue and robots.txt:
//
//   - Main (robots.txt disallows /private/): the index links to every
//     endpoint below and to the other hosts: an endless body, a 64 MiB
//     body, a gzip bomb (512 MiB of zeros, about 0.5 MiB on the wire),
//     connection resets before and during the body, a truncated body,
//     a non-HTTP answer, a page of 50,000 links, NUL bytes and invalid
//     UTF-8 around links, a redirect loop, an endless redirect chain, and
//     the crawler traps: ever-deeper relative paths (/deep/ links to
//     "a/"), a calendar (?d=N links to N-1 and N+1), a session id that
//     changes on every link, and ever-longer URLs (128 bytes more per
//     link). It also links to a host under the reserved .invalid TLD
//     (RFC 6761), which never resolves.
//   - Drip: /drip sends its headers, then one byte per DripInterval for
//     ever.
//   - Silent: /silent accepts the request and never answers.
//   - HugeRobots: a 10 MiB robots.txt whose rule disallowing /after-cut/
//     lies past the 500 KiB a crawler parses; its index links to
//     /private/x (disallowed before the cut) and /after-cut/x.
//   - SlowRobots: robots.txt never answers, so the site is unreachable
//     for robots.txt purposes and its index must not be fetched.
//
// Handlers return when their client goes away or the Site closes; Close
// waits for all of them, so a test can check for leaked goroutines after
// it. A Site's methods are safe for concurrent use; nothing is written to
// disk. Big bodies are generated once per process (sync.Once) and shared
// read-only by every Site.
//
// fetch/hostile serves similar endpoints on one host for the fetch
// package's own tests; this package spreads them over hosts, adds the
// per-host robots.txt cases and cross-host links, and counts requests, as
// a whole crawl needs.
package hostile

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layercrawl/layercrawl/internal/httptrap"
)

// UnresolvableHost is a name under .invalid (RFC 6761): it never resolves.
const UnresolvableHost = "no-such-host.hostile.invalid"

// Sizes of the generated bodies.
const (
	BombSize      = 512 << 20 // bytes of zeros in the gzip bomb, decompressed
	BigSize       = 64 << 20  // Content-Length of /big
	ManyLinks     = 50_000    // links on /links
	HugeRobotSize = 10 << 20  // bytes of the huge robots.txt
	LongerStep    = 128       // bytes each link of the ever-longer trap adds
)

// Options configures a Site. The zero value is the hostile web of the
// issue.
type Options struct {
	// DripInterval is the pause between the bytes of /drip. Default 1s.
	DripInterval time.Duration
}

// Site is a running hostile web.
type Site struct {
	// Base URLs ("http://127.0.0.1:port") of the hosts.
	Main, Drip, Silent, HugeRobots, SlowRobots string

	opts    Options
	servers []*httptest.Server
	quit    chan struct{} // closed by Close: ends the handlers that wait
	once    sync.Once
	session atomic.Uint64

	mu       sync.Mutex     // protects requests
	requests map[string]int // "host/path?query" -> count
}

var (
	bombOnce  sync.Once
	bomb      []byte
	linksOnce sync.Once
	links     []byte
	robotOnce sync.Once
	hugeRobot []byte
)

// Bomb returns the gzip bomb: BombSize zeros as concatenated gzip members
// of 1 MiB each (RFC 1952 section 2.2), which readers decode as one
// stream. Only one member is compressed; the rest are copies.
func Bomb() []byte {
	bombOnce.Do(func() { bomb = httptrap.GzipBomb(BombSize >> 20) })
	return bomb
}

func manyLinks() []byte {
	linksOnce.Do(func() {
		var b bytes.Buffer
		b.WriteString("<!doctype html><title>links</title>\n")
		for i := range ManyLinks {
			fmt.Fprintf(&b, "<a href=\"/links/%d\">%d</a>\n", i, i)
		}
		links = b.Bytes()
	})
	return links
}

func hugeRobots() []byte {
	robotOnce.Do(func() {
		var b bytes.Buffer
		b.Grow(HugeRobotSize)
		b.WriteString("User-agent: *\nDisallow: /private/\n")
		for b.Len() < 1<<20 {
			b.WriteString("# padding that pushes the next rule past the 500 KiB cut ......\n")
		}
		b.WriteString("Disallow: /after-cut/\n")
		for b.Len() < HugeRobotSize {
			b.WriteString("# padding .......................................................\n")
		}
		hugeRobot = b.Bytes()[:HugeRobotSize]
	})
	return hugeRobot
}

// Start starts the hosts on loopback ports.
func Start(opts Options) *Site {
	if opts.DripInterval <= 0 {
		opts.DripInterval = time.Second
	}
	s := &Site{opts: opts, quit: make(chan struct{}), requests: map[string]int{}}
	// Generate the big bodies now, not in the first handler that needs
	// them, where a client's deadline would be charged for it.
	Bomb()
	manyLinks()
	hugeRobots()
	start := func(h http.HandlerFunc) string {
		srv := httptest.NewUnstartedServer(s.count(h))
		// Resets and garbage make the server log; that is the point.
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.Start()
		s.servers = append(s.servers, srv)
		return srv.URL
	}
	s.Main = start(s.serveMain)
	s.Drip = start(s.serveDrip)
	s.Silent = start(s.serveSilent)
	s.HugeRobots = start(s.serveHugeRobots)
	s.SlowRobots = start(s.serveSlowRobots)
	return s
}

// Close stops every host and waits for their handlers to return.
func (s *Site) Close() {
	s.once.Do(func() { close(s.quit) })
	for _, srv := range s.servers {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// Seeds returns the seed list of a crawl of the site: the main index, and
// a page on the unresolvable host, whose name must be a seed to be in a
// host-scoped crawl's scope.
func (s *Site) Seeds() []string {
	return []string{s.Main + "/", "http://" + UnresolvableHost + "/"}
}

// Requests returns how often each URL (host:port and request URI) was
// requested.
func (s *Site) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.requests))
	for k, v := range s.requests {
		m[k] = v
	}
	return m
}

func (s *Site) count(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.Host+r.URL.RequestURI()]++
		s.mu.Unlock()
		h(w, r)
	}
}

// MainPaths are the endpoints of the main host linked from its index.
var MainPaths = []string{
	"/endless", "/big", "/bomb", "/reset", "/reset-mid-body", "/short", "/garbage",
	"/links", "/bad-bytes", "/loop/a", "/chain/0", "/deep/", "/calendar?d=0",
	"/session/1/page", "/longer/x", "/private/secret",
}

func (s *Site) serveMain(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/":
		httptrap.HTML(w)
		io.WriteString(w, "<!doctype html><title>hostile</title>\n")
		for _, l := range MainPaths {
			fmt.Fprintf(w, "<a href=\"%s\">%s</a>\n", l, l)
		}
		for _, l := range []string{s.Drip + "/drip", s.Silent + "/silent", s.HugeRobots + "/", s.SlowRobots + "/",
			"http://" + UnresolvableHost + "/linked"} {
			fmt.Fprintf(w, "<a href=\"%s\">%s</a>\n", l, l)
		}
	case p == "/robots.txt":
		io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
	case p == "/endless":
		httptrap.HTML(w)
		// Text without tags: the point is the length, and a tag per few
		// bytes would make the test's cost the HTML tokenizer's under
		// the race detector.
		chunk := bytes.Repeat([]byte("endless body "), 2500)
		for {
			if _, err := w.Write(chunk); err != nil || httptrap.Closed(s.quit) {
				return
			}
		}
	case p == "/big":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(BigSize))
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < BigSize; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil || httptrap.Closed(s.quit) {
				return
			}
		}
	case p == "/bomb":
		b := Bomb()
		httptrap.HTML(w)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	case p == "/reset":
		httptrap.Hijack(w, httptrap.Reset)
	case p == "/reset-mid-body":
		httptrap.Hijack(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n<a href=\"/reset-target\">")
			time.Sleep(20 * time.Millisecond)
			httptrap.Reset(c)
		})
	case p == "/short":
		httptrap.Hijack(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10000\r\n\r\n")
			io.WriteString(c, strings.Repeat("x", 100))
		})
	case p == "/garbage":
		httptrap.Hijack(w, func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\x00\xff\xfe garbage\r\n\r\n") })
	case p == "/links":
		httptrap.HTML(w)
		w.Write(manyLinks())
	case p == "/bad-bytes":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html>\x00\xff\xfe\xc3\x28<a href=\"/bad-bytes/a\x00b\">x\x00</a>\xed\xa0\x80<a href=\"/bad-bytes/c\xffd\">y</a>\x00")
	case p == "/loop/a":
		http.Redirect(w, r, "/loop/b", http.StatusFound)
	case p == "/loop/b":
		http.Redirect(w, r, "/loop/a", http.StatusFound)
	case strings.HasPrefix(p, "/chain/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(p, "/chain/"))
		http.Redirect(w, r, "/chain/"+strconv.Itoa(n+1), http.StatusMovedPermanently)
	case strings.HasPrefix(p, "/deep/"):
		httptrap.HTML(w)
		io.WriteString(w, `<a href="a/">deeper</a>`)
	case p == "/calendar":
		d, _ := strconv.Atoi(r.URL.Query().Get("d"))
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="/calendar?d=%d">prev</a> <a href="/calendar?d=%d">next</a>`, d-1, d+1)
	case strings.HasPrefix(p, "/session/"):
		id := s.session.Add(1) * 2654435761
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="/session/%x/page">page</a>`, id)
	case strings.HasPrefix(p, "/longer/"):
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="%s%s">longer</a>`, p, strings.Repeat("x", LongerStep))
	case strings.HasPrefix(p, "/private/"):
		httptrap.HTML(w)
		io.WriteString(w, "<p>robots.txt disallows this page</p>")
	default:
		// /links/N, /bad-bytes/..., /reset-target: small leaves; others 404.
		if strings.HasPrefix(p, "/links/") || strings.HasPrefix(p, "/bad-bytes/") || p == "/reset-target" {
			httptrap.HTML(w)
			io.WriteString(w, "<p>leaf</p>")
			return
		}
		http.NotFound(w, r)
	}
}

func (s *Site) serveDrip(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/drip" {
		http.NotFound(w, r) // robots.txt too: allow all
		return
	}
	httptrap.HTML(w)
	w.WriteHeader(http.StatusOK)
	for {
		if _, err := w.Write([]byte("<")); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		if !httptrap.Wait(r, s.quit, s.opts.DripInterval) {
			return
		}
	}
}

func (s *Site) serveSilent(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/silent" {
		http.NotFound(w, r)
		return
	}
	httptrap.Wait(r, s.quit, time.Hour)
}

func (s *Site) serveHugeRobots(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/robots.txt":
		w.Header().Set("Content-Type", "text/plain")
		w.Write(hugeRobots())
	case "/":
		httptrap.HTML(w)
		io.WriteString(w, `<a href="/private/x">disallowed before the cut</a> <a href="/after-cut/x">disallowed after the cut</a>`)
	default:
		httptrap.HTML(w)
		io.WriteString(w, "<p>leaf</p>")
	}
}

func (s *Site) serveSlowRobots(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		httptrap.Wait(r, s.quit, time.Hour)
		return
	}
	httptrap.HTML(w)
	io.WriteString(w, "<p>must not be fetched: robots.txt is unreachable</p>")
}
