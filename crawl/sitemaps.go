package crawl

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// MaxSitemapNesting bounds how deep sitemap indexes are followed: a
// sitemap reached through this many sitemap hops in a row (robots.txt,
// then indexes) is read, but an index found there is not followed
// further (counted in SitemapStats.TooDeep). sitemaps.org allows one
// level (robots.txt, an index, its sitemaps); a few more are tolerated.
const MaxSitemapNesting = 4

// maxSitemapSites bounds the sites whose robots.txt Sitemap lines this
// process remembers having queued; past it they are offered again with
// every page of a new site, and the seen-set drops them.
const maxSitemapSites = 1 << 20

// SitemapStats count the sitemaps this process read, in this run.
type SitemapStats struct {
	Files       uint64 // sitemap responses read (2xx)
	URLs        uint64 // URLs they listed, handed to the frontier (pages and sitemaps)
	Cut         uint64 // URLs beyond Options.Sitemap.MaxURLs in a file, left out
	Skipped     uint64 // <loc> values that are not absolute http(s) URLs or are too long
	Malformed   uint64 // not well-formed XML, a corrupt gzip stream, an unknown root element
	ContentType uint64 // not a sitemap: HTML, an image, JSON, binary
	TooLarge    uint64 // longer than Options.Sitemap.MaxBytes, read that far
	GzipBomb    uint64 // inflating past Options.Sitemap.MaxBytes, read that far
	TooDeep     uint64 // indexes past MaxSitemapNesting, not followed
}

// maxSitemapsInFlight bounds the sitemaps fetched and read at once: a
// sitemap may be 50 MiB (Options.Sitemap.MaxBytes) once inflated, and its
// body stays in memory until it is archived and parsed, so Concurrency
// workers reading sitemaps at once could hold Concurrency times that.
// Workers beyond it wait; the others' pages go on.
const maxSitemapsInFlight = 2

// sitemapState is the crawl's sitemap bookkeeping.
type sitemapState struct {
	mu    sync.Mutex      // protects sites
	sites map[string]bool // sites whose robots.txt Sitemap lines were queued

	inFlight chan struct{} // a token per sitemap being fetched or read (maxSitemapsInFlight)

	files, urls, cut, skipped                       atomic.Uint64
	malformed, contentType, tooLarge, bomb, tooDeep atomic.Uint64
}

func (s *sitemapState) stats() SitemapStats {
	return SitemapStats{
		Files: s.files.Load(), URLs: s.urls.Load(), Cut: s.cut.Load(), Skipped: s.skipped.Load(),
		Malformed: s.malformed.Load(), ContentType: s.contentType.Load(), TooLarge: s.tooLarge.Load(),
		GzipBomb: s.bomb.Load(), TooDeep: s.tooDeep.Load(),
	}
}

// robotsSitemaps returns the Sitemap lines of the robots.txt of page's
// site the first time this process sees the site, nil after (or when
// sitemaps are off).
func (c *Crawler) robotsSitemaps(page string, robots *fetch.Robots) []string {
	if c.opts.NoSitemaps || robots == nil {
		return nil
	}
	site, err := fetch.SiteKey(page)
	if err != nil {
		return nil
	}
	s := &c.sitemaps
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sites[site] {
		return nil
	}
	if s.sites == nil {
		s.sites = map[string]bool{}
	}
	if len(s.sites) < maxSitemapSites {
		s.sites[site] = true
	}
	return robots.Sitemaps()
}

// acquire waits until fewer than maxSitemapsInFlight sitemaps are being
// fetched or read and returns the function that ends this one; ok is false
// when ctx ended first.
func (s *sitemapState) acquire(ctx context.Context) (release func(), ok bool) {
	s.mu.Lock()
	if s.inFlight == nil {
		s.inFlight = make(chan struct{}, maxSitemapsInFlight)
	}
	ch := s.inFlight
	s.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, true
	case <-ctx.Done():
		return nil, false
	}
}

// fetchEntry fetches ent: a sitemap with the sitemap size limit (one byte
// more, to tell a file of exactly MaxBytes from a longer one), anything
// else with the fetcher's.
func (c *Crawler) fetchEntry(ctx context.Context, ent frontier.Entry, prev *Capture) (*fetch.Result, error) {
	if ent.Sitemap && !c.opts.NoSitemaps {
		return c.fetcher.FetchBodyLimit(ctx, ent.URL, c.opts.Sitemap.MaxBytes+1)
	}
	if cond := conditional(prev); cond != (fetch.Conditional{}) {
		return c.fetcher.FetchBodyIf(ctx, ent.URL, cond)
	}
	return c.fetcher.FetchBody(ctx, ent.URL)
}

// readSitemap parses the body of a sitemap entry's 2xx response into out
// (index children as Sitemaps, pages as Listed), counts what it cut and
// what went wrong, and notes it in the log line. A sitemap that fails
// keeps the entries read before the fault; the crawl goes on.
func (c *Crawler) readSitemap(ent frontier.Entry, res *fetch.Result, out *frontier.Outcome, le *storage.Entry) {
	s := &c.sitemaps
	s.files.Add(1)
	sm, err := fetch.ParseSitemap(bytes.NewReader(res.Body), res.ContentType, c.opts.Sitemap)
	if err != nil {
		var kind string
		switch {
		case errors.Is(err, fetch.ErrSitemapContentType):
			s.contentType.Add(1)
			kind = "sitemap-content-type"
		case errors.Is(err, fetch.ErrSitemapGzipBomb),
			errors.Is(err, fetch.ErrSitemapTooLarge) && strings.Contains(strings.ToLower(res.Header.Get("Content-Encoding")), "gzip"):
			// The fetcher inflated a Content-Encoding: gzip body up to
			// the limit: the same bomb, caught one layer earlier.
			s.bomb.Add(1)
			kind = "sitemap-gzip-bomb"
		case errors.Is(err, fetch.ErrSitemapTooLarge):
			s.tooLarge.Add(1)
			kind = "sitemap-too-large"
		default: // ErrSitemapMalformed, ErrSitemapRoot
			s.malformed.Add(1)
			kind = "sitemap-malformed"
		}
		le.SitemapError = kind + ": " + err.Error()
	}
	if sm == nil {
		return
	}
	s.cut.Add(uint64(sm.Dropped))
	s.skipped.Add(uint64(sm.Skipped))
	le.SitemapURLs, le.SitemapCut = len(sm.Entries), sm.Dropped
	if sm.Kind == fetch.SitemapIndex {
		if sitemapHops(ent.Hops) >= MaxSitemapNesting {
			s.tooDeep.Add(1)
			if le.SitemapError == "" {
				le.SitemapError = "sitemap-too-deep: an index nested deeper than the crawl follows"
			}
			return
		}
		out.Sitemaps = make([]string, len(sm.Entries))
		for i, e := range sm.Entries {
			out.Sitemaps[i] = e.Loc
		}
	} else {
		out.Listed = make([]frontier.Listed, len(sm.Entries))
		for i, e := range sm.Entries {
			out.Listed[i] = frontier.Listed{URL: e.Loc, LastMod: e.LastMod}
		}
	}
	s.urls.Add(uint64(len(sm.Entries)))
}

// sitemapHops counts the trailing sitemap hops of a hop path.
func sitemapHops(path string) int {
	n := 0
	for n < len(path) && path[len(path)-1-n] == frontier.HopSitemap {
		n++
	}
	return n
}
