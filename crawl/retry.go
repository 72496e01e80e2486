package crawl

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// Defaults of RetryOptions.
const (
	DefaultMaxRetries    = 3
	DefaultRetryBackoff  = 2 * time.Second
	DefaultMaxBackoff    = 5 * time.Minute
	DefaultMaxRetryAfter = 5 * time.Minute
)

// RetryOptions say how a URL whose fetch failed transiently is fetched
// again: after a refused or reset connection, a timeout, a truncated body,
// a temporary DNS failure, or HTTP 408, 425, 429, 500, 502, 503 or 504
// (fetch.Transient, fetch.TransientStatus). A retry waits in the frontier
// beside its host's queue, so the host's other URLs and every other host go
// on meanwhile; it is part of the crawl's state, and survives a stop, a
// crash and a resume. Redis mode does not retry yet: a transient failure
// is final there.
type RetryOptions struct {
	// MaxRetries is how many times a URL is fetched again after
	// transient failures; default DefaultMaxRetries (3); negative: never.
	MaxRetries int
	// Backoff is the wait before the first retry, doubled for each
	// further one and scattered over [½, 1½) of itself (jitter), so that
	// the URLs of a host that failed together do not come back together;
	// default DefaultRetryBackoff (2s); negative: no wait beyond the
	// host's politeness delay.
	Backoff time.Duration
	// MaxBackoff caps that wait; default DefaultMaxBackoff (5m); negative:
	// no cap.
	MaxBackoff time.Duration
	// MaxRetryAfter caps the wait a response's Retry-After asks for (in
	// seconds or as an HTTP-date); a retry waits the larger of the
	// backoff and the capped Retry-After. Default DefaultMaxRetryAfter
	// (5m); negative: no cap (a server could then hold a URL for a year).
	MaxRetryAfter time.Duration
}

// EnsureDefaults fills in the zero fields with their defaults.
func (o *RetryOptions) EnsureDefaults() {
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultRetryBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxRetryAfter == 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
}

// Wait returns how long to wait before retry number attempt (1 for the
// first), given the response's Retry-After (negative: none) and jitter, a
// number in [0, 1): Backoff×2^(attempt-1)×(½+jitter), capped at MaxBackoff,
// or the Retry-After capped at MaxRetryAfter if that is longer.
func (o *RetryOptions) Wait(attempt int, retryAfter time.Duration, jitter float64) time.Duration {
	var d time.Duration
	if o.Backoff > 0 {
		d = o.Backoff
		for i := 1; i < attempt && (o.MaxBackoff < 0 || d < o.MaxBackoff) && d < time.Duration(1)<<61; i++ {
			d *= 2
		}
		d = time.Duration(float64(d) * (0.5 + jitter))
		if o.MaxBackoff >= 0 {
			d = min(d, o.MaxBackoff)
		}
	}
	if retryAfter >= 0 {
		if o.MaxRetryAfter >= 0 {
			retryAfter = min(retryAfter, o.MaxRetryAfter)
		}
		d = max(d, retryAfter)
	}
	return d
}

// failure says why a fetch attempt failed and whether it may succeed if
// made again: reason is the fetch error's kind ("timeout",
// "connection-reset", ...) or the HTTP status ("503"); "" when the attempt
// did not fail.
func failure(res *fetch.Result, ferr error) (reason string, transient bool) {
	switch {
	case ferr != nil:
		return fetch.KindOf(ferr).String(), fetch.Transient(ferr)
	case res != nil && res.Status >= 400:
		return strconv.Itoa(res.Status), fetch.TransientStatus(res.Status)
	}
	return "", false
}

