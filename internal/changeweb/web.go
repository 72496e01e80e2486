package changeweb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/layercrawl/layercrawl/internal/loopback"
)

// ErrInvalidOptions is wrapped by every error of Options.Validate.
var ErrInvalidOptions = errors.New("changeweb: invalid options")

// Defaults of Options.
const (
	DefaultPages   = 1000
	DefaultHosts   = 10
	DefaultNever   = 0.2
	DefaultFastest = 5 * time.Second
	DefaultSlowest = 24 * time.Hour
	// MaxHosts is the most hosts the loopback numbering reaches.
	MaxHosts = 250 * 254
)

// Clock is the web's source of time.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// RealClock returns the system clock.
func RealClock() Clock { return realClock{} }

// SimClock is a clock that only moves when told; safe for concurrent use.
type SimClock struct {
	mu sync.Mutex // protects t
	t  time.Time
}

// NewSimClock returns a simulated clock reading t.
func NewSimClock(t time.Time) *SimClock { return &SimClock{t: t} }

// Now returns the simulated time.
func (c *SimClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t; a t before the current time is ignored, so
// time never runs backwards.
func (c *SimClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.t) {
		c.t = t
	}
}

// Advance moves the clock forward by d (ignored if negative).
func (c *SimClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.t = c.t.Add(d)
	}
}

// Options describe a web. Zero fields take the default their comment
// documents.
type Options struct {
	// Seed makes the web: the same Options give the same rates and the
	// same change times.
	Seed uint64
	// Pages is the number of pages. Default DefaultPages.
	Pages int
	// Hosts is the number of hosts, at most MaxHosts and Pages. Default
	// DefaultHosts.
	Hosts int
	// Never is the share of pages that never change. Default DefaultNever
	// (20%); negative: every page changes.
	Never float64
	// Fastest and Slowest bound the mean interval between changes of the
	// changing pages, drawn log-uniformly. Defaults DefaultFastest and
	// DefaultSlowest.
	Fastest, Slowest time.Duration
	// Clock is the source of time. Default RealClock().
	Clock Clock
	// Start is when the web's record of versions begins: version 0 of
	// every page is the one served at Start. Default the Clock's time at
	// New.
	Start time.Time
	// History is how long the pages existed before Start, which their
	// version 0's Last-Modified tells: a page that never changes was
	// written at a time drawn uniformly within it; a changing page last
	// changed an exponential gap of its rate before Start (its process
	// ran before Start too), at most History. Default DefaultHistory;
	// negative: version 0 dated Start, as if every page were written then.
	History time.Duration
}

// DefaultHistory is Options.History's default: a year.
const DefaultHistory = 365 * 24 * time.Hour

// EnsureDefaults sets the zero fields of o to their documented defaults.
func (o *Options) EnsureDefaults() {
	if o.Pages == 0 {
		o.Pages = DefaultPages
	}
	if o.Hosts == 0 {
		o.Hosts = DefaultHosts
	}
	if o.Never == 0 {
		o.Never = DefaultNever
	}
	if o.Fastest == 0 {
		o.Fastest = DefaultFastest
	}
	if o.Slowest == 0 {
		o.Slowest = DefaultSlowest
	}
	if o.Clock == nil {
		o.Clock = RealClock()
	}
	if o.Start.IsZero() {
		o.Start = o.Clock.Now()
	}
	if o.History == 0 {
		o.History = DefaultHistory
	}
}

// Validate reports the first invalid field, wrapping ErrInvalidOptions.
// It expects EnsureDefaults to have run.
func (o Options) Validate() error {
	switch {
	case o.Pages < 1:
		return fmt.Errorf("%w: Pages %d is not positive", ErrInvalidOptions, o.Pages)
	case o.Hosts < 1 || o.Hosts > MaxHosts || o.Hosts > o.Pages:
		return fmt.Errorf("%w: Hosts %d is not in [1, min(Pages %d, %d)]", ErrInvalidOptions, o.Hosts, o.Pages, MaxHosts)
	case o.Never > 1 || math.IsNaN(o.Never):
		return fmt.Errorf("%w: Never %v is above 1", ErrInvalidOptions, o.Never)
	case o.Fastest <= 0 || o.Slowest < o.Fastest:
		return fmt.Errorf("%w: Fastest %v and Slowest %v are not 0 < Fastest <= Slowest", ErrInvalidOptions, o.Fastest, o.Slowest)
	case o.Clock == nil:
		return fmt.Errorf("%w: no Clock", ErrInvalidOptions)
	}
	return nil
}

