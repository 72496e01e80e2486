package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// redisConfig is the distributed-mode part of the crawl command line.
type redisConfig struct {
	url, prefix string
	cluster     bool
	lease       time.Duration // 0: redisLease(fetch timeout)
}

func redisFlags(fs *flag.FlagSet, c *redisConfig) {
	fs.StringVar(&c.url, "redis", "", "distributed mode: share the crawl through this Redis, redis://[user:password@]host:port[/db] or rediss:// (TLS); every worker runs the same command line (default: local mode, no Redis)")
	fs.StringVar(&c.prefix, "redis-prefix", redisfrontier.DefaultPrefix, "with --redis: key prefix of the crawl, so that several crawls share one Redis")
	fs.BoolVar(&c.cluster, "redis-cluster", false, "with --redis: Redis Cluster; further seed nodes as addr= query parameters of --redis")
	fs.DurationVar(&c.lease, "redis-lease", 0, "with --redis: how long a worker holds a host per entry; a dead worker's entries go to another worker when it expires. Must exceed --fetch-timeout (default: the larger of 2m and twice --fetch-timeout)")
}

// minRedisLease is the least host lease of a distributed crawl: a worker
// must finish an entry (fetch, archive, Done) within it, or the entry is
// handed to another worker.
const minRedisLease = 2 * time.Minute

