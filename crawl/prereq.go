package crawl

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
)

// DefaultRobotsWait is Options.RobotsWait's default.
const DefaultRobotsWait = 5 * time.Minute

// minRobotsRetry is the least wait before robots.txt is fetched again
// after a failure, whatever Retry.Backoff says.
const minRobotsRetry = 10 * time.Millisecond

// robotsErrorMaxAge is how long the robots.txt cache keeps an unreachable
// answer: less than any wait of the prerequisite's schedule
// (robotsPrereq), which decides when robots.txt is fetched again.
const robotsErrorMaxAge = minRobotsRetry / 2

// robotsPrereq makes a site's robots.txt a prerequisite of its URLs, as
// Heritrix does: while robots.txt answers 5xx (or 429) or does not
// answer, the site is taken as fully disallowed (RFC 9309 §2.3.1.4) and
// its URLs wait, without spending their own retries, while robots.txt is
// fetched again on a schedule of its own (Options.Retry's backoff, or the
// answer's Retry-After). After Options.RobotsWait the waiting URLs end as
// "robots-unavailable". A permanent failure (refused address, certificate,
// a name that does not exist after one retry) ends them at once.
type robotsPrereq struct {
	mu    sync.Mutex             // protects sites
	sites map[string]*siteRobots // by fetch.SiteKey; at most maxRobotsErrors
}

// robotsShared shares when each site's run of robots.txt failures began
// among the workers of a Redis-mode crawl (redisfrontier.RobotsWaits), so
// that Options.RobotsWait bounds a site's wait whichever workers take its
// URLs.
type robotsShared interface {
	Since(ctx context.Context, site string, now time.Time, ttl time.Duration) (time.Time, error)
	Clear(ctx context.Context, site string) error
}

// siteRobots is the state of a site whose robots.txt failed.
type siteRobots struct {
	err    error     // the last failure
	why    string    // the last failure for the log: "answered 503", "timeout: ..."
	reason string    // the permanent reason, "" while the failures are transient
	since  time.Time // the first failure of this run of failures
	fails  int       // failures in a row
	next   time.Time // when robots.txt is fetched again
	gaveUp time.Time // when the wait ran out; zero before
}

// verdict is what the prerequisite says about a URL of a site.
type verdict uint8

const (
	robotsGo      verdict = iota // fetch robots.txt (or use the cached copy) and go on
	robotsWait                   // wait until the verdict's time
	robotsEnd                    // end the URL: permanent failure, or the wait ran out
	robotsUnknown                // unreachable, but the site is not tracked (too many): as a transient failure of the URL
)

// robotsVerdict is the prerequisite's answer for a URL of site at now.
type robotsVerdict struct {
	v      verdict
	until  time.Time // robotsWait
	reason string    // robotsEnd: a permanent reason or "robots-unavailable"
	why    string    // the last robots.txt failure
	err    error
	first  bool // the site's wait ran out just now
}

// fetched records a robots.txt fetch of site: it is called by the robots
// cache for every fetch, with the exchange (nil without a response) and
// the error. since, when not zero, is when the site's run of failures
// began for the whole crawl (Redis mode: robotsShared), which a site new
// to this worker's state takes instead of now.
func (p *robotsPrereq) fetched(site string, res *fetch.Result, ferr error, now, since time.Time, retry *RetryOptions, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ferr == nil {
		delete(p.sites, site)
		return
	}
	s := p.sites[site]
	if s == nil || !s.gaveUp.IsZero() {
		if s == nil && len(p.sites) >= maxRobotsErrors {
			return
		}
		if p.sites == nil {
			p.sites = map[string]*siteRobots{}
		}
		s = &siteRobots{since: now}
		if !since.IsZero() && since.Before(now) {
			s.since = since
		}
		p.sites[site] = s
	}
	s.fails++
	s.err = ferr
	s.why = robotsWhy(res, ferr)
	if reason, ok := permanent(ferr); ok && s.fails > permanentRetries(reason) {
		s.reason = reason
		return
	}
	retryAfter := time.Duration(-1)
	if res != nil {
		if d, ok := fetch.ParseRetryAfter(res.Header.Get("Retry-After"), now); ok {
			retryAfter = d
		}
	}
	s.next = now.Add(max(retry.Wait(s.fails, retryAfter, rand.Float64()), minRobotsRetry))
	if wait >= 0 {
		// The last try falls when the wait runs out.
		if end := s.since.Add(wait); end.Before(s.next) {
			s.next = end
		}
	}
}

// robotsWhy says why a robots.txt fetch failed, once: "robots.txt
// answered 503", or "robots.txt: " and the error's kind and cause.
func robotsWhy(res *fetch.Result, ferr error) string {
	if res != nil && res.Status >= 400 {
		return "robots.txt answered " + strconv.Itoa(res.Status)
	}
	if reason, ok := permanent(ferr); ok {
		return "robots.txt: " + failText(reason, ferr)
	}
	return "robots.txt: " + failText(fetch.KindOf(ferr).String(), ferr)
}

// before is the verdict for a URL of site before robots.txt is asked
// for: wait while a retry of robots.txt is not due, end at once after a
// permanent failure or while the site's wait has run out (for wait, then
// the site is tried afresh).
func (p *robotsPrereq) before(site string, now time.Time, wait time.Duration) robotsVerdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sites[site]
	switch {
	case s == nil:
		return robotsVerdict{v: robotsGo}
	case s.reason != "":
		return robotsVerdict{v: robotsEnd, reason: s.reason, why: s.why, err: s.err}
	case !s.gaveUp.IsZero():
		if now.Sub(s.gaveUp) < max(wait, 0) {
			return robotsVerdict{v: robotsEnd, reason: "robots-unavailable", why: s.why, err: s.err}
		}
		delete(p.sites, site)
		return robotsVerdict{v: robotsGo}
	case now.Before(s.next):
		return robotsVerdict{v: robotsWait, until: s.next, why: s.why}
	}
	return robotsVerdict{v: robotsGo}
}

// after is the verdict for a URL of site whose robots.txt is unreachable
// (the cache answered disallow-all): end it after a permanent failure or
// once the wait has run out, otherwise wait for the next try.
func (p *robotsPrereq) after(site string, now time.Time, wait time.Duration) robotsVerdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sites[site]
	switch {
	case s == nil:
		return robotsVerdict{v: robotsUnknown}
	case s.reason != "":
		return robotsVerdict{v: robotsEnd, reason: s.reason, why: s.why, err: s.err}
	case !s.gaveUp.IsZero() || now.Sub(s.since) >= wait:
		v := robotsVerdict{v: robotsEnd, reason: "robots-unavailable", why: s.why, err: s.err}
		if s.gaveUp.IsZero() {
			s.gaveUp = now
			v.first = true
		}
		return v
	}
	return robotsVerdict{v: robotsWait, until: s.next, why: s.why}
}

// usable notes that site's robots.txt answered (or a good copy is kept
// while it fails): its URLs go on, and a later failure starts afresh.
func (p *robotsPrereq) usable(site string) {
	p.mu.Lock()
	if len(p.sites) > 0 {
		delete(p.sites, site)
	}
	p.mu.Unlock()
}

// waiting counts the sites whose URLs wait for their robots.txt now.
func (p *robotsPrereq) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.sites {
		if s.reason == "" && s.gaveUp.IsZero() {
			n++
		}
	}
	return n
}
