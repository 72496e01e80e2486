package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/layercrawl/layercrawl/internal/testweb"
)

// errConfig is wrapped by the errors of Config.Validate.
var errConfig = errors.New("netbench: invalid network")

// Config describes the network in miniature: a synthetic web of Hosts
// hosts and Pages pages (internal/testweb, loopback addressing), and a
// site per directory of Docs, every host behind its own toxiproxy proxy
// on its own loopback address.
type Config struct {
	Hosts, Pages int    // the synthetic web; Hosts 0: none
	MaxHostPages int    // cap on one synthetic host's pages
	Seed         uint64 // of the web and of the hosts' round-trip times
	Docs         []Doc  // static sites, each one host
	// Port is the port every host listens on (the proxies' port, which
	// the synthetic web's links carry). 0: a free one.
	Port int
	// RTTMin and RTTMax bound the round-trip time each host is given,
	// drawn uniformly from [RTTMin, RTTMax] (one value when equal). Half
	// of it delays each direction.
	RTTMin, RTTMax time.Duration
	// Jitter: each chunk of data in each direction is delayed by its
	// half round trip plus or minus up to Jitter/2 (toxiproxy's jitter).
	Jitter time.Duration
	// RateKB caps the server-to-client bandwidth of each connection in
	// KB/s (toxiproxy's bandwidth toxic; 1 KB = 1000 bytes). 0: no cap.
	RateKB int64
}

// Doc is a static site served from Dir.
type Doc struct{ Name, Dir string }

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.Hosts < 0 || c.Hosts > 254:
		return fmt.Errorf("%w: hosts %d not in [0, 254]", errConfig, c.Hosts)
	case c.Hosts > 0 && c.Pages < c.Hosts:
		return fmt.Errorf("%w: pages %d below hosts %d", errConfig, c.Pages, c.Hosts)
	case c.Hosts == 0 && len(c.Docs) == 0:
		return fmt.Errorf("%w: no host", errConfig)
	case len(c.Docs) > 254:
		return fmt.Errorf("%w: %d doc sites, at most 254", errConfig, len(c.Docs))
	case c.RTTMin < 0 || c.RTTMax < c.RTTMin:
		return fmt.Errorf("%w: round-trip range [%v, %v]", errConfig, c.RTTMin, c.RTTMax)
	case c.Jitter < 0 || c.Jitter > c.RTTMin:
		return fmt.Errorf("%w: jitter %v not in [0, rtt-min %v]", errConfig, c.Jitter, c.RTTMin)
	case c.RateKB < 0:
		return fmt.Errorf("%w: negative rate", errConfig)
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("%w: port %d", errConfig, c.Port)
	}
	return nil
}

// Host is one host of the network as a client sees it.
type Host struct {
	Name string        // its address, the Host header a client sends
	Addr string        // host:port its proxy listens on
	Seed string        // the URL a crawl of it starts from
	RTT  time.Duration // its round-trip time, jitter aside
}

// HostStats count what one host answered through its proxy.
type HostStats struct {
	Requests int   // every answer
	Pages    int   // 200 answers of text/html
	Bytes    int64 // body bytes written
	// Wire is the time the answers took on the link: per answer one
	// round trip plus its head and body at the link's rate. It is what
	// the host's answers cost back to back on one kept-alive connection.
	Wire time.Duration
}

// headBytes is the size of a response head counted towards its transfer
// time: Go's server writes about 150 bytes for these answers.
const headBytes = 150

// Network is a running network; Close stops it.
type Network struct {
	cfg     Config
	hosts   []Host
	web     *testweb.Web
	docSrvs []*http.Server
	proxies []*toxiproxy.Proxy

	mu    sync.Mutex // protects stats and paths
	stats map[string]*HostStats
	paths map[string][]string // request URIs per host, in order
}

