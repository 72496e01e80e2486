package testweb

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrInvalidOptions is wrapped by the errors of Options.Validate and
// ExpectOptions.Validate.
var ErrInvalidOptions = errors.New("testweb: invalid options")

// Addressing says how the hosts of a Web are named and reached.
type Addressing uint8

const (
	// Names (the default) names host i "h<i>.web.test" and the CDN
	// "static.cdn.test"; Web.Resolver resolves them all to the one
	// listener on 127.0.0.1, which serves the host the Host header names.
	// A client needs that resolver (fetch.Options.Resolver).
	Names Addressing = iota
	// Loopback gives host i its own loopback address 127.a.b.c (from
	// 127.1.1.1 up; the CDN is 127.0.0.2), all served by one listener on
	// 0.0.0.0 (Linux routes all of 127.0.0.0/8 to it). Any client reaches
	// them without a resolver, the crawler's command line included; the
	// listener closes connections from non-loopback peers at once.
	Loopback
)

func (a Addressing) String() string {
	switch a {
	case Names:
		return "names"
	case Loopback:
		return "loopback"
	}
	return fmt.Sprintf("Addressing(%d)", uint8(a))
}

// Defaults and bounds of Options.
const (
	DefaultHosts        = 10
	DefaultPagesPerHost = 100 // Pages defaults to this times Hosts
	DefaultMaxHostPages = 10_000
	// MaxHostPages bounds Options.MaxHostPages: a host of at most 50,000
	// pages stays, with everything else it serves, far below the
	// crawler's default per-host budget (100,000 URLs) and below its
	// default per-prefix children limit (10,000), so that those
	// order-dependent limits never cut a crawl of the web and Expected
	// stays exact.
	MaxHostPages        = 50_000
	DefaultSizeExponent = 1.2
	DefaultCrossLinks   = 2.0
	DefaultDuplicates   = 0.1
	// MaxLoopbackHosts is the most hosts Loopback addressing can number
	// (127.1.1.1 to 127.254.254.254).
	MaxLoopbackHosts = 254 * 254 * 254
)

// Options configures a Web. The zero value is a usable web of 10 hosts and
// 1,000 pages: Start calls EnsureDefaults, which fills every zero field
// with the default documented on it, then Validate. Where a field says so,
// a negative value turns a feature off.
type Options struct {
	// Seed makes the web: the same Options give the same web, byte for
	// byte (the port aside). Every value, 0 included, is a seed.
	Seed uint64
	// Hosts is the number of hosts. Default DefaultHosts.
	Hosts int
	// Pages is the number of content pages over all hosts (each host has
	// at least one). Host sizes follow a truncated Pareto distribution
	// (SizeExponent) scaled so that they add up to exactly Pages. Default
	// DefaultPagesPerHost times Hosts.
	Pages int
	// MaxHostPages caps the pages of one host. Default
	// DefaultMaxHostPages; at most MaxHostPages.
	MaxHostPages int
	// SizeExponent is the Pareto exponent of host sizes: smaller is
	// heavier-tailed. Default DefaultSizeExponent.
	SizeExponent float64
	// CrossLinks is the mean number of links per page to other hosts,
	// whose targets have a power-law in-degree. Default
	// DefaultCrossLinks; negative: none.
	CrossLinks float64
	// Duplicates is the share of links written in another spelling of
	// their target (host case, scheme case, percent-encoded unreserved
	// characters, dot segments, a fragment, an empty query,
	// scheme-relative, a numeric form of a loopback address, the default
	// port when the web listens on port 80). Default DefaultDuplicates;
	// negative: none.
	Duplicates float64
	// TrapHosts is the number of hosts that also serve the bounded traps
	// (a calendar, session ids, ever-deeper, ever-more-segments and
	// ever-longer paths). Host 0 is always among them. Default
	// max(1, Hosts/50); negative: none.
	TrapHosts int

	// Embeds gives pages their requisites: stylesheets (with @import and
	// url()), a script, images with srcset, a picture element, style
	// attributes and elements, a favicon, and a script and stylesheet on
	// the off-host CDN (whose stylesheet loads a font from the CDN).
	Embeds bool
	// Sitemaps adds a Sitemap line to every robots.txt, naming a sitemap
	// index whose children list the host's pages (the first child
	// gzipped) and pages that nothing links to (Expectation.SitemapOnly).
	// Host 0's index also names an oversized sitemap: 50,000 spellings of
	// its pages, then URLs past the per-file limit
	// (Expectation.SitemapCut).
	Sitemaps bool
	// NearDuplicates gives every tenth host (from host 1) a set of press
	// releases that share their boilerplate and differ only in a date
	// and a counter (Expectation.NearDuplicates).
	NearDuplicates bool

	// Addressing says how hosts are named and reached. Default Names.
	Addressing Addressing
	// Addr is the listen address. Default "127.0.0.1:0" (Names) or
	// "0.0.0.0:0" (Loopback). Port 80 lets links spell the default port.
	Addr string
	// Record keeps a count of requests per URL (Web.Requests): memory
	// grows with every distinct URL requested. Default false.
	Record bool
	// Wrap, when set, wraps the web's handler, for fault injection
	// (internal/faults) or instrumentation.
	Wrap func(http.Handler) http.Handler
}

