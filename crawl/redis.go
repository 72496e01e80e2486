package crawl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// redisMode holds the Redis side of a worker, set up by Run.
type redisMode struct {
	client *redisfrontier.Client
	seen   *redisfrontier.Seen
	front  *redisfrontier.Frontier
	// robotsWaits shares when each site's robots.txt began failing, for
	// the robots.txt prerequisite (set before the robots cache).
	robotsWaits robotsShared

	mu      sync.Mutex // protects shared, fill, growth, exact, workers, err and at, and the setting of front and cont
	shared  redisfrontier.Stats
	fill    []float64
	growth  *redisfrontier.GrowthStats // nil for a fixed filter
	exact   redisfrontier.ExactStats
	workers []redisfrontier.WorkerInfo
	err     error     // why the last read of the shared counters failed
	at      time.Time // when they were last read
	// cont is the Crawler's cont, for Stats, which may run while Run
	// sets it.
	cont *continuous
}

// startRedis connects to Redis and opens the shared seen-set, frontier and
// robots.txt cache.
func (c *Crawler) startRedis(ctx context.Context) error {
	o := c.opts
	r := c.redis
	var err error
	r.client, err = redisfrontier.Dial(ctx, redisfrontier.Config{URL: o.Redis.URL, Prefix: o.Redis.Prefix, Cluster: o.Redis.Cluster,
		ConnectTimeout: max(o.Redis.ConnectTimeout, 0), Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	c.closers = append(c.closers, r.client.Close)
	so := redisfrontier.SeenOptions{
		// The answers of a dead worker's batch must outlive its lease.
		ResultTTL: max(time.Hour, 2*o.Redis.Lease),
		// A new crawl's first worker draws the salt and chooses the
		// mode; the others, and a resumed crawl, take them from Redis.
		Salted:    true,
		Exact:     !o.FilterOnly,
		ExactURLs: o.ExpectedURLs,
	}
	if o.FixedFilter {
		so.Filter = mlbf.Options{ExpectedURLs: o.ExpectedURLs, FalsePositiveRate: o.FalsePositiveRate}
	} else {
		// Generations are keys, added per shard by the script.
		so.Growth = &mlbf.ScalableOptions{ExpectedURLs: o.ExpectedURLs, FalsePositiveRate: o.FalsePositiveRate}
	}
	r.seen, err = redisfrontier.OpenSeen(ctx, r.client, so)
	if errors.Is(err, redisfrontier.ErrIncompatible) {
		return fmt.Errorf("crawl: %w (every worker of a crawl needs the same --expected-urls, --fp-target and --filter-growth)", err)
	}
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if r.seen.Salt() == 0 {
		o.Logger.Warn("the crawl's seen-set in Redis is unsalted (begun by an earlier layercrawl): it resumes unsalted, and the URLs its filter loses are those every unsalted crawl loses")
	}
	switch {
	case r.seen.Exact() && o.FilterOnly:
		o.Logger.Warn("--filter-only ignored: the crawl in Redis began with the exact check, which every worker keeps")
	case !r.seen.Exact() && !o.FilterOnly:
		o.Logger.Warn("the crawl in Redis began filter-only (--filter-only, or an earlier layercrawl): it stays filter-only, and its filter's false positives are lost (the summary estimates how many)")
	}
	front, err := redisfrontier.Open(ctx, r.client, redisfrontier.Options{
		Seen:         r.seen,
		Normalizer:   c.norm,
		Domain:       urlnorm.RegistrableDomain,
		Admission:    o.Admission,
		Politeness:   o.Politeness,
		MaxPages:     o.MaxPages,
		Order:        o.Order,
		ExpectedURLs: o.ExpectedURLs,
		Lease:        o.Redis.Lease,
		Now:          o.Now,
		Started:      c.started,
		Continuous:   o.Continuous != nil,
	})
	if errors.Is(err, redisfrontier.ErrNotContinuous) {
		return fmt.Errorf("crawl: %w (every worker of a continuous crawl needs --continuous)", err)
	}
	if errors.Is(err, redisfrontier.ErrOrderMismatch) {
		return fmt.Errorf("crawl: %w (every worker of a crawl needs the same --order)", err)
	}
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	var cont *continuous
	if o.Continuous != nil {
		if cont, err = c.openRedisContinuous(ctx, front); err != nil {
			return err
		}
	}
	// Stats reads front and cont from other goroutines (a status server,
	// the progress line) while Run starts.
	c.cont = cont
	r.mu.Lock()
	r.front, r.cont = front, cont
	r.mu.Unlock()
	if !o.NoRevisits {
		c.payloads = redisPayloads{client: r.client, max: o.PayloadDigests}
	}
	if o.NearDuplicateThreshold >= 0 {
		if err := c.openNearDups(r.client); err != nil {
			return err
		}
	}
	c.retries = true // retry records live in the hosts' retry sets in Redis
	r.robotsWaits = redisfrontier.NewRobotsWaits(r.client)
	c.mu.Lock()
	c.queue = r.front
	c.robots = fetch.NewRobotsCache(redisfrontier.NewSharedRobots(r.client, c.fetcher, 0), fetch.RobotsCacheOptions{OnFetch: c.robotsFetched, ErrorMaxAge: robotsErrorMaxAge})
	c.mu.Unlock()
	o.Logger.Info("crawl worker joined", "worker", o.Redis.Worker, "lease_id", r.seen.Worker(),
		"redis", RedactURL(o.Redis.URL), "prefix", r.client.Prefix(), "lease", o.Redis.Lease, "seen_set", r.seen.Params())
	return nil
}

// redisStatsInterval is how often a worker refreshes its copy of the
// crawl's shared counters for Stats.
const redisStatsInterval = time.Second

// startRedisStats refreshes the shared counters beside the workers, so
// that Stats does no I/O.
func (c *Crawler) startRedisStats(ctx context.Context, aux *auxTasks) {
	c.refreshRedisStats(ctx)
	aux.every(redisStatsInterval, func() { c.refreshRedisStats(ctx) })
}

// startHeartbeat renews the worker's liveness every Redis.Heartbeat (the
// liveness lasts three beats) and so, with every other worker's beats,
// hands the hosts of dead workers back (redisfrontier.Frontier.Beat). A
// beat that fails is tried again at the next beat: a worker cut off from
// Redis cannot fetch either. Each beat comes a whole interval after the
// last one ended, so that after an outage the beat that may reap first
// (redisfrontier.ReapGrace, one interval, after the first beat back)
// comes then, not up to an interval later.
func (c *Crawler) startHeartbeat(ctx context.Context, aux *auxTasks) {
	hb := c.opts.Redis.Heartbeat
	if hb < 0 {
		return
	}
	r := c.redis
	beat := func() {
		// A beat may take up to the liveness it renews (a Redis slowed
		// by fsyncs, a loaded machine) and still keep the worker alive.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*hb)
		defer cancel()
		n, err := r.front.Beat(ctx, redisfrontier.Heartbeat{Name: c.opts.Redis.Worker, Pages: c.counters.fetched.Load(),
			InFlight: r.front.InFlight()}, 3*hb)
		switch {
		case err != nil && r.client.Down():
			// The outage is logged once, by the client.
			c.opts.Logger.Debug("heartbeat failed", "err", err)
		case err != nil:
			c.opts.Logger.Warn("heartbeat failed", "err", err)
		case n > 0:
			c.opts.Logger.Info("reclaimed the hosts of a worker whose heartbeat stopped", "leases", n)
		}
	}
	beat()
	aux.every(hb, beat)
}

// refreshRedisStats reads the shared counters. It is best effort: a slow
// or absent Redis must not hold the crawl, so it gives up after a second
// and Stats reports the error.
func (c *Crawler) refreshRedisStats(ctx context.Context) {
	r := c.redis
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisStatsInterval)
	defer cancel()
	s, err := r.front.Stats(ctx)
	var fill []float64
	var growth *redisfrontier.GrowthStats
	switch {
	case err != nil:
	case c.opts.FixedFilter:
		fill, err = r.seen.Fill(ctx)
	default:
		var g redisfrontier.GrowthStats
		if g, err = r.seen.Growth(ctx); err == nil && len(g.Fill) > 0 {
			growth, fill = &g, g.Fill[len(g.Fill)-1] // the newest generation's layers
		}
	}
	var workers []redisfrontier.WorkerInfo
	if err == nil {
		workers, err = r.front.Workers(ctx)
	}
	var exact redisfrontier.ExactStats
	if err == nil {
		exact, err = r.seen.ExactStats(ctx)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
	if err == nil {
		r.shared, r.fill, r.growth, r.workers, r.exact, r.at = s, fill, growth, workers, exact, c.opts.Now()
	}
}

// finishRedis makes the worker's log and archive durable and reads the
// shared counters a last time, also when ctx has ended.
func (c *Crawler) finishRedis(ctx context.Context) error {
	if err := errors.Join(c.log.Sync(), c.archive.Sync(), c.syncWorkerState()); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if c.opts.Redis.Heartbeat > 0 {
		// Every entry this worker took is done: it leaves the workers'
		// list instead of lingering there as dead.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisStatsInterval)
		defer cancel()
		if err := c.redis.front.Leave(lctx); err != nil {
			c.opts.Logger.Warn("leaving the workers' list failed", "err", err)
		}
	}
	c.refreshRedisStats(ctx)
	return nil
}

// workerName returns a name unique to this process among the workers of a
// crawl: host name and process id, reduced to characters safe in a file
// name.
func workerName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	host = strings.Map(func(r rune) rune {
		if workerRune(r) {
			return r
		}
		return '_'
	}, host)
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// workerRune reports whether r may appear in a worker name, which goes
// into file names.
func workerRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_'
}

// validWorkerName reports whether s is a worker name safe in a file name.
func validWorkerName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsFunc(s, func(r rune) bool { return !workerRune(r) })
}

// RedactURL hides the password of a URL's userinfo (a Redis URL, a proxy)
// for printing.
func RedactURL(s string) string {
	i := strings.Index(s, "://")
	j := strings.LastIndex(s, "@")
	if i < 0 || j < i {
		return s
	}
	userinfo := s[i+3 : j]
	if k := strings.IndexByte(userinfo, ':'); k >= 0 {
		return s[:i+3] + userinfo[:k] + ":xxxxx" + s[j:]
	}
	return s
}