// Start builds and starts the network described by cfg. The synthetic
// web's origin listens on 127.0.0.1:Port and its host i is reached at
// 127.1.1.(i+1):Port through its proxy; doc site j's origin listens on a
// free port of 127.0.0.1 and is reached at 127.0.2.(j+1):Port.
func Start(ctx context.Context, cfg Config) (_ *Network, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Network{cfg: cfg, stats: map[string]*HostStats{}, paths: map[string][]string{}}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	port := cfg.Port
	var upstreams []string
	if cfg.Hosts > 0 {
		n.web, err = testweb.Start(testweb.Options{
			Seed: cfg.Seed, Hosts: cfg.Hosts, Pages: cfg.Pages, MaxHostPages: cfg.MaxHostPages,
			// Every host a crawl of its own: no links to other hosts, no
			// traps, no other spellings of a URL, so that every tool,
			// wget included, fetches the same pages.
			CrossLinks: -1, TrapHosts: -1, Duplicates: -1,
			Addressing: testweb.Loopback,
			Addr:       net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Wrap:       n.count,
		})
		if err != nil {
			return nil, fmt.Errorf("netbench: synthetic web: %w", err)
		}
		port = n.web.Port()
		for i := range cfg.Hosts {
			upstreams = append(upstreams, n.web.Addr())
			n.hosts = append(n.hosts, Host{Name: n.web.HostName(i), Seed: n.web.Root(i)})
		}
	}
	for j, d := range cfg.Docs {
		if _, err := os.Stat(d.Dir); err != nil {
			return nil, fmt.Errorf("netbench: doc site %s: %w", d.Name, err)
		}
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("netbench: doc site %s: %w", d.Name, err)
		}
		srv := &http.Server{
			Handler:  n.count(http.FileServer(http.Dir(d.Dir))),
			ErrorLog: log.New(discard{}, "", 0),
		}
		n.docSrvs = append(n.docSrvs, srv)
		go func() { _ = srv.Serve(ln) }()
		upstreams = append(upstreams, ln.Addr().String())
		n.hosts = append(n.hosts, Host{Name: netip.AddrFrom4([4]byte{127, 0, 2, byte(j + 1)}).String()})
	}
	if port == 0 {
		// No synthetic web chose it: take a port free on the first
		// proxy's address.
		ln, err := net.Listen("tcp4", net.JoinHostPort(n.hosts[0].Name, "0"))
		if err != nil {
			return nil, fmt.Errorf("netbench: port: %w", err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6e6574))
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	for i := range n.hosts {
		h := &n.hosts[i]
		h.Addr = net.JoinHostPort(h.Name, strconv.Itoa(port))
		if h.Seed == "" {
			h.Seed = "http://" + h.Addr + "/"
		}
		h.RTT = cfg.RTTMin
		if cfg.RTTMax > cfg.RTTMin {
			h.RTT += time.Duration(rng.Int64N(int64(cfg.RTTMax - cfg.RTTMin + 1)))
		}
		n.stats[h.Name] = &HostStats{}
		p := toxiproxy.NewProxy(srv, h.Name, h.Addr, upstreams[i])
		if err := p.Start(); err != nil {
			return nil, fmt.Errorf("netbench: proxy %s: %w", h.Addr, err)
		}
		n.proxies = append(n.proxies, p)
		for _, t := range toxics(h.RTT, cfg.Jitter, cfg.RateKB) {
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(t)); err != nil {
				return nil, fmt.Errorf("netbench: proxy %s: toxic %s: %w", h.Addr, t, err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return n, nil
}

// toxics returns the toxiproxy toxics (as its API's JSON) that give a
// link a round-trip time of rtt, jitter and a downstream rate cap.
func toxics(rtt, jitter time.Duration, rateKB int64) []string {
	half := rtt.Milliseconds() / 2
	j := jitter.Milliseconds() / 2
	t := []string{
		fmt.Sprintf(`{"name":"up","type":"latency","stream":"upstream","attributes":{"latency":%d,"jitter":%d}}`, half, j),
		fmt.Sprintf(`{"name":"down","type":"latency","stream":"downstream","attributes":{"latency":%d,"jitter":%d}}`, rtt.Milliseconds()-half, j),
	}
	if rateKB > 0 {
		t = append(t, fmt.Sprintf(`{"name":"rate","type":"bandwidth","stream":"downstream","attributes":{"rate":%d}}`, rateKB))
	}
	return t
}

// count wraps an origin's handler to count its answers per Host header.
func (n *Network) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(cw, r)
		host := strings.ToLower(r.Host)
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		s := n.stats[host]
		if s == nil {
			return // a Host header naming no host of the network
		}
		s.Requests++
		s.Bytes += cw.n
		n.paths[host] = append(n.paths[host], r.URL.RequestURI())
		if cw.status == http.StatusOK && strings.HasPrefix(cw.Header().Get("Content-Type"), "text/html") {
			s.Pages++
		}
		s.Wire += n.rtt(host) + transfer(cw.n+headBytes, n.cfg.RateKB)
	})
}

// rtt returns host's round-trip time; n.mu is held.
func (n *Network) rtt(host string) time.Duration {
	for _, h := range n.hosts {
		if h.Name == host {
			return h.RTT
		}
	}
	return 0
}

// transfer is the time b bytes take at rateKB KB/s (0: no cap).
func transfer(b, rateKB int64) time.Duration {
	if rateKB <= 0 {
		return 0
	}
	return time.Duration(b * int64(time.Second) / (rateKB * 1000))
}

type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *countingWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	k, err := w.ResponseWriter.Write(b)
	w.n += int64(k)
	return k, err
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// Hosts returns the network's hosts.
func (n *Network) Hosts() []Host { return slices.Clone(n.hosts) }

// Stats returns what each host answered so far, by host name.
func (n *Network) Stats() map[string]HostStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := make(map[string]HostStats, len(n.stats))
	for k, v := range n.stats {
		m[k] = *v
	}
	return m
}

// Paths returns the request URIs each host answered, in order, by host
// name.
func (n *Network) Paths() map[string][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := make(map[string][]string, len(n.paths))
	for k, v := range n.paths {
		m[k] = slices.Clone(v)
	}
	return m
}

// Close stops the proxies and the origins.
func (n *Network) Close() {
	for _, p := range n.proxies {
		p.Stop()
	}
	for _, s := range n.docSrvs {
		s.Close()
	}
	if n.web != nil {
		n.web.Close()
	}
}
