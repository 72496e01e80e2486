package linkweb

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layercrawl/layercrawl/internal/loopback"
)

// Web serves a Graph over HTTP on loopback. Its methods are safe for
// concurrent use.
type Web struct {
	g    *Graph
	srv  *http.Server
	ln   net.Listener
	port int
	done chan struct{}
	err  error // Serve's result, read after done is closed

	requests atomic.Uint64
	closeMu  sync.Once
}

// Start serves g on addr (default "0.0.0.0:0": every loopback address, a
// port the kernel picks) until Close.
func Start(g *Graph, addr string) (*Web, error) {
	if addr == "" {
		addr = "0.0.0.0:0"
	}
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return nil, fmt.Errorf("linkweb: listen: %w", err)
	}
	w := &Web{g: g, ln: loopback.Only{Listener: ln}, port: ln.Addr().(*net.TCPAddr).Port, done: make(chan struct{})}
	w.srv = &http.Server{Handler: http.HandlerFunc(w.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(w.done)
		if err := w.srv.Serve(w.ln); err != http.ErrServerClosed {
			w.err = err
		}
	}()
	return w, nil
}

// Close stops the server and waits for its handlers.
func (w *Web) Close() error {
	var err error
	w.closeMu.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = w.srv.Shutdown(ctx)
		<-w.done
		if err == nil {
			err = w.err
		}
	})
	return err
}

// Graph returns the graph served.
func (w *Web) Graph() *Graph { return w.g }

// Requests returns the number of requests answered so far, any status.
func (w *Web) Requests() uint64 { return w.requests.Load() }

// HostAddr returns host h's loopback address.
func HostAddr(h int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 35, byte(1 + h/250), byte(1 + h%250)})
}

// hostIndex is HostAddr's inverse; -1 for an address that is no host.
func hostIndex(a netip.Addr, hosts int) int {
	b := a.Unmap().As4()
	if !a.Unmap().Is4() || b[0] != 127 || b[1] != 35 || b[2] < 1 || b[3] < 1 || b[3] > 250 {
		return -1
	}
	h := int(b[2]-1)*250 + int(b[3]-1)
	if h >= hosts {
		return -1
	}
	return h
}

// Path returns the path of the page whose number within its host is k:
// "/" for the root, "/s<k/1000>/p<k>" otherwise (at most 1,000 pages per
// directory, below the crawler's per-prefix children limit).
func Path(k int) string {
	if k == 0 {
		return "/"
	}
	return "/s" + strconv.Itoa(k/1000) + "/p" + strconv.Itoa(k)
}

// URL returns the URL of page p.
func (w *Web) URL(p int) string {
	h := w.g.HostOf(p)
	return "http://" + w.authority(h) + Path(p-w.g.HostStart(h))
}

// Roots returns the URL of every host's root, host by host.
func (w *Web) Roots() []string {
	r := make([]string, w.g.Hosts())
	for h := range r {
		r[h] = w.URL(w.g.HostStart(h))
	}
	return r
}

func (w *Web) authority(h int) string {
	return HostAddr(h).String() + ":" + strconv.Itoa(w.port)
}

// PageOf returns the page a URL of this web names (as a crawler writes it:
// scheme and host in lower case, no fragment), and false for any other
// URL.
func (w *Web) PageOf(raw string) (int, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.RawQuery != "" || u.Port() != strconv.Itoa(w.port) {
		return 0, false
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return 0, false
	}
	return w.page(a, u.Path)
}

// page returns the page at path on the host with address a.
func (w *Web) page(a netip.Addr, path string) (int, bool) {
	h := hostIndex(a, w.g.Hosts())
	if h < 0 {
		return 0, false
	}
	k := 0
	if path != "/" {
		dir, name, ok := strings.Cut(strings.TrimPrefix(path, "/s"), "/p")
		d, err1 := strconv.Atoi(dir)
		n, err2 := strconv.Atoi(name)
		// Only the canonical spelling names a page: Path(n) == path.
		if !ok || err1 != nil || err2 != nil || n < 1 || d != n/1000 || Path(n) != path {
			return 0, false
		}
		k = n
	}
	if k >= w.g.hostSize(h) {
		return 0, false
	}
	return w.g.HostStart(h) + k, true
}

func (w *Web) serve(rw http.ResponseWriter, r *http.Request) {
	w.requests.Add(1)
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	a, err := netip.ParseAddr(host)
	p, ok := 0, false
	if err == nil && r.URL.RawQuery == "" {
		p, ok = w.page(a, r.URL.Path)
	}
	if !ok {
		http.NotFound(rw, r)
		return
	}
	h := w.g.HostOf(p)
	var b strings.Builder
	b.Grow(64 + 48*len(w.g.Out(p)))
	fmt.Fprintf(&b, "<!doctype html><html><head><title>host %d page %d</title></head><body><h1>Page %d of host %d</h1><ul>\n", h, p-w.g.HostStart(h), p-w.g.HostStart(h), h)
	for _, t := range w.g.Out(p) {
		th := w.g.HostOf(int(t))
		href := Path(int(t) - w.g.HostStart(th))
		if th != h {
			href = "http://" + w.authority(th) + href
		}
		fmt.Fprintf(&b, "<li><a href=\"%s\">page %d</a></li>\n", href, t)
	}
	b.WriteString("</ul></body></html>\n")
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = rw.Write([]byte(b.String()))
}
