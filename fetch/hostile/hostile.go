// Package hostile serves a web site built to hurt crawlers, for tests: a
// server that drips, bodies without end, a gzip bomb, resets, truncated
// and garbage responses, a page of 50,000 links, NUL bytes and invalid
// UTF-8, redirect loops and chains, crawler traps (ever-deeper paths, a
// calendar, session ids, ever-longer URLs), a link to a name that does not
// resolve, and a robots.txt that is huge, slow or failing.
//
// Every handler stops when its client goes away, and Close waits for all of
// them, so tests using the site can check for leaked goroutines. The site
// is one httptest.Server on loopback: a crawler needs its private-address
// policy relaxed (fetch.Options.AllowPrivate) to reach it.
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
	"time"

	"github.com/layercrawl/layercrawl/internal/httptrap"
)

// RobotsMode selects how the site answers /robots.txt.
type RobotsMode int

const (
	// RobotsNormal serves a small file disallowing /private/.
	RobotsNormal RobotsMode = iota
	// RobotsHuge serves 10 MiB: "Disallow: /private/" first, then
	// padding, then "Disallow: /after-cut/" past 500 KiB.
	RobotsHuge
	// RobotsTimeout never answers.
	RobotsTimeout
	// RobotsServerError answers 500.
	RobotsServerError
	// RobotsMissing answers 404.
	RobotsMissing
)

// Options configures a Site. The zero value gives a normal robots.txt and
// a one-second drip interval.
type Options struct {
	Robots RobotsMode
	// DripInterval is the pause between the bytes of /drip. Default 1s.
	DripInterval time.Duration
}

// Paths of the hostile endpoints, all linked from "/".
const (
	PathDrip          = "/drip"           // headers, then one byte per DripInterval, for ever
	PathSilent        = "/silent"         // accepts the request, never answers
	PathEndless       = "/endless"        // a 200 HTML body without end
	PathBig           = "/big"            // 64 MiB with a Content-Length
	PathBomb          = "/bomb"           // 512 MiB of zeros, gzip Content-Encoding (about 0.5 MiB sent)
	PathReset         = "/reset"          // TCP reset after reading the request
	PathResetMidBody  = "/reset-mid-body" // part of the body, then a reset
	PathShort         = "/short"          // Content-Length 10000, 100 bytes sent, connection closed
	PathGarbage       = "/garbage"        // not HTTP at all
	PathManyLinks     = "/links"          // 50,000 links to /links/N
	PathBadBytes      = "/bad-bytes"      // NUL bytes and invalid UTF-8 around links
	PathRedirectLoop  = "/loop/a"         // /loop/a -> /loop/b -> /loop/a
	PathRedirectChain = "/chain/0"        // /chain/N -> /chain/N+1 for ever
	PathDeep          = "/deep/"          // each page links to "a/": /deep/a/a/a/...
	PathCalendar      = "/calendar?d=0"   // links to d-1 and d+1 for ever
	PathSession       = "/session/"       // every link carries a new session id
	PathLonger        = "/longer/x"       // links to itself with one more "x"
	PathUnresolvable  = "/unresolvable"   // links to a host under .invalid (RFC 6761)
	PathPrivate       = "/private/secret" // disallowed by the normal and huge robots.txt
)

// UnresolvableURL is the link on PathUnresolvable: its host never resolves.
const UnresolvableURL = "http://no-such-host.hostile.invalid/"

// Site is a running hostile site.
type Site struct {
	// URL is the site's base URL, "http://127.0.0.1:port".
	URL string

	srv   *httptest.Server
	opts  Options
	bomb  []byte
	huge  []byte
	links []byte

	mu      sync.Mutex // guards session
	session int
	quit    chan struct{} // closed by Close: ends dripping and silent handlers
	once    sync.Once
}

