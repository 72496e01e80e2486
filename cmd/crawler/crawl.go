package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/storage"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// Defaults of the crawl flags.
const (
	defaultConcurrency  = 16
	defaultDelay        = frontier.DefaultDelay
	defaultMaxDepth     = frontier.DefaultMaxDepth
	defaultMaxRedirects = frontier.DefaultMaxRedirects
	defaultExpectedURLs = 10_000_000
	// defaultFPTarget is the duplicate filter's worst-case false-positive
	// rate at --expected-urls: a new URL whose every segment was seen
	// before is wrongly skipped with this probability (new segments make
	// it far less likely). At the default 10M URLs the filter takes
	// 44.8 MiB (mlbf improved mode, 3 hashes per layer); 1e-4 would take
	// 93.6 MiB.
	defaultFPTarget           = 1e-3
	defaultCheckpointInterval = 30 * time.Second
	defaultProgressInterval   = 2 * time.Second
)

// crawlConfig is the parsed command line of "crawler crawl".
type crawlConfig struct {
	seeds, out, state  string
	concurrency        int
	delay              time.Duration
	maxPages           uint64
	maxDepth           int
	maxRedirects       int
	scope              frontier.Scope
	allow, deny        []*regexp.Regexp
	userAgent          string
	allowPrivate       bool
	expectedURLs       uint64
	fpTarget           float64
	checkpointInterval time.Duration
	progressInterval   time.Duration
	fetchTimeout       time.Duration
	maxOutlinks        int
	maxBodySize        int64
	limits             frontier.Limits // as given on the command line: 0 is off
	followNofollow     bool
	warcMaxSize        int64
	stopGrace          time.Duration
	warcGzipLevel      int
	redis              redisConfig // distributed mode when redis.url is set
	cpuProfile         string      // debugging: write a CPU profile of the crawl here
	syncWrites         bool        // fsync every frontier batch, not only at checkpoints
}

