// Package faults injects transient failures into a test server, so that a
// crawler's retries can be tested against exactly known outcomes.
//
// An Injector wraps an http.Handler (a testweb.Web through
// testweb.Options.Wrap, a testsite.Host, anything) and, for a chosen
// share of request attempts, answers in one of the transient ways
// instead:
//
//   - Reset: the request is read, then the connection is reset (TCP RST);
//   - Timeout: the request is read and never answered (until the client
//     gives up or the server closes);
//   - Truncated: a 200 with a Content-Length twice the body sent, then
//     the connection is closed;
//   - Status: HTTP 408, 425, 429, 500, 502, 503 or 504, with Retry-After
//     as seconds, as an HTTP-date, as garbage, a year away, or absent.
//
// Through its resolver (Lookup, for testdns.New) it also fails whole
// lookups of a host name:
//
//   - DNS: the name server answers SERVFAIL, which Go's resolver returns
//     as a *net.DNSError with IsTemporary;
//   - Refused: the name resolves to Options.RefusedAddr, where nothing
//     listens, so the connect is refused.
//
// Host modes (Options.Hosts) make one host misbehave as a whole: a 429 for
// ever, a 503 storm over its first StormRequests requests, or a reset of
// every second connection.
//
// # Determinism
//
// Whether attempt n of a URL fails, and how, is a hash of (Seed, URL, n):
// the server counts the attempts of each URL ("host:port" from the Host
// header, in lower case, and the request URI) and fails attempt n with
// probability Rate, never from attempt MaxFailures on. So every URL
// succeeds after at most MaxFailures failures, and Plan tells a test,
// without any request, which faults a URL meets before it succeeds: a
// crawl's outcome per URL and retry budget is exact (Outcome). Host modes
// depend on the order of a host's requests; Plan says so.
//
// Lookup failures are decided per host name and per burst: the lookups of
// one name within Options.Burst of a burst's first share its answer (Go's
// resolver asks several times per lookup: A and AAAA, and again after a
// SERVFAIL), and burst n of a name fails with probability DNSRate or
// RefusedRate, never from burst MaxFailures on. A crawler that waits at
// least Burst before a retry meets each burst once.
//
// Every response closes its connection. Go's http.Transport retries a GET
// by itself when a reused connection fails before the response, which
// would make the server count an attempt the client never saw; with a new
// connection per request a reset reaches the client.
//
// # Use
//
// A crawl of a synthetic web with a fifth of the attempts failing, each
// URL at most three times:
//
//	in, err := faults.New(faults.Options{Seed: 1, Rate: 0.2})
//	web, err := testweb.Start(testweb.Options{Hosts: 20, Wrap: in.Wrap})
//	defer in.Close()
//	defer web.Close()
//	resolver := testdns.New(in.Lookup(web.Lookup)) // with DNSRate or RefusedRate
//	// crawl with retries; then, for every URL of web.Expected(...):
//	last, attempts, err := in.Outcome(url, retries) // what the crawl log must say
//
// or one host of a testsite: srv := faults.Start(testsite.NewHost(site, 0), in).
//
// An Injector is safe for concurrent use. Close ends the handlers that
// wait (Timeout); close the server first.
package faults

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/layercrawl/layercrawl/internal/httptrap"
	"github.com/layercrawl/layercrawl/internal/testdns"
)

// Kind is a way of failing.
type Kind uint8

const (
	None      Kind = iota // no fault: the wrapped handler answers
	Reset                 // the connection is reset after the request
	Timeout               // no answer at all
	Truncated             // a body shorter than its Content-Length
	Status                // an HTTP error status
	DNS                   // a temporary DNS failure (resolver)
	Refused               // connection refused (resolver)
)

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case Reset:
		return "reset"
	case Timeout:
		return "timeout"
	case Truncated:
		return "truncated"
	case Status:
		return "status"
	case DNS:
		return "dns"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// RetryAfter is how a Status fault writes its Retry-After header.
type RetryAfter uint8

const (
	NoRetryAfter      RetryAfter = iota // no header
	RetryAfterSeconds                   // "Retry-After: N", N = Options.RetryAfterSeconds
	RetryAfterDate                      // an HTTP-date N seconds after the response
	RetryAfterGarbage                   // a value that is neither
	RetryAfterYear                      // an HTTP-date 365 days after the response
)

