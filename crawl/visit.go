package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/neardup"
	"github.com/layercrawl/layercrawl/storage"
)

// work fetches entries until the frontier is exhausted or ctx ends; a
// fetch under way runs under fctx, which outlives ctx by the stop grace.
// An entry whose fetch fctx interrupted is not reported done, so it stays
// queued for the next run.
func (c *Crawler) work(ctx, fctx context.Context) error {
	for {
		ent, err := c.queue.Next(ctx)
		switch {
		case errors.Is(err, frontier.ErrExhausted), errors.Is(err, frontier.ErrPageLimit):
			return nil
		case err != nil:
			return err
		}
		out, ok, err := c.visit(fctx, ent)
		if err != nil {
			return err
		}
		if !ok {
			return fctx.Err()
		}
		start := time.Now()
		if err := c.queue.Done(fctx, ent, out); err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		c.counters.done.observe(time.Since(start))
	}
}

// visit checks robots.txt, fetches the entry, archives and logs it, and
// runs the hooks. ok is false when ctx ended before the outcome was known.
func (c *Crawler) visit(ctx context.Context, ent frontier.Entry) (out frontier.Outcome, ok bool, err error) {
	robots, refused, ok, err := c.checkRobots(ctx, ent, &out)
	switch {
	case !ok || err != nil:
		return out, ok, err
	case refused:
		// Not fetched; an invalid URL (no robots) counts as failed. The
		// site's sitemaps are queued all the same.
		out.Failed = robots == nil
		out.RobotsSitemaps = c.robotsSitemaps(ent.URL, robots)
		return out, true, nil
	}
	out.CrawlDelay = robots.CrawlDelay(c.opts.Fetch.UserAgent)
	out.RobotsSitemaps = c.robotsSitemaps(ent.URL, robots)
	if ent.Sitemap && !c.opts.NoSitemaps {
		release, ok := c.sitemaps.acquire(ctx)
		if !ok {
			return out, false, nil
		}
		defer release()
	}
	res, ferr := c.fetchEntry(ctx, ent)
	if ferr != nil && ctx.Err() != nil {
		return out, false, nil
	}
	retryAt, reason, exhausted := c.retryPlan(ent, res, ferr)
	// The request is over: the host's delay starts now and its next entry
	// may go out while this one is archived and its links are parsed.
	if err := c.release(ent, res, &out); err != nil {
		return out, false, fmt.Errorf("crawl: %w", err)
	}
	// Release woke the worker that takes the host's next entry, and Go
	// queues it to run next on this thread once this goroutine blocks,
	// that is after the archiving below, unless an idle thread is woken to
	// steal it. Yielding lets it send its request now: the median hand-off
	// between two fetches of a host fell from 0.08 to 0.01 ms and the
	// crawl's CPU by 6% (docs/BENCHMARKS.md, issue #5).
	runtime.Gosched()
	// The near-duplicate check's shingles come from the pass that finds
	// the page's links.
	var shingles *neardup.Shingler
	if res != nil && !ent.Sitemap {
		var sink fetch.TextSink
		if c.wantsText(res) {
			shingles = getShingler(len(res.Body))
			defer putShingler(shingles, len(res.Body))
			shingles.Grow(len(res.Body) / 4)
			sink = shingles
		}
		c.fetcher.ParseLinksText(res, sink)
	}
	out.Fetched = true
	c.counters.fetched.Add(1)
	nd, err := c.checkNearDuplicate(ctx, res, shingles)
	if err != nil {
		return out, false, err
	}
	out.RetryAt = retryAt
	if err := c.record(ctx, ent, res, ferr, &out, nd, reason, exhausted); err != nil {
		return out, false, err
	}
	links, err := c.runHooks(ent, res, ferr, !retryAt.IsZero())
	if err != nil {
		return out, false, err
	}
	if !retryAt.IsZero() {
		// The retry's links will be followed, not this attempt's.
		c.counters.retried.Add(1)
		c.counters.pages.Add(1)
		return out, true, nil
	}
	if nd.sameHost && c.opts.SkipNearDuplicateLinks {
		c.counters.nearDupLinks.Add(uint64(len(links)))
		links = nil
	}
	c.counters.pages.Add(1)
	var refresh string
	out.Links, out.Embeds, refresh = splitHops(links)
	if refresh != "" && out.Redirect == "" {
		// A meta refresh is resolved against the page's base, as its
		// links are; the frontier resolves a redirect against the URL.
		if res != nil && res.Base != nil {
			if u, err := res.Base.Parse(refresh); err == nil {
				refresh = u.String()
			}
		}
		out.Redirect = refresh
	}
	return out, true, nil
}