func runCrawl(ctx context.Context, e env, args []string) (err error) {
	fs := newFlagSet(e, "crawl", "--seeds FILE --out DIR [flags]")
	var c crawlConfig
	var scope string
	fs.StringVar(&c.seeds, "seeds", "", "file of seed URLs, one per line (# starts a comment) (required)")
	fs.StringVar(&c.out, "out", "", "output directory: crawl.log.jsonl, warc/ (required)")
	fs.StringVar(&c.state, "state", "", "crawl state directory; rerun with the same one to resume (default OUT/state)")
	fs.IntVar(&c.concurrency, "concurrency", defaultConcurrency, "fetches in flight at once (one per host at a time)")
	fs.DurationVar(&c.delay, "delay", defaultDelay, "least time between two requests to one host; robots.txt Crawl-delay raises it up to 30s")
	fs.Uint64Var(&c.maxPages, "max-pages", 0, "stop after fetching this many pages in all runs of the crawl (0: no limit)")
	fs.IntVar(&c.maxDepth, "max-depth", defaultMaxDepth, "most hops (links and redirects) from a seed")
	fs.IntVar(&c.maxRedirects, "max-redirects", defaultMaxRedirects, "most consecutive redirect hops")
	fs.StringVar(&scope, "scope", "host", "which links to follow: host (seeds' host names), domain (seeds' registrable domains) or any")
	fs.Func("allow", "follow only URLs matching this regular expression (repeatable: any may match)", regexpFlag(&c.allow))
	fs.Func("deny", "never follow URLs matching this regular expression (repeatable)", regexpFlag(&c.deny))
	fs.StringVar(&c.userAgent, "user-agent", fetch.DefaultUserAgent, "User-Agent header; its product token is matched against robots.txt")
	fs.BoolVar(&c.allowPrivate, "allow-private", false, "allow connecting to loopback, private and link-local addresses (local sites, tests)")
	fs.Uint64Var(&c.expectedURLs, "expected-urls", defaultExpectedURLs, "URLs the duplicate filter is sized for (fixed when the crawl starts)")
	fs.Float64Var(&c.fpTarget, "fp-target", defaultFPTarget, "false-positive rate the duplicate filter is sized for at --expected-urls; progress warns above it")
	fs.DurationVar(&c.checkpointInterval, "checkpoint-interval", defaultCheckpointInterval, "how often the duplicate filter is snapshotted")
	fs.DurationVar(&c.progressInterval, "progress-interval", defaultProgressInterval, "how often the progress line is printed (0: never)")
	fs.DurationVar(&c.fetchTimeout, "fetch-timeout", fetch.DefaultFetchTimeout, "time limit of one whole fetch")
	fs.IntVar(&c.limits.MaxURLLength, "max-url-length", frontier.DefaultMaxURLLength, "trap limit: longest URL followed, in bytes (0: no limit)")
	fs.IntVar(&c.limits.MaxPathSegments, "max-path-segments", frontier.DefaultMaxPathSegments, "trap limit: most path segments of a URL followed (0: no limit)")
	fs.IntVar(&c.limits.MaxSegmentRepeats, "max-segment-repeats", frontier.DefaultMaxSegmentRepeats, "trap limit: most times one path segment may occur in a URL followed, as in /a/a/a/ (0: no limit)")
	fs.IntVar(&c.limits.MaxHostURLs, "max-host-urls", frontier.DefaultMaxHostURLs, "per-host budget: most URLs of one host queued per run (0: no limit)")
	fs.IntVar(&c.limits.MaxChildren, "max-children", frontier.DefaultMaxChildren, "trap limit: most distinct children (next path segment, or query of a path) one URL prefix may gain per run; raise it for sites with bigger directories (0: no limit)")
	fs.Int64Var(&c.maxBodySize, "max-body-size", fetch.DefaultMaxBodySize, "most bytes of a response body kept, counted after decompression; a longer body is cut there and logged as truncated")
	fs.IntVar(&c.maxOutlinks, "max-outlinks", fetch.DefaultMaxOutlinks, "most links kept per page, in document order, like Nutch's db.max.outlinks.per.page (negative: no cap)")
	fs.BoolVar(&c.followNofollow, "follow-nofollow", false, `follow links marked rel="nofollow"`)
	fs.IntVar(&c.warcGzipLevel, "warc-gzip-level", gzip.BestSpeed, "gzip level of WARC records, 1 (fastest: records up to 16 KiB get deflate's fixed codes) to 9 (smallest); compression is a large share of the crawler's CPU")
	fs.DurationVar(&c.stopGrace, "stop-grace", 10*time.Second, "on SIGINT/SIGTERM, how long fetches under way may finish before they are cut (and repeated on resume)")
	fs.Int64Var(&c.warcMaxSize, "warc-max-size", 1<<30, "size in bytes beyond which a new WARC file is started")
	fs.BoolVar(&c.syncWrites, "sync-writes", false, "fsync the crawl state after every batch of completed pages, so that after a crash of the machine (not only of the process) at most --concurrency fetches are repeated; slower: each page waits for a disk flush. Without it the state reaches the disk at every checkpoint and at the end")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "debugging: write a CPU profile of the crawl to this file (go tool pprof)")
	redisFlags(fs, &c.redis)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if c.scope, err = frontier.ParseScope(scope); err != nil {
		return fmt.Errorf("%w: --scope: %v", errUsage, err)
	}
	switch {
	case c.seeds == "":
		return fmt.Errorf("%w: --seeds is required", errUsage)
	case c.out == "":
		return fmt.Errorf("%w: --out is required", errUsage)
	case c.concurrency < 1:
		return fmt.Errorf("%w: --concurrency must be at least 1", errUsage)
	case c.delay < 0:
		return fmt.Errorf("%w: --delay must not be negative", errUsage)
	case c.limits.MaxURLLength < 0, c.limits.MaxPathSegments < 0, c.limits.MaxSegmentRepeats < 0, c.limits.MaxHostURLs < 0, c.limits.MaxChildren < 0:
		return fmt.Errorf("%w: --max-url-length, --max-path-segments, --max-segment-repeats, --max-host-urls and --max-children must not be negative", errUsage)
	case c.maxDepth < 0, c.maxRedirects < 0:
		return fmt.Errorf("%w: --max-depth and --max-redirects must not be negative", errUsage)
	case c.expectedURLs == 0:
		return fmt.Errorf("%w: --expected-urls must be positive", errUsage)
	case !(c.fpTarget > 0 && c.fpTarget < 1):
		return fmt.Errorf("%w: --fp-target must be in (0, 1)", errUsage)
	case c.warcGzipLevel < gzip.BestSpeed || c.warcGzipLevel > gzip.BestCompression:
		return fmt.Errorf("%w: --warc-gzip-level must be 1 to 9", errUsage)
	case c.warcMaxSize <= 0:
		return fmt.Errorf("%w: --warc-max-size must be positive", errUsage)
	case c.maxBodySize <= 0:
		return fmt.Errorf("%w: --max-body-size must be positive", errUsage)
	case c.maxOutlinks == 0:
		return fmt.Errorf("%w: --max-outlinks must not be 0 (negative for no cap)", errUsage)
	case c.checkpointInterval <= 0:
		return fmt.Errorf("%w: --checkpoint-interval must be positive", errUsage)
	}
	if c.cpuProfile != "" {
		stop, err := startCPUProfile(c.cpuProfile)
		if err != nil {
			return err
		}
		defer func() {
			if perr := stop(); perr != nil && err == nil {
				err = perr
			}
		}()
	}
	if c.redis.url != "" {
		if c.state != "" {
			return fmt.Errorf("%w: --state has no meaning with --redis (the crawl's state is in Redis)", errUsage)
		}
		return crawlRedis(ctx, e, c)
	}
	if c.state == "" {
		c.state = filepath.Join(c.out, "state")
	}
	return crawl(ctx, e, c)
}

