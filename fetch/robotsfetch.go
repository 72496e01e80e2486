package fetch

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ErrRobotsServerError is wrapped by the error FetchRobots returns when the
// server answered robots.txt with a 5xx status or 429 Too Many Requests.
var ErrRobotsServerError = errors.New("fetch: robots.txt server error")

// RobotsURL returns the robots.txt URL governing siteURL: same scheme, host
// and port, path /robots.txt (RFC 9309 section 2.3).
func RobotsURL(siteURL string) (*url.URL, error) {
	u, err := parseFetchURL(siteURL)
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}, nil
}

// FetchRobots fetches and parses the robots.txt governing siteURL (any URL
// of the site), following up to MaxRobotsRedirects redirects, reading at
// most MaxRobotsSize bytes and bounded by RobotsTimeout. The returned
// Robots is never nil unless siteURL is invalid, and it already encodes
// RFC 9309 section 2.3.1's status handling:
//
//   - 2xx: the parsed file (cut at MaxRobotsSize, a cut line dropped);
//   - 3xx left after the redirect limit, or 4xx: allow all ("unavailable");
//   - 5xx or 429 Too Many Requests, or no response (DNS, connect, timeout,
//     blocked address, reset mid-body): disallow all ("unreachable"), with
//     a non-nil error saying why (ErrRobotsServerError for a 5xx or 429,
//     an *Error otherwise). A 429 is a server asking to be left alone, not
//     a missing file: it is treated like a 5xx (RFC 9309 section 2.3.1.4
//     leaves it open; Google does the same).
//
// The *Result is the final hop's exchange, for archiving; nil when there
// was no response.
func (f *Fetcher) FetchRobots(ctx context.Context, siteURL string) (*Robots, *Result, error) {
	ru, err := RobotsURL(siteURL)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.RobotsTimeout)
	defer cancel()
	raw := ru.String()
	x, err := f.exchange(ctx, f.robotsClient, ru, raw, f.opts.MaxRobotsSize, Conditional{})
	if x == nil {
		return DisallowAllRobots(), nil, err
	}
	res := x.result(raw)
	res.Base = ru
	switch {
	case err != nil:
		return DisallowAllRobots(), res, err
	case res.Status >= 200 && res.Status < 300:
		body := res.Body
		if res.Truncated == TruncatedLength {
			if i := bytes.LastIndexAny(body, "\r\n"); i >= 0 {
				body = body[:i]
			}
		}
		return parseRobots(body, f.opts.MaxRobotsSize), res, nil
	case res.Status >= 500, res.Status == http.StatusTooManyRequests:
		return DisallowAllRobots(), res, fmt.Errorf("%w: %s answered %d", ErrRobotsServerError, raw, res.Status)
	default:
		return AllowAllRobots(), res, nil
	}
}

// RobotsSource fetches robots.txt; *Fetcher implements it.
type RobotsSource interface {
	FetchRobots(ctx context.Context, siteURL string) (*Robots, *Result, error)
}

