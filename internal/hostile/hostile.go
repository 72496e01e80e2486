// Package hostile serves web hosts built to hurt crawlers, for tests: a
// server that drips, bodies without end, a gzip bomb, resets, truncated
// and garbage responses, a page of 50,000 links, NUL bytes and invalid
// UTF-8, redirect loops and chains, crawler traps (ever-deeper paths, a
// calendar, session ids, ever-longer URLs), a link to a name that does not
// resolve, and robots.txt files that are huge, silent, failing or missing.
//
// Every host serves the same set of endpoints (the Path constants, with
// one set of handlers); hosts differ only in their robots.txt and their
// index page. Two layouts use them:
//
//   - StartHost: one host whose index links to every endpoint, with the
//     robots.txt chosen by Options.Robots. The fetch package's tests use it
//     to check each defence of a single fetch.
//   - Start: a hostile web of five hosts for end-to-end crawls, every trap
//     reachable by links from one seed and spread over hosts so that the
//     slow ones do not queue behind each other (a crawler fetches one page
//     of a host at a time):
//   - Main (robots.txt disallows /private/): the index links to every
//     endpoint in MainPaths and to the other hosts, and to a page on
//     UnresolvableHost, under the reserved .invalid TLD (RFC 6761).
//   - Drip: /drip sends its headers, then one byte per DripInterval for
//     ever. Its robots.txt is a 404 (allow all).
//   - Silent: /silent accepts the request and never answers.
//   - HugeRobots: a 10 MiB robots.txt whose rule disallowing /after-cut/
//     lies past the 500 KiB a crawler parses; its index links to
//     /private/x (disallowed before the cut) and /after-cut/x.
//   - SlowRobots: robots.txt never answers, so the host is unreachable
//     for robots.txt purposes and its index must not be fetched.
//
// The hosts are httptest servers on loopback ports of 127.0.0.1, so one
// host name puts all of a web's hosts in a host-scoped crawl, while each
// port has its own queue and robots.txt. A crawler needs its
// private-address policy relaxed (fetch.Options.AllowPrivate) to reach
// them.
//
// Handlers return when their client goes away or the server closes; Close
// waits for all of them, so a test can check for leaked goroutines after
// it. Methods are safe for concurrent use; nothing is written to disk. Big
// bodies are generated once per process (sync.Once) and shared read-only.
// Each server counts the requests it answered (Requests), so a crawl test
// can check that every request has its log line and none was repeated.
package hostile

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"maps"
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

// UnresolvableURL is the link on PathUnresolvable: its host never resolves.
const UnresolvableURL = "http://" + UnresolvableHost + "/"

// Sizes of the generated bodies.
const (
	BombSize      = 512 << 20 // bytes of zeros in the gzip bomb, decompressed
	BigSize       = 64 << 20  // Content-Length of /big
	ManyLinks     = 50_000    // links on /links
	HugeRobotSize = 10 << 20  // bytes of the huge robots.txt
	LongerStep    = 128       // bytes each link of the ever-longer trap adds
)

// Paths of the hostile endpoints, served by every host.
const (
	PathDrip          = "/drip"           // headers, then one byte per DripInterval, for ever
	PathSilent        = "/silent"         // accepts the request, never answers
	PathEndless       = "/endless"        // a 200 HTML body without end
	PathBig           = "/big"            // 64 MiB with a Content-Length
	PathBomb          = "/bomb"           // 512 MiB of zeros, gzip Content-Encoding (about 0.5 MiB sent)
	PathReset         = "/reset"          // TCP reset after reading the request
	PathResetMidBody  = "/reset-mid-body" // part of the body (a link to /reset-target), then a reset
	PathShort         = "/short"          // Content-Length 10000, 100 bytes sent, connection closed
	PathGarbage       = "/garbage"        // not HTTP at all
	PathManyLinks     = "/links"          // 50,000 links to /links/N
	PathBadBytes      = "/bad-bytes"      // NUL bytes and invalid UTF-8 around links
	PathRedirectLoop  = "/loop/a"         // /loop/a -> /loop/b -> /loop/a
	PathRedirectChain = "/chain/0"        // /chain/N -> /chain/N+1 for ever
	PathDeep          = "/deep/"          // each page links to "a/": /deep/a/a/a/...
	PathCalendar      = "/calendar?d=0"   // links to d-1 and d+1 for ever
	PathSession       = "/session/"       // every link carries a new session id
	PathLonger        = "/longer/x"       // links to itself with LongerStep more bytes
	PathUnresolvable  = "/unresolvable"   // links to UnresolvableURL
	PathPrivate       = "/private/secret" // disallowed by the normal and huge robots.txt
)

// MainPaths are the endpoints the index of Start's main host links to.
var MainPaths = []string{
	PathEndless, PathBig, PathBomb, PathReset, PathResetMidBody, PathShort, PathGarbage,
	PathManyLinks, PathBadBytes, PathRedirectLoop, PathRedirectChain, PathDeep, PathCalendar,
	"/session/1/page", PathLonger, PathPrivate,
}

