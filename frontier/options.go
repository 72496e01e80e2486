package frontier

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/layercrawl/layercrawl/countmin"
)

// ErrInvalidOptions is wrapped by every error of an Options, AdmissionOptions,
// PolitenessOptions or Limits Validate, and of the constructors that call
// them.
var ErrInvalidOptions = errors.New("frontier: invalid options")

// Defaults of the crawl limits shared by every frontier built on this
// package (this one and the Redis frontier), so that the two modes cannot
// drift apart.
const (
	DefaultMaxDepth      = 20               // hops (links and redirects) from a seed
	DefaultMaxRedirects  = 10               // consecutive redirect hops
	DefaultMaxEmbedHops  = 2                // embed hops outside the scope
	DefaultDelay         = time.Second      // between two requests to one host
	DefaultMaxCrawlDelay = 30 * time.Second // cap on robots.txt Crawl-delay
	DefaultDelayFactor   = 2.0              // adaptive delay: times the last response time
	DefaultMaxDelay      = time.Minute      // cap on the adaptive delay
)

// Scope limits which hosts a crawl follows links to.
type Scope uint8

const (
	// ScopeHost follows links to the seeds' host names only.
	ScopeHost Scope = iota
	// ScopeDomain follows links within the seeds' registrable domains.
	ScopeDomain
	// ScopeAny follows links to any host.
	ScopeAny
	// ScopeSeeds follows no links: only the seeds are fetched, with the
	// redirects they lead to on the seeds' hosts (as ScopeHost would
	// follow them).
	ScopeSeeds
)

// ParseScope parses "host", "domain", "any" or "seeds".
func ParseScope(s string) (Scope, error) {
	switch s {
	case "host":
		return ScopeHost, nil
	case "domain":
		return ScopeDomain, nil
	case "any":
		return ScopeAny, nil
	case "seeds":
		return ScopeSeeds, nil
	}
	return 0, fmt.Errorf("%w: unknown scope %q (want host, domain, any or seeds)", ErrInvalidOptions, s)
}

func (s Scope) String() string {
	switch s {
	case ScopeHost:
		return "host"
	case ScopeDomain:
		return "domain"
	case ScopeAny:
		return "any"
	case ScopeSeeds:
		return "seeds"
	}
	return fmt.Sprintf("Scope(%d)", uint8(s))
}

// Order is the order in which the frontier hands out queued URLs.
type Order uint8

const (
	// OrderFIFO hands out each host's entries in discovery order and
	// serves ready hosts round-robin (the host that waited longest
	// first): close to breadth-first. The zero value.
	OrderFIFO Order = iota
	// OrderInlinks hands out each host's entries highest estimated
	// in-link count first (links counted from distinct fetched pages, in
	// a count-min sketch; seeds first), and among the ready hosts serves
	// the one whose best entry has the highest count. Politeness is the
	// same as OrderFIFO's.
	OrderInlinks
)

// ParseOrder parses "fifo" or "inlinks".
func ParseOrder(s string) (Order, error) {
	switch s {
	case "fifo":
		return OrderFIFO, nil
	case "inlinks":
		return OrderInlinks, nil
	}
	return 0, fmt.Errorf("%w: unknown order %q (want fifo or inlinks)", ErrInvalidOptions, s)
}

func (o Order) String() string {
	switch o {
	case OrderFIFO:
		return "fifo"
	case OrderInlinks:
		return "inlinks"
	}
	return fmt.Sprintf("Order(%d)", uint8(o))
}

// AdmissionOptions are the rules a discovered URL must pass before the
// seen-set: scope, Allow/Deny, depth, redirect hops and the trap limits.
// They are defined here once and used by this package's Options, the Redis
// frontier's and the crawl engine's.
//
// Like every limit of layercrawl, a zero field takes its documented default
// and a negative one turns the limit off.
type AdmissionOptions struct {
	// Scope of the crawl; default ScopeHost.
	Scope Scope
	// Allow, when not empty, admits only URLs matching one of them; Deny
	// rejects URLs matching any. Both apply to the canonical URL, seeds
	// included.
	Allow, Deny []*regexp.Regexp
	// MaxDepth is the most hops (links and redirects) from a seed; default
	// DefaultMaxDepth (20); negative: no limit. To fetch only the seeds,
	// use ScopeSeeds.
	MaxDepth int
	// MaxRedirects is the most consecutive redirect hops; default
	// DefaultMaxRedirects (10); negative: no limit (MaxDepth still
	// applies).
	MaxRedirects int
	// MaxEmbedHops is how many embed hops (requisites of requisites, as
	// a stylesheet's font) a page requisite may lie outside the scope:
	// the requisites of a page in scope are fetched from any host (its
	// CDN) up to that many hops, and within the scope without limit.
	// Requisites are exempt from MaxDepth. Default DefaultMaxEmbedHops
	// (2); negative: no limit. A crawl that wants no requisites turns
	// them off where links are extracted (fetch.Options.NoEmbeds).
	MaxEmbedHops int
	// Limits are the defences against crawler traps (URL length, path
	// segments, repeated segments, per-host budget, children per prefix);
	// each zero field takes its default, a negative one is off. See Limits.
	Limits Limits
}

