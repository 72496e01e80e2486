package frontier

import (
	"net/url"
	"time"
)

// Hop types, the letters of an Entry's hop path (Heritrix's convention;
// fetch.Hop has the same letters).
const (
	HopLink     byte = 'L' // a navigation link
	HopEmbed    byte = 'E' // a page requisite: image, script, stylesheet, CSS reference
	HopRedirect byte = 'R' // an HTTP redirect
	HopSitemap  byte = 'S' // a sitemap named by robots.txt or an index, or a URL a sitemap lists
)

// MaxHopPath bounds the hop path an Entry carries: a longer one keeps its
// last MaxHopPath hops, which is all the embed rule reads. A crawl
// without a depth limit would otherwise queue paths as long as a trap's
// chain.
const MaxHopPath = 255

// appendHop returns path with hop appended, keeping its last MaxHopPath
// letters.
func appendHop(path string, hop byte) string {
	if len(path) >= MaxHopPath {
		path = path[len(path)-MaxHopPath+1:]
	}
	return path + string(rune(hop))
}

// embedChain reports whether a hop path ends in an embed chain, that is
// whether its trailing run of embed and redirect hops holds an embed (a
// requisite, or a redirect a requisite led to), and how many embed hops
// that run holds. Such a URL is a requisite of the last page before the
// run: exempt from the depth limit and, up to MaxEmbedHops, from the
// scope.
func embedChain(path string) (embeds int, ok bool) {
	for i := len(path) - 1; i >= 0; i-- {
		switch path[i] {
		case HopEmbed:
			embeds++
		case HopRedirect:
		default:
			return embeds, embeds > 0
		}
	}
	return embeds, embeds > 0
}

// Listed is a page URL a sitemap lists, with its <lastmod> (zero if
// absent).
type Listed struct {
	URL     string
	LastMod time.Time
}

// SitemapRef checks a URL a sitemap of parent lists, one sitemap hop
// further: a sitemap to fetch in turn when it comes from an index
// (Candidate.Sitemap is then set by the caller), otherwise a page. Sitemap
// URLs are absolute; they go through the same normalization, depth, scope,
// Allow/Deny and trap limits as links.
func (a *Admission) SitemapRef(parent Entry, loc string) (Candidate, Refusal) {
	c, err := a.norm.Resolve(parent.URL, loc)
	if err != nil {
		return Candidate{}, a.refuse(RefusedInvalid)
	}
	return a.check(c, &parent, HopSitemap)
}

// RobotsSitemap checks a Sitemap line of the robots.txt of page's site. The
// robots.txt is its parent, as a seed would be, whatever page led the crawl
// to the site: the sitemap is one sitemap hop from it (depth 1, hop path
// "S", Via the robots.txt URL).
func (a *Admission) RobotsSitemap(page, loc string) (Candidate, Refusal) {
	u, err := url.Parse(page)
	if err != nil || u.Host == "" {
		return Candidate{}, a.refuse(RefusedInvalid)
	}
	robots := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}).String()
	return a.SitemapRef(Entry{URL: robots}, loc)
}

// entry returns the queue entry of an admitted candidate.
func (c Candidate) entry() Entry {
	return Entry{URL: c.URL, Depth: c.Depth, Redirects: c.Redirects, Via: c.Via, Hops: c.Hops,
		Sitemap: c.Sitemap, LastMod: c.LastMod, host: c.Host}
}

// SitemapCandidates checks the sitemap URLs of e's outcome (RobotsSitemaps,
// Sitemaps and Listed) and calls fn with each, admitted or not, in that
// order; it stops at fn's first error. Both frontiers use it.
func SitemapCandidates(a *Admission, e Entry, out Outcome, fn func(Candidate, Refusal) error) error {
	for _, loc := range out.RobotsSitemaps {
		c, r := a.RobotsSitemap(e.URL, loc)
		c.Sitemap = true
		if err := fn(c, r); err != nil {
			return err
		}
	}
	for _, loc := range out.Sitemaps {
		c, r := a.SitemapRef(e, loc)
		c.Sitemap = true
		if err := fn(c, r); err != nil {
			return err
		}
	}
	for _, l := range out.Listed {
		c, r := a.SitemapRef(e, l.URL)
		c.LastMod = l.LastMod
		if err := fn(c, r); err != nil {
			return err
		}
	}
	return nil
}