// startCPUProfile starts a CPU profile written to path; stop ends it and
// closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("crawl: cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("crawl: cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("crawl: cpuprofile: %w", err)
		}
		return nil
	}, nil
}

func regexpFlag(dst *[]*regexp.Regexp) func(string) error {
	return func(s string) error {
		re, err := regexp.Compile(s)
		if err != nil {
			return err
		}
		*dst = append(*dst, re)
		return nil
	}
}

// finalCheckpointJournal is the journal length (URLs inserted since the
// last snapshot) beyond which a crawl that ends writes a snapshot.
const finalCheckpointJournal = 100_000

// seenFile is the duplicate filter's snapshot inside the state directory.
const seenFile = "seen.mlbf"

// seenMagic starts a snapshot: the magic, the checkpoint generation (8
// bytes big-endian), then the filter in mlbf's binary format, which carries
// its own checksum.
const seenMagic = "LCSEEN01"

// mlbfSeen adapts mlbf.Concurrent to frontier.Seen.
type mlbfSeen struct{ f *mlbf.Concurrent }

func (s mlbfSeen) TestAndAdd(_ context.Context, seg []string) (bool, error) {
	return s.f.TestAndAdd(seg), nil
}

// frontierStore adapts storage.Store to frontier.Store.
type frontierStore struct{ s *storage.Store }

func (a frontierStore) Get(key []byte) ([]byte, error) {
	v, err := a.s.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", frontier.ErrNotFound, err)
	}
	return v, err
}

func (a frontierStore) Write(fn func(frontier.Writer) error) error {
	return a.s.Write(func(w storage.Writer) error { return fn(w) })
}

func (a frontierStore) Ascend(start, end []byte, fn func(key, value []byte) bool) error {
	return a.s.Ascend(start, end, fn)
}

// Sync makes frontierStore a frontier.Syncer: checkpoints sync the store
// opened with DeferSync.
func (a frontierStore) Sync() error { return a.s.Sync() }

// crawlFrontier is what the crawl loop needs of a frontier: the local
// *frontier.Frontier and the shared *redisfrontier.Frontier both have it.
type crawlFrontier interface {
	AddSeeds(ctx context.Context, seeds []string) (int, error)
	Next(ctx context.Context) (frontier.Entry, error)
	Release(e frontier.Entry, fetched bool, crawlDelay time.Duration) error
	Done(ctx context.Context, e frontier.Entry, out frontier.Outcome) error
}

// crawler holds what the workers of one crawl share.
type crawler struct {
	cfg     crawlConfig
	queue   crawlFrontier      // the frontier the workers drive
	front   *frontier.Frontier // the local frontier; nil with --redis
	fetcher *fetch.Fetcher
	robots  *fetch.RobotsCache
	log     *storage.CrawlLog
	archive *storage.WARCWriter

	fetched, robotsDenied, fetchErrors, httpErrors, archiveErrors atomic.Uint64
	// robotsUnavailable counts URLs refused because their site's
	// robots.txt could not be fetched (RFC 9309: disallow all);
	// outlinksCapped the pages whose links were cut at --max-outlinks,
	// linksDropped the links cut.
	robotsUnavailable, outlinksCapped, linksDropped atomic.Uint64
	// cutLength, cutTime and cutDisconnect count bodies cut at
	// --max-body-size, by --fetch-timeout and by the server going away.
	cutLength, cutTime, cutDisconnect atomic.Uint64

	robotsMu  sync.Mutex        // protects robotsErr
	robotsErr map[string]string // site -> why its robots.txt fetch failed
}