// EnsureDefaults sets every zero field of o to its documented default.
func (o *Options) EnsureDefaults() {
	if o.Hosts == 0 {
		o.Hosts = DefaultHosts
	}
	if o.Pages == 0 {
		o.Pages = DefaultPagesPerHost * o.Hosts
	}
	if o.MaxHostPages == 0 {
		o.MaxHostPages = DefaultMaxHostPages
	}
	if o.SizeExponent == 0 {
		o.SizeExponent = DefaultSizeExponent
	}
	if o.CrossLinks == 0 {
		o.CrossLinks = DefaultCrossLinks
	}
	if o.Duplicates == 0 {
		o.Duplicates = DefaultDuplicates
	}
	if o.TrapHosts == 0 {
		o.TrapHosts = max(1, o.Hosts/50)
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
		if o.Addressing == Loopback {
			o.Addr = "0.0.0.0:0"
		}
	}
}

// Validate reports the first invalid field. It expects EnsureDefaults to
// have run (Start does both).
func (o *Options) Validate() error {
	switch {
	case o.Hosts < 1:
		return fmt.Errorf("%w: Hosts %d is below 1", ErrInvalidOptions, o.Hosts)
	case o.Addressing > Loopback:
		return fmt.Errorf("%w: unknown Addressing %d", ErrInvalidOptions, o.Addressing)
	case o.Addressing == Loopback && o.Hosts > MaxLoopbackHosts:
		return fmt.Errorf("%w: Hosts %d above %d, the loopback addresses Loopback numbers", ErrInvalidOptions, o.Hosts, MaxLoopbackHosts)
	case o.MaxHostPages < 1 || o.MaxHostPages > MaxHostPages:
		return fmt.Errorf("%w: MaxHostPages %d not in [1, %d]", ErrInvalidOptions, o.MaxHostPages, MaxHostPages)
	case o.Pages < o.Hosts:
		return fmt.Errorf("%w: Pages %d below Hosts %d (every host has a page)", ErrInvalidOptions, o.Pages, o.Hosts)
	case int64(o.Pages) > int64(o.Hosts)*int64(o.MaxHostPages):
		return fmt.Errorf("%w: Pages %d above Hosts times MaxHostPages", ErrInvalidOptions, o.Pages)
	case !(o.SizeExponent > 0 && o.SizeExponent <= 10):
		return fmt.Errorf("%w: SizeExponent %v not in (0, 10]", ErrInvalidOptions, o.SizeExponent)
	case !(o.CrossLinks <= 50): // also refuses NaN
		return fmt.Errorf("%w: CrossLinks %v above 50", ErrInvalidOptions, o.CrossLinks)
	case !(o.Duplicates <= 1):
		return fmt.Errorf("%w: Duplicates %v above 1", ErrInvalidOptions, o.Duplicates)
	}
	return nil
}
