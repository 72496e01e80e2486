package redisfrontier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
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
	// ErrUnreachable is wrapped by Dial's error when Redis did not answer
	// before Config.ConnectTimeout or the context ended; the error also
	// wraps the last failure (a refused connection, a timeout, LOADING).
	ErrUnreachable = errors.New("redisfrontier: redis unreachable")
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
	// Redis is unreachable; defaults 50ms and 1s (go-redis redials once a
	// second while Redis is down: waiting longer between retries only
	// delays the recovery). Retries go on until the caller's context ends.
	MinBackoff, MaxBackoff time.Duration
	// ConnectTimeout bounds how long Dial waits for Redis to answer its
	// first ping (retrying while it is unreachable or loading); then Dial
	// fails with ErrUnreachable. Default 0: until Dial's context ends.
	ConnectTimeout time.Duration
	// Logger receives the client's outage reports, once at WARN when
	// calls start failing ("redis unreachable") and once when one
	// succeeds again, with the outage's duration, and go-redis's own log
	// lines for the calls made through this client (see [Client]).
	// Default: none; go-redis's lines then go where go-redis writes them.
	Logger *slog.Logger
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
		c.MaxBackoff = time.Second
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
	case c.ConnectTimeout < 0:
		return fmt.Errorf("%w: negative connect timeout %v", ErrConfig, c.ConnectTimeout)
	}
	return nil
}

// Client is a connection to Redis with a crawl's key prefix and retry
// policy. It is safe for concurrent use.
//
// Outages. Every call retries while Redis is unreachable (Retry). The
// first transient failure after a success starts an outage, logged once
// at WARN to Config.Logger; the first success of a call begun after that
// ends it, logged once with its duration.
//
// go-redis's own log lines. go-redis has one logger for the whole process
// (redis.SetLogger). The first Client made with a Config.Logger replaces
// it, for the life of the process, with one that sends each line to the
// Logger of the Client whose call wrote it (at DEBUG during an outage the
// Client has reported, INFO otherwise), so that a JSON log stays JSON.
// Lines go-redis writes outside any call of a Client (from its own
// goroutines) go to the Logger of the most recently made Client still
// open, or, when none is, to stderr as go-redis writes them.
type Client struct {
	rdb    redis.UniversalClient
	prefix string
	minB   time.Duration
	maxB   time.Duration
	owned  bool         // Close closes rdb
	log    *slog.Logger // nil: no outage reports, go-redis's lines untouched

	failures atomic.Uint64         // transient failures seen by retry, ever
	down     atomic.Bool           // an outage is under way (the fast path of retry reads only this)
	omu      sync.Mutex            // protects downAt
	downAt   time.Time             // when the outage under way began
	lastDial atomic.Pointer[error] // the last failed dial (Dial's error names it)
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
	c := newClient(rdb, cfg, true)
	rdb.AddHook(dialRecorder{c})
	if err := c.ping(ctx, cfg); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// pingAttempt bounds one ping of Dial: go-redis may hold a ping until its
// own dial gives up, longer than the connect timeout.
const pingAttempt = time.Second

// ping pings Redis until it answers, retrying transient failures and
// pings that took pingAttempt, until cfg.ConnectTimeout (if set) or ctx
// ends.
func (c *Client) ping(ctx context.Context, cfg Config) error {
	if cfg.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.ConnectTimeout)
		defer cancel()
	}
	if c.log != nil {
		ctx = context.WithValue(ctx, clientKey{}, c)
	}
	var last error // the last failure
	wait := c.minB
	for {
		actx, cancel := context.WithTimeout(ctx, pingAttempt)
		err := c.rdb.Ping(actx).Err()
		cancel()
		switch {
		case err == nil:
			if c.down.Load() {
				c.recovered(time.Time{})
			}
			return nil
		case ctx.Err() == nil && !Transient(err) && !errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("redisfrontier: ping: %w", err)
		}
		if d := c.lastDial.Load(); d != nil && errors.Is(err, context.DeadlineExceeded) {
			err = *d // why the ping waited: a refused connection, say
		}
		last = err
		c.failed(err)
		if ctx.Err() != nil {
			if cfg.ConnectTimeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w: %s did not answer within %v: %w", ErrUnreachable, redactedAddr(cfg.URL), cfg.ConnectTimeout, last)
			}
			return fmt.Errorf("%w: %s: %w (last error: %w)", ErrUnreachable, redactedAddr(cfg.URL), ctx.Err(), last)
		}
		if err := sleep(ctx, wait); err != nil {
			continue // the check above reports it
		}
		wait = min(wait*2, c.maxB)
	}
}