// GarbageRetryAfter is the Retry-After value of RetryAfterGarbage.
const GarbageRetryAfter = "soon, maybe"

// Fault is one way an attempt fails.
type Fault struct {
	Kind       Kind
	Status     int        // Kind Status: the HTTP status
	RetryAfter RetryAfter // Kind Status: its Retry-After
}

func (f Fault) String() string {
	if f.Kind != Status {
		return f.Kind.String()
	}
	s := strconv.Itoa(f.Status)
	switch f.RetryAfter {
	case RetryAfterSeconds:
		s += " retry-after seconds"
	case RetryAfterDate:
		s += " retry-after date"
	case RetryAfterGarbage:
		s += " retry-after garbage"
	case RetryAfterYear:
		s += " retry-after a year"
	}
	return s
}

// Transient returns one fault of each transient kind a server causes:
// reset, timeout, truncated, and 408, 425, 429 (Retry-After in seconds),
// 500, 502, 503 (Retry-After as a date) and 504.
func Transient() []Fault {
	return []Fault{
		{Kind: Reset}, {Kind: Timeout}, {Kind: Truncated},
		{Kind: Status, Status: http.StatusRequestTimeout},
		{Kind: Status, Status: http.StatusTooEarly},
		{Kind: Status, Status: http.StatusTooManyRequests, RetryAfter: RetryAfterSeconds},
		{Kind: Status, Status: http.StatusInternalServerError},
		{Kind: Status, Status: http.StatusBadGateway},
		{Kind: Status, Status: http.StatusServiceUnavailable, RetryAfter: RetryAfterDate},
		{Kind: Status, Status: http.StatusGatewayTimeout},
	}
}

// HostMode makes a whole host misbehave.
type HostMode uint8

const (
	Normal           HostMode = iota // per-URL faults only
	Forever429                       // every request: 429, Retry-After in seconds
	Storm503                         // the host's first StormRequests requests: 503, Retry-After in seconds
	ResetEverySecond                 // the host's 2nd, 4th, ... requests (connections) are reset
)

func (m HostMode) String() string {
	switch m {
	case Normal:
		return "normal"
	case Forever429:
		return "429-for-ever"
	case Storm503:
		return "503-storm"
	case ResetEverySecond:
		return "reset-every-second"
	}
	return fmt.Sprintf("HostMode(%d)", uint8(m))
}

// Defaults of Options.
const (
	DefaultMaxFailures       = 3
	DefaultRetryAfterSeconds = 1
	DefaultStormRequests     = 20
	DefaultBurst             = 100 * time.Millisecond
)

// ErrInvalidOptions is wrapped by the error of Options.Validate.
var ErrInvalidOptions = errors.New("faults: invalid options")

// Options configures an Injector. The zero value injects nothing; New
// calls EnsureDefaults, which fills every zero field with the default
// documented on it, then Validate.
type Options struct {
	// Seed chooses which attempts fail and how.
	Seed uint64
	// Rate is the probability that an attempt of a URL fails, in [0, 1].
	// Default 0: none.
	Rate float64
	// MaxFailures is the attempt (counted from 0) from which a URL, or
	// the lookups of a host name, always succeed: at most MaxFailures
	// failures each. Default DefaultMaxFailures (the crawler's default
	// retry budget); negative: no bound.
	MaxFailures int
	// Faults are the faults a failing attempt draws from, uniformly.
	// Default Transient(). Kinds DNS and Refused are not request faults:
	// use DNSRate and RefusedRate.
	Faults []Fault
	// RetryAfterSeconds is the delay RetryAfterSeconds and RetryAfterDate
	// announce. Default DefaultRetryAfterSeconds.
	RetryAfterSeconds int
	// Robots applies faults and host modes to /robots.txt too. Default
	// false: robots.txt is always served.
	Robots bool
	// Hosts gives host names (lower case, without port) a HostMode,
	// which replaces the per-URL faults on that host.
	Hosts map[string]HostMode
	// StormRequests is how many requests of a Storm503 host fail.
	// Default DefaultStormRequests.
	StormRequests int
	// DNSRate and RefusedRate are the probabilities that a burst of
	// lookups of a host name fails (DNS) or is sent where the connect is
	// refused (Refused); their sum is at most 1. Default 0.
	DNSRate, RefusedRate float64
	// Burst is how long the lookups of a name share the answer of the
	// first. Default DefaultBurst.
	Burst time.Duration
	// RefusedAddr is the address a Refused lookup answers: nothing may
	// listen there on the server's port. Default 127.0.0.3, a loopback
	// address where test servers (bound to 127.0.0.1) do not listen.
	RefusedAddr netip.Addr
}

