package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
		if k := c.cont; k != nil && k.budget != nil {
			if err := k.budget.wait(ctx); err != nil {
				if ctx.Err() != nil {
					// Stopped while the entry waited for the budget: it
					// stays queued for the next run.
					c.handBack(ctx, ent)
					return nil
				}
				return fmt.Errorf("crawl: budget: %w", err)
			}
		}
		out, until, ok, err := c.visit(fctx, ent)
		if err != nil {
			return err
		}
		if !ok {
			c.handBack(fctx, ent)
			return fctx.Err()
		}
		if !until.IsZero() {
			// Its site's robots.txt is not there yet: the entry waits
			// with its host, its attempts untouched.
			if err := c.deferEntry(fctx, ent, until); err != nil {
				return fmt.Errorf("crawl: %w", err)
			}
			continue
		}
		start := time.Now()
		if err := c.queue.Done(fctx, ent, out); err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		c.counters.done.observe(time.Since(start))
	}
}

// handBack returns ent, which a stopping worker took but did not finish,
// to the queue of a Redis crawl at once (the local frontier keeps it
// queued in its state). Left leased, it would wait for its lease to
// expire (2 minutes by default) before any worker fetched its host
// again: the worker leaves the workers' list as it stops, so the
// heartbeats do not end its leases, and a continuous crawl restarted
// within the lease fetched nothing from its site.
func (c *Crawler) handBack(ctx context.Context, ent frontier.Entry) {
	if c.redis == nil {
		return
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisStatsInterval)
	defer cancel()
	if err := c.redis.front.Defer(hctx, ent, c.opts.Now()); err != nil {
		c.opts.Logger.Warn("an entry this worker took was not handed back: its host waits for the lease to expire", "url", ent.URL, "err", err)
	}
}

// deferEntry hands ent back to its frontier, to wait with its host until
// until without spending an attempt.
func (c *Crawler) deferEntry(ctx context.Context, ent frontier.Entry, until time.Time) error {
	if c.front != nil {
		return c.front.Defer(ent, until)
	}
	return c.redis.front.Defer(ctx, ent, until)
}

// visit checks robots.txt, fetches the entry, archives and logs it, and
// runs the hooks. ok is false when ctx ended before the outcome was known.
// until is set when the entry is to wait with its host until then, not
// done: its site's robots.txt is not available yet.
func (c *Crawler) visit(ctx context.Context, ent frontier.Entry) (out frontier.Outcome, until time.Time, ok bool, err error) {
	robots, refused, wait, ok, err := c.checkRobots(ctx, ent, &out)
	switch {
	case !ok || err != nil:
		return out, time.Time{}, ok, err
	case !wait.IsZero():
		return out, wait, true, nil
	case refused:
		// Not fetched (checkRobots set out.Failed when the URL failed).
		// The site's sitemaps are queued all the same.
		out.RobotsSitemaps = c.robotsSitemaps(ent.URL, robots)
		return out, time.Time{}, true, nil
	}
	out.CrawlDelay = robots.CrawlDelay(c.opts.Fetch.UserAgent)
	out.RobotsSitemaps = c.robotsSitemaps(ent.URL, robots)
	if ent.Sitemap && !c.opts.NoSitemaps {
		release, ok := c.sitemaps.acquire(ctx)
		if !ok {
			return out, time.Time{}, false, nil
		}
		defer release()
	}
	prev, sv, err := c.revisitCapture(ctx, ent.URL)
	if err != nil {
		return out, time.Time{}, false, err
	}
	at, t0 := c.opts.Now(), time.Now()
	res, ferr := c.fetchEntry(ctx, ent, prev)
	took := time.Since(t0)
	if ferr != nil && ctx.Err() != nil {
		return out, time.Time{}, false, nil
	}
	if res != nil {
		c.seeds.responses.Add(1)
		out.Responded = true
	}
	retryAt, reason, exhausted := c.retryPlan(ent, res, ferr)
	// The request is over: the host's delay starts now and its next entry
	// may go out while this one is archived and its links are parsed.
	if err := c.release(ent, res, &out); err != nil {
		return out, time.Time{}, false, fmt.Errorf("crawl: %w", err)
	}
	// Release woke the worker that takes the host's next entry, and Go
	// queues it to run next on this thread once this goroutine blocks,
	// that is after the archiving below, unless an idle thread is woken to
	// steal it. Yielding lets it send its request now: the median hand-off
	// between two fetches of a host fell from 0.08 to 0.01 ms and the
	// crawl's CPU by 6% (docs/BENCHMARKS.md).
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
		if res.Status == http.StatusNotModified && prev != nil && c.opts.PreviousScope == PreviousScopeSeeds {
			c.previousLinks(res, prev)
		}
	}
	out.Fetched = true
	c.counters.fetched.Add(1)
	nd, err := c.checkNearDuplicate(ctx, res, shingles)
	if err != nil {
		return out, time.Time{}, false, err
	}
	out.RetryAt = retryAt
	if err := c.record(ctx, ent, res, ferr, &out, nd, attemptInfo{reason: reason, exhausted: exhausted, at: at, took: took, prev: prev, sched: sv}); err != nil {
		return out, time.Time{}, false, err
	}
	links, err := c.runHooks(ent, res, ferr, !retryAt.IsZero())
	if err != nil {
		return out, time.Time{}, false, err
	}
	if !retryAt.IsZero() {
		// The retry's links will be followed, not this attempt's.
		c.counters.retried.Add(1)
		c.counters.pages.Add(1)
		return out, time.Time{}, true, nil
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
	return out, time.Time{}, true, nil
}