func crawl(ctx context.Context, e env, c crawlConfig) (err error) {
	start := time.Now()
	seeds, err := readSeeds(c.seeds)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	// Without --sync-writes a completed page's batch reaches the operating
	// system before the page counts as done (a kill -9 loses nothing) and
	// the disk at each checkpoint: a disk flush per batch held every
	// worker in Done and stalled the crawl (issue #5, docs/BENCHMARKS.md).
	st, err := storage.Open(c.state, storage.Options{DeferSync: !c.syncWrites})
	if err != nil {
		return fmt.Errorf("crawl: open state: %w", err)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("crawl: close state: %w", cerr)
		}
	}()
	store := frontierStore{st}

	filter, resumed, err := loadSeen(store, c)
	if err != nil {
		return err
	}
	norm, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	front, err := frontier.Open(ctx, frontier.Options{
		Store:        store,
		Seen:         mlbfSeen{filter},
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
	})
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	urls, err := seedURLs(c.seeds, seeds, norm)
	if err != nil {
		return err
	}
	added, err := front.AddSeeds(ctx, urls)
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}

	cr := &crawler{cfg: c, queue: front, front: front}
	if err := cr.openOutput("crawl.log.jsonl", ""); err != nil {
		return err
	}
	defer func() {
		if cerr := cr.closeOutput(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	log, arch := cr.log, cr.archive
	cr.robots = fetch.NewRobotsCache(cr.fetcher, fetch.RobotsCacheOptions{OnFetch: cr.robotsFetched})

	if resumed {
		fmt.Fprintf(e.stderr, "crawl: resuming from %s (%d queued, %d pages fetched before)\n", c.state, front.Stats().Queued, front.Stats().Pages)
	}
	fmt.Fprintf(e.stderr, "crawl: %d seeds (%d new), concurrency %d, delay %v, scope %v; filter %.1f MiB for %d URLs at FP %g\n",
		len(seeds), added, c.concurrency, c.delay, c.scope, float64(filter.TotalBits())/8/(1<<20), c.expectedURLs, c.fpTarget)

	// Workers stop when the frontier is exhausted or ctx ends; the
	// periodic tasks stop when the workers have.
	aux := newAuxTasks()
	// A failed checkpoint stops the workers: the crawl cannot promise a
	// resume any more.
	wctx, stopWorkers := context.WithCancelCause(ctx)
	defer stopWorkers(nil)
	seenPath := filepath.Join(c.state, seenFile)
	saveSeen := func(ctx context.Context) error {
		// Log lines and WARC records of completed entries reach the disk
		// before the snapshot that marks their links seen.
		if err := log.Sync(); err != nil {
			return err
		}
		if err := arch.Sync(); err != nil {
			return err
		}
		return front.Checkpoint(ctx, func(gen uint64) (func(context.Context) error, error) {
			// The snapshot is written while inserts wait: copying the
			// filter to memory first would double its footprint, and
			// the wait comes once per --checkpoint-interval.
			if err := writeSeen(seenPath, gen, filter); err != nil {
				return nil, err
			}
			return func(context.Context) error { return nil }, nil
		})
	}
	aux.Go(func() error {
		// The interval runs from the end of one checkpoint to the start
		// of the next, so a slow disk cannot make checkpoints back to back.
		t := time.NewTimer(c.checkpointInterval)
		defer t.Stop()
		for {
			select {
			case <-aux.stop:
				return nil
			case <-t.C:
				if err := saveSeen(context.Background()); err != nil {
					err = fmt.Errorf("crawl: checkpoint: %w", err)
					stopWorkers(err)
					return err
				}
				t.Reset(c.checkpointInterval)
			}
		}
	})
	if c.progressInterval > 0 {
		p := newProgress(e.stderr, cr, filter, c.fpTarget)
		aux.every(c.progressInterval, p.print, p.finish)
	}
	interrupted, err := cr.runWorkers(ctx, wctx, aux)
	if err != nil {
		return err
	}
	// Save the filter when the journal a resume would replay is long
	// (replay costs about a microsecond per URL; a snapshot writes the
	// whole filter); otherwise just make the log and WARC durable.
	if front.Stats().Journal > finalCheckpointJournal {
		if err := saveSeen(context.Background()); err != nil {
			return fmt.Errorf("crawl: final checkpoint: %w", err)
		}
	} else if err := errors.Join(log.Sync(), arch.Sync()); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	cr.summary(e.stdout, time.Since(start), filter, interrupted)
	return nil
}

// auxTasks are the tasks that run beside a crawl's workers (progress,
// checkpoints, the stop grace) until the workers have stopped.
type auxTasks struct {
	stop chan struct{} // closed when the workers have stopped
	errgroup.Group
}

func newAuxTasks() *auxTasks { return &auxTasks{stop: make(chan struct{})} }

// every calls tick every d until the workers stop, then finish (if not
// nil).
func (a *auxTasks) every(d time.Duration, tick, finish func()) {
	a.Go(func() error {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-a.stop:
				if finish != nil {
					finish()
				}
				return nil
			case <-t.C:
				tick()
			}
		}
	})
}

