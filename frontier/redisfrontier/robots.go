package redisfrontier

import (
	"bytes"
	"context"
	"fmt"
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