// checkRobots gets the robots.txt rules of ent's site and logs ent when
// they refuse it. refused is true when ent was refused (and logged; and
// out.Failed set when that is a failure); robots is nil when it did not
// come to robots.txt. until is set when ent is to wait for its site's
// robots.txt (robotsPrereq), not logged. ok is false when ctx ended first.
func (c *Crawler) checkRobots(ctx context.Context, ent frontier.Entry, out *frontier.Outcome) (robots *fetch.Robots, refused bool, until time.Time, ok bool, err error) {
	site, serr := fetch.SiteKey(ent.URL)
	if serr != nil {
		return nil, true, time.Time{}, true, c.endInvalid(ent, serr, out)
	}
	if v := c.prereq.before(site, c.opts.Now(), c.opts.RobotsWait); v.v != robotsGo {
		until, err := c.robotsUnavailable(ent, v, out)
		return nil, until.IsZero(), until, true, err
	}
	robots, err = c.robots.Get(ctx, ent.URL)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, time.Time{}, false, nil
		}
		if errors.Is(err, errArchiveRobots) {
			return nil, false, time.Time{}, false, err
		}
		// Otherwise only an invalid URL fails here.
		return nil, true, time.Time{}, true, c.endInvalid(ent, err, out)
	}
	if robots.DisallowsAll() {
		// Not the site's rules: its robots.txt could not be fetched.
		until, err := c.robotsUnavailable(ent, c.prereq.after(site, c.opts.Now(), c.opts.RobotsWait), out)
		return robots, until.IsZero(), until, true, err
	}
	c.prereq.usable(site)
	u, perr := url.Parse(ent.URL)
	if perr != nil || robots.Allowed(c.opts.Fetch.UserAgent, u.RequestURI()) {
		return robots, false, time.Time{}, true, nil
	}
	c.counters.robotsDenied.Add(1)
	return robots, true, time.Time{}, true, c.logEntry(storage.Entry{
		URL: ent.URL, Error: "robots-disallowed", Depth: ent.Depth, Via: ent.Via, HopPath: ent.Hops, FetchedAt: c.opts.Now(),
	})
}

// endInvalid logs ent, whose URL cannot be fetched, as failed.
func (c *Crawler) endInvalid(ent frontier.Entry, err error, out *frontier.Outcome) error {
	reason, ok := permanent(err)
	if !ok {
		reason = reasonMalformedURL
	}
	out.Failed = true
	c.counters.permanent.add(reason)
	c.seeds.seedFailed(ent, reason, failText(reason, err), err)
	return c.logEntry(storage.Entry{
		URL: ent.URL, Error: failText(reason, err), Depth: ent.Depth, Via: ent.Via, HopPath: ent.Hops, FetchedAt: c.opts.Now(),
	})
}

// robotsUnavailable applies the robots.txt prerequisite's verdict to ent,
// whose site's robots.txt is unavailable: it returns when ent is to be
// handed out again, or ends ent (logged, failed, counted), or, for a site
// the prerequisite does not track, plans its retry.
func (c *Crawler) robotsUnavailable(ent frontier.Entry, v robotsVerdict, out *frontier.Outcome) (until time.Time, err error) {
	le := storage.Entry{URL: ent.URL, Depth: ent.Depth, Via: ent.Via, HopPath: ent.Hops, FetchedAt: c.opts.Now()}
	switch {
	case v.v == robotsWait && (c.front != nil || c.redis != nil):
		return v.until, nil
	case v.v == robotsEnd:
		out.Failed = true
		if v.reason == "robots-unavailable" {
			c.counters.robotsUnavailable.Add(1)
			le.Error = "robots-unavailable: " + v.why
			if v.first {
				c.opts.Logger.Warn("robots.txt did not answer within the robots wait: the site's URLs end as robots-unavailable",
					"url", ent.URL, "robots_wait", c.opts.RobotsWait, "last_failure", v.why)
			}
		} else {
			c.counters.permanent.add(v.reason)
			le.Error = v.reason + ": robots.txt: " + cause(v.err)
		}
		c.seeds.seedFailed(ent, v.reason, le.Error, v.err)
	default:
		// A site not tracked (past maxRobotsErrors): the URL is
		// retried, each wait spending one of its retries.
		reason := "robots-unavailable"
		if v.why != "" {
			reason += ": " + v.why
		}
		r := c.robotsRetry(ent, reason, v.until, out)
		le.Error, le.Attempt, le.RetryAt = r.Error, r.Attempt, r.RetryAt
		if r.Error == "" {
			le.Error = reason
		}
		if out.RetryAt.IsZero() {
			out.Failed = true
			c.counters.robotsUnavailable.Add(1)
			c.seeds.seedFailed(ent, "robots-unavailable", le.Error, v.err)
		}
	}
	return time.Time{}, c.logEntry(le)
}