// runWorkers runs --concurrency workers under wctx until the frontier is
// exhausted or wctx ends, then stops the aux tasks and waits for them.
// Fetches under way when the crawl is stopped may finish for up to
// --stop-grace, so that their entries are completed: a clean stop leaves
// none to repeat on resume, and in a distributed crawl none to expire and
// be fetched again by another worker. interrupted reports whether ctx, the
// crawl's own context, ended; a worker error that is only that ending is
// not an error.
func (cr *crawler) runWorkers(ctx, wctx context.Context, aux *auxTasks) (interrupted bool, err error) {
	g, gctx := errgroup.WithContext(wctx)
	fctx, cancelFetches := context.WithCancel(context.WithoutCancel(gctx))
	defer cancelFetches()
	aux.Go(func() error {
		select {
		case <-aux.stop:
			return nil
		case <-gctx.Done():
		}
		t := time.NewTimer(cr.cfg.stopGrace)
		defer t.Stop()
		select {
		case <-aux.stop:
		case <-t.C:
			cancelFetches()
		}
		return nil
	})
	for range cr.cfg.concurrency {
		g.Go(func() error { return cr.work(gctx, fctx) })
	}
	werr := g.Wait()
	close(aux.stop)
	if aerr := aux.Wait(); aerr != nil {
		return false, aerr
	}
	interrupted = ctx.Err() != nil
	if werr != nil && !(interrupted && errors.Is(werr, ctx.Err())) {
		return interrupted, werr
	}
	return interrupted, nil
}

// flagDelay maps --delay to frontier.Options.Delay, where 0 means the
// default and a negative value none.
func flagDelay(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// seedURLs returns the seeds' URLs, failing on the first that does not
// normalize (with its file and line).
func seedURLs(file string, seeds []seed, norm *urlnorm.Normalizer) ([]string, error) {
	urls := make([]string, len(seeds))
	for i, s := range seeds {
		if _, err := norm.Normalize(s.url); err != nil {
			return nil, fmt.Errorf("crawl: %s:%d: %w", file, s.line, err)
		}
		urls[i] = s.url
	}
	return urls, nil
}

// openOutput makes cr's fetcher and opens its crawl log (logName in
// --out) and WARC writer (file names starting with warcPrefix, the
// default when empty). closeOutput closes what it opened, also when it
// fails.
func (cr *crawler) openOutput(logName, warcPrefix string) error {
	c := cr.cfg
	var err error
	cr.fetcher, err = fetch.New(fetch.Options{
		UserAgent:      c.userAgent,
		AllowPrivate:   c.allowPrivate,
		FetchTimeout:   c.fetchTimeout,
		MaxOutlinks:    c.maxOutlinks,
		MaxBodySize:    c.maxBodySize,
		FollowNofollow: c.followNofollow,
	})
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if cr.log, err = storage.OpenCrawlLog(filepath.Join(c.out, logName)); err != nil {
		cr.closeOutput()
		return fmt.Errorf("crawl: %w", err)
	}
	cr.archive, err = storage.NewWARCWriter(filepath.Join(c.out, "warc"), storage.WARCOptions{
		Prefix:      warcPrefix,
		MaxFileSize: c.warcMaxSize,
		GzipLevel:   c.warcGzipLevel,
		Info:        map[string]string{"http-header-user-agent": c.userAgent, "robots": "obey"},
	})
	if err != nil {
		cr.closeOutput()
		return fmt.Errorf("crawl: %w", err)
	}
	return nil
}

// closeOutput closes the WARC writer, the crawl log and the fetcher that
// openOutput opened, returning the first error.
func (cr *crawler) closeOutput() error {
	var err error
	if cr.archive != nil {
		if cerr := cr.archive.Close(); cerr != nil {
			err = fmt.Errorf("crawl: close warc: %w", cerr)
		}
	}
	if cr.log != nil {
		if cerr := cr.log.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("crawl: close log: %w", cerr)
		}
	}
	if cr.fetcher != nil {
		cr.fetcher.Close()
	}
	return err
}

// trapLimits returns the frontier's Limits for the trap-limit flags, on
// which 0 turns a limit off (in frontier.Limits 0 is the default).
func (c crawlConfig) trapLimits() frontier.Limits {
	return frontier.Limits{
		MaxURLLength:      zeroMeansNone(c.limits.MaxURLLength),
		MaxPathSegments:   zeroMeansNone(c.limits.MaxPathSegments),
		MaxSegmentRepeats: zeroMeansNone(c.limits.MaxSegmentRepeats),
		MaxHostURLs:       zeroMeansNone(c.limits.MaxHostURLs),
		MaxChildren:       zeroMeansNone(c.limits.MaxChildren),
	}
}