// EnsureDefaults sets every zero field of o to its documented default.
func (o *Options) EnsureDefaults() {
	if o.MaxFailures == 0 {
		o.MaxFailures = DefaultMaxFailures
	}
	if o.Faults == nil {
		o.Faults = Transient()
	}
	if o.RetryAfterSeconds == 0 {
		o.RetryAfterSeconds = DefaultRetryAfterSeconds
	}
	if o.StormRequests == 0 {
		o.StormRequests = DefaultStormRequests
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	if !o.RefusedAddr.IsValid() {
		o.RefusedAddr = netip.AddrFrom4([4]byte{127, 0, 0, 3})
	}
}

// Validate reports the first invalid field. It expects EnsureDefaults to
// have run (New does both).
func (o *Options) Validate() error {
	rate := func(name string, r float64) error {
		if !(r >= 0 && r <= 1) {
			return fmt.Errorf("%w: %s %v not in [0, 1]", ErrInvalidOptions, name, r)
		}
		return nil
	}
	for _, err := range []error{rate("Rate", o.Rate), rate("DNSRate", o.DNSRate), rate("RefusedRate", o.RefusedRate),
		rate("DNSRate+RefusedRate", o.DNSRate+o.RefusedRate)} {
		if err != nil {
			return err
		}
	}
	switch {
	case len(o.Faults) == 0 && o.Rate > 0:
		return fmt.Errorf("%w: Rate %v with no Faults", ErrInvalidOptions, o.Rate)
	case o.RetryAfterSeconds < 0:
		return fmt.Errorf("%w: RetryAfterSeconds %d is negative", ErrInvalidOptions, o.RetryAfterSeconds)
	case o.StormRequests < 0:
		return fmt.Errorf("%w: StormRequests %d is negative", ErrInvalidOptions, o.StormRequests)
	case o.Burst < 0:
		return fmt.Errorf("%w: Burst %v is negative", ErrInvalidOptions, o.Burst)
	}
	for _, f := range o.Faults {
		switch {
		case f.Kind == Status && (f.Status < 400 || f.Status > 599):
			return fmt.Errorf("%w: fault status %d is not an HTTP error", ErrInvalidOptions, f.Status)
		case f.Kind == Status && f.RetryAfter > RetryAfterYear:
			return fmt.Errorf("%w: unknown RetryAfter %d", ErrInvalidOptions, f.RetryAfter)
		case f.Kind != Reset && f.Kind != Timeout && f.Kind != Truncated && f.Kind != Status:
			return fmt.Errorf("%w: %v is not a request fault", ErrInvalidOptions, f.Kind)
		}
	}
	for h, m := range o.Hosts {
		if m > ResetEverySecond {
			return fmt.Errorf("%w: host %q: unknown HostMode %d", ErrInvalidOptions, h, m)
		}
		if h != strings.ToLower(h) || strings.Contains(h, ":") {
			return fmt.Errorf("%w: host %q: want a lower-case name without port", ErrInvalidOptions, h)
		}
	}
	return nil
}

// Injector decides and serves faults.
type Injector struct {
	opts Options
	quit chan struct{} // closed by Close: ends Timeout handlers
	once sync.Once

	mu       sync.Mutex        // protects the maps below
	attempts map[string]int    // URL key -> requests seen
	hostReqs map[string]int    // host -> requests seen (host modes)
	bursts   map[string]*burst // host name -> its current lookup burst
	served   map[Fault]int     // faults served, Kind None included
}

type burst struct {
	n     int       // bursts so far, this one included
	until time.Time // end of this burst
	kind  Kind      // None, DNS or Refused
}

// New returns an Injector; the options are copied.
func New(opts Options) (*Injector, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.Faults = append([]Fault(nil), opts.Faults...)
	opts.Hosts = maps.Clone(opts.Hosts)
	return &Injector{opts: opts, quit: make(chan struct{}), attempts: map[string]int{}, hostReqs: map[string]int{},
		bursts: map[string]*burst{}, served: map[Fault]int{}}, nil
}

// Close ends the handlers that are waiting (Timeout faults).
func (in *Injector) Close() { in.once.Do(func() { close(in.quit) }) }

// Start serves h wrapped by in on a loopback httptest server.
func Start(h http.Handler, in *Injector) *httptest.Server { return httptest.NewServer(in.Wrap(h)) }

// key returns the attempt-counting key of a request: "host:port" in lower
// case and the request URI.
func key(host, requestURI string) string { return strings.ToLower(host) + requestURI }

// hostName strips the port from a Host header and lowers its case.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(host)
}