// retryPlan decides whether ent's attempt is retried: retryAt is when
// (zero: not retried). reason is why the attempt failed ("" if it did not),
// and exhausted is true when it failed transiently with no retry left.
func (c *Crawler) retryPlan(ent frontier.Entry, res *fetch.Result, ferr error) (retryAt time.Time, reason string, exhausted bool) {
	reason, transient := failure(res, ferr)
	if r, ok := permanent(ferr); ok {
		// Ends at once, or after its one retry (a name not found).
		reason, transient = r, ent.Attempt < permanentRetries(r)
	}
	if !transient || !c.retries || c.opts.Retry.MaxRetries < 0 {
		return time.Time{}, reason, false
	}
	if ent.Attempt >= c.opts.Retry.MaxRetries {
		return time.Time{}, reason, true
	}
	retryAfter := time.Duration(-1)
	now := c.opts.Now()
	if res != nil {
		if v := res.Header.Get("Retry-After"); v != "" {
			if d, ok := fetch.ParseRetryAfter(v, now); ok {
				retryAfter = d
			}
		}
	}
	return now.Add(c.opts.Retry.Wait(ent.Attempt+1, retryAfter, rand.Float64())), reason, false
}

// retryError is the crawl-log error of an attempt that failed transiently:
// "will-retry: REASON" when it is retried, "retries-exhausted: REASON"
// when it was the last; detail, if any, follows the reason.
func retryError(reason, detail string, exhausted bool) string {
	s := "will-retry: " + reason
	if exhausted {
		s = "retries-exhausted: " + reason
	}
	if detail != "" {
		s += ": " + detail
	}
	return s
}

// maxRetries bounds RetryOptions.MaxRetries well below what the
// frontier's store accepts as an attempt count (2^31).
const maxRetries = 1 << 20

// validate checks RetryOptions for Options.Validate.
func (o *RetryOptions) validate() error {
	if o.MaxRetries > maxRetries {
		return fmt.Errorf("%w: Retry.MaxRetries %d is over %d", ErrInvalidOptions, o.MaxRetries, maxRetries)
	}
	return nil
}

// robotsRetry plans the retry of ent, refused because its site's
// robots.txt is unreachable, where the entry cannot wait for it without
// spending a retry (Redis mode, or a site the prerequisite does not
// track): RFC 9309 §2.3.1.4 lets a crawler assume a complete disallow
// meanwhile and try again later. The retry is due at the next try of
// robots.txt (notBefore) or after the backoff, whichever is later. It sets
// out.RetryAt and returns the attempt's log fields (Error, Attempt,
// RetryAt); a zero Entry when retries are off.
func (c *Crawler) robotsRetry(ent frontier.Entry, reason string, notBefore time.Time, out *frontier.Outcome) storage.Entry {
	if !c.retries || c.opts.Retry.MaxRetries < 0 {
		return storage.Entry{}
	}
	le := storage.Entry{Attempt: ent.Attempt + 1}
	if ent.Attempt >= c.opts.Retry.MaxRetries {
		c.counters.retriesExhausted.Add(1)
		le.Error = retryError(reason, "", true)
		return le
	}
	c.counters.retried.Add(1)
	out.RetryAt = c.opts.Now().Add(c.opts.Retry.Wait(ent.Attempt+1, -1, rand.Float64()))
	if notBefore.After(out.RetryAt) {
		out.RetryAt = notBefore
	}
	le.Error, le.RetryAt = retryError(reason, "", false), out.RetryAt
	return le
}

// outcomeReleaser is a queue that adapts a host's delay to its answers
// (frontier.PolitenessOptions.DelayFactor and MaxDelay): the local
// frontier. The Redis frontier keeps the fixed delay.
type outcomeReleaser interface {
	ReleaseOutcome(e frontier.Entry, out frontier.Outcome) error
}

// release ends ent's request. It records in out the response time and
// whether the host asked to slow down (429, 503), for adaptive
// politeness: a local frontier takes them now (ReleaseOutcome), the Redis
// frontier in Done.
func (c *Crawler) release(ent frontier.Entry, res *fetch.Result, out *frontier.Outcome) error {
	if res != nil {
		out.Elapsed = res.Duration
		out.Throttled = fetch.Throttling(res.Status)
	}
	q, ok := c.queue.(outcomeReleaser)
	if !ok {
		return c.queue.Release(ent, true, out.CrawlDelay)
	}
	o := *out
	o.Fetched = true
	return q.ReleaseOutcome(ent, o)
}