// zeroMeansNone maps a limit flag to frontier.Options, where 0 means the
// default and a negative value none.
func zeroMeansNone(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

type seed struct {
	url  string
	line int
}

func readSeeds(path string) ([]seed, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("crawl: seeds: %w", err)
	}
	defer f.Close()
	var seeds []seed
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		seeds = append(seeds, seed{s, line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("crawl: seeds: %s: %w", path, err)
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("crawl: seeds: %s holds no URL", path)
	}
	return seeds, nil
}

// loadSeen returns the duplicate filter: new, or the last snapshot when the
// state records a checkpoint. A missing or stale snapshot is an error: the
// journal it covered is gone.
func loadSeen(store frontier.Store, c crawlConfig) (*mlbf.Concurrent, bool, error) {
	filter, err := mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: c.expectedURLs, FalsePositiveRate: c.fpTarget})
	if err != nil {
		return nil, false, fmt.Errorf("crawl: %w", err)
	}
	gen, err := frontier.CheckpointGeneration(store)
	if err != nil {
		return nil, false, fmt.Errorf("crawl: state %s: %w", c.state, err)
	}
	exists, err := frontier.StateExists(store)
	if err != nil {
		return nil, false, fmt.Errorf("crawl: state %s: %w", c.state, err)
	}
	if !exists {
		return filter, false, nil
	}
	if gen == 0 {
		return filter, true, nil
	}
	path := filepath.Join(c.state, seenFile)
	var fileGen uint64
	err = storage.ReadFileAtomic(path, func(r io.Reader) error {
		var head [len(seenMagic) + 8]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return fmt.Errorf("header: %w", err)
		}
		if string(head[:len(seenMagic)]) != seenMagic {
			return errors.New("not a layercrawl filter snapshot")
		}
		fileGen = binary.BigEndian.Uint64(head[len(seenMagic):])
		_, err := filter.ReadFrom(r)
		return err
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("crawl: state %s is corrupt: checkpoint %d is recorded but %s is missing", c.state, gen, seenFile)
	case err != nil:
		return nil, false, fmt.Errorf("crawl: state %s: %w", c.state, err)
	case fileGen < gen:
		return nil, false, fmt.Errorf("crawl: state %s is corrupt: %s holds checkpoint %d, the store records %d", c.state, seenFile, fileGen, gen)
	}
	return filter, true, nil
}

// writeSeen writes a snapshot: the header, then the filter in mlbf's
// binary format.
func writeSeen(path string, gen uint64, filter *mlbf.Concurrent) error {
	return storage.WriteFileAtomic(path, func(w io.Writer) error {
		head := binary.BigEndian.AppendUint64([]byte(seenMagic), gen)
		if _, err := w.Write(head); err != nil {
			return err
		}
		_, err := filter.WriteTo(w)
		return err
	})
}

// work fetches entries until the frontier is exhausted or ctx ends; a
// fetch under way runs under fctx, which outlives ctx by the stop grace.
// An entry whose fetch fctx interrupted is not reported done, so it stays
// queued for the next run.
func (cr *crawler) work(ctx, fctx context.Context) error {
	for {
		ent, err := cr.queue.Next(ctx)
		switch {
		case errors.Is(err, frontier.ErrExhausted), errors.Is(err, frontier.ErrPageLimit):
			return nil
		case err != nil:
			return err
		}
		out, ok, err := cr.visit(fctx, ent)
		if err != nil {
			return err
		}
		if !ok {
			return fctx.Err()
		}
		if err := cr.queue.Done(fctx, ent, out); err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
	}
}