// hostPaths are the endpoints the index of StartHost's host links to.
var hostPaths = []string{
	PathDrip, PathSilent, PathEndless, PathBig, PathBomb, PathReset, PathResetMidBody,
	PathShort, PathGarbage, PathManyLinks, PathBadBytes, PathRedirectLoop, PathRedirectChain, PathDeep,
	PathCalendar, PathSession, PathLonger, PathUnresolvable, PathPrivate,
}

// RobotsMode selects how a host answers /robots.txt.
type RobotsMode int

const (
	// RobotsNormal serves a small file disallowing /private/.
	RobotsNormal RobotsMode = iota
	// RobotsHuge serves HugeRobotSize bytes: "Disallow: /private/" first,
	// then padding, then "Disallow: /after-cut/" past 500 KiB.
	RobotsHuge
	// RobotsTimeout never answers.
	RobotsTimeout
	// RobotsServerError answers 500.
	RobotsServerError
	// RobotsMissing answers 404.
	RobotsMissing
)

// Options configures StartHost and Start. The zero value gives a normal
// robots.txt and a one-second drip interval.
type Options struct {
	// DripInterval is the pause between the bytes of /drip. Default 1s.
	DripInterval time.Duration
	// Robots is the robots.txt of StartHost's host. Start's hosts each
	// have a fixed one (see the package doc) and ignore it. Default
	// RobotsNormal.
	Robots RobotsMode
}

// server is what every layout shares: the handlers' state, the running
// httptest servers and the request counts.
type server struct {
	opts    Options
	servers []*httptest.Server
	quit    chan struct{} // closed by Close: ends the handlers that wait
	once    sync.Once
	session atomic.Uint64

	mu       sync.Mutex     // protects requests
	requests map[string]int // "host:port/path?query" -> count
}

// Site is a running hostile web of five hosts (Start). Close stops it;
// Requests counts the requests it answered.
type Site struct {
	// Base URLs ("http://127.0.0.1:port") of the hosts.
	Main, Drip, Silent, HugeRobots, SlowRobots string
	*server
}

// Host is one running hostile host (StartHost). Close stops it; Requests
// counts the requests it answered.
type Host struct {
	// URL is the host's base URL, "http://127.0.0.1:port".
	URL string
	*server
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

func newServer(opts Options) *server {
	if opts.DripInterval <= 0 {
		opts.DripInterval = time.Second
	}
	// Generate the big bodies now, not in the first handler that needs
	// them, where a client's deadline would be charged for it.
	Bomb()
	manyLinks()
	if opts.Robots == RobotsHuge {
		hugeRobots()
	}
	return &server{opts: opts, quit: make(chan struct{}), requests: map[string]int{}}
}

// StartHost starts one host on a loopback port whose index ("/") links to
// every endpoint (Links), with the robots.txt of opts.Robots.
func StartHost(opts Options) *Host {
	s := newServer(opts)
	h := &Host{server: s}
	h.URL = s.start(opts.Robots, func(w io.Writer) {
		for _, l := range h.Links() {
			fmt.Fprintf(w, "<a href=\"%s\">%s</a>\n", l, l)
		}
	})
	return h
}

// Links returns the URLs linked from the host's index, one per endpoint.
func (h *Host) Links() []string {
	out := make([]string, len(hostPaths))
	for i, p := range hostPaths {
		out[i] = h.URL + p
	}
	return out
}

// Start starts the five hosts of the hostile web on loopback ports.
func Start(opts Options) *Site {
	hugeRobots()
	s := &Site{server: newServer(opts)}
	s.Main = s.start(RobotsNormal, func(w io.Writer) {
		io.WriteString(w, "<!doctype html><title>hostile</title>\n")
		for _, l := range MainPaths {
			fmt.Fprintf(w, "<a href=\"%s\">%s</a>\n", l, l)
		}
		for _, l := range []string{s.Drip + PathDrip, s.Silent + PathSilent, s.HugeRobots + "/", s.SlowRobots + "/",
			"http://" + UnresolvableHost + "/linked"} {
			fmt.Fprintf(w, "<a href=\"%s\">%s</a>\n", l, l)
		}
	})
	s.Drip = s.start(RobotsMissing, nil)
	s.Silent = s.start(RobotsMissing, nil)
	s.HugeRobots = s.start(RobotsHuge, func(w io.Writer) {
		io.WriteString(w, `<a href="/private/x">disallowed before the cut</a> <a href="/after-cut/x">disallowed after the cut</a>`)
	})
	s.SlowRobots = s.start(RobotsTimeout, func(w io.Writer) {
		io.WriteString(w, "<p>must not be fetched: robots.txt is unreachable</p>")
	})
	return s
}

// Seeds returns the seed list of a crawl of the web: the main index, and
// a page on the unresolvable host, whose name must be a seed to be in a
// host-scoped crawl's scope.
func (s *Site) Seeds() []string {
	return []string{s.Main + "/", "http://" + UnresolvableHost + "/"}
}

// start serves one host with the given robots.txt and index page (nil:
// "/" is a 404) and returns its base URL.
func (s *server) start(robots RobotsMode, index func(io.Writer)) string {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.Host+r.URL.RequestURI()]++
		s.mu.Unlock()
		switch {
		case r.URL.Path == "/robots.txt":
			s.robots(w, r, robots)
		case r.URL.Path == "/" && index != nil:
			httptrap.HTML(w)
			index(w)
		case !s.endpoint(w, r):
			http.NotFound(w, r)
		}
	}))
	// Resets and garbage make the server log; that is the point.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	s.servers = append(s.servers, srv)
	return srv.URL
}

