package testweb

import (
	"fmt"
	"slices"
	"strings"

	"github.com/layercrawl/layercrawl/frontier"
)

// DefaultMaxEmbedHops is the default of ExpectOptions.MaxEmbedHops.
const DefaultMaxEmbedHops = 2

// ExpectOptions describe the crawl Expected predicts. Limits take the
// crawler's defaults when zero and are off when negative.
type ExpectOptions struct {
	// Seeds are canonical URLs of the web. Default Web.Seeds(): every
	// host's root.
	Seeds []string
	// Scope of links, redirects and sitemap entries, as the crawler's:
	// the seeds' hosts (the default), their registrable domains, or any.
	Scope frontier.Scope
	// Embeds: the crawler fetches page requisites (from any host, up to
	// MaxEmbedHops embed hops outside the scope) and reads stylesheets.
	// Without it, only links are followed: <link rel="stylesheet"> and
	// icons are requisites, which fetch's extractor then leaves out.
	Embeds bool
	// Sitemaps: the crawler reads the Sitemap lines of every robots.txt it
	// fetches, sitemap indexes, gzip sitemaps, and at most MaxSitemapURLs
	// entries per file.
	Sitemaps bool
	// RemoveSessionParams: the crawler's normalizer drops session ids
	// (urlnorm.Options.RemoveSessionParams), merging the session trap's
	// spellings.
	RemoveSessionParams bool
	// The crawler's static trap limits (frontier.Limits), refusing
	// discovered URLs by their shape. Defaults frontier.DefaultMaxURLLength,
	// DefaultMaxPathSegments, DefaultMaxSegmentRepeats.
	MaxURLLength, MaxPathSegments, MaxSegmentRepeats int
	// MaxEmbedHops is how many embed hops a requisite may lie outside the
	// scope. Default DefaultMaxEmbedHops. Every embed chain of the web is
	// at most two hops long.
	MaxEmbedHops int
	// MaxSitemapURLs is how many entries of one sitemap file are read.
	// Default SitemapLimit.
	MaxSitemapURLs int
}

// EnsureDefaults sets every zero field of o to its documented default
// (Seeds are filled in by Expected, which knows the web).
func (o *ExpectOptions) EnsureDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxURLLength, frontier.DefaultMaxURLLength)
	def(&o.MaxPathSegments, frontier.DefaultMaxPathSegments)
	def(&o.MaxSegmentRepeats, frontier.DefaultMaxSegmentRepeats)
	def(&o.MaxEmbedHops, DefaultMaxEmbedHops)
	def(&o.MaxSitemapURLs, SitemapLimit)
}

// Validate reports the first invalid field. It expects EnsureDefaults to
// have run.
func (o *ExpectOptions) Validate() error {
	if o.Scope > frontier.ScopeAny {
		return fmt.Errorf("%w: unknown Scope %d", ErrInvalidOptions, o.Scope)
	}
	return nil
}

// Expectation is what a crawl described by ExpectOptions fetches and does
// not fetch: sorted canonical URLs, each in exactly one list. The crawl
// fetches the union of Pages, Embeds, LinkElements, Sitemaps and
// SitemapOnly (Fetched), each URL once, and never a URL of RobotsDenied or
// SitemapCut.
type Expectation struct {
	// Pages are reached from the seeds by links and redirects: HTML
	// pages, redirects (their 301 is fetched), dead links (404) and
	// files. They do not depend on Embeds and Sitemaps.
	Pages []string
	// RobotsDenied were discovered but are disallowed by robots.txt.
	RobotsDenied []string
	// Embeds are the requisites of Pages and of fetched stylesheets
	// (ExpectOptions.Embeds).
	Embeds []string
	// Sitemaps are the sitemap files a crawler reading sitemaps fetches
	// (ExpectOptions.Sitemaps).
	Sitemaps []string
	// SitemapOnly are fetched only because a sitemap listed them, or
	// because such a page led to them.
	SitemapOnly []string
	// SitemapCut were listed in a sitemap past MaxSitemapURLs entries and
	// nowhere else: they must not be fetched.
	SitemapCut []string
	// NearDuplicates groups fetched pages whose bodies differ only in a
	// date and a counter (Options.NearDuplicates).
	NearDuplicates [][]string
}