// visit checks robots.txt, fetches the entry, archives and logs it. ok is
// false when ctx ended before the outcome was known.
func (cr *crawler) visit(ctx context.Context, ent frontier.Entry) (out frontier.Outcome, ok bool, err error) {
	robots, err := cr.robots.Get(ctx, ent.URL)
	if err != nil {
		if ctx.Err() != nil {
			return out, false, nil
		}
		// Only an invalid URL fails here; log it like a failed fetch.
		return frontier.Outcome{Failed: true}, true, cr.logEntry(storage.Entry{
			URL: ent.URL, Error: "invalid-url: " + err.Error(), Depth: ent.Depth, Via: ent.Via, FetchedAt: time.Now(),
		})
	}
	u, perr := url.Parse(ent.URL)
	if perr == nil && !robots.Allowed(cr.cfg.userAgent, u.RequestURI()) {
		reason := "robots-disallowed"
		if robots.DisallowsAll() {
			// Not the site's rules: its robots.txt could not be fetched.
			cr.robotsUnavailable.Add(1)
			reason = "robots-unavailable"
			if site, err := fetch.SiteKey(ent.URL); err == nil {
				cr.robotsMu.Lock()
				if why := cr.robotsErr[site]; why != "" {
					reason += ": robots.txt: " + why
				}
				cr.robotsMu.Unlock()
			}
		} else {
			cr.robotsDenied.Add(1)
		}
		return frontier.Outcome{}, true, cr.logEntry(storage.Entry{
			URL: ent.URL, Error: reason, Depth: ent.Depth, Via: ent.Via, FetchedAt: time.Now(),
		})
	}
	out.CrawlDelay = robots.CrawlDelay(cr.cfg.userAgent)
	res, ferr := cr.fetcher.FetchBody(ctx, ent.URL)
	if ferr != nil && ctx.Err() != nil {
		return out, false, nil
	}
	// The request is over: the host's delay starts now and its next entry
	// may go out while this one is archived and its links are parsed.
	if err := cr.queue.Release(ent, true, out.CrawlDelay); err != nil {
		return out, false, fmt.Errorf("crawl: %w", err)
	}
	// Release woke the worker that takes the host's next entry, and Go
	// queues it to run next on this thread once this goroutine blocks,
	// that is after the archiving below, unless an idle thread is woken to
	// steal it. Yielding lets it send its request now: the median hand-off
	// between two fetches of a host fell from 0.08 to 0.01 ms and the
	// crawl's CPU by 6% (docs/BENCHMARKS.md).
	runtime.Gosched()
	if res != nil {
		cr.fetcher.ParseLinks(res)
	}
	out.Fetched = true
	cr.fetched.Add(1)
	le := storage.Entry{URL: ent.URL, Depth: ent.Depth, Via: ent.Via}
	if ferr != nil {
		cr.fetchErrors.Add(1)
		out.Failed = true
		le.Error = fetch.KindOf(ferr).String() + ": " + ferr.Error()
		le.FetchedAt = time.Now()
	}
	if res != nil {
		le.Status = res.Status
		le.ContentType = res.Header.Get("Content-Type")
		le.Bytes = int64(len(res.Body))
		le.FetchedAt = res.FetchedAt
		le.DurationMS = float64(res.Duration) / float64(time.Millisecond)
		le.Location = res.Location
		le.Truncated = res.Truncated
		if res.RemoteAddr.IsValid() {
			le.IP = res.RemoteAddr.Addr().String()
		}
		ref, err := cr.archive.Write(exchange(res))
		if err != nil {
			return out, false, fmt.Errorf("crawl: warc: %w", err)
		}
		le.WARCFile, le.WARCRecordID = ref.File, ref.ResponseID
		if res.Status >= 400 {
			cr.httpErrors.Add(1)
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
			cr.cutLength.Add(1)
		case fetch.TruncatedTime:
			cr.cutTime.Add(1)
		case fetch.TruncatedDisconnect:
			cr.cutDisconnect.Add(1)
		}
		if res.LinksDropped > 0 {
			cr.outlinksCapped.Add(1)
			cr.linksDropped.Add(uint64(res.LinksDropped))
		}
		out.Links = make([]string, len(res.Links))
		for i, l := range res.Links {
			out.Links[i] = l.Href
		}
	}
	return out, true, cr.logEntry(le)
}

// logEntry writes a log line and hands it to the operating system, so that
// it survives a crash of the process before the entry is marked done.
func (cr *crawler) logEntry(le storage.Entry) error {
	if err := cr.log.Write(le); err != nil {
		return fmt.Errorf("crawl: log: %w", err)
	}
	if err := cr.log.Flush(); err != nil {
		return fmt.Errorf("crawl: log: %w", err)
	}
	return nil
}

// exchange is the WARC view of a fetch.
func exchange(res *fetch.Result) *storage.Exchange {
	ex := &storage.Exchange{
		TargetURI:    res.URL,
		Date:         res.FetchedAt,
		RequestHead:  res.RawRequest,
		ResponseHead: res.RawResponseHead,
		Body:         res.Body,
		Truncated:    res.Truncated,
	}
	if res.RemoteAddr.IsValid() {
		ex.IP = res.RemoteAddr.Addr().String()
	}
	return ex
}

// maxRobotsErrors bounds the robots.txt failures remembered for the log;
// beyond it a refusal is logged without the cause.
const maxRobotsErrors = 10_000

// robotsFetched archives robots.txt exchanges and remembers why a site's
// robots.txt failed, for the log lines of the URLs it then refuses.
// RobotsCache has no way to return an error from here; a failing WARC
// writer fails the next page's write, which stops the crawl, so the error
// is counted and not lost.
func (cr *crawler) robotsFetched(site string, res *fetch.Result, ferr error) {
	cr.robotsMu.Lock()
	if ferr == nil {
		delete(cr.robotsErr, site)
	} else if _, ok := cr.robotsErr[site]; ok || len(cr.robotsErr) < maxRobotsErrors {
		if cr.robotsErr == nil {
			cr.robotsErr = map[string]string{}
		}
		cr.robotsErr[site] = fetch.KindOf(ferr).String() + ": " + ferr.Error()
	}
	cr.robotsMu.Unlock()
	if res == nil {
		return
	}
	if _, err := cr.archive.Write(exchange(res)); err != nil {
		cr.archiveErrors.Add(1)
	}
}