// hash returns a uniform 64-bit value for (seed, salt, key, n), the same
// in every process.
func (in *Injector) hash(salt uint64, key string, n int) uint64 {
	return xxh3.HashStringSeed(key, in.opts.Seed^salt^uint64(n)*0x9e3779b97f4a7c15)
}

// unit maps a hash to [0, 1).
func unit(x uint64) float64 { return float64(x>>11) / (1 << 53) }

const (
	saltFail = 0x6661696c
	saltKind = 0x6b696e64
	saltDNS  = 0x646e73
)

// fault returns the fault of attempt n of the URL with key k (per-URL
// faults only).
func (in *Injector) fault(k string, n int) Fault {
	o := &in.opts
	if o.Rate <= 0 || (o.MaxFailures >= 0 && n >= o.MaxFailures) || unit(in.hash(saltFail, k, n)) >= o.Rate {
		return Fault{}
	}
	return o.Faults[in.hash(saltKind, k, n)%uint64(len(o.Faults))]
}

// Plan is what the attempts of one URL meet.
type Plan struct {
	// Faults are the faults of attempts 0, 1, ...; the next attempt
	// succeeds, unless Forever.
	Faults []Fault
	// Forever: every attempt fails with Faults[0] (a Forever429 host).
	Forever bool
	// Host is the mode of a host whose outcome depends on the order of
	// its requests (Storm503, ResetEverySecond); Faults is then nil.
	Host HostMode
}

// Plan returns what the attempts of rawURL meet, without a request. Its
// host:port and request URI must be spelled as the client sends them (a
// canonical URL is). Lookup faults are not part of it.
func (in *Injector) Plan(rawURL string) (Plan, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Plan{}, fmt.Errorf("faults: plan: %w", err)
	}
	if !in.opts.Robots && u.Path == "/robots.txt" {
		return Plan{}, nil
	}
	switch m := in.opts.Hosts[hostName(u.Host)]; m {
	case Forever429:
		return Plan{Faults: []Fault{{Kind: Status, Status: http.StatusTooManyRequests, RetryAfter: RetryAfterSeconds}}, Forever: true}, nil
	case Storm503, ResetEverySecond:
		return Plan{Host: m}, nil
	}
	k := key(u.Host, u.RequestURI())
	var p Plan
	for n := 0; ; n++ {
		f := in.fault(k, n)
		if f.Kind == None {
			return p, nil
		}
		p.Faults = append(p.Faults, f)
		if in.opts.MaxFailures < 0 && n > 1000 {
			// Rate 1 without a bound: every attempt fails.
			p.Forever = true
			return p, nil
		}
	}
}

// Outcome returns what a client that retries a failed attempt at most
// retries times meets at rawURL: the fault of its last attempt (Kind None:
// it succeeded) and the number of attempts. A URL of an order-dependent
// host mode reports that mode in an error.
func (in *Injector) Outcome(rawURL string, retries int) (last Fault, attempts int, err error) {
	p, err := in.Plan(rawURL)
	if err != nil {
		return Fault{}, 0, err
	}
	if p.Host != Normal {
		return Fault{}, 0, fmt.Errorf("faults: %s: host mode %v depends on the order of requests", rawURL, p.Host)
	}
	if p.Forever {
		return p.Faults[min(retries, len(p.Faults)-1)], retries + 1, nil
	}
	if len(p.Faults) > retries {
		return p.Faults[retries], retries + 1, nil
	}
	return Fault{}, len(p.Faults) + 1, nil
}

