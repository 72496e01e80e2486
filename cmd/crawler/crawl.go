package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// crawlCommand is the parsed command line of "crawler crawl": the engine's
// options, and what only the command has.
type crawlCommand struct {
	opts       crawl.Options
	redis      crawl.RedisOptions
	seedsFile  string
	progress   time.Duration
	cpuProfile string
}

// crawlFlags defines the flags of "crawler crawl" on fs, writing into c.
// Every flag sets a field of crawl.Options (or of the command), and a
// --config file sets the same flags by name: the two cannot drift apart.
// A limit follows the library's convention: 0 takes the default, a
// negative value turns it off.
func crawlFlags(fs *flag.FlagSet, c *crawlCommand) {
	o := &c.opts
	fs.StringVar(&c.seedsFile, "seeds", "", "file of seed URLs, one per line (# starts a comment), besides the URL arguments")
	fs.StringVar(&o.Dir, "out", "", "output directory: crawl.log.jsonl, warc/, state/ (required)")
	fs.StringVar(&o.StateDir, "state", "", "crawl state directory; rerun with the same one to resume (default OUT/state)")
	fs.IntVar(&o.Concurrency, "concurrency", crawl.DefaultConcurrency, "fetches in flight at once (one per host at a time)")
	durationVar(fs, &o.Politeness.Delay, "delay", frontier.DefaultDelay, "least time between two requests to one host; robots.txt Crawl-delay raises it up to --max-crawl-delay (-1: none)")
	durationVar(fs, &o.Politeness.MaxCrawlDelay, "max-crawl-delay", frontier.DefaultMaxCrawlDelay, "cap on a robots.txt Crawl-delay (-1: ignore Crawl-delay)")
	fs.Int64Var(&o.MaxPages, "max-pages", 0, "stop after fetching this many pages in all runs of the crawl (0 or -1: no limit)")
	fs.IntVar(&o.Admission.MaxDepth, "max-depth", frontier.DefaultMaxDepth, "most hops (links and redirects) from a seed (-1: no limit; --scope seeds fetches only the seeds)")
	fs.IntVar(&o.Admission.MaxRedirects, "max-redirects", frontier.DefaultMaxRedirects, "most consecutive redirect hops (-1: no limit)")
	fs.Func("scope", "which links to follow: host (seeds' host names; default), domain (seeds' registrable domains), any, or seeds (none)", func(s string) (err error) {
		o.Admission.Scope, err = frontier.ParseScope(s)
		return err
	})
	fs.Var(&regexpList{dst: &o.Admission.Allow}, "allow", "follow only URLs matching this regular expression (repeatable: any may match)")
	fs.Var(&regexpList{dst: &o.Admission.Deny}, "deny", "never follow URLs matching this regular expression (repeatable)")
	l := &o.Admission.Limits
	fs.IntVar(&l.MaxURLLength, "max-url-length", frontier.DefaultMaxURLLength, "trap limit: longest URL followed, in bytes (-1: no limit)")
	fs.IntVar(&l.MaxPathSegments, "max-path-segments", frontier.DefaultMaxPathSegments, "trap limit: most path segments of a URL followed (-1: no limit)")
	fs.IntVar(&l.MaxSegmentRepeats, "max-segment-repeats", frontier.DefaultMaxSegmentRepeats, "trap limit: most times one path segment may occur in a URL followed, as in /a/a/a/ (-1: no limit)")
	fs.IntVar(&l.MaxHostURLs, "max-host-urls", frontier.DefaultMaxHostURLs, "per-host budget: most URLs of one host queued per run (-1: no limit)")
	fs.IntVar(&l.MaxChildren, "max-children", frontier.DefaultMaxChildren, "trap limit: most distinct children (next path segment, or query of a path) one URL prefix may gain per run; raise it for sites with bigger directories (-1: no limit)")
	f := &o.Fetch
	fs.StringVar(&f.UserAgent, "user-agent", fetch.DefaultUserAgent, "User-Agent header; its product token is matched against robots.txt")
	fs.BoolVar(&f.AllowPrivate, "allow-private", false, "allow connecting to loopback, private and link-local addresses (local sites, tests)")
	durationVar(fs, &f.FetchTimeout, "fetch-timeout", fetch.DefaultFetchTimeout, "time limit of one whole fetch")
	fs.Int64Var(&f.MaxBodySize, "max-body-size", fetch.DefaultMaxBodySize, "most bytes of a response body kept, counted after decompression; a longer body is cut there and logged as truncated")
	fs.IntVar(&f.MaxOutlinks, "max-outlinks", fetch.DefaultMaxOutlinks, "most links kept per page, in document order, like Nutch's db.max.outlinks.per.page (-1: no limit)")
	fs.BoolVar(&f.FollowNofollow, "follow-nofollow", false, `follow links marked rel="nofollow"`)
	fs.Uint64Var(&o.ExpectedURLs, "expected-urls", crawl.DefaultExpectedURLs, "URLs the duplicate filter is sized for (fixed when the crawl starts)")
	fs.Float64Var(&o.FalsePositiveRate, "fp-target", crawl.DefaultFalsePositiveRate, "false-positive rate the duplicate filter is sized for at --expected-urls; progress warns above it")
	fs.BoolVar(&o.ExactDedup, "exact-dedup", false, "check every \"maybe seen\" answer of the duplicate filter against 64-bit fingerprints of the queued URLs kept in the crawl state, so that a false positive never drops a URL (local mode; fixed when the crawl starts; costs a disk lookup per duplicate link)")
	durationVar(fs, &o.CheckpointInterval, "checkpoint-interval", crawl.DefaultCheckpointInterval, "how often the duplicate filter is snapshotted")
	fs.BoolVar(&o.SyncWrites, "sync-writes", false, "fsync the crawl state after every batch of completed pages, so that after a crash of the machine (not only of the process) at most --concurrency fetches are repeated; slower: each page waits for a disk flush. Without it the state reaches the disk at every checkpoint and at the end")
	durationVar(fs, &o.StopGrace, "stop-grace", crawl.DefaultStopGrace, "on SIGINT/SIGTERM, how long fetches under way may finish before they are cut (and repeated on resume) (-1: none)")
	fs.Int64Var(&o.WARC.MaxFileSize, "warc-max-size", crawl.DefaultWARCMaxSize, "size in bytes beyond which a new WARC file is started")
	fs.IntVar(&o.WARC.GzipLevel, "warc-gzip-level", 1, "gzip level of WARC records, 1 (fastest: records up to 16 KiB get deflate's fixed codes) to 9 (smallest); compression is a large share of the crawler's CPU")
	durationVar(fs, &c.progress, "progress-interval", 2*time.Second, "how often the progress line is printed (-1: never)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "debugging: write a CPU profile of the crawl to this file (go tool pprof)")
	fs.StringVar(&c.redis.URL, "redis", "", "distributed mode: share the crawl through this Redis, redis://[user:password@]host:port[/db] or rediss:// (TLS); every worker runs the same command line (default: local mode, no Redis)")
	fs.StringVar(&c.redis.Prefix, "redis-prefix", redisfrontier.DefaultPrefix, "with --redis: key prefix of the crawl, so that several crawls share one Redis")
	fs.BoolVar(&c.redis.Cluster, "redis-cluster", false, "with --redis: Redis Cluster; further seed nodes as addr= query parameters of --redis")
	durationVar(fs, &c.redis.Lease, "redis-lease", 0, "with --redis: how long a worker holds a host per entry; a dead worker's entries go to another worker when it expires. Must exceed --fetch-timeout (default: the larger of 2m and twice --fetch-timeout)")
}

func runCrawl(ctx context.Context, e env, args []string) (err error) {
	fs := newFlagSet(e, "crawl", "[flags] [URL...]")
	var c crawlCommand
	crawlFlags(fs, &c)
	fs.String("config", "", "TOML file of flag values (keys are flag names; urls = [...] for seeds); flags given here override it")
	urls, err := parseCrawlArgs(fs, args)
	if err != nil {
		return err
	}
	if c.seedsFile != "" {
		fileSeeds, err := readSeeds(c.seedsFile, c.opts.Normalize)
		if err != nil {
			return err
		}
		urls = append(fileSeeds, urls...)
	}
	o := &c.opts
	o.Seeds = urls
	if c.redis.URL != "" {
		if o.StateDir != "" {
			return fmt.Errorf("%w: --state has no meaning with --redis (the crawl's state is in Redis)", errUsage)
		}
		o.Redis = &c.redis
	}
	if o.Dir == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	o.Logger = newLogger(e.stderr)
	if c.cpuProfile != "" {
		stop, err := startCPUProfile(c.cpuProfile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	cr, err := crawl.New(*o)
	if errors.Is(err, crawl.ErrInvalidOptions) {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cr.Close()) }()
	if len(urls) == 0 && !cr.Resumed() && o.Redis == nil {
		return fmt.Errorf("%w: no seeds: give URLs as arguments, or --seeds FILE", errUsage)
	}
	p := newProgress(e.stderr, cr)
	var wg sync.WaitGroup
	pctx, stopProgress := context.WithCancel(ctx)
	if c.progress > 0 {
		wg.Go(func() { p.run(pctx, c.progress) })
	}
	err = cr.Run(ctx)
	stopProgress()
	wg.Wait()
	interrupted := err != nil && ctx.Err() != nil && errors.Is(err, context.Cause(ctx))
	if err != nil && !interrupted {
		return err
	}
	printSummary(e.stdout, cr, interrupted)
	return nil
}

// parseCrawlArgs applies the --config file, if any, then the command line
// (which overrides it), and returns the seed URLs: the file's urls, or the
// arguments when there are any.
func parseCrawlArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var urls []string
	if path := findConfigFlag(args); path != "" {
		var err error
		if urls, err = loadConfig(fs, path); err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	resetLists(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		urls = fs.Args()
	}
	return urls, nil
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

// readSeeds reads a seed file, failing on the first line that does not
// normalize, with its file and line.
func readSeeds(path string, nopts urlnorm.Options) ([]string, error) {
	norm, err := urlnorm.New(nopts)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("crawl: seeds: %w", err)
	}
	defer f.Close()
	var seeds []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if _, err := norm.Normalize(s); err != nil {
			return nil, fmt.Errorf("crawl: %s:%d: %w", path, line, err)
		}
		seeds = append(seeds, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("crawl: seeds: %s: %w", path, err)
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("crawl: seeds: %s holds no URL", path)
	}
	return seeds, nil
}

// printSummary prints the end-of-run report.
func printSummary(w io.Writer, cr *crawl.Crawler, interrupted bool) {
	s := cr.Stats()
	o := cr.Options()
	elapsed := time.Since(s.Started)
	redis := o.Redis != nil
	state := "finished: frontier empty"
	switch {
	case interrupted && redis:
		state = "interrupted: entries this worker had out go to another worker when their lease expires"
	case interrupted:
		state = "interrupted: state saved, rerun with the same --state to resume"
	case o.MaxPages > 0 && s.Pages >= uint64(o.MaxPages):
		state = "finished: --max-pages reached"
	case redis:
		state = "finished: shared frontier empty"
	}
	who := "this run"
	if redis {
		who = "by this worker"
		state = "worker " + state
	}
	f := s.Fetch
	fmt.Fprintf(w, "crawl %s\n", state)
	fmt.Fprintf(w, "  pages fetched     %d %s in %v (%.1f pages/s); %d in all\n",
		f.Fetched, who, elapsed.Round(time.Millisecond), float64(f.Fetched)/elapsed.Seconds(), s.Pages)
	fmt.Fprintf(w, "  errors            %d fetch failures, %d HTTP 4xx/5xx; %d URLs disallowed by robots.txt, %d refused as their robots.txt was unreachable\n",
		f.FetchErrors, f.HTTPErrors, f.RobotsDisallowed, f.RobotsUnavailable)
	fmt.Fprintf(w, "  truncated         %d bodies cut at --max-body-size %d, %d by --fetch-timeout %v, %d by a disconnect\n",
		f.TruncatedLength, o.Fetch.MaxBodySize, f.TruncatedTime, o.Fetch.FetchTimeout, f.TruncatedLost)
	fmt.Fprintf(w, "  outlinks          %d pages cut at --max-outlinks %d, %d links dropped\n", f.OutlinksCapped, o.Fetch.MaxOutlinks, f.LinksDropped)
	a := s.Admission
	fmt.Fprintf(w, "  discovered        %d new, %d duplicates (%d known from the link cache); %d out of scope, %d filtered by --allow/--deny, %d beyond --max-depth, %d beyond --max-redirects, %d invalid\n",
		s.New, s.Duplicates, s.CachedLinks, a.OutOfScope, a.Filtered, a.TooDeep, a.TooManyRedirects, a.Invalid)
	l := a.Limits
	fmt.Fprintf(w, "  trap limits       %d longer than --max-url-length, %d beyond --max-path-segments, %d beyond --max-segment-repeats, %d over --max-host-urls, %d over --max-children\n",
		l.TooLong, l.TooManySegments, l.RepeatedSegment, l.HostBudget, l.TooManyChildren)
	fmt.Fprintf(w, "  queued            %d on %d hosts\n", s.Queued, s.Hosts)
	if r := s.Redis; r != nil {
		fmt.Fprintf(w, "  shared            %d entries handed out, %d completed; %d hosts in flight; %d entries of expired leases re-queued, %d staged completions finished\n",
			r.Served, r.Done, r.Leased, r.Requeued, r.Reclaimed)
		fmt.Fprintf(w, "  duplicate filter  integrity layer %.2f%% full (sized for %d URLs at FP %g)\n", 100*s.Filter.Fill, o.ExpectedURLs, o.FalsePositiveRate)
	} else if s.Filter.ExpectedURLs > 0 {
		fmt.Fprintf(w, "  duplicate filter  %.0f URLs, estimated false-positive rate %.3g (target %g at %d URLs)\n",
			s.Filter.EstimatedURLs, s.Filter.FalsePositiveRate, o.FalsePositiveRate, o.ExpectedURLs)
	}
	if o.ExactDedup {
		fmt.Fprintf(w, "  exact dedup       %d filter false positives caught and queued, of %d \"maybe seen\" answers checked on disk\n", s.FalsePositives, s.ExactChecks)
	}
	fmt.Fprintf(w, "  output            %s\n", o.Dir)
}

// progress prints the live progress line: one line per interval, rewritten
// in place when stderr is a terminal.
type progress struct {
	w     io.Writer
	tty   bool
	cr    *crawl.Crawler
	last  time.Time
	lastN uint64
}

func newProgress(w io.Writer, cr *crawl.Crawler) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, cr: cr, last: time.Now()}
}