// redisLease returns the lease for a fetch timeout: at least minRedisLease
// and twice the fetch timeout, so that a fetch cut by its timeout still has
// time to be archived and completed.
func redisLease(fetchTimeout time.Duration) time.Duration {
	return max(minRedisLease, 2*fetchTimeout)
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
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, host)
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// crawlRedis runs one worker of a distributed crawl: the frontier, the
// seen-set and robots.txt are shared through Redis; the crawl log
// (crawl-<host>-<pid>.log.jsonl) and the WARC files (prefix
// layercrawl-<host>-<pid>) are the worker's own, under --out. There is no
// local state: a worker stopped and restarted rejoins the crawl in Redis,
// and an entry it had out is handed to another worker when its lease
// expires.
func crawlRedis(ctx context.Context, e env, c crawlConfig) (err error) {
	start := time.Now()
	lease := c.redis.lease
	switch {
	case lease == 0:
		lease = redisLease(c.fetchTimeout)
	case lease <= c.fetchTimeout:
		// An entry whose fetch runs to its timeout must still be done
		// before the lease ends, or it is fetched twice.
		return fmt.Errorf("%w: --redis-lease %v must exceed --fetch-timeout %v", errUsage, lease, c.fetchTimeout)
	}
	seeds, err := readSeeds(c.seeds)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	norm, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	urls, err := seedURLs(c.seeds, seeds, norm)
	if err != nil {
		return err
	}
	rc, err := redisfrontier.Dial(ctx, redisfrontier.Config{URL: c.redis.url, Prefix: c.redis.prefix, Cluster: c.redis.cluster})
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	defer rc.Close()
	seen, err := redisfrontier.OpenSeen(ctx, rc, redisfrontier.SeenOptions{
		Filter: mlbf.Options{ExpectedURLs: c.expectedURLs, FalsePositiveRate: c.fpTarget},
		// The answers of a dead worker's batch must outlive its lease.
		ResultTTL: max(time.Hour, 2*lease),
	})
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	front, err := redisfrontier.Open(ctx, rc, redisfrontier.Options{
		Seen:         seen,
		Normalizer:   norm,
		Domain:       urlnorm.RegistrableDomain,
		Scope:        c.scope,
		Allow:        c.allow,
		Deny:         c.deny,
		MaxDepth:     zeroMeansNone(c.maxDepth),
		MaxRedirects: zeroMeansNone(c.maxRedirects),
		Limits:       c.trapLimits(),
		MaxPages:     c.maxPages,
		Delay:        flagDelay(c.delay),
		Lease:        lease,
	})
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	added, err := front.AddSeeds(ctx, urls)
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}

	name := workerName()
	logPath := filepath.Join(c.out, "crawl-"+name+".log.jsonl")
	cr := &crawler{cfg: c, queue: front}
	if err := cr.openOutput(filepath.Base(logPath), "layercrawl-"+name); err != nil {
		return err
	}
	defer func() {
		if cerr := cr.closeOutput(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	cr.robots = fetch.NewRobotsCache(redisfrontier.NewSharedRobots(rc, cr.fetcher, 0), fetch.RobotsCacheOptions{OnFetch: cr.robotsFetched})

	fmt.Fprintf(e.stderr, "crawl: worker %s (lease id %s) on %s prefix %q: %d seeds (%d new), concurrency %d, delay %v, scope %v, lease %v; seen-set %s\n",
		name, seen.Worker(), redactRedisURL(c.redis.url), rc.Prefix(), len(seeds), added, c.concurrency, c.delay, c.scope, lease, seen.Params())

	aux := newAuxTasks()
	if c.progressInterval > 0 {
		p := &redisProgress{w: e.stderr, cr: cr, front: front, last: time.Now()}
		aux.every(c.progressInterval, func() { fmt.Fprintln(p.w, p.line(ctx)) }, nil)
	}
	interrupted, err := cr.runWorkers(ctx, ctx, aux)
	if err != nil {
		return err
	}
	if err := errors.Join(cr.log.Sync(), cr.archive.Sync()); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	// The shared counters are read after the worker's own work is synced;
	// an interrupted worker reads them without its cancelled context.
	st, err := front.Stats(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	fill, err := seen.Fill(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	cr.redisSummary(e.stdout, time.Since(start), st, front.WorkerStats(), fill, logPath, interrupted)
	return nil
}

// redactRedisURL hides the password of a Redis URL for printing.
func redactRedisURL(s string) string {
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

// redisSummary prints the worker's own counts and the crawl's shared ones.
func (cr *crawler) redisSummary(w io.Writer, elapsed time.Duration, s redisfrontier.Stats, a frontier.AdmissionStats, fill []float64, logPath string, interrupted bool) {
	state := "finished: shared frontier empty"
	switch {
	case interrupted:
		state = "interrupted: entries this worker had out go to another worker when their lease expires"
	case cr.cfg.maxPages > 0 && s.Served >= cr.cfg.maxPages:
		state = "finished: --max-pages reached"
	}
	fmt.Fprintf(w, "crawl worker %s\n", state)
	fmt.Fprintf(w, "  pages fetched     %d by this worker in %v (%.1f pages/s); %d by all workers\n",
		cr.fetchedThisRun(), elapsed.Round(time.Millisecond), float64(cr.fetchedThisRun())/elapsed.Seconds(), s.Pages)
	cr.printFetchCounts(w)
	fmt.Fprintf(w, "  shared            %d entries handed out, %d completed, %d errors; %d queued on %d waiting hosts, %d hosts in flight\n",
		s.Served, s.Done, s.Errors, s.Queued, s.Hosts, s.Leased)
	fmt.Fprintf(w, "  discovered        %d new, %d duplicates (all workers); this worker refused %d out of scope, %d filtered by --allow/--deny, %d beyond --max-depth, %d beyond --max-redirects, %d invalid\n",
		s.New, s.Dup, a.OutOfScope, a.Filtered, a.TooDeep, a.TooManyRedirects, a.Invalid)
	printTrapLimits(w, a.Limits, " (this worker)")
	fmt.Fprintf(w, "  recovery          %d entries of expired leases re-queued, %d staged completions finished\n", s.Requeued, s.Reclaimed)
	if len(fill) > 0 {
		fmt.Fprintf(w, "  duplicate filter  integrity layer %.2f%% full (sized for %d URLs at FP %g)\n",
			100*fill[len(fill)-1], cr.cfg.expectedURLs, cr.cfg.fpTarget)
	}
	fmt.Fprintf(w, "  output            %s, %s\n", logPath, filepath.Join(cr.cfg.out, "warc"))
}

// redisProgress prints the progress line of a distributed worker: its own
// fetch rate and the crawl's shared counters.
type redisProgress struct {
	w     io.Writer
	cr    *crawler
	front *redisfrontier.Frontier
	mu    sync.Mutex // protects last and lastN
	last  time.Time
	lastN uint64
}

func (p *redisProgress) line(ctx context.Context) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	n := p.cr.fetchedThisRun()
	rate := float64(n-p.lastN) / now.Sub(p.last).Seconds()
	p.last, p.lastN = now, n
	mine := fmt.Sprintf("worker pages %d (%.1f/s) errors %d", n, rate, p.cr.fetchErrors.Load()+p.cr.httpErrors.Load())
	// The shared counters are best effort: a slow or absent Redis must
	// not hold the progress line.
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := p.front.Stats(ctx)
	if err != nil {
		return mine + " shared: unavailable (" + err.Error() + ")"
	}
	return fmt.Sprintf("%s shared: pages %d queued %d hosts %d in-flight %d", mine, s.Pages, s.Queued, s.Hosts, s.Leased)
}

var _ crawlFrontier = (*redisfrontier.Frontier)(nil)
var _ crawlFrontier = (*frontier.Frontier)(nil)