// Attempts returns how many requests of rawURL the server has seen.
func (in *Injector) Attempts(rawURL string) int {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.attempts[key(u.Host, u.RequestURI())]
}

// Served returns how many times each fault was served, lookup faults
// included; Fault{} counts the requests passed to the wrapped handler.
func (in *Injector) Served() map[Fault]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.served)
}

// Wrap returns h with faults injected.
func (in *Injector) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := in.decide(r)
		switch f.Kind {
		case None:
			w.Header().Set("Connection", "close")
			h.ServeHTTP(w, r)
		case Reset:
			httptrap.Hijack(w, httptrap.Reset)
		case Timeout:
			httptrap.Wait(r, in.quit, 24*time.Hour)
			// Ended by Close: no response at all, not an empty 200.
			httptrap.Hijack(w, func(net.Conn) {})
		case Truncated:
			httptrap.Hijack(w, func(c net.Conn) {
				body := strings.Repeat("<p>truncated response, no links here</p>\n", 50)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", 2*len(body), body)
			})
		case Status:
			hd := w.Header()
			hd.Set("Connection", "close")
			hd.Set("Content-Type", "text/plain; charset=utf-8")
			secs := time.Duration(in.opts.RetryAfterSeconds) * time.Second
			switch f.RetryAfter {
			case RetryAfterSeconds:
				hd.Set("Retry-After", strconv.Itoa(in.opts.RetryAfterSeconds))
			case RetryAfterDate:
				// Rounded up: the date is at least the delay away.
				hd.Set("Retry-After", time.Now().Add(secs+time.Second).UTC().Format(http.TimeFormat))
			case RetryAfterGarbage:
				hd.Set("Retry-After", GarbageRetryAfter)
			case RetryAfterYear:
				hd.Set("Retry-After", time.Now().AddDate(0, 0, 365).UTC().Format(http.TimeFormat))
			}
			w.WriteHeader(f.Status)
			fmt.Fprintf(w, "faults: %s\n", f)
		}
	})
}

// decide counts the request and returns its fault.
func (in *Injector) decide(r *http.Request) Fault {
	if !in.opts.Robots && r.URL.Path == "/robots.txt" {
		return Fault{}
	}
	k := key(r.Host, r.URL.RequestURI())
	host := hostName(r.Host)
	in.mu.Lock()
	defer in.mu.Unlock()
	n := in.attempts[k]
	in.attempts[k] = n + 1
	hn := in.hostReqs[host]
	in.hostReqs[host] = hn + 1
	var f Fault
	switch in.opts.Hosts[host] {
	case Forever429:
		f = Fault{Kind: Status, Status: http.StatusTooManyRequests, RetryAfter: RetryAfterSeconds}
	case Storm503:
		if hn < in.opts.StormRequests {
			f = Fault{Kind: Status, Status: http.StatusServiceUnavailable, RetryAfter: RetryAfterSeconds}
		}
	case ResetEverySecond:
		if hn%2 == 1 {
			f = Fault{Kind: Reset}
		}
	default:
		f = in.fault(k, n)
	}
	in.served[f]++
	return f
}

// Lookup returns next with lookup faults injected, for testdns.New.
func (in *Injector) Lookup(next testdns.LookupFunc) testdns.LookupFunc {
	return func(host string) ([]netip.Addr, error) {
		o := &in.opts
		now := time.Now()
		in.mu.Lock()
		b := in.bursts[host]
		if b == nil {
			b = &burst{}
			in.bursts[host] = b
		}
		if !now.Before(b.until) {
			b.kind = None
			if o.MaxFailures < 0 || b.n < o.MaxFailures {
				switch x := unit(in.hash(saltDNS, host, b.n)); {
				case x < o.DNSRate:
					b.kind = DNS
				case x < o.DNSRate+o.RefusedRate:
					b.kind = Refused
				}
			}
			b.n++
			b.until = now.Add(o.Burst)
			if b.kind != None {
				in.served[Fault{Kind: b.kind}]++
			}
		}
		kind := b.kind
		in.mu.Unlock()
		switch kind {
		case DNS:
			return nil, testdns.ErrTemporary
		case Refused:
			return []netip.Addr{o.RefusedAddr}, nil
		}
		return next(host)
	}
}
