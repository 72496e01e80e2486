package redisfrontier

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "layercrawl:"

var (
	// ErrStateLost is returned when the crawl's keys vanished from Redis
	// while workers were using them (typically a restart of a Redis
	// without persistence): continuing would fetch everything again.
	ErrStateLost = errors.New("redisfrontier: crawl state lost from redis")
	// ErrIncompatible is returned when a worker's seen-set parameters
	// differ from those stored with the filter in Redis.
	ErrIncompatible = errors.New("redisfrontier: seen-set parameters differ from those in redis")
	// ErrInvalidOptions is wrapped by every error about a bad Config,
	// Options or SeenOptions.
	ErrInvalidOptions = errors.New("redisfrontier: invalid options")
	// ErrConfig is the former name of ErrInvalidOptions.
	//
	// Deprecated: use ErrInvalidOptions.
	ErrConfig = ErrInvalidOptions
)

// Config says how to reach Redis and which keys a crawl owns.
type Config struct {
	// URL is redis://[user:password@]host:port[/db] or rediss:// (TLS),
	// with go-redis's query options (dial_timeout=, read_timeout=, ...).
	// Required.
	URL string
	// Cluster connects to a Redis Cluster; URL names one node and further
	// seed nodes come as repeated addr= query parameters. Default false;
	// implied when URL has an addr= parameter.
	Cluster bool
	// Prefix starts every key of the crawl, so that several crawls share
	// one Redis. Default DefaultPrefix. It may not contain '{' or '}'
	// (they delimit Cluster hash tags).
	Prefix string
	// MinBackoff and MaxBackoff bound the wait between retries while
	// Redis is unreachable; defaults 50ms and 5s. Retries go on until the
	// caller's context ends.
	MinBackoff, MaxBackoff time.Duration
}

// EnsureDefaults fills in the zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = 50 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Second
	}
}

// Validate reports whether the config can make a Client.
func (c *Config) Validate() error {
	switch {
	case c.URL == "":
		return fmt.Errorf("%w: URL is required", ErrConfig)
	case strings.ContainsAny(c.Prefix, "{}"):
		return fmt.Errorf("%w: prefix %q contains a brace", ErrConfig, c.Prefix)
	case c.MinBackoff < 0 || c.MaxBackoff < c.MinBackoff:
		return fmt.Errorf("%w: backoff %v..%v", ErrConfig, c.MinBackoff, c.MaxBackoff)
	}
	return nil
}

// Client is a connection to Redis with a crawl's key prefix and retry
// policy. It is safe for concurrent use.
type Client struct {
	rdb    redis.UniversalClient
	prefix string
	minB   time.Duration
	maxB   time.Duration
	owned  bool // Close closes rdb
}

// Dial connects to Redis as cfg says (copied; defaults applied) and pings
// it, retrying while it is unreachable until ctx ends.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rdb, err := newUniversal(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{rdb: rdb, prefix: cfg.Prefix, minB: cfg.MinBackoff, maxB: cfg.MaxBackoff, owned: true}
	if err := c.retry(ctx, func(ctx context.Context) error { return rdb.Ping(ctx).Err() }); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redisfrontier: ping: %w", err)
	}
	return c, nil
}

func newUniversal(cfg Config) (redis.UniversalClient, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.Cluster || u.Query().Has("addr") {
		o, err := redis.ParseClusterURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return redis.NewClient(o), nil
}

// NewClient wraps an existing go-redis client (a *redis.Client or
// *redis.ClusterClient); Close does not close it. cfg.URL is ignored.
func NewClient(rdb redis.UniversalClient, cfg Config) (*Client, error) {
	cfg.URL = "unused"
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{rdb: rdb, prefix: cfg.Prefix, minB: cfg.MinBackoff, maxB: cfg.MaxBackoff}, nil
}

// Redis returns the underlying go-redis client.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// Prefix returns the crawl's key prefix.
func (c *Client) Prefix() string { return c.prefix }

// Close closes the connection if Dial made it.
func (c *Client) Close() error {
	if c.owned {
		return c.rdb.Close()
	}
	return nil
}

// Transient reports whether err is worth retrying: a network failure or a
// server that is loading, failing over or not yet serving, as opposed to a
// reply that would come back the same (a script error, a wrong type, a
// reply of the wrong shape: ErrCorrupt).
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.Nil) || errors.Is(err, ErrCorrupt) {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		for _, p := range []string{"LOADING", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "BUSY", "MOVED", "ASK"} {
			if redis.HasErrorPrefix(err, p) {
				return true
			}
		}
		return false
	}
	return true
}

// Retry runs fn until it succeeds, fails with an error that is not
// transient (Transient: Redis unreachable, loading, failing over, busy),
// or ctx ends, backing off exponentially between attempts from
// Config.MinBackoff to Config.MaxBackoff: how every call of this package
// rides out a Redis restart, for callers that keep data of their own in
// the same Redis. fn must be safe to repeat: a call whose reply was lost
// may have run.
func (c *Client) Retry(ctx context.Context, fn func(ctx context.Context) error) error {
	return c.retry(ctx, fn)
}

// retry runs fn until it succeeds, fails with a non-transient error, or
// ctx ends, backing off exponentially between attempts. fn must be safe to
// repeat: every caller in this package makes its writes idempotent.
func (c *Client) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	wait := c.minB
	for {
		err := fn(ctx)
		if err == nil || !Transient(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(wait*2, c.maxB)
	}
}