// attemptInfo is what record needs to know of a fetch attempt besides
// its result: retryPlan's reason and exhausted, when the fetch started and
// how long it took.
type attemptInfo struct {
	reason    string
	exhausted bool
	at        time.Time
	took      time.Duration
	prev      *Capture // the earlier crawls' capture of the URL; nil if none
	// sched is the URL's entry in a continuous crawl's schedule, read
	// before the fetch in Redis mode; nil otherwise.
	sched *storedVisit
}

// record archives a fetch's exchange, logs it, counts it, and sets the
// parts of out that the response decides (failure, redirect, base). A
// failed attempt's line says whether the URL is retried (out.RetryAt), had
// its last try, or failed for good.
func (c *Crawler) record(ctx context.Context, ent frontier.Entry, res *fetch.Result, ferr error, out *frontier.Outcome, nd nearDup, a attemptInfo) error {
	le := storage.Entry{URL: ent.URL, Depth: ent.Depth, Via: ent.Via, HopPath: ent.Hops, LastMod: ent.LastMod,
		NearDuplicateOf: nd.of, Resemblance: nd.resemblance, Attempt: ent.Attempt + 1, RetryAt: out.RetryAt,
		FetchedAt: a.at, DurationMS: a.took.Seconds() * 1000}
	var warcBytes int64
	var captured *Capture // the capture this fetch recorded
	if ferr != nil {
		c.counters.fetchErrors.Add(1)
		out.Failed = true
		le.Error = failText(a.reason, ferr)
	}
	if !out.RetryAt.IsZero() || a.exhausted {
		le.Error = retryError(a.reason, cause(ferr), a.exhausted)
		if a.exhausted {
			c.counters.retriesExhausted.Add(1)
		}
	}
	if ferr != nil && out.RetryAt.IsZero() {
		if _, ok := permanent(ferr); ok {
			c.counters.permanent.add(a.reason)
		}
		reason := a.reason
		if a.exhausted {
			reason = retryError(a.reason, "", true)
		}
		c.seeds.seedFailed(ent, reason, le.Error, ferr)
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
		cp := &Capture{URL: ent.URL, Status: res.Status, Fetched: res.FetchedAt, Depth: ent.Depth, Hops: ent.Hops,
			ETag: res.Header.Get("ETag"), LastMod: res.Header.Get("Last-Modified"), Location: res.Location}
		ref, err := c.archiveResponse(ctx, ex, res, &le, a.prev, cp)
		if err != nil {
			return err
		}
		if captured, err = c.recordCapture(res, a.prev, cp, out.RetryAt.IsZero(), &le); err != nil {
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
	if c.cont != nil && out.RetryAt.IsZero() {
		if err := c.scheduleRevisit(ctx, ent, res, a.prev, captured, a.sched, a.at, &le, out); err != nil {
			return err
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

// robotsSharedTimeout bounds the Redis calls that share a site's
// robots.txt wait (Redis mode).
const robotsSharedTimeout = 2 * time.Second

// errArchiveRobots marks a robots.txt exchange that could not be archived.
var errArchiveRobots = errors.New("crawl: archive robots.txt")

// maxRobotsErrors bounds the robots.txt failures remembered for the log;
// beyond it a refusal is logged without the cause.
const maxRobotsErrors = 10_000

// robotsFetched archives robots.txt exchanges and records their failures
// for the robots.txt prerequisite. An archive failure is returned: the
// RobotsCache passes it to the Get that fetched, which stops the crawl.
func (c *Crawler) robotsFetched(site string, res *fetch.Result, ferr error) error {
	now := c.opts.Now()
	var since time.Time
	if r := c.redis; r != nil && r.robotsWaits != nil && c.opts.RobotsWait >= 0 {
		// Best effort, and short: a Redis that does not answer only
		// makes this worker count the wait from its own first failure.
		ctx, cancel := context.WithTimeout(context.Background(), robotsSharedTimeout)
		var err error
		switch {
		case ferr != nil:
			since, err = r.robotsWaits.Since(ctx, site, now, 2*c.opts.RobotsWait+time.Minute)
		case res != nil:
			err = r.robotsWaits.Clear(ctx, site)
		}
		cancel()
		if err != nil {
			c.opts.Logger.Debug("robots.txt wait not shared", "site", site, "err", err)
			since = time.Time{}
		}
	}
	c.prereq.fetched(site, res, ferr, now, since, &c.opts.Retry, c.opts.RobotsWait)
	if res == nil {
		return nil
	}
	if _, err := c.archive.Write(exchange(res)); err != nil {
		return fmt.Errorf("%w for %s: %w", errArchiveRobots, site, err)
	}
	return nil
}