func (p *progress) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if p.tty {
				fmt.Fprintln(p.w)
			}
			return
		case <-t.C:
			if p.tty {
				fmt.Fprintf(p.w, "\r\x1b[K%s", p.line())
			} else {
				fmt.Fprintln(p.w, p.line())
			}
		}
	}
}

func (p *progress) line() string {
	now := time.Now()
	s := p.cr.Stats()
	n := s.Fetch.Fetched
	rate := float64(n-p.lastN) / now.Sub(p.last).Seconds()
	p.last, p.lastN = now, n
	errs := s.Fetch.FetchErrors + s.Fetch.HTTPErrors
	if r := s.Redis; r != nil {
		mine := fmt.Sprintf("worker pages %d (%.1f/s) errors %d", n, rate, errs)
		if r.Err != nil {
			return mine + " shared: unavailable (" + r.Err.Error() + ")"
		}
		return fmt.Sprintf("%s shared: pages %d queued %d hosts %d in-flight %d", mine, s.Pages, s.Queued, s.Hosts, s.InFlight)
	}
	line := fmt.Sprintf("pages %d (%.1f/s) queued %d hosts %d in-flight %d errors %d", s.Pages, rate, s.Queued, s.Hosts, s.InFlight, errs)
	if fs := s.Filter; fs.ExpectedURLs > 0 {
		line += fmt.Sprintf(" filter fill %.2f%% est. FP %.2g", 100*fs.Fill, fs.FalsePositiveRate)
		if fs.FalsePositiveRate > fs.Target {
			line += fmt.Sprintf(" WARNING: estimated FP above the target %g; rerun with a larger --expected-urls", fs.Target)
		}
	}
	return line
}
