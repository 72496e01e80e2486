package redisfrontier

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/fetch"
)

// SharedRobots is a fetch.RobotsSource that shares robots.txt between the
// workers of a crawl: a site's robots.txt is fetched by one worker and
// stored in Redis for TTL, and the others parse the stored copy instead of
// fetching it again. Put a fetch.RobotsCache in front of it for the
// in-process cache:
//
//	fetch.NewRobotsCache(redisfrontier.NewSharedRobots(c, fetcher, 0), opts)
//
// Only definite answers are shared: a 2xx body and a 4xx (allow all). A 5xx
// or an unreachable site (disallow all) is left to each worker's own cache,
// which retries it sooner. A shared hit returns a nil *fetch.Result: the
// exchange was archived by the worker that fetched it. If Redis fails, the
// robots.txt is fetched directly (robots must never block the crawl). It is
// safe for concurrent use.
type SharedRobots struct {
	c   *Client
	src fetch.RobotsSource
	ttl time.Duration
}

// NewSharedRobots returns a shared source fetching through src; ttl is how
// long a stored robots.txt is used, default (0) 24h (RFC 9309 section 2.4).
func NewSharedRobots(c *Client, src fetch.RobotsSource, ttl time.Duration) *SharedRobots {
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	return &SharedRobots{c: c, src: src, ttl: ttl}
}

// robotsAllow is the stored form of a 4xx answer; a 2xx body is stored
// behind robotsBody.
const (
	robotsAllow = "allow"
	robotsBody  = "body\n"
)

func (r *SharedRobots) key(siteURL string) (string, error) {
	u, err := fetch.RobotsURL(siteURL)
	if err != nil {
		return "", err
	}
	return r.c.prefix + "robots:" + strings.ToLower(u.Scheme+"://"+u.Host), nil
}

// FetchRobots returns the site's robots.txt from Redis, or fetches it
// through the source and stores a definite answer.
func (r *SharedRobots) FetchRobots(ctx context.Context, siteURL string) (*fetch.Robots, *fetch.Result, error) {
	key, err := r.key(siteURL)
	if err != nil {
		return r.src.FetchRobots(ctx, siteURL)
	}
	if v, err := r.c.rdb.Get(ctx, key).Result(); err == nil {
		if rb, ok := decodeRobots(v); ok {
			return rb, nil, nil
		}
		// A stored value that does not decode is treated as absent:
		// the fetch below replaces it.
	} else if err != redis.Nil && !Transient(err) {
		return nil, nil, fmt.Errorf("redisfrontier: robots cache: %w", err)
	}
	rb, res, err := r.src.FetchRobots(ctx, siteURL)
	if err != nil || res == nil {
		return rb, res, err
	}
	var v string
	switch {
	case res.Status >= 200 && res.Status < 300:
		body := res.Body
		if res.Truncated == fetch.TruncatedLength {
			if i := bytes.LastIndexAny(body, "\r\n"); i >= 0 {
				body = body[:i]
			}
		}
		v = robotsBody + string(body)
	case res.Status >= 400 && res.Status < 500:
		v = robotsAllow
	default:
		return rb, res, nil
	}
	// Best effort: a failed store only costs another fetch elsewhere.
	_ = r.c.rdb.Set(ctx, key, v, r.ttl).Err()
	return rb, res, nil
}

// decodeRobots parses a stored answer; ok is false for anything else.
func decodeRobots(v string) (*fetch.Robots, bool) {
	switch {
	case v == robotsAllow:
		return fetch.AllowAllRobots(), true
	case strings.HasPrefix(v, robotsBody):
		rb, err := fetch.ParseRobots([]byte(v[len(robotsBody):]))
		return rb, err == nil
	}
	return nil, false
}

var _ fetch.RobotsSource = (*SharedRobots)(nil)

// RobotsWaits shares among the workers of a crawl when each site's
// current run of robots.txt failures began, so that the wait its URLs
// spend on robots.txt (crawl.Options.RobotsWait) is bounded for the
// crawl, whichever workers fetch it, not once per worker. It is safe for
// concurrent use.
type RobotsWaits struct {
	c *Client
}

// NewRobotsWaits returns the shared robots.txt failure times of c's crawl.
func NewRobotsWaits(c *Client) *RobotsWaits { return &RobotsWaits{c: c} }

func (w *RobotsWaits) key(site string) string { return w.c.prefix + "robotswait:" + site }

// Since returns when the site's current run of robots.txt failures began:
// the time recorded by the first worker to see it fail, or now, which it
// records, for ttl (after which a failure starts a new run).
func (w *RobotsWaits) Since(ctx context.Context, site string, now time.Time, ttl time.Duration) (time.Time, error) {
	ms := now.UnixMilli()
	var got int64
	err := w.c.retry(ctx, func(ctx context.Context) error {
		// SET NX and GET in one pipeline, not SET NX GET: Redis 6
		// refuses that.
		var get *redis.StringCmd
		_, err := w.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SetNX(ctx, w.key(site), ms, ttl)
			get = p.Get(ctx, w.key(site))
			return nil
		})
		switch {
		case err == redis.Nil:
			got = ms // cleared between the two: a new run, from now
			return nil
		case err != nil:
			return err
		}
		v := get.Val()
		got, err = strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: robots.txt wait of %s: %q", ErrCorrupt, site, v)
		}
		return nil
	})
	if err != nil {
		return now, fmt.Errorf("redisfrontier: robots.txt wait: %w", err)
	}
	return time.UnixMilli(got), nil
}

// Clear ends the site's run of failures: its robots.txt answered.
func (w *RobotsWaits) Clear(ctx context.Context, site string) error {
	err := w.c.retry(ctx, func(ctx context.Context) error { return w.c.rdb.Del(ctx, w.key(site)).Err() })
	if err != nil {
		return fmt.Errorf("redisfrontier: robots.txt wait: %w", err)
	}
	return nil
}
