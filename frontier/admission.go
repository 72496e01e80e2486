package frontier

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layercrawl/layercrawl/urlnorm"
)

// Refusal says why Admission refused a URL; Admitted (the zero value) when
// it did not.
type Refusal uint8

// The reasons Admission refuses a URL, in the order the checks run.
const (
	Admitted               Refusal = iota
	RefusedInvalid                 // did not resolve or normalize, no host, not http(s)
	RefusedDepth                   // more hops from a seed than MaxDepth
	RefusedRedirects               // more consecutive redirects than MaxRedirects
	RefusedScope                   // host outside the seeds' hosts or domains
	RefusedFiltered                // matched Deny, or none of Allow
	RefusedTooLong                 // Limits.MaxURLLength
	RefusedTooManySegments         // Limits.MaxPathSegments
	RefusedRepeatedSegment         // Limits.MaxSegmentRepeats
	RefusedHostBudget              // Limits.MaxHostURLs
	RefusedTooManyChildren         // Limits.MaxChildren
	numRefusals
)

var refusalNames = [numRefusals]string{"admitted", "invalid", "too deep", "too many redirects", "out of scope", "filtered", "too long", "too many segments", "repeated segment", "host budget", "too many children"}

func (r Refusal) String() string {
	if r < numRefusals {
		return refusalNames[r]
	}
	return fmt.Sprintf("Refusal(%d)", uint8(r))
}

// trapRefusal maps the traps' reasons to the exported ones.
var trapRefusal = [...]Refusal{
	admit:            Admitted,
	refuseLength:     RefusedTooLong,
	refuseSegments:   RefusedTooManySegments,
	refuseRepeat:     RefusedRepeatedSegment,
	refuseHostBudget: RefusedHostBudget,
	refuseChildren:   RefusedTooManyChildren,
}

// ErrSeed is wrapped by the error of Admission.ParseSeed.
var ErrSeed = errors.New("frontier: bad seed")

// AdmissionStats counts what an Admission refused, by reason.
type AdmissionStats struct {
	Invalid          uint64 // references that did not resolve or normalize
	TooDeep          uint64 // rejected by MaxDepth
	TooManyRedirects uint64 // redirect targets rejected by MaxRedirects
	OutOfScope       uint64 // rejected by scope
	Filtered         uint64 // rejected by Allow/Deny
	Limits           LimitStats
}

// Admission decides whether a discovered link or redirect target may go on
// to the seen-set: it resolves and normalizes the reference, then checks
// the scheme, depth, redirect hops, scope, Allow/Deny and the trap Limits,
// in that order, and counts every refusal. It never consults the seen-set:
// the caller runs the admitted candidates through its TestAndAdd and
// reports the new ones to Added, which feeds the per-host and per-prefix
// counts of the trap limits. Both frontier.Frontier and the Redis frontier
// use it. The counts (of refusals and of the trap limits) are this
// Admission's own: with several processes each one counts only the links
// it sees. An Admission is safe for concurrent use.
type Admission struct {
	opts   AdmissionOptions
	norm   Normalizer
	domain func(host string) (string, error)
	traps  *traps

	mu       sync.RWMutex    // protects seedHost and seedDom
	seedHost map[string]bool // host names of the seeds
	seedDom  map[string]bool // registrable domains of the seeds

	refused [numRefusals]atomic.Uint64 // by Refusal, trap limits excepted (traps counts them)
}

// Candidate is a URL an Admission admitted.
type Candidate struct {
	URL       string   // canonical URL
	Host      string   // host[:port], lower case: the queue key
	Segments  []string // the seen-set's layers of URL
	Depth     int      // hops from a seed
	Redirects int      // consecutive redirect hops that led here
	Via       string   // the page it was found on, or the redirecting URL; empty for seeds
	Hops      string   // hop path from a seed (see Entry.Hops)
	Sitemap   bool     // names a sitemap (see Entry.Sitemap)
	LastMod   time.Time
}

// Seed is a seed parsed by Admission.ParseSeed.
type Seed struct {
	URL    string // canonical URL
	Host   string // host name, without port
	Domain string // registrable domain of Host (Host itself without Options.Domain or when it fails)
}