// page is one page's change process and what the server answered for it.
type page struct {
	rate float64 // changes per second; 0: never

	mu      sync.Mutex    // protects the fields below
	born    time.Duration // version 0's age at Start (Options.History)
	rng     *rand.Rand
	changes []time.Duration // change times since Start, increasing
	ok, not uint64          // 200s and 304s served
}

// through generates the changes up to d after Start (and one beyond).
// The caller holds p.mu.
func (p *page) through(d time.Duration) {
	if p.rate == 0 {
		return
	}
	for len(p.changes) == 0 || p.changes[len(p.changes)-1] <= d {
		var last time.Duration
		if n := len(p.changes); n > 0 {
			last = p.changes[n-1]
		}
		gap := time.Duration(p.rng.ExpFloat64() / p.rate * float64(time.Second))
		p.changes = append(p.changes, last+max(gap, 1))
	}
}

// Web is a changing web, served over HTTP by Start. Its methods are safe
// for concurrent use.
type Web struct {
	opt   Options
	pages []page

	srv  *http.Server
	ln   net.Listener
	port int
	done chan struct{}
	err  error // Serve's result, read after done is closed

	closeOnce sync.Once
}

// New builds a web without serving it (Start serves one).
func New(o Options) (*Web, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	w := &Web{opt: o, pages: make([]page, o.Pages)}
	rng := rand.New(rand.NewPCG(o.Seed, 0xc4a29e))
	lo, hi := math.Log(o.Fastest.Seconds()), math.Log(o.Slowest.Seconds())
	for i := range w.pages {
		p := &w.pages[i]
		p.rng = rand.New(rand.NewPCG(o.Seed, uint64(i)+1))
		if rng.Float64() < o.Never {
			rng.Float64() // keep the draws aligned whatever the share
		} else {
			p.rate = 1 / math.Exp(lo+rng.Float64()*(hi-lo))
		}
		if o.History > 0 {
			// A generator of its own, so that the change times do not
			// depend on History.
			born := rand.New(rand.NewPCG(o.Seed^0x9e3779b97f4a7c15, uint64(i)+1))
			age := born.Float64() * o.History.Seconds()
			if p.rate > 0 {
				age = min(born.ExpFloat64()/p.rate, o.History.Seconds())
			}
			p.born = time.Duration(age * float64(time.Second))
		}
	}
	return w, nil
}

// Start builds a web and serves it on addr (default "0.0.0.0:0": every
// loopback address, a port the kernel picks) until Close.
func Start(o Options, addr string) (*Web, error) {
	w, err := New(o)
	if err != nil {
		return nil, err
	}
	if addr == "" {
		addr = "0.0.0.0:0"
	}
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return nil, fmt.Errorf("changeweb: listen: %w", err)
	}
	w.ln, w.port, w.done = loopback.Only{Listener: ln}, ln.Addr().(*net.TCPAddr).Port, make(chan struct{})
	w.srv = &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(w.done)
		if err := w.srv.Serve(w.ln); err != http.ErrServerClosed {
			w.err = err
		}
	}()
	return w, nil
}