// checkRobots gets the robots.txt rules of ent's site and logs ent when
// they refuse it. refused is true when ent was refused (and logged); robots
// is nil when ent's URL is invalid (also logged). ok is false when ctx
// ended first. A refusal because robots.txt is unreachable is retried like
// a transient failure (out.RetryAt): the site's robots.txt is fetched again
// by then (robotsErrorAge).
func (c *Crawler) checkRobots(ctx context.Context, ent frontier.Entry, out *frontier.Outcome) (robots *fetch.Robots, refused, ok bool, err error) {
	robots, err = c.robots.Get(ctx, ent.URL)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, false, nil
		}
		if errors.Is(err, errArchiveRobots) {
			return nil, false, false, err
		}
		// Otherwise only an invalid URL fails here; log it like a failed
		// fetch.
		return nil, true, true, c.logEntry(storage.Entry{
			URL: ent.URL, Error: "invalid-url: " + err.Error(), Depth: ent.Depth, Via: ent.Via, HopPath: ent.Hops, FetchedAt: c.opts.Now(),
		})
	}
	u, perr := url.Parse(ent.URL)
	if perr != nil || robots.Allowed(c.opts.Fetch.UserAgent, u.RequestURI()) {
		return robots, false, true, nil
	}
	reason := "robots-disallowed"
	var le storage.Entry
	if robots.DisallowsAll() {
		// Not the site's rules: its robots.txt could not be fetched.
		c.counters.robotsUnavailable.Add(1)
		reason = "robots-unavailable"
		if site, err := fetch.SiteKey(ent.URL); err == nil {
			c.robotsMu.Lock()
			if why := c.robotsErr[site]; why != "" {
				reason += ": robots.txt: " + why
			}
			c.robotsMu.Unlock()
		}
		le = c.robotsRetry(ent, reason, out)
	} else {
		c.counters.robotsDenied.Add(1)
	}
	if le.Error != "" {
		reason = le.Error
	}
	return robots, true, true, c.logEntry(storage.Entry{
		URL: ent.URL, Error: reason, Depth: ent.Depth, Via: ent.Via, HopPath: ent.Hops, FetchedAt: c.opts.Now(),
		Attempt: le.Attempt, RetryAt: le.RetryAt,
	})
}

// record archives a fetch's exchange, logs it, counts it, and sets the
// parts of out that the response decides (failure, redirect, base). reason
// and exhausted are retryPlan's: a transient failure's line says whether
// the URL is retried (out.RetryAt) or had its last try.
func (c *Crawler) record(ctx context.Context, ent frontier.Entry, res *fetch.Result, ferr error, out *frontier.Outcome, nd nearDup, reason string, exhausted bool) error {
	le := storage.Entry{URL: ent.URL, Depth: ent.Depth, Via: ent.Via, HopPath: ent.Hops, LastMod: ent.LastMod,
		NearDuplicateOf: nd.of, Resemblance: nd.resemblance, Attempt: ent.Attempt + 1, RetryAt: out.RetryAt}
	var warcBytes int64
	if ferr != nil {
		c.counters.fetchErrors.Add(1)
		out.Failed = true
		le.Error = fetch.KindOf(ferr).String() + ": " + ferr.Error()
		le.FetchedAt = c.opts.Now()
	}
	if !out.RetryAt.IsZero() || exhausted {
		var detail string
		if ferr != nil {
			detail = ferr.Error()
		}
		le.Error = retryError(reason, detail, exhausted)
		if exhausted {
			c.counters.retriesExhausted.Add(1)
		}
	}
	if res != nil {
		le.Status = res.Status
		le.ContentType = res.Header.Get("Content-Type")
		le.Bytes = int64(len(res.Body))
		le.FetchedAt = res.FetchedAt
		le.DurationMS = res.Duration.Seconds() * 1000
		le.Location = res.Location
		le.Truncated = res.Truncated
		if res.RemoteAddr.IsValid() {
			le.IP = res.RemoteAddr.Addr().String()
		}
		if ent.Sitemap && !c.opts.NoSitemaps && res.Status >= 200 && res.Status < 300 {
			c.readSitemap(ent, res, out, &le)
		}
		ex := exchange(res)
		ex.Metadata = pageMetadata(ent, res)
		ref, err := c.archiveResponse(ctx, ex, res, &le)
		if err != nil {
			return err
		}
		le.WARCFile, le.WARCRecordID = ref.File, ref.ResponseID
		warcBytes = ref.Length
		if res.Status >= 400 {
			c.counters.httpErrors.Add(1)
			out.Failed = true
		}
		if res.Status >= 300 && res.Status < 400 && res.Location != "" {
			out.Redirect = res.Location
		}
		if res.Base != nil {
			out.Base = res.Base.String()
		}
		switch res.Truncated {
		case fetch.TruncatedLength:
			c.counters.cutLength.Add(1)
		case fetch.TruncatedTime:
			c.counters.cutTime.Add(1)
		case fetch.TruncatedDisconnect:
			c.counters.cutDisconnect.Add(1)
		}
		if res.LinksDropped > 0 {
			c.counters.outlinksCapped.Add(1)
			c.counters.linksDropped.Add(uint64(res.LinksDropped))
		}
	}
	if err := c.logEntry(le); err != nil {
		return err
	}
	if c.opts.Observer != nil {
		c.observeFetch(ent.URL, ent.Depth, res, ferr, warcBytes)
	}
	return nil
}