// NewAdmission returns an Admission with an empty scope, resolving and
// normalizing with norm (required) and finding registrable domains with
// domain (required with ScopeDomain). The options are copied, with
// EnsureDefaults applied.
func NewAdmission(norm Normalizer, domain func(host string) (string, error), o AdmissionOptions) (*Admission, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	switch {
	case norm == nil:
		return nil, fmt.Errorf("%w: NewAdmission needs a Normalizer", ErrInvalidOptions)
	case o.Scope == ScopeDomain && domain == nil:
		return nil, fmt.Errorf("%w: ScopeDomain needs a Domain function", ErrInvalidOptions)
	}
	o.Allow = append([]*regexp.Regexp(nil), o.Allow...)
	o.Deny = append([]*regexp.Regexp(nil), o.Deny...)
	return &Admission{
		opts:     o,
		norm:     norm,
		domain:   domain,
		traps:    newTraps(o.Limits),
		seedHost: map[string]bool{},
		seedDom:  map[string]bool{},
	}, nil
}

// ParseSeed normalizes a seed and returns it with its host name and
// registrable domain; the error wraps ErrSeed. It does not change the
// scope (see AddScope).
func (a *Admission) ParseSeed(raw string) (Seed, error) {
	c, err := a.norm.Normalize(raw)
	if err != nil {
		return Seed{}, fmt.Errorf("%w %q: %w", ErrSeed, raw, err)
	}
	u, err := url.Parse(c)
	if err != nil || u.Host == "" {
		return Seed{}, fmt.Errorf("%w %q: no host", ErrSeed, raw)
	}
	name := u.Hostname()
	dom := name
	if a.domain != nil {
		if d, err := a.domain(name); err == nil && d != "" {
			dom = d
		}
	}
	return Seed{URL: c, Host: name, Domain: dom}, nil
}

// AddScope adds host names and registrable domains to the scope and
// returns the ones it did not hold.
func (a *Admission) AddScope(hosts, domains []string) (newHosts, newDomains []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, h := range hosts {
		if !a.seedHost[h] {
			a.seedHost[h] = true
			newHosts = append(newHosts, h)
		}
	}
	for _, d := range domains {
		if !a.seedDom[d] {
			a.seedDom[d] = true
			newDomains = append(newDomains, d)
		}
	}
	return newHosts, newDomains
}

// SetScope replaces the scope.
func (a *Admission) SetScope(hosts, domains []string) {
	h := make(map[string]bool, len(hosts))
	for _, s := range hosts {
		h[s] = true
	}
	d := make(map[string]bool, len(domains))
	for _, s := range domains {
		d[s] = true
	}
	a.mu.Lock()
	a.seedHost, a.seedDom = h, d
	a.mu.Unlock()
}

// CheckSeed checks a canonical seed URL: seeds skip the scope (they make
// it), the depth and redirect checks (they have none) and the trap limits
// (a seed is the operator's choice).
func (a *Admission) CheckSeed(canon string) (Candidate, Refusal) {
	return a.check(canon, nil, 0)
}

// Link resolves the reference ref found on parent's page against base
// (parent.URL when empty) and checks it, one hop deeper than parent.
func (a *Admission) Link(parent Entry, base, ref string) (Candidate, Refusal) {
	if base == "" {
		base = parent.URL
	}
	c, err := a.norm.Resolve(base, ref)
	if err != nil {
		return Candidate{}, a.refuse(RefusedInvalid)
	}
	return a.check(c, &parent, HopLink)
}

// PageLinks checks the references found on one page: Links parses the
// page's base URL once for all of them, where Link parses it per link.
type PageLinks struct {
	a      *Admission
	parent Entry
	base   string
	parsed *urlnorm.Base // nil: resolve with the Normalizer's Resolve
}

// Links returns the checker of parent's references, resolved against base
// (parent.URL when empty).
func (a *Admission) Links(parent Entry, base string) *PageLinks {
	if base == "" {
		base = parent.URL
	}
	p := &PageLinks{a: a, parent: parent, base: base}
	if bp, ok := a.norm.(interface {
		ParseBase(string) (*urlnorm.Base, error)
	}); ok {
		if b, err := bp.ParseBase(base); err == nil {
			p.parsed = b
		}
	}
	return p
}

// Link checks one reference of the page, as Admission.Link does.
func (p *PageLinks) Link(ref string) (Candidate, Refusal) {
	return p.hop(ref, HopLink)
}

// Embed checks one requisite of the page (an image, a stylesheet, a URL
// of its CSS): one embed hop further, exempt from the depth limit, and
// admitted outside the scope up to MaxEmbedHops embed hops.
func (p *PageLinks) Embed(ref string) (Candidate, Refusal) {
	return p.hop(ref, HopEmbed)
}