// Close stops every host and waits for their handlers to return.
func (s *server) Close() {
	s.once.Do(func() { close(s.quit) })
	for _, srv := range s.servers {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// Requests returns how often each URL (host:port and request URI) was
// requested.
func (s *server) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests)
}

func (s *server) robots(w http.ResponseWriter, r *http.Request, mode RobotsMode) {
	switch mode {
	case RobotsNormal:
		io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
	case RobotsHuge:
		w.Header().Set("Content-Type", "text/plain")
		w.Write(hugeRobots())
	case RobotsTimeout:
		httptrap.Wait(r, s.quit, time.Hour)
	case RobotsServerError:
		http.Error(w, "robots.txt is down", http.StatusInternalServerError)
	default:
		http.NotFound(w, r)
	}
}

// endpoint serves the hostile endpoint at r's path and reports whether
// there was one.
func (s *server) endpoint(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	switch {
	case p == PathDrip:
		httptrap.HTML(w)
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte("<")); err != nil {
				break
			}
			w.(http.Flusher).Flush()
			if !httptrap.Wait(r, s.quit, s.opts.DripInterval) {
				break
			}
		}
	case p == PathSilent:
		httptrap.Wait(r, s.quit, time.Hour)
	case p == PathEndless:
		httptrap.HTML(w)
		// Few tags: the point is the length, and a tag per few bytes
		// would make a crawl test's cost the HTML tokenizer's under the
		// race detector. But some: an HTML tokenizer holds a whole text
		// token in memory, and 16 concurrent fetches of one 10 MiB text
		// token took 590 MiB of heap against 330-430 MiB with a tag per
		// 4 KiB (fetch's TestConcurrentHugeBodiesMemory).
		chunk := bytes.Repeat([]byte("<p>"+strings.Repeat("endless body ", 300)), 8)
		for {
			if _, err := w.Write(chunk); err != nil || httptrap.Closed(s.quit) {
				break
			}
		}
	case p == PathBig:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(BigSize))
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < BigSize; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil || httptrap.Closed(s.quit) {
				break
			}
		}
	case p == PathBomb:
		b := Bomb()
		httptrap.HTML(w)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	case p == PathReset:
		httptrap.Hijack(w, httptrap.Reset)
	case p == PathResetMidBody:
		httptrap.Hijack(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n<a href=\"/reset-target\">")
			time.Sleep(20 * time.Millisecond)
			httptrap.Reset(c)
		})
	case p == PathShort:
		httptrap.Hijack(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10000\r\n\r\n")
			io.WriteString(c, strings.Repeat("x", 100))
		})
	case p == PathGarbage:
		httptrap.Hijack(w, func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\x00\xff\xfe garbage\r\n\r\n") })
	case p == PathManyLinks:
		httptrap.HTML(w)
		w.Write(manyLinks())
	case p == PathBadBytes:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html>\x00\xff\xfe\xc3\x28<a href=\"/bad-bytes/a\x00b\">x\x00</a>\xed\xa0\x80<a href=\"/bad-bytes/c\xffd\">y</a>\x00")
	case p == "/loop/a":
		http.Redirect(w, r, "/loop/b", http.StatusFound)
	case p == "/loop/b":
		http.Redirect(w, r, "/loop/a", http.StatusFound)
	case strings.HasPrefix(p, "/chain/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(p, "/chain/"))
		http.Redirect(w, r, "/chain/"+strconv.Itoa(n+1), http.StatusMovedPermanently)
	case strings.HasPrefix(p, PathDeep):
		httptrap.HTML(w)
		io.WriteString(w, `<a href="a/">deeper</a>`)
	case p == "/calendar":
		d, _ := strconv.Atoi(r.URL.Query().Get("d"))
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="/calendar?d=%d">prev</a> <a href="/calendar?d=%d">next</a>`, d-1, d+1)
	case strings.HasPrefix(p, PathSession):
		id := s.session.Add(1) * 2654435761
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="/session/%x/page">page</a>`, id)
	case strings.HasPrefix(p, "/longer/"):
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="%s%s">longer</a>`, p, strings.Repeat("x", LongerStep))
	case p == PathUnresolvable:
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="%s">nowhere</a>`, UnresolvableURL)
	case strings.HasPrefix(p, "/private/"):
		httptrap.HTML(w)
		io.WriteString(w, "<p>robots.txt disallows this page</p>")
	case strings.HasPrefix(p, "/links/"), strings.HasPrefix(p, "/bad-bytes/"), strings.HasPrefix(p, "/after-cut/"), p == "/reset-target":
		httptrap.HTML(w)
		io.WriteString(w, "<p>leaf</p>")
	default:
		return false
	}
	return true
}