// Close stops the server, if any, and waits for its handlers.
func (w *Web) Close() error {
	if w.srv == nil {
		return nil
	}
	var err error
	w.closeOnce.Do(func() {
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

// Options returns the web's options, defaults filled in.
func (w *Web) Options() Options { return w.opt }

// Pages returns the number of pages.
func (w *Web) Pages() int { return len(w.pages) }

// Rate returns page p's change rate, in changes per second (0: never).
func (w *Web) Rate(p int) float64 { return w.pages[p].rate }

// Version returns page p's version at t: the number of its changes in
// (Start, t].
func (w *Web) Version(p int, t time.Time) int {
	pg := &w.pages[p]
	d := t.Sub(w.opt.Start)
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.through(d)
	return sort.Search(len(pg.changes), func(i int) bool { return pg.changes[i] > d })
}

// lastChange returns the time of the latest change of p at or before t,
// or of its version 0 (Options.History).
func (w *Web) lastChange(p int, t time.Time) time.Time {
	pg := &w.pages[p]
	d := t.Sub(w.opt.Start)
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.through(d)
	i := sort.Search(len(pg.changes), func(i int) bool { return pg.changes[i] > d })
	if i == 0 {
		return w.opt.Start.Add(-pg.born)
	}
	return w.opt.Start.Add(pg.changes[i-1])
}

// Changes returns the times of page p's changes in (from, to].
func (w *Web) Changes(p int, from, to time.Time) []time.Time {
	pg := &w.pages[p]
	a, b := from.Sub(w.opt.Start), to.Sub(w.opt.Start)
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.through(b)
	var out []time.Time
	for i := sort.Search(len(pg.changes), func(i int) bool { return pg.changes[i] > a }); i < len(pg.changes) && pg.changes[i] <= b; i++ {
		out = append(out, w.opt.Start.Add(pg.changes[i]))
	}
	return out
}

// Served returns the number of 200 and 304 responses served for page p.
func (w *Web) Served(p int) (ok, notModified uint64) {
	pg := &w.pages[p]
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.ok, pg.not
}

// Score is one page's freshness and age integrated over a window.
type Score struct {
	// Fresh is the time within the window during which the latest
	// capture equalled the live page.
	Fresh time.Duration
	// AgeSeconds is the integral of the age over the window, in
	// seconds²: divided by the window's length, the mean age in seconds.
	AgeSeconds float64
}

// Score integrates page p's freshness and age over [from, to] for a
// crawler that captured it at the given times (in any order; captures
// after to are ignored).
func (w *Web) Score(p int, captures []time.Time, from, to time.Time) Score {
	var s Score
	if !to.After(from) {
		return s
	}
	cs := make([]time.Time, 0, len(captures))
	for _, c := range captures {
		if !c.After(to) {
			cs = append(cs, c)
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Before(cs[j]) })
	changes := w.Changes(p, w.opt.Start, to)
	// Before the first capture (or the window's start): stale, age from
	// Start.
	seg := func(c, end time.Time) { // capture at c, holding until end
		a, b := maxTime(c, from), end
		if !b.After(a) {
			return
		}
		i := sort.Search(len(changes), func(i int) bool { return changes[i].After(c) })
		stale := b
		if i < len(changes) && changes[i].Before(b) {
			stale = changes[i]
		}
		if stale.After(a) {
			s.Fresh += stale.Sub(a)
		}
		u := maxTime(stale, a)
		if b.After(u) {
			// Age t - stale over [u, b].
			x0, x1 := u.Sub(stale).Seconds(), b.Sub(stale).Seconds()
			s.AgeSeconds += (x1*x1 - x0*x0) / 2
		}
	}
	first := to
	if len(cs) > 0 {
		first = maxTime(cs[0], from)
	}
	if first.After(from) {
		x0, x1 := from.Sub(w.opt.Start).Seconds(), minTime(first, to).Sub(w.opt.Start).Seconds()
		s.AgeSeconds += (x1*x1 - x0*x0) / 2
	}
	for i, c := range cs {
		end := to
		if i+1 < len(cs) {
			end = cs[i+1]
		}
		if end.After(from) {
			seg(c, end)
		}
	}
	return s
}

// FreshAt reports whether a capture of page p at c is still fresh at t,
// and its age at t.
func (w *Web) FreshAt(p int, c, t time.Time) (bool, time.Duration) {
	ch := w.Changes(p, c, t)
	if len(ch) == 0 {
		return true, 0
	}
	return false, t.Sub(ch[0])
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// HostAddr returns host h's loopback address.
func HostAddr(h int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 36, byte(1 + h/250), byte(1 + h%250)})
}

// hostIndex is HostAddr's inverse; -1 for an address that is no host.
func (w *Web) hostIndex(a netip.Addr) int {
	b := a.Unmap().As4()
	if !a.Unmap().Is4() || b[0] != 127 || b[1] != 36 || b[2] < 1 || b[3] < 1 || b[3] > 250 {
		return -1
	}
	h := int(b[2]-1)*250 + int(b[3]-1)
	if h >= w.opt.Hosts {
		return -1
	}
	return h
}

// Path returns the path of the k-th page of a host.
func Path(k int) string {
	if k == 0 {
		return "/"
	}
	return "/p" + strconv.Itoa(k)
}

// URL returns the URL of page p (after Start).
func (w *Web) URL(p int) string {
	h := p % w.opt.Hosts
	return "http://" + w.authority(h) + Path(p/w.opt.Hosts)
}

// Roots returns the URL of every host's root.
func (w *Web) Roots() []string {
	r := make([]string, w.opt.Hosts)
	for h := range r {
		r[h] = w.URL(h)
	}
	return r
}

func (w *Web) authority(h int) string {
	return HostAddr(h).String() + ":" + strconv.Itoa(w.port)
}

// PageOf returns the page a URL of this web names, and false for any other
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

func (w *Web) page(a netip.Addr, path string) (int, bool) {
	h := w.hostIndex(a)
	if h < 0 {
		return 0, false
	}
	k := 0
	if path != "/" {
		n, err := strconv.Atoi(strings.TrimPrefix(path, "/p"))
		if err != nil || n < 1 || n >= len(w.pages) || Path(n) != path {
			return 0, false
		}
		k = n
	}
	p := k*w.opt.Hosts + h
	if p >= len(w.pages) {
		return 0, false
	}
	return p, true
}

// ETag returns the entity tag of page p at version v.
func ETag(p, v int) string { return `"` + strconv.Itoa(p) + "." + strconv.Itoa(v) + `"` }

// ServeHTTP answers a request at the Clock's time; a Web is an
// http.Handler for use without Start (the URLs it links to then carry
// port 0).
func (w *Web) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	a, err := netip.ParseAddr(host)
	p, ok := 0, false
	if err == nil && r.URL.RawQuery == "" {
		p, ok = w.page(a, r.URL.Path)
	}
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(rw, r)
		return
	}
	now := w.opt.Clock.Now()
	v, lm := w.Version(p, now), w.lastChange(p, now)
	etag := ETag(p, v)
	h := rw.Header()
	h.Set("ETag", etag)
	h.Set("Last-Modified", lm.UTC().Format(http.TimeFormat))
	h.Set("Date", now.UTC().Format(http.TimeFormat)) // the web's clock, simulated or not
	h.Set("Cache-Control", "no-cache")
	pg := &w.pages[p]
	if notModified(r, etag, lm) {
		pg.mu.Lock()
		pg.not++
		pg.mu.Unlock()
		rw.WriteHeader(http.StatusNotModified)
		return
	}
	pg.mu.Lock()
	pg.ok++
	pg.mu.Unlock()
	hi, k := p%w.opt.Hosts, p/w.opt.Hosts
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>page %d</title></head><body><h1>Page %d of host %d, version %d</h1><ul>\n", p, k, hi, v)
	for _, c := range []int{2*k + 1, 2*k + 2} {
		if c*w.opt.Hosts+hi < len(w.pages) {
			fmt.Fprintf(&b, "<li><a href=\"%s\">page %d</a></li>\n", Path(c), c*w.opt.Hosts+hi)
		}
	}
	if k == 0 && w.opt.Hosts > 1 {
		next := (hi + 1) % w.opt.Hosts
		fmt.Fprintf(&b, "<li><a href=\"http://%s/\">host %d</a></li>\n", w.authority(next), next)
	}
	b.WriteString("</ul></body></html>\n")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	if r.Method == http.MethodHead {
		rw.WriteHeader(http.StatusOK)
		return
	}
	_, _ = rw.Write([]byte(b.String()))
}

// notModified applies RFC 9110's conditional GET: If-None-Match, when
// present, decides alone.
func notModified(r *http.Request, etag string, lm time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		if t, err := http.ParseTime(ims); err == nil {
			return !lm.Truncate(time.Second).After(t)
		}
	}
	return false
}