// EnsureDefaults fills in the zero fields with their defaults.
func (o *AdmissionOptions) EnsureDefaults() {
	if o.MaxDepth == 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.MaxEmbedHops == 0 {
		o.MaxEmbedHops = DefaultMaxEmbedHops
	}
	o.Limits.EnsureDefaults()
}

// Validate reports whether the options can be used. It expects
// EnsureDefaults to have run.
func (o *AdmissionOptions) Validate() error {
	if o.Scope > ScopeSeeds {
		return fmt.Errorf("%w: invalid scope %d", ErrInvalidOptions, o.Scope)
	}
	for _, re := range append(o.Allow[:len(o.Allow):len(o.Allow)], o.Deny...) {
		if re == nil {
			return fmt.Errorf("%w: nil Allow or Deny expression", ErrInvalidOptions)
		}
	}
	return o.Limits.Validate()
}

// PolitenessOptions say how often one host may be asked for a page. They are
// defined here once and used by this package's Options, the Redis frontier's
// and the crawl engine's.
type PolitenessOptions struct {
	// Delay is the least time between two requests to one host; default
	// DefaultDelay (1s); negative: none.
	Delay time.Duration
	// MaxCrawlDelay caps a robots.txt Crawl-delay; default
	// DefaultMaxCrawlDelay (30s); negative: robots.txt Crawl-delay is
	// ignored.
	MaxCrawlDelay time.Duration
	// DelayFactor makes the delay adapt to the host's speed: after a
	// request that took t, the host waits at least DelayFactor×t
	// (Heritrix's delayFactor; Scrapy's AutoThrottle with a target
	// concurrency of 1/DelayFactor), capped at MaxDelay. Default
	// DefaultDelayFactor (2); negative: off.
	DelayFactor float64
	// MaxDelay caps the adaptive delay: DelayFactor's, and the doubling
	// after every response that asks to slow down (429, 503), which later
	// responses halve back; default DefaultMaxDelay (1m); negative:
	// adaptive politeness is off (Delay and Crawl-delay only).
	MaxDelay time.Duration
}

// EnsureDefaults fills in the zero fields with their defaults.
func (o *PolitenessOptions) EnsureDefaults() {
	if o.Delay == 0 {
		o.Delay = DefaultDelay
	}
	if o.MaxCrawlDelay == 0 {
		o.MaxCrawlDelay = DefaultMaxCrawlDelay
	}
	if o.DelayFactor == 0 {
		o.DelayFactor = DefaultDelayFactor
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = DefaultMaxDelay
	}
}

// Validate reports whether the options can be used: DelayFactor must be a
// number (NaN and infinities are not).
func (o *PolitenessOptions) Validate() error {
	if math.IsNaN(o.DelayFactor) || math.IsInf(o.DelayFactor, 0) {
		return fmt.Errorf("%w: DelayFactor %v is not a number", ErrInvalidOptions, o.DelayFactor)
	}
	return nil
}

// HostDelay returns the wait after a request to a host whose robots.txt
// asks for crawlDelay (0 if none): the larger of Delay and crawlDelay
// capped at MaxCrawlDelay, never less than Delay nor negative.
func (o *PolitenessOptions) HostDelay(crawlDelay time.Duration) time.Duration {
	delay := max(o.Delay, 0)
	if o.MaxCrawlDelay >= 0 && crawlDelay > delay {
		delay = max(min(crawlDelay, o.MaxCrawlDelay), delay)
	}
	return delay
}

