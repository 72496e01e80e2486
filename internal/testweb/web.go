package testweb

import (
	"fmt"
	"io"
	"log"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/layercrawl/layercrawl/internal/loopback"

	"github.com/layercrawl/layercrawl/internal/testdns"
)

// Zone is the DNS suffix of the hosts under Names addressing.
const Zone = "web.test"

// CDNName is the CDN's host name under Names addressing.
const CDNName = "static.cdn.test"

// Web is a running synthetic web. Its methods are safe for concurrent use.
type Web struct {
	opts Options
	srv  *httptest.Server
	port int
	ip   netip.Addr // what Lookup answers (Names)

	pages []int32  // pages of each host
	perm  []int32  // popularity rank -> host
	names []string // host name of each host (name or IP)
	auths []string // authority ("name:port", or "name" on port 80) of each host
	cdn   string   // the CDN's name; its authority is cdnAuth
	cdnA  string

	bufs   sync.Pool // *[]byte, for rendering
	text   []byte    // the corpus pages copy their words from
	starts []int32   // offset of each word of text

	requests, bytes atomic.Uint64

	mu     sync.Mutex // protects counts
	counts map[string]int
}

// Stats are a Web's counters.
type Stats struct {
	Requests uint64 // answered, any status
	Bytes    uint64 // body bytes written
}

// Start generates the web described by opts, listens and serves it until
// Close.
func Start(opts Options) (*Web, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	network := "tcp"
	if opts.Addressing == Loopback {
		network = "tcp4" // IPv4 hosts: no dual-stack socket
	}
	ln, err := net.Listen(network, opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("testweb: listen: %w", err)
	}
	w := build(opts, ln.Addr().(*net.TCPAddr).Port)
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil && ap.Addr().IsLoopback() {
		w.ip = ap.Addr()
	}
	if opts.Addressing == Loopback {
		ln = loopback.Only{Listener: ln}
	}
	var h http.Handler = http.HandlerFunc(w.serve)
	if opts.Wrap != nil {
		h = opts.Wrap(h)
	}
	w.srv = httptest.NewUnstartedServer(h)
	w.srv.Listener.Close()
	w.srv.Listener = ln
	// A client that goes away mid-response makes the server log; tests
	// and benchmarks have no use for it.
	w.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	w.srv.Start()
	return w, nil
}

// build generates the web of valid, defaulted opts whose URLs carry port,
// without serving it.
func build(opts Options, port int) *Web {
	w := &Web{opts: opts, port: port, ip: netip.MustParseAddr("127.0.0.1")}
	w.bufs.New = func() any { b := make([]byte, 0, 8<<10); return &b }
	if opts.Record {
		w.counts = map[string]int{}
	}
	w.generate()
	w.text, w.starts = corpus(opts.Seed)
	return w
}

// generate draws host sizes and popularity and names the hosts.
func (w *Web) generate() {
	o := &w.opts
	w.pages = hostSizes(o.Seed, o.Hosts, o.Pages, o.MaxHostPages, o.SizeExponent)
	w.perm = make([]int32, o.Hosts)
	for i := range w.perm {
		w.perm[i] = int32(i)
	}
	r := rng{mix(o.Seed ^ 0x5045524d)}
	for i := len(w.perm) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		w.perm[i], w.perm[j] = w.perm[j], w.perm[i]
	}
	port := ""
	if w.port != 80 {
		port = ":" + strconv.Itoa(w.port)
	}
	w.names = make([]string, o.Hosts)
	w.auths = make([]string, o.Hosts)
	for h := range w.names {
		if o.Addressing == Loopback {
			w.names[h] = loopbackIP(h).String()
		} else {
			w.names[h] = "h" + strconv.Itoa(h) + "." + Zone
		}
		w.auths[h] = w.names[h] + port
	}
	w.cdn = CDNName
	if o.Addressing == Loopback {
		w.cdn = "127.0.0.2"
	}
	w.cdnA = w.cdn + port
}

// hostSizes returns page counts drawn from a Pareto distribution with
// exponent alpha, scaled to add up to exactly total, each in [1, limit].
func hostSizes(seed uint64, hosts, total, limit int, alpha float64) []int32 {
	weights := make([]float64, hosts)
	r := rng{mix(seed ^ 0x53495a45)}
	for i := range weights {
		weights[i] = math.Pow(1-r.float(), -1/alpha)
	}
	sizes := make([]int32, hosts)
	fill := func(scale float64) int {
		sum := 0
		for i, x := range weights {
			v := min(max(math.Floor(scale*x), 1), float64(limit))
			sizes[i] = int32(v)
			sum += int(v)
		}
		return sum
	}
	// The largest scale whose sizes do not exceed total.
	lo, hi := 0.0, 1.0
	for fill(hi) < total && hi < 1e300 {
		lo, hi = hi, hi*2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if fill(mid) <= total {
			lo = mid
		} else {
			hi = mid
		}
	}
	left := total - fill(lo)
	// Hand the rest out one page at a time, heaviest host first.
	order := make([]int, hosts)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case weights[a] > weights[b]:
			return -1
		case weights[a] < weights[b]:
			return 1
		}
		return 0
	})
	for left > 0 {
		for _, i := range order {
			if left > 0 && int(sizes[i]) < limit {
				sizes[i]++
				left--
			}
		}
	}
	return sizes
}