// Fetched returns, sorted, every URL the crawl fetches.
func (e *Expectation) Fetched() []string {
	var all []string
	for _, l := range [][]string{e.Pages, e.Embeds, e.Sitemaps, e.SitemapOnly} {
		all = append(all, l...)
	}
	slices.Sort(all)
	return all
}

// category of a URL in an Expectation.
type category uint8

const (
	catPage category = iota + 1
	catDenied
	catEmbed
	catSitemap
	catSitemapOnly
)

// Expected returns exactly what a crawl of w described by o fetches. The
// crawl model: the crawler normalizes every URL as urlnorm does by
// default (the web's other spellings merge), obeys robots.txt, skips
// rel="nofollow", follows redirects as discovered links, applies the
// static trap limits to discovered (not seed) URLs, and has no depth
// limit: with a depth limit which pages are reached depends on the order
// of fetches (the traps' chains are long), so a test must turn it off.
// The web stays below the crawler's count limits (per-host budget,
// children per prefix) by construction.
//
// It walks the whole web in memory: for 10,000 hosts and a million pages
// (1.24 million URLs) it took 14 s of CPU and 430 MiB (docs/BENCHMARKS.md).
func (w *Web) Expected(o ExpectOptions) (*Expectation, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Seeds == nil {
		o.Seeds = w.Seeds()
	}
	x := &expander{w: w, o: &o, seen: map[string]category{}, touched: map[int32]bool{},
		hosts: map[int32]bool{}, domains: map[string]bool{}}
	var seeds []node
	for _, s := range o.Seeds {
		n, ok := w.parse(s)
		if !ok {
			return nil, fmt.Errorf("%w: seed %q is not a canonical URL of the web", ErrInvalidOptions, s)
		}
		seeds = append(seeds, n)
		x.hosts[n.host] = true
		x.domains[w.domain(int(n.host))] = true
	}
	for _, n := range seeds {
		x.discover(n, catPage, 0, false)
	}
	x.run()
	if o.Sitemaps {
		x.sitemapPhase = true
		hosts := make([]int32, 0, len(x.touched))
		for h := range x.touched {
			hosts = append(hosts, h)
		}
		slices.Sort(hosts)
		for _, h := range hosts {
			x.sitemaps(h)
		}
		x.run()
	}
	return x.result(), nil
}

// domain returns the registrable domain of host h as urlnorm computes it.
func (w *Web) domain(h int) string {
	switch {
	case h == cdnHost && w.opts.Addressing == Loopback:
		return w.cdn // an IP host is its own domain
	case h == cdnHost:
		return CDNName[strings.IndexByte(CDNName, '.')+1:]
	case w.opts.Addressing == Loopback:
		return w.names[h]
	}
	return Zone
}

// expander walks the web as the crawl would.
type expander struct {
	w            *Web
	o            *ExpectOptions
	seen         map[string]category
	cut          map[string]bool
	touched      map[int32]bool // hosts whose robots.txt the crawl fetches
	hosts        map[int32]bool // scope: the seeds' hosts
	domains      map[string]bool
	queue        []item
	sitemapPhase bool
	buf          []link
}

type item struct {
	n     node
	url   string
	hops  int8 // embed hops from the last page
	embed bool // fetched as a requisite: parsed only for CSS
}

func (x *expander) inScope(h int32) bool {
	switch x.o.Scope {
	case frontier.ScopeHost:
		return x.hosts[h]
	case frontier.ScopeDomain:
		return x.domains[x.w.domain(int(h))]
	}
	return true
}

// discover handles a URL met as cat: the checks before the seen-set, then
// queueing. A refused URL is not marked seen, as in the frontier.
func (x *expander) discover(n node, cat category, hops int8, checked bool) {
	if x.o.RemoveSessionParams && n.kind == kShop {
		n.b = -1
	}
	u := x.w.url(n)
	if checked && !x.shapeOK(u) {
		return
	}
	if _, ok := x.seen[u]; ok {
		return
	}
	if x.sitemapPhase && cat != catSitemap {
		cat = catSitemapOnly
	}
	x.seen[u] = cat
	x.queue = append(x.queue, item{n: n, url: u, hops: hops, embed: cat == catEmbed})
}