// RobotsCacheOptions configures a RobotsCache. The zero value gives the
// defaults.
type RobotsCacheOptions struct {
	// MaxAge is how long a fetched robots.txt is used (RFC 9309 section
	// 2.4: crawlers should not use a cached copy for more than 24 hours).
	// Default 24h.
	MaxAge time.Duration
	// ErrorMaxAge is how long an unreachable (disallow-all) answer is kept
	// before robots.txt is tried again. Default 1h.
	ErrorMaxAge time.Duration
	// MaxStale is how long the last good robots.txt of a site stays in use
	// while refreshing it finds the site unreachable (RFC 9309 section 2.4
	// allows a cached copy past 24 hours in that case; section 2.3.1.4
	// gives 30 days as a reasonably long time). Default 30 days; negative
	// means an unreachable refresh replaces the cached copy at once.
	MaxStale time.Duration
	// MaxEntries bounds the cache; the least recently used site is evicted
	// beyond it. Default 100,000.
	MaxEntries int
	// OnFetch, when set, is called after every robots.txt fetch (not
	// after cache hits) with the site key, the exchange (nil without a
	// response) and the fetch error, so that the crawl can archive and log
	// robots.txt fetches. It runs on the goroutine that called Get. When
	// it returns an error, the fetch is not cached (the next Get fetches
	// again) and Get returns that error, wrapped.
	OnFetch func(site string, res *Result, err error) error
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// RobotsCache keeps one Robots per site (scheme, host and port). It is safe
// for concurrent use: concurrent Gets for one site fetch robots.txt once,
// the others wait for that fetch or for their own ctx.
type RobotsCache struct {
	src  RobotsSource
	opts RobotsCacheOptions

	mu  sync.Mutex              // guards m and lru
	m   map[string]*robotsEntry // by site key; includes fetches in flight
	lru *list.List              // of *robotsEntry, completed only, most recent first
}

type robotsEntry struct {
	key  string
	done chan struct{} // closed when robots, expires and failed are set
	// Written once before done is closed, read only after.
	robots  *Robots
	expires time.Time
	failed  bool // the leader's ctx ended: waiters retry
	// goodAt is when the robots in use was fetched successfully (zero
	// for an unreachable answer); prev is the expired entry it replaces.
	goodAt time.Time
	prev   *robotsEntry
	elem   *list.Element
}

// NewRobotsCache returns a cache fetching through src.
func NewRobotsCache(src RobotsSource, opts RobotsCacheOptions) *RobotsCache {
	if opts.MaxAge <= 0 {
		opts.MaxAge = 24 * time.Hour
	}
	if opts.ErrorMaxAge <= 0 {
		opts.ErrorMaxAge = time.Hour
	}
	if opts.MaxStale == 0 {
		opts.MaxStale = 30 * 24 * time.Hour
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 100_000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &RobotsCache{src: src, opts: opts, m: make(map[string]*robotsEntry), lru: list.New()}
}

// SiteKey returns the cache key of rawURL's site: lower-case
// scheme://host:port with the default port made explicit.
func SiteKey(rawURL string) (string, error) {
	u, err := parseFetchURL(rawURL)
	if err != nil {
		return "", err
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), nil
}

// Get returns the Robots governing rawURL, fetching robots.txt if it is not
// cached or has expired. An unreachable robots.txt yields a disallow-all
// Robots and a nil error (the failure goes to OnFetch), unless the site's
// last good robots.txt is younger than MaxStale, which is then kept. Get
// fails only for an invalid rawURL, when ctx ends first, or when OnFetch
// returns an error.
func (c *RobotsCache) Get(ctx context.Context, rawURL string) (*Robots, error) {
	key, err := SiteKey(rawURL)
	if err != nil {
		return nil, err
	}
	var prev *robotsEntry
	for {
		c.mu.Lock()
		e := c.m[key]
		if e != nil {
			select {
			case <-e.done:
				if c.opts.Now().Before(e.expires) {
					c.lru.MoveToFront(e.elem)
					c.mu.Unlock()
					return e.robots, nil
				}
				c.removeLocked(e)
				prev = e
				e = nil
			default: // a fetch is in flight: wait for it below
			}
		}
		if e == nil {
			e = &robotsEntry{key: key, done: make(chan struct{}), prev: prev}
			c.m[key] = e
			c.mu.Unlock()
			return c.lead(ctx, e, key, rawURL)
		}
		c.mu.Unlock()
		select {
		case <-e.done:
			if !e.failed {
				return e.robots, nil
			}
			// The leader gave up because of its own ctx; try again.
		case <-ctx.Done():
			return nil, fmt.Errorf("fetch: robots.txt for %s: %w", key, ctx.Err())
		}
	}
}

// lead fetches robots.txt for e and publishes the outcome.
// rawURL, not key, goes to the source: key spells out the default port,
// which would then appear in the Host header ("example.com:80"), and some
// servers treat that as another virtual host.
func (c *RobotsCache) lead(ctx context.Context, e *robotsEntry, key, rawURL string) (*Robots, error) {
	robots, res, err := c.src.FetchRobots(ctx, rawURL)
	c.mu.Lock()
	defer c.mu.Unlock()
	if ctx.Err() != nil || robots == nil {
		// A fetch cut short by the caller says nothing about the site.
		e.failed = true
		if c.m[key] == e {
			delete(c.m, key)
		}
		close(e.done)
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("fetch: robots.txt for %s: %w", key, err)
	}
	if c.opts.OnFetch != nil {
		c.mu.Unlock()
		herr := c.opts.OnFetch(key, res, err)
		c.mu.Lock()
		if herr != nil {
			// Waiters retry, and fetch again, as after a cut fetch.
			e.failed = true
			if c.m[key] == e {
				delete(c.m, key)
			}
			close(e.done)
			return nil, fmt.Errorf("fetch: robots.txt for %s: %w", key, herr)
		}
	}
	now := c.opts.Now()
	age := c.opts.MaxAge
	if err == nil {
		e.goodAt = now
	} else {
		age = c.opts.ErrorMaxAge
		if p := e.prev; p != nil && !p.goodAt.IsZero() && now.Sub(p.goodAt) < c.opts.MaxStale {
			// Keep obeying the last good file rather than locking the
			// site out for a transient failure.
			robots, e.goodAt = p.robots, p.goodAt
		}
	}
	e.prev = nil
	e.robots, e.expires = robots, now.Add(age)
	close(e.done)
	if c.m[key] == e {
		e.elem = c.lru.PushFront(e)
		for c.lru.Len() > c.opts.MaxEntries {
			c.removeLocked(c.lru.Back().Value.(*robotsEntry))
		}
	}
	return robots, nil
}

func (c *RobotsCache) removeLocked(e *robotsEntry) {
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
	}
	if c.m[e.key] == e {
		delete(c.m, e.key)
	}
}

// Len returns the number of sites cached or being fetched.
func (c *RobotsCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