// loopbackIP returns host h's address under Loopback addressing.
func loopbackIP(h int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + h/(254*254)), byte(1 + h/254%254), byte(1 + h%254)})
}

// Close stops the web and waits for every handler to return.
func (w *Web) Close() {
	w.srv.CloseClientConnections()
	w.srv.Close()
}

// Options returns the web's options, defaults filled in.
func (w *Web) Options() Options { return w.opts }

// Addr returns the listener's address ("127.0.0.1:port", or
// "0.0.0.0:port" under Loopback).
func (w *Web) Addr() string { return w.srv.Listener.Addr().String() }

// Port returns the listener's port, which every host's URLs carry.
func (w *Web) Port() int { return w.port }

// Hosts returns the number of hosts.
func (w *Web) Hosts() int { return len(w.pages) }

// HostPages returns the number of content pages of host h.
func (w *Web) HostPages(h int) int { return int(w.pages[h]) }

// HostName returns host h's name: "h<h>.web.test" or its loopback
// address.
func (w *Web) HostName(h int) string { return w.names[h] }

// Root returns the canonical URL of host h's root page.
func (w *Web) Root(h int) string { return "http://" + w.auths[h] + "/" }

// PageURL returns the canonical URL of page j of host h.
func (w *Web) PageURL(h, j int) string { return w.url(node{host: int32(h), kind: kPage, a: int32(j)}) }

// Seeds returns every host's root: a crawl from them reaches every page.
func (w *Web) Seeds() []string {
	s := make([]string, len(w.auths))
	for h := range s {
		s[h] = w.Root(h)
	}
	return s
}

// Lookup resolves the web's host names (Names addressing) to the
// listener's address; other names are not found. It is a
// testdns.LookupFunc.
func (w *Web) Lookup(host string) ([]netip.Addr, error) {
	if w.opts.Addressing == Names && w.hostIndex(strings.ToLower(host)) != noHost {
		return []netip.Addr{w.ip}, nil
	}
	return nil, testdns.ErrNotFound
}

// Resolver returns a resolver answering Lookup's names, for
// fetch.Options.Resolver or net.Dialer.Resolver.
func (w *Web) Resolver() *net.Resolver { return testdns.New(w.Lookup) }

// Stats returns the web's counters.
func (w *Web) Stats() Stats { return Stats{Requests: w.requests.Load(), Bytes: w.bytes.Load()} }

// Requests returns how often each URL ("http://" + Host header in lower
// case + request URI) was requested; nil unless Options.Record.
func (w *Web) Requests() map[string]int {
	if w.counts == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.counts)
}

const noHost = -2

// hostIndex returns the host a (lower-case) host name names: an index,
// cdnHost, or noHost.
func (w *Web) hostIndex(name string) int {
	if name == w.cdn && w.opts.Embeds {
		return cdnHost
	}
	if w.opts.Addressing == Loopback {
		ip, err := netip.ParseAddr(name)
		if err != nil || !ip.Is4() {
			return noHost
		}
		b := ip.As4()
		if b[0] != 127 || b[1] == 0 || b[1] == 255 || b[2] == 0 || b[2] == 255 || b[3] == 0 || b[3] == 255 {
			return noHost
		}
		h := (int(b[1])-1)*254*254 + (int(b[2])-1)*254 + int(b[3]) - 1
		if h >= len(w.pages) {
			return noHost
		}
		return h
	}
	rest, ok := strings.CutSuffix(name, "."+Zone)
	if !ok || len(rest) < 2 || rest[0] != 'h' {
		return noHost
	}
	h, ok := decimal(rest[1:])
	if !ok || h >= len(w.pages) {
		return noHost
	}
	return h
}

// decimal parses s as the one spelling the web writes for a number: ASCII
// digits, without a sign or a leading zero, below 2^30. strconv.Atoi alone
// would also take "+0" and "007", names the web never writes.
func decimal(s string) (int, bool) {
	if s == "" || len(s) > 10 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, v < 1<<30
}

// authority returns the authority of host h (an index or cdnHost).
func (w *Web) authority(h int) string {
	if h == cdnHost {
		return w.cdnA
	}
	return w.auths[h]
}

// url returns the canonical URL of n.
func (w *Web) url(n node) string { return "http://" + w.authority(int(n.host)) + w.path(n) }

// parse returns the node a canonical URL of the web names.
func (w *Web) parse(raw string) (node, bool) {
	rest, ok := strings.CutPrefix(raw, "http://")
	if !ok {
		return node{}, false
	}
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return node{}, false
	}
	h := w.hostIndex(hostOnly(rest[:slash]))
	if h == noHost || w.authority(h) != rest[:slash] {
		return node{}, false
	}
	path, query, _ := strings.Cut(rest[slash:], "?")
	if strings.Contains(raw, "#") {
		return node{}, false
	}
	return w.route(h, path, query)
}

// hostOnly strips the port from an authority.
func hostOnly(auth string) string {
	if i := strings.LastIndexByte(auth, ':'); i >= 0 && !strings.Contains(auth[i:], "]") {
		return auth[:i]
	}
	return auth
}