// printFetchCounts prints the summary lines of this process's own fetch
// counts, the same in both kinds of crawl.
func (cr *crawler) printFetchCounts(w io.Writer) {
	fmt.Fprintf(w, "  errors            %d fetch failures, %d HTTP 4xx/5xx; %d URLs disallowed by robots.txt, %d refused as their robots.txt was unreachable\n",
		cr.fetchErrors.Load(), cr.httpErrors.Load(), cr.robotsDenied.Load(), cr.robotsUnavailable.Load())
	fmt.Fprintf(w, "  truncated         %d bodies cut at --max-body-size %d, %d by --fetch-timeout %v, %d by a disconnect\n",
		cr.cutLength.Load(), cr.cfg.maxBodySize, cr.cutTime.Load(), cr.cfg.fetchTimeout, cr.cutDisconnect.Load())
	fmt.Fprintf(w, "  outlinks          %d pages cut at --max-outlinks %d, %d links dropped\n",
		cr.outlinksCapped.Load(), cr.cfg.maxOutlinks, cr.linksDropped.Load())
	if n := cr.archiveErrors.Load(); n > 0 {
		fmt.Fprintf(w, "  WARNING           %d robots.txt exchanges could not be archived\n", n)
	}
}

// printTrapLimits prints the summary line of the trap limits' refusals,
// followed by note.
func printTrapLimits(w io.Writer, l frontier.LimitStats, note string) {
	fmt.Fprintf(w, "  trap limits       %d longer than --max-url-length, %d beyond --max-path-segments, %d beyond --max-segment-repeats, %d over --max-host-urls, %d over --max-children%s\n",
		l.TooLong, l.TooManySegments, l.RepeatedSegment, l.HostBudget, l.TooManyChildren, note)
}

func (cr *crawler) summary(w io.Writer, elapsed time.Duration, filter *mlbf.Concurrent, interrupted bool) {
	s := cr.front.Stats()
	fs := filter.Stats()
	state := "finished: frontier empty"
	switch {
	case interrupted:
		state = "interrupted: state saved, rerun with the same --state to resume"
	case cr.cfg.maxPages > 0 && s.Pages >= cr.cfg.maxPages:
		state = "finished: --max-pages reached"
	}
	fmt.Fprintf(w, "crawl %s\n", state)
	fmt.Fprintf(w, "  pages fetched     %d this run in %v (%.1f pages/s); %d in all runs\n",
		cr.fetchedThisRun(), elapsed.Round(time.Millisecond), float64(cr.fetchedThisRun())/elapsed.Seconds(), s.Pages)
	cr.printFetchCounts(w)
	fmt.Fprintf(w, "  discovered        %d new, %d duplicates, %d out of scope, %d filtered by --allow/--deny, %d beyond --max-depth, %d beyond --max-redirects, %d invalid\n",
		s.New, s.Duplicates, s.OutOfScope, s.Filtered, s.TooDeep, s.TooManyRedirects, s.Invalid)
	printTrapLimits(w, s.Limits, "")
	fmt.Fprintf(w, "  queued            %d on %d hosts\n", s.Queued, s.Hosts)
	fmt.Fprintf(w, "  duplicate filter  %.0f URLs, estimated false-positive rate %.3g (target %g at %d URLs)\n",
		fs.EstimatedURLs, fs.FalsePositiveRate, cr.cfg.fpTarget, cr.cfg.expectedURLs)
	fmt.Fprintf(w, "  output            %s\n", cr.cfg.out)
}

func (cr *crawler) fetchedThisRun() uint64 { return cr.fetched.Load() }

// progress prints the live progress line: one line per interval, rewritten
// in place when stderr is a terminal.
type progress struct {
	w        io.Writer
	tty      bool
	cr       *crawler
	filter   *mlbf.Concurrent
	target   float64
	last     time.Time
	lastN    uint64
	mu       sync.Mutex // protects last and lastN
	wroteTTY bool
}

func newProgress(w io.Writer, cr *crawler, filter *mlbf.Concurrent, target float64) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, cr: cr, filter: filter, target: target, last: time.Now()}
}

func (p *progress) line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	n := p.cr.fetchedThisRun()
	rate := float64(n-p.lastN) / now.Sub(p.last).Seconds()
	p.last, p.lastN = now, n
	s := p.cr.front.Stats()
	fs := p.filter.Stats()
	fill := fs.Layers[len(fs.Layers)-1].FillRatio
	warn := ""
	if fs.FalsePositiveRate > p.target {
		warn = fmt.Sprintf(" WARNING: estimated FP above the target %g; rerun with a larger --expected-urls", p.target)
	}
	return fmt.Sprintf("pages %d (%.1f/s) queued %d hosts %d in-flight %d errors %d filter fill %.2f%% est. FP %.2g%s",
		s.Pages, rate, s.Queued, s.Hosts, s.InFlight, p.cr.fetchErrors.Load()+p.cr.httpErrors.Load(), 100*fill, fs.FalsePositiveRate, warn)
}

func (p *progress) print() {
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K%s", p.line())
		p.wroteTTY = true
		return
	}
	fmt.Fprintln(p.w, p.line())
}

func (p *progress) finish() {
	if p.wroteTTY {
		fmt.Fprintln(p.w)
	}
}