// newClient makes a Client of rdb; cfg has its defaults.
func newClient(rdb redis.UniversalClient, cfg Config, owned bool) *Client {
	c := &Client{rdb: rdb, prefix: cfg.Prefix, minB: cfg.MinBackoff, maxB: cfg.MaxBackoff, owned: owned, log: cfg.Logger}
	if c.log != nil {
		routeGoRedisLogs(c)
	}
	return c
}

// redactedAddr returns a Redis URL's host:port (the first node's), for an
// error message: never the password.
func redactedAddr(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "redis"
	}
	return u.Host
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
	return newClient(rdb, cfg, false), nil
}

// Redis returns the underlying go-redis client.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// Prefix returns the crawl's key prefix.
func (c *Client) Prefix() string { return c.prefix }

// Close closes the connection if Dial made it.
func (c *Client) Close() error {
	if c.log != nil {
		unrouteGoRedisLogs(c)
	}
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
	return c.retryCap(ctx, c.maxB, fn)
}

// retryCap is retry with the wait between attempts capped at maxWait.
func (c *Client) retryCap(ctx context.Context, maxWait time.Duration, fn func(ctx context.Context) error) error {
	if c.log != nil {
		ctx = context.WithValue(ctx, clientKey{}, c)
	}
	wait := min(c.minB, maxWait)
	for {
		began := time.Now()
		err := fn(ctx)
		if err == nil || !Transient(err) {
			if c.down.Load() && answered(err) {
				c.recovered(began)
			}
			return err
		}
		c.failed(err)
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
		wait = min(wait*2, maxWait)
	}
}

// answered reports whether a call that ended with err (nil, or not
// transient) reached Redis: a script error did, a call cut by its context
// or by Close did not.
func answered(err error) bool {
	return err == nil || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, redis.ErrClosed)
}

// failed counts a transient failure and starts an outage if none is
// under way.
func (c *Client) failed(err error) {
	c.failures.Add(1)
	if c.down.Load() {
		return
	}
	c.omu.Lock()
	defer c.omu.Unlock()
	if c.down.Load() {
		return
	}
	c.downAt = time.Now()
	c.down.Store(true)
	if c.log != nil {
		c.log.Warn("redis unreachable: every call retries until it answers", "prefix", c.prefix, "err", err)
	}
}

// recovered ends the outage under way if it began before the successful
// call did: a reply to a call sent before the outage proves nothing.
func (c *Client) recovered(began time.Time) {
	c.omu.Lock()
	defer c.omu.Unlock()
	if !c.down.Load() || began.Before(c.downAt) {
		return
	}
	c.down.Store(false)
	if c.log != nil {
		c.log.Warn("redis reachable again", "prefix", c.prefix, "outage", time.Since(c.downAt).Round(time.Millisecond))
	}
}

// Failures returns how many calls of this client failed transiently
// (and were retried) since it was made: a worker that sees it change
// knows its link to Redis broke meanwhile.
func (c *Client) Failures() uint64 { return c.failures.Load() }

// Down reports whether an outage is under way: the last call to finish
// failed transiently and no call begun since has succeeded.
func (c *Client) Down() bool { return c.down.Load() }