// runHooks hands the page to the Collector and to OnPage, and returns the
// links to follow. retry says the attempt is to be retried.
func (c *Crawler) runHooks(ent frontier.Entry, res *fetch.Result, ferr error, retry bool) ([]fetch.Link, error) {
	var links []fetch.Link
	if res != nil {
		links = res.Links
		if c.colly != nil {
			more, err := c.colly.replay(ent, res)
			if err != nil {
				return nil, err
			}
			links = append(links[:len(links):len(links)], more...)
		}
	}
	if c.opts.OnPage != nil {
		p := &Page{URL: ent.URL, Depth: ent.Depth, Via: ent.Via, Hops: ent.Hops, Result: res, Err: ferr, Links: links, Attempt: ent.Attempt + 1, Retry: retry}
		if err := c.opts.OnPage(p); err != nil {
			return nil, fmt.Errorf("crawl: OnPage %s: %w", ent.URL, err)
		}
		links = p.Links
	}
	return links, nil
}

// logEntry writes a log line and hands it to the operating system, so that
// it survives a crash of the process before the entry is marked done.
func (c *Crawler) logEntry(le storage.Entry) error {
	if err := c.log.Write(le); err != nil {
		return fmt.Errorf("crawl: log: %w", err)
	}
	if err := c.log.Flush(); err != nil {
		return fmt.Errorf("crawl: log: %w", err)
	}
	return nil
}

// errArchiveRobots marks a robots.txt exchange that could not be archived.
var errArchiveRobots = errors.New("crawl: archive robots.txt")

// maxRobotsErrors bounds the robots.txt failures remembered for the log;
// beyond it a refusal is logged without the cause.
const maxRobotsErrors = 10_000

// robotsFetched archives robots.txt exchanges and remembers why a site's
// robots.txt failed, for the log lines of the URLs it then refuses. An
// archive failure is returned: the RobotsCache passes it to the Get that
// fetched, which stops the crawl.
func (c *Crawler) robotsFetched(site string, res *fetch.Result, ferr error) error {
	c.robotsMu.Lock()
	if ferr == nil {
		delete(c.robotsErr, site)
	} else if _, ok := c.robotsErr[site]; ok || len(c.robotsErr) < maxRobotsErrors {
		if c.robotsErr == nil {
			c.robotsErr = map[string]string{}
		}
		c.robotsErr[site] = fetch.KindOf(ferr).String() + ": " + ferr.Error()
	}
	c.robotsMu.Unlock()
	if res == nil {
		return nil
	}
	if _, err := c.archive.Write(exchange(res)); err != nil {
		return fmt.Errorf("%w for %s: %w", errArchiveRobots, site, err)
	}
	return nil
}