func (p *PageLinks) hop(ref string, hop byte) (Candidate, Refusal) {
	var c string
	var err error
	if p.parsed == nil {
		c, err = p.a.norm.Resolve(p.base, ref)
	} else {
		c, err = p.parsed.Resolve(ref)
	}
	if err != nil {
		return Candidate{}, p.a.refuse(RefusedInvalid)
	}
	return p.a.check(c, &p.parent, hop)
}

// Redirect resolves a redirect's Location against parent.URL and checks
// it, one hop and one redirect further than parent.
func (a *Admission) Redirect(parent Entry, location string) (Candidate, Refusal) {
	c, err := a.norm.Resolve(parent.URL, location)
	if err != nil {
		return Candidate{}, a.refuse(RefusedInvalid)
	}
	return a.check(c, &parent, HopRedirect)
}

// Added records that the seen-set reported c new and that it was queued,
// for the trap limits' per-host and per-prefix counts. Seeds are not
// counted.
func (a *Admission) Added(c Candidate) {
	if c.Via != "" {
		a.traps.added(c.URL, c.Host, c.Segments)
	}
}

// Stats returns the refusal counts.
func (a *Admission) Stats() AdmissionStats {
	return AdmissionStats{
		Invalid:          a.refused[RefusedInvalid].Load(),
		TooDeep:          a.refused[RefusedDepth].Load(),
		TooManyRedirects: a.refused[RefusedRedirects].Load(),
		OutOfScope:       a.refused[RefusedScope].Load(),
		Filtered:         a.refused[RefusedFiltered].Load(),
		Limits:           a.traps.snapshot(),
	}
}

func (a *Admission) refuse(r Refusal) Refusal {
	a.refused[r].Add(1)
	return r
}

// check runs the checks on one canonical URL found from parent by a hop
// of type hop; parent is nil for seeds.
func (a *Admission) check(canon string, parent *Entry, hop byte) (Candidate, Refusal) {
	// The URL was just normalized: read its host off the canonical layout
	// rather than parse it again. SplitCanonical refuses what net/url.Parse
	// would (no http(s) scheme, no host, a host net/url rejects).
	_, hostPort, hostname, ok := urlnorm.SplitCanonical(canon)
	if !ok {
		return Candidate{}, a.refuse(RefusedInvalid)
	}
	var via, hops string
	depth, redirects := 0, 0
	if parent != nil {
		via, hops, depth = parent.URL, appendHop(parent.Hops, hop), parent.Depth+1
		if hop == HopRedirect {
			redirects = parent.Redirects + 1
		}
	}
	embeds, isEmbed := embedChain(hops)
	if !isEmbed && a.opts.MaxDepth >= 0 && depth > a.opts.MaxDepth {
		return Candidate{}, a.refuse(RefusedDepth)
	}
	if a.opts.MaxRedirects >= 0 && redirects > a.opts.MaxRedirects {
		return Candidate{}, a.refuse(RefusedRedirects)
	}
	if via != "" && !a.inScope(hostname, redirects > 0) &&
		!(isEmbed && (a.opts.MaxEmbedHops < 0 || embeds <= a.opts.MaxEmbedHops)) {
		return Candidate{}, a.refuse(RefusedScope)
	}
	if !a.allowed(canon) {
		return Candidate{}, a.refuse(RefusedFiltered)
	}
	host := strings.ToLower(hostPort)
	segs := a.norm.Segments(canon)
	if via != "" {
		// traps counts its own refusals.
		if r := a.traps.check(canon, host, segs); r != admit {
			return Candidate{}, trapRefusal[r]
		}
	}
	return Candidate{URL: canon, Host: host, Segments: segs, Depth: depth, Redirects: redirects, Via: via, Hops: hops}, Admitted
}

// inScope reports whether a discovered URL on hostname may be followed;
// redirect says whether it is a redirect target.
func (a *Admission) inScope(hostname string, redirect bool) bool {
	switch a.opts.Scope {
	case ScopeAny:
		return true
	case ScopeSeeds:
		if !redirect {
			return false
		}
		fallthrough
	case ScopeHost:
		a.mu.RLock()
		defer a.mu.RUnlock()
		return a.seedHost[hostname]
	}
	dom := hostname
	if d, err := a.domain(hostname); err == nil && d != "" {
		dom = d
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.seedDom[dom]
}

func (a *Admission) allowed(canon string) bool {
	for _, re := range a.opts.Deny {
		if re.MatchString(canon) {
			return false
		}
	}
	if len(a.opts.Allow) == 0 {
		return true
	}
	for _, re := range a.opts.Allow {
		if re.MatchString(canon) {
			return true
		}
	}
	return false
}