// Start starts a site on a loopback port.
func Start(opts Options) *Site {
	if opts.DripInterval <= 0 {
		opts.DripInterval = time.Second
	}
	s := &Site{opts: opts, quit: make(chan struct{})}
	s.bomb = httptrap.GzipBomb(512)
	var b bytes.Buffer
	for i := range 50_000 {
		fmt.Fprintf(&b, "<a href=\"/links/%d\">%d</a>\n", i, i)
	}
	s.links = b.Bytes()
	if opts.Robots == RobotsHuge {
		s.huge = hugeRobots()
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// Resets and garbage make the server log; that is the point here.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.Start()
	s.URL = s.srv.URL
	return s
}

// Close stops the site and waits for every handler to return.
func (s *Site) Close() {
	s.once.Do(func() { close(s.quit) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Links returns the URLs linked from the index page, one per endpoint.
func (s *Site) Links() []string {
	paths := []string{PathDrip, PathSilent, PathEndless, PathBig, PathBomb, PathReset, PathResetMidBody,
		PathShort, PathGarbage, PathManyLinks, PathBadBytes, PathRedirectLoop, PathRedirectChain, PathDeep,
		PathCalendar, PathSession, PathLonger, PathUnresolvable, PathPrivate}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = s.URL + p
	}
	return out
}

func (s *Site) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/":
		httptrap.HTML(w)
		for _, l := range s.Links() {
			fmt.Fprintf(w, "<a href=\"%s\">%s</a>\n", l, l)
		}
	case p == "/robots.txt":
		s.robots(w, r)
	case p == PathDrip:
		httptrap.HTML(w)
		w.WriteHeader(200)
		for {
			if _, err := w.Write([]byte("<")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if !httptrap.Wait(r, s.quit, s.opts.DripInterval) {
				return
			}
		}
	case p == PathSilent:
		httptrap.Wait(r, s.quit, time.Hour)
	case p == PathEndless:
		httptrap.HTML(w)
		chunk := bytes.Repeat([]byte("<p>endless "), 3000)
		for {
			if _, err := w.Write(chunk); err != nil || httptrap.Closed(s.quit) {
				return
			}
		}
	case p == PathBig:
		w.Header().Set("Content-Type", "application/octet-stream")
		const size = 64 << 20
		w.Header().Set("Content-Length", strconv.Itoa(size))
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil || httptrap.Closed(s.quit) {
				return
			}
		}
	case p == PathBomb:
		httptrap.HTML(w)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(s.bomb)))
		w.Write(s.bomb)
	case p == PathReset:
		httptrap.Hijack(w, func(c net.Conn) { httptrap.Reset(c) })
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
		w.Write(s.links)
	case strings.HasPrefix(p, "/links/"):
		httptrap.HTML(w)
		io.WriteString(w, "<p>leaf</p>")
	case p == PathBadBytes:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html>\x00\xff\xfe\xc3\x28<a href=\"/bad-bytes/a\x00b\">x\x00</a>\xed\xa0\x80<a href=\"/bad-bytes/c\xffd\">y</a>\x00")
	case strings.HasPrefix(p, "/bad-bytes/"):
		httptrap.HTML(w)
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
		s.mu.Lock()
		s.session++
		id := s.session
		s.mu.Unlock()
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="/session/%08x/page">page</a>`, id*2654435761)
	case strings.HasPrefix(p, "/longer/"):
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="%sx">longer</a>`, p)
	case p == PathUnresolvable:
		httptrap.HTML(w)
		fmt.Fprintf(w, `<a href="%s">nowhere</a>`, UnresolvableURL)
	case strings.HasPrefix(p, "/private/"):
		httptrap.HTML(w)
		io.WriteString(w, "<p>robots.txt disallows this page</p>")
	default:
		http.NotFound(w, r)
	}
}

func (s *Site) robots(w http.ResponseWriter, r *http.Request) {
	switch s.opts.Robots {
	case RobotsNormal:
		io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
	case RobotsHuge:
		w.Header().Set("Content-Type", "text/plain")
		w.Write(s.huge)
	case RobotsTimeout:
		httptrap.Wait(r, s.quit, time.Hour)
	case RobotsServerError:
		http.Error(w, "robots.txt is down", http.StatusInternalServerError)
	case RobotsMissing:
		http.NotFound(w, r)
	}
}

func hugeRobots() []byte {
	var b bytes.Buffer
	b.WriteString("User-agent: *\nDisallow: /private/\n")
	for b.Len() < 1<<20 {
		b.WriteString("# padding to push the next rule past the 500 KiB cut ...........\n")
	}
	b.WriteString("Disallow: /after-cut/\n")
	for b.Len() < 10<<20 {
		b.WriteString("# padding ........................................................\n")
	}
	return b.Bytes()
}