func (x *expander) run() {
	for len(x.queue) > 0 {
		it := x.queue[0]
		x.queue = x.queue[1:]
		n := it.n
		if !x.touched[n.host] {
			x.touched[n.host] = true
			if x.sitemapPhase {
				x.sitemaps(n.host)
			}
		}
		path, _, _ := strings.Cut(x.w.path(n), "?")
		if denied(int(n.host), path) {
			x.seen[it.url] = catDenied
			continue
		}
		if it.embed && !(n.kind == kAsset && (n.a == assetSiteCSS || n.a == cdnCSS) && x.o.Embeds) {
			continue // an image, a script, or a stylesheet not read as one
		}
		x.buf = x.w.links(x.buf[:0], n)
		entries := 0
		for _, l := range x.buf {
			t := l.target
			switch {
			case t.kind == kNone:
			case l.how == hA || l.how == hRedirect:
				if x.inScope(t.host) {
					x.discover(t, catPage, 0, true)
				}
			case l.how.embed():
				switch {
				case x.o.Embeds:
					hops := it.hops + 1
					if x.inScope(t.host) || x.o.MaxEmbedHops < 0 || int(hops) <= x.o.MaxEmbedHops {
						x.discover(t, catEmbed, hops, true)
					}
				}
			case l.how == hSitemap:
				if x.o.Sitemaps && x.inScope(t.host) {
					x.discover(t, catSitemap, 0, true)
				}
			case l.how == hEntry:
				entries++
				if !x.o.Sitemaps || !x.inScope(t.host) {
					continue
				}
				if x.o.MaxSitemapURLs > 0 && entries > x.o.MaxSitemapURLs {
					if x.cut == nil {
						x.cut = map[string]bool{}
					}
					x.cut[x.w.url(t)] = true
					continue
				}
				x.discover(t, catSitemapOnly, 0, true)
			}
		}
	}
}

// sitemaps queues host h's sitemap index, as its robots.txt names it.
func (x *expander) sitemaps(h int32) {
	t := node{host: h, kind: kSitemapIndex}
	if x.w.exists(t) && x.inScope(h) {
		x.discover(t, catSitemap, 0, true)
	}
}

// shapeOK mirrors the frontier's static trap limits on a canonical URL of
// the web (whose queries hold no '/').
func (x *expander) shapeOK(u string) bool {
	o := x.o
	if o.MaxURLLength > 0 && len(u) > o.MaxURLLength {
		return false
	}
	rest := u[len("http://"):]
	segs := strings.Split(rest[strings.IndexByte(rest, '/')+1:], "/")
	n := len(segs)
	if n > 0 && segs[n-1] == "" {
		n--
	}
	if o.MaxPathSegments > 0 && n > o.MaxPathSegments {
		return false
	}
	if o.MaxSegmentRepeats > 0 {
		count := map[string]int{}
		for _, s := range segs {
			s, _, _ = strings.Cut(s, "?")
			if s == "" {
				continue
			}
			if count[s]++; count[s] > o.MaxSegmentRepeats {
				return false
			}
		}
	}
	return true
}

func (x *expander) result() *Expectation {
	e := &Expectation{}
	lists := map[category]*[]string{catPage: &e.Pages, catDenied: &e.RobotsDenied, catEmbed: &e.Embeds,
		catSitemap: &e.Sitemaps, catSitemapOnly: &e.SitemapOnly}
	press := map[int32][]string{}
	for u, c := range x.seen {
		*lists[c] = append(*lists[c], u)
		if c == catPage || c == catSitemapOnly {
			if n, ok := x.w.parse(u); ok && n.kind == kPress {
				press[n.host] = append(press[n.host], u)
			}
		}
	}
	for u := range x.cut {
		if _, fetched := x.seen[u]; !fetched {
			e.SitemapCut = append(e.SitemapCut, u)
		}
	}
	for _, l := range lists {
		slices.Sort(*l)
	}
	slices.Sort(e.SitemapCut)
	for _, g := range press {
		if len(g) > 1 {
			slices.Sort(g)
			e.NearDuplicates = append(e.NearDuplicates, g)
		}
	}
	slices.SortFunc(e.NearDuplicates, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return e
}