// Options configures a Frontier. Store, Seen and Normalizer are required.
type Options struct {
	Store      Store
	Seen       Seen
	Normalizer Normalizer
	// Domain returns the registrable domain of a host name; required with
	// ScopeDomain (urlnorm.RegistrableDomain). When it fails, the host
	// name itself is used.
	Domain func(host string) (string, error)
	// Admission are the rules discovered URLs must pass.
	Admission AdmissionOptions
	// Politeness says how often one host may be asked.
	Politeness PolitenessOptions
	// MaxPages stops handing out entries once that many have been
	// fetched, counting those out; 0 (default) and negative: no limit.
	MaxPages int64
	// Order is the order entries are handed out in; default OrderFIFO.
	Order Order
	// Inlinks holds the in-link counts of OrderInlinks; ignored with
	// OrderFIFO. Default: a sketch sized for ExpectedURLs, or for
	// MaxPages × InlinksKeysPerPage keys when less
	// (InlinksSketchShape). A caller that persists it (Frontier.Inlinks)
	// passes the loaded one on resume.
	Inlinks *countmin.Sketch
	// ExpectedURLs sizes the default Inlinks sketch (InlinksSketchShape);
	// default 10,000,000.
	ExpectedURLs uint64
	// HostWindow is how many entries of one host's queue memory holds;
	// default 64, DefaultInlinksHostWindow (1,024) with OrderInlinks, where
	// they are the entries the most linked-to is chosen among.
	HostWindow int
	// MemoryWindow is how many entries memory holds in all; default
	// 100,000. Every host with a queue still keeps a small record.
	MemoryWindow int
	// Now returns the current time; default time.Now.
	Now func() time.Time
	// ExactDedup checks every "maybe seen" answer of Seen against a set
	// of 64-bit fingerprints of the queued URLs, kept in Store, so that a
	// false positive of the filter never drops a URL. It is fixed when a
	// crawl starts: resuming with it a crawl begun without it is an
	// error; resuming without it ends it for good (ExactDedupState tells
	// which a state is). Default off.
	ExactDedup bool
	// ExactMemory bounds the memory tables of ExactDedup's fingerprints,
	// in bytes: while they fit, a "maybe seen" answer is checked in
	// memory; past it (a stripe at a time), in the store. Default
	// DefaultExactMemory (64 MiB: 6.7 million URLs); negative:
	// every check goes to the store.
	ExactMemory int64
	// Continuous keeps every URL Done completes with an Outcome.Schedule
	// in a due schedule, and queues it again when due (see schedule.go):
	// Next then never returns ErrExhausted. Default off.
	Continuous bool
	// AgeWindow makes the exact check's set of fingerprints age (see
	// aging.go): a URL neither linked from a page nor fetched for two
	// windows is forgotten, and admitted again when a link leads to it.
	// A continuous crawl sets it to at least the longest revisit
	// interval, so that no scheduled URL is forgotten. Requires
	// ExactDedup. Default 0: the set never forgets.
	AgeWindow time.Duration
}

// EnsureDefaults fills in the zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	o.Admission.EnsureDefaults()
	o.Politeness.EnsureDefaults()
	if o.HostWindow == 0 && o.Order == OrderInlinks {
		o.HostWindow = DefaultInlinksHostWindow
	}
	if o.HostWindow == 0 {
		o.HostWindow = 64
	}
	if o.MemoryWindow == 0 {
		o.MemoryWindow = 100_000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ExactMemory == 0 {
		o.ExactMemory = DefaultExactMemory
	}
	if o.ExpectedURLs == 0 {
		o.ExpectedURLs = DefaultExpectedURLs
	}
}

// DefaultExpectedURLs is Options.ExpectedURLs' default.
const DefaultExpectedURLs = 10_000_000

// Validate reports whether the options can make a Frontier. It expects
// EnsureDefaults to have run.
func (o *Options) Validate() error {
	switch {
	case o.Store == nil:
		return fmt.Errorf("%w: Store is required", ErrInvalidOptions)
	case o.Seen == nil:
		return fmt.Errorf("%w: Seen is required", ErrInvalidOptions)
	case o.Normalizer == nil:
		return fmt.Errorf("%w: Normalizer is required", ErrInvalidOptions)
	case o.Admission.Scope == ScopeDomain && o.Domain == nil:
		return fmt.Errorf("%w: Domain is required with ScopeDomain", ErrInvalidOptions)
	case o.Order > OrderInlinks:
		return fmt.Errorf("%w: invalid order %d", ErrInvalidOptions, o.Order)
	case o.AgeWindow < 0 || o.AgeWindow > 0 && !o.ExactDedup:
		return fmt.Errorf("%w: AgeWindow %v needs ExactDedup and may not be negative", ErrInvalidOptions, o.AgeWindow)
	case o.HostWindow < 1, o.MemoryWindow < 1:
		return fmt.Errorf("%w: HostWindow %d and MemoryWindow %d must be positive", ErrInvalidOptions, o.HostWindow, o.MemoryWindow)
	}
	if err := o.Admission.Validate(); err != nil {
		return err
	}
	return o.Politeness.Validate()
}

// pageLimit returns MaxPages as an unsigned limit, 0 for none.
func pageLimit(n int64) uint64 { return uint64(max(n, 0)) }
