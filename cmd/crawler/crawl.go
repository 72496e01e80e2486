package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/storage"
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
	cpus       int
	monitor    monitorFlags
	// proxy, caFile and insecure are turned into fetch options by
	// applyNetFlags once the flags are parsed: a proxy URL is kept as a
	// string until then, so that a parse error never echoes its password.
	proxy    string
	caFile   string
	insecure bool
	// exactDedup is the deprecated --exact-dedup: the exact check is the
	// default, so the flag only conflicts with --filter-only.
	exactDedup bool
	continuous continuousFlags
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
	o.Politeness.Delay = frontier.DefaultDelay
	// frontier.Politeness.Delay 0 is the default; a user who writes 0 means none.
	fs.Var(durationFlag{p: &o.Politeness.Delay, zeroMeans: -1}, "delay", "least time between two requests to one host; robots.txt Crawl-delay raises it up to --max-crawl-delay (0 or -1: none)")
	durationVar(fs, &o.Politeness.MaxCrawlDelay, "max-crawl-delay", frontier.DefaultMaxCrawlDelay, "cap on a robots.txt Crawl-delay (-1: ignore Crawl-delay)")
	fs.Float64Var(&o.Politeness.DelayFactor, "delay-factor", frontier.DefaultDelayFactor, "adaptive politeness: a host waits at least this many times its last response time, up to --max-delay; off with --delay -1; shared by the workers in Redis mode (-1: off)")
	durationVar(fs, &o.Politeness.MaxDelay, "max-delay", frontier.DefaultMaxDelay, "cap on the adaptive delay: --delay-factor's, and the doubling of a host's delay after each 429 or 503 (-1: adaptive politeness off)")
	fs.Int64Var(&o.MaxPages, "max-pages", 0, "stop after fetching this many pages in all runs of the crawl (0 or -1: no limit)")
	fs.Func("order", "crawl order: fifo (default: each host's URLs in discovery order, hosts in turn, close to breadth-first) or inlinks (the most linked-to URLs first, within each host and among ready hosts, by in-link counts from distinct fetched pages in a count-min sketch sized from --expected-urls, or from --max-pages × 100 when less, and kept in checkpoints, or in Redis shared by the workers; seeds first; politeness unchanged; in Redis mode every worker of a crawl needs the same order)", func(s string) (err error) {
		o.Order, err = frontier.ParseOrder(s)
		return err
	})
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
	// The duplicate filter holds normalized URLs: a resumed crawl must
	// normalize as the first run did.
	normalizeFlags(fs, &o.Normalize, "; keep it the same when resuming")
	f := &o.Fetch
	fs.StringVar(&f.UserAgent, "user-agent", fetch.DefaultUserAgent, "User-Agent header; its product token is matched against robots.txt")
	fs.BoolVar(&f.AllowPrivate, "allow-private", false, "allow connecting to loopback, private and link-local addresses (local sites, tests)")
	fs.StringVar(&c.proxy, "proxy", "", "send every request (pages, robots.txt, sitemaps) through this HTTP proxy, http://[user:password@]host:port: http:// URLs in absolute form, https:// ones through CONNECT; the password is never shown. Targets are still checked against the address policy, as the crawler resolves them")
	fs.StringVar(&c.caFile, "ca-file", "", "PEM file of CA certificates trusted for https:// besides the system's (a private CA); a file without a certificate is an error at start")
	fs.BoolVar(&c.insecure, "insecure-skip-verify", false, "do not verify https:// certificates at all (a test site only: anyone on the path can pose as the server); logged once at start")
	durationVar(fs, &f.FetchTimeout, "fetch-timeout", fetch.DefaultFetchTimeout, "time limit of one whole fetch")
	fs.Int64Var(&f.MaxBodySize, "max-body-size", fetch.DefaultMaxBodySize, "most bytes of a response body kept, counted after decompression; a longer body is cut there and logged as truncated")
	fs.IntVar(&f.MaxOutlinks, "max-outlinks", fetch.DefaultMaxOutlinks, "most links kept per page, in document order, like Nutch's db.max.outlinks.per.page (-1: no limit)")
	fs.BoolVar(&f.FollowNofollow, "follow-nofollow", false, `follow links marked rel="nofollow"`)
	fs.BoolVar(&f.NoEmbeds, "no-embeds", false, "do not fetch page requisites (images, scripts, stylesheets, media, the URLs of CSS); by default they are fetched, from any host up to --max-embed-hops outside the scope")
	fs.IntVar(&o.Admission.MaxEmbedHops, "max-embed-hops", frontier.DefaultMaxEmbedHops, "most embed hops (a requisite's requisites, as a stylesheet's font) a requisite may lie outside --scope; requisites are exempt from --max-depth (-1: no limit)")
	fs.BoolVar(&o.NoSitemaps, "no-sitemaps", false, "do not read the sitemaps named by robots.txt Sitemap lines (by default they are fetched, with their index children, and the pages they list followed)")
	fs.IntVar(&o.Sitemap.MaxURLs, "sitemap-max-urls", fetch.DefaultSitemapMaxURLs, "most URLs read from one sitemap file; the rest are cut and counted (-1: no limit)")
	fs.Int64Var(&o.Sitemap.MaxBytes, "sitemap-max-bytes", fetch.DefaultSitemapMaxBytes, "most bytes of one sitemap file, counted after decompression; a longer one is cut there and counted (too large, or a gzip bomb)")
	r := &o.Retry
	fs.IntVar(&r.MaxRetries, "max-retries", crawl.DefaultMaxRetries, "times a URL is fetched again after a transient failure (refused or reset connection, timeout, truncated body, temporary DNS failure, HTTP 408, 425, 429, 500, 502, 503, 504), in local and Redis mode (-1: never)")
	durationVar(fs, &r.Backoff, "retry-backoff", crawl.DefaultRetryBackoff, "wait before the first retry, doubled for each further one, with jitter (-1: only the host's delay)")
	durationVar(fs, &r.MaxBackoff, "max-retry-backoff", crawl.DefaultMaxBackoff, "cap on the wait before a retry (-1: no cap)")
	durationVar(fs, &r.MaxRetryAfter, "max-retry-after", crawl.DefaultMaxRetryAfter, "cap on the wait a response's Retry-After asks for (-1: no cap)")
	durationVar(fs, &o.RobotsWait, "robots-wait", crawl.DefaultRobotsWait, "how long a site's URLs wait for its robots.txt while it answers 5xx or 429 or does not answer (the site is taken as fully disallowed meanwhile, RFC 9309; robots.txt is fetched again after --retry-backoff, doubling, or its Retry-After), without spending their own retries; then they are logged as robots-unavailable. In Redis mode the host waits for every worker, counted from the first failure any worker saw (-1: no wait)")
	fs.BoolVar(&o.RetryFailed, "retry-failed", false, "on resume, queue again every URL whose last attempt failed (fetch errors, HTTP 4xx/5xx, robots-unavailable, permanent failures); seeds given again are queued again when they failed, with or without it (in Redis mode the failure records are shared: each failed URL is queued once, whichever workers pass it)")
	fs.Uint64Var(&o.ExpectedURLs, "expected-urls", crawl.DefaultExpectedURLs, "URLs the duplicate filter is first sized for (fixed when the crawl starts): with --fp-target it sets the filter's memory, 17.5 bits per URL at 0.1% (22 MB per 10M URLs; in Redis mode 21.7, for about half the probes per URL: docs/DISTRIBUTED.md); past it the filter adds a generation twice as large, so its memory follows the URLs (with --filter-growth=false the false-positive rate climbs instead)")
	fs.Float64Var(&o.FalsePositiveRate, "fp-target", crawl.DefaultFalsePositiveRate, "false-positive rate the duplicate filter keeps: the share of new URLs taken for seen and skipped. A growing filter keeps its compound rate within it however many URLs arrive (its first generation gets half of it, the next a quarter, ...); a fixed one (--filter-growth=false) meets it at --expected-urls. It also sets the hashes per layer; progress warns above it")
	negatedVar(fs, &o.FixedFilter, "filter-growth", "let the duplicate filter grow (a scalable Bloom filter, Almeida et al. 2007): each time its newest generation holds the URLs it was sized for, add one twice as large at half the rate. =false keeps one filter sized for --expected-urls: 11% less memory at 0.1% (15.7 bits per URL), but past --expected-urls new URLs are increasingly dropped as false positives. Fixed when the crawl starts")
	fs.BoolVar(&o.FilterOnly, "filter-only", false, "let the duplicate filter decide alone: a new URL it takes for seen (a false positive, at most about --fp-target of them) is dropped, and the summary estimates how many. By default every \"maybe seen\" answer the link cache does not confirm is checked against 64-bit fingerprints of the queued URLs (in memory up to --exact-memory, and in the crawl state), so that no page is lost. Fixed when the crawl starts: a crawl resumes in the mode it began in, except that --filter-only ends the check for good; a state begun filter-only (every state from before the check was the default) resumes filter-only. In Redis mode the fingerprints are in Redis, checked in the seen-set's script, and the first worker of a crawl fixes the mode for all")
	fs.BoolVar(&c.exactDedup, "exact-dedup", false, "deprecated, no effect: the exact duplicate check is the default (see --filter-only)")
	fs.Int64Var(&o.ExactMemory, "exact-memory", 0, "bytes of memory for the fingerprints of the exact duplicate check (10 to 20 bytes per URL); past it the checks memory cannot answer read the crawl state from disk (default: 16 bytes per --expected-urls, at least 64 MiB)")
	durationVar(fs, &o.CheckpointInterval, "checkpoint-interval", crawl.DefaultCheckpointInterval, "how often the duplicate filter is snapshotted")
	fs.BoolVar(&o.SyncWrites, "sync-writes", false, "fsync the crawl state after every batch of completed pages, so that after a crash of the machine (not only of the process) at most --concurrency fetches are repeated; slower: each page waits for a disk flush. Without it the state reaches the disk at every checkpoint and at the end")
	durationVar(fs, &o.StopGrace, "stop-grace", crawl.DefaultStopGrace, "on SIGINT/SIGTERM, how long fetches under way may finish before they are cut (and repeated on resume) (-1: none)")
	fs.Int64Var(&o.WARC.MaxFileSize, "warc-max-size", crawl.DefaultWARCMaxSize, "size in bytes beyond which a new WARC file is started")
	fs.BoolVar(&o.NoRevisits, "no-revisits", false, "archive every response in full: by default a payload archived before (same SHA-1) is written as a WARC revisit record and logged with duplicate_of")
	fs.Int64Var(&o.RevisitMinSize, "revisit-min-size", crawl.DefaultRevisitMinSize, "smallest payload in bytes written as a revisit record (-1: no minimum)")
	fs.Int64Var(&o.PayloadDigests, "payload-digests", crawl.DefaultPayloadDigests, "payload digests remembered for revisit records, in the state (or Redis); older payloads are archived again (-1: no limit)")
	fs.Float64Var(&o.NearDuplicateThreshold, "near-duplicate-threshold", crawl.DefaultNearDuplicateThreshold, "estimated resemblance (Jaccard of 4-word shingles) at which an HTML page is logged as near_duplicate_of an earlier page (-1: no check, which saves about a tenth of the crawl's CPU)")
	fs.BoolVar(&o.SkipNearDuplicateLinks, "skip-near-duplicate-links", false, "do not follow the links of a page that nearly duplicates an earlier page of its host (a content-based trap cut)")
	fs.Int64Var(&o.NearDuplicatePages, "near-duplicate-pages", crawl.DefaultNearDuplicatePages, "most pages in the near-duplicate index, about 280 bytes each; later pages are checked but not added (-1: no limit)")
	fs.IntVar(&o.WARC.GzipLevel, "warc-gzip-level", 1, "gzip level of WARC records, 1 (fastest: records up to 6 KiB get deflate's fixed codes) to 9 (smallest); compression is a large share of the crawler's CPU")
	durationVar(fs, &c.progress, "progress-interval", 2*time.Second, "how often the progress line is printed (-1: never)")
	fs.IntVar(&c.cpus, "cpus", 0, cpusUsage)
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "debugging: write a CPU profile of the crawl to this file (go tool pprof)")
	fs.StringVar(&c.redis.URL, "redis", "", "distributed mode: share the crawl through this Redis, redis://[user:password@]host:port[/db] or rediss:// (TLS); every worker runs the same command line (default: local mode, no Redis)")
	fs.StringVar(&c.redis.Prefix, "redis-prefix", redisfrontier.DefaultPrefix, "with --redis: key prefix of the crawl, so that several crawls share one Redis")
	fs.BoolVar(&c.redis.Cluster, "redis-cluster", false, "with --redis: Redis Cluster; further seed nodes as addr= query parameters of --redis")
	c.monitor.define(fs)
	c.continuous.define(fs)
	// Recrawls: the capture history of earlier crawls.
	fs.Var(&stringList{dst: &o.Previous}, "previous", "output directory (--out) of an earlier crawl of the same sites (repeatable; give every directory of a Redis crawl's workers): its URLs are checked again with conditional requests (If-None-Match, If-Modified-Since) and what did not change is archived as WARC revisit records of its responses (a 304: profile server-not-modified; the same payload: identical-payload-digest); the capture history is read from DIR/state (a Redis worker's: DIR/state-WORKER), or rebuilt from DIR/warc and the crawl logs when a state has none. Every DIR is checked before anything is written to --out. With --redis give every worker the same DIRs: each copies the history into OUT/state-WORKER, and the workers queue each earlier URL once")
	fs.Func("previous-scope", "with --previous: which of the earlier crawls' URLs are queued: all (every URL they fetched, at its depth; default) or seeds (their seeds; the others when links lead to them)", func(s string) error {
		if s != crawl.PreviousScopeAll && s != crawl.PreviousScopeSeeds {
			return fmt.Errorf("%q is not all or seeds", s)
		}
		o.PreviousScope = s
		return nil
	})
	durationVar(fs, &c.redis.Lease, "redis-lease", 0, "with --redis: how long a worker holds a host per entry; a dead worker's entries go to another worker when it expires. Must exceed --fetch-timeout (default: the larger of 2m and twice --fetch-timeout)")
	durationVar(fs, &c.redis.ConnectTimeout, "redis-connect-timeout", crawl.DefaultRedisConnectTimeout, "with --redis: give up (exit 1, naming the address and the last error) when Redis does not answer within this time at the start; once connected, a worker rides out outages of any length (-1: wait forever)")
	durationVar(fs, &c.redis.Heartbeat, "redis-heartbeat", 0, "with --redis: how often a worker renews its liveness, which lasts 3 beats; a worker whose liveness expired (killed, stopped) has its hosts taken back by the others at their next beat, however long --redis-lease is, or, after a Redis outage, one beat after they are connected again; -1 for no heartbeat (default 2s)")
}

// crawlExitStatus documents the exit status of "crawler crawl" in its -h.
const crawlExitStatus = `
Exit status:
  0  the crawl ran and fetched what it could (some URLs may have failed: see
     the summary and crawl.log.jsonl), or was interrupted with its state saved
  1  the crawl failed (a disk, Redis or archive error); the state is kept
  2  usage or state error: bad flags or options, no seeds on a fresh --out,
     a state directory that cannot be resumed
  4  no seed could be fetched at all (as wget's 4): stderr names the first
     seed, why, and the fix where there is one. Running the same command
     again retries the failed seeds; --retry-failed retries every failed URL
`

func runCrawl(ctx context.Context, e env, args []string) (err error) {
	fs := newFlagSet(e, "crawl", "[flags] [URL...]")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), crawlExitStatus)
	}
	var c crawlCommand
	crawlFlags(fs, &c)
	fs.String("config", "", "TOML file of flag values (keys are flag names; urls = [...] for seeds); flags given here override it")
	noIndex := fs.Bool("no-index", false, "do not write OUT/indexes/index.cdxj (the CDXJ index of the WARC files, as \"crawler index OUT\" writes it) when the crawl finishes (a continuous crawl: at every stop), nor the per-WARC-file index lines it is built from")
	urls, err := parseCrawlArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkCPUs(c.cpus); err != nil {
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
	switch {
	case c.exactDedup && o.FilterOnly:
		return fmt.Errorf("%w: --exact-dedup (the default, deprecated) contradicts --filter-only", errUsage)
	}
	if c.redis.URL != "" {
		if o.StateDir != "" {
			return fmt.Errorf("%w: --state has no meaning with --redis (the crawl's state is in Redis)", errUsage)
		}
		o.Redis = &c.redis
	}
	if err := c.continuous.apply(o); err != nil {
		return err
	}
	if o.Dir == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	ctx, stopAtMaxTime := c.continuous.context(ctx)
	defer stopAtMaxTime()
	// The operational log and the progress line share stderr from
	// different goroutines: one lock for both (os.Stderr would not need
	// it; a test's buffer does).
	stderr := &lockedWriter{w: e.stderr}
	if o.Logger, err = newLogger(stderr, c.monitor.logFormat); err != nil {
		return err
	}
	if err := c.applyNetFlags(o.Logger); err != nil {
		return err
	}
	mon, monLn, err := c.monitor.startMonitor(o.Logger)
	if err != nil {
		return err
	}
	if mon != nil {
		defer monLn.Close()
		o.Observer = mon
	}
	if c.cpuProfile != "" {
		stop, err := startCPUProfile(c.cpuProfile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	if len(urls) == 0 && o.Redis == nil && !stateExists(o) && len(o.Previous) == 0 {
		return fmt.Errorf("%w: no seeds: give URLs as arguments, or --seeds FILE", errUsage)
	}
	if !*noIndex {
		// The WARC writer writes each file's index lines as it writes
		// its records: the index at the end reads those, not the WARC.
		o.WARC.IndexDir = filepath.Join(o.Dir, storage.CrawlSidecarDir)
	}
	cr, err := crawl.New(*o)
	if errors.Is(err, crawl.ErrInvalidOptions) || errors.Is(err, crawl.ErrCorruptState) || errors.Is(err, crawl.ErrPrevious) {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err != nil {
		return err
	}
	// Runs after cr.Close (deferred later), once the WARC files are
	// closed (their sidecar indexes complete); not after an interruption,
	// as the crawl resumes, except for a continuous crawl, which never
	// ends otherwise: its index is written at every stop.
	defer func() {
		if err == nil && (ctx.Err() == nil || o.Continuous != nil) && !*noIndex {
			err = writeCrawlIndex(context.WithoutCancel(ctx), o.Logger, o.Dir)
		}
	}()
	defer func() { err = errors.Join(err, cr.Close()) }()
	defer startCPUs(c.cpus, e.gomaxprocs)()
	p := newProgress(e.stderr, stderr, cr)
	if c.monitor.logFormat == "json" {
		p.log = o.Logger
	}
	var wg sync.WaitGroup
	pctx, stopProgress := context.WithCancel(ctx)
	stopMonitor := serveMonitor(ctx, mon, monLn, cr, c.monitor.linger, o.Logger)
	defer stopMonitor()
	if c.progress > 0 {
		wg.Go(func() { p.run(pctx, c.progress) })
	}
	err = cr.Run(ctx)
	if mon != nil {
		mon.Finish(cr)
	}
	stopProgress()
	wg.Wait()
	interrupted := err != nil && ctx.Err() != nil && errors.Is(err, context.Cause(ctx))
	noSeed := errors.Is(err, crawl.ErrNoSeedFetched)
	if err != nil && !interrupted && !noSeed {
		o.Logger.Error("crawl failed", "err", err)
		return err
	}
	logSummary(o.Logger, cr, interrupted)
	printSummary(e.stdout, cr, interrupted, noSeed)
	if noSeed {
		return &noSeedError{err: err}
	}
	return nil
}

// applyNetFlags sets the fetch options of --proxy, --ca-file and
// --insecure-skip-verify.
func (c *crawlCommand) applyNetFlags(logger *slog.Logger) error {
	f := &c.opts.Fetch
	if c.proxy != "" {
		u, err := url.Parse(c.proxy)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			shown := "(unparsable)"
			if err == nil {
				shown = u.Redacted()
			}
			return fmt.Errorf("%w: --proxy %s: want http://[user:password@]host:port", errUsage, shown)
		}
		f.Proxy = u
	}
	if c.caFile == "" && !c.insecure {
		return nil
	}
	cfg := &tls.Config{}
	if f.TLSConfig != nil {
		cfg = f.TLSConfig.Clone()
	}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return fmt.Errorf("%w: --ca-file: %v", errUsage, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%w: --ca-file %s holds no PEM certificate", errUsage, c.caFile)
		}
		cfg.RootCAs = pool
	}
	if c.insecure {
		cfg.InsecureSkipVerify = true
		logger.Warn("--insecure-skip-verify: https:// certificates are not verified; anyone on the path can pose as a crawled server")
	}
	f.TLSConfig = cfg
	return nil
}

// stateExists reports whether the local crawl's state directory holds a
// crawl to resume, so that a command line without seeds is refused before
// anything is created.
func stateExists(o *crawl.Options) bool {
	dir := o.StateDir
	if dir == "" {
		dir = filepath.Join(o.Dir, "state")
	}
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) > 0
}

// noSeedError is a crawl that fetched no seed: its message is one line,
// the cause and the fix where there is one.
type noSeedError struct{ err error }

func (e *noSeedError) Error() string {
	msg := e.err.Error()
	var ns *crawl.NoSeedFetchedError
	if errors.As(e.err, &ns) {
		// The command's prefix names the crawl already.
		msg = fmt.Sprintf("no seed could be fetched: %s: %s", ns.URL, ns.Detail)
		if ns.Seeds > 1 {
			msg += fmt.Sprintf(" (and %d more seeds failed)", ns.Seeds-1)
		}
	}
	if fix := noSeedFix(e.err); fix != "" {
		msg += ": " + fix
	}
	return msg
}

func (e *noSeedError) Unwrap() error { return e.err }

// noSeedFix says how to fix what kept the seeds from being fetched, if
// the command line can.
func noSeedFix(err error) string {
	var blocked *fetch.BlockedAddressError
	var dnsErr *net.DNSError
	var ns *crawl.NoSeedFetchedError
	switch {
	case errors.As(err, &blocked):
		return "pass --allow-private to crawl local sites"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "check the host name"
	case errors.As(err, &ns) && ns.Reason == "robots-unavailable":
		return "its robots.txt did not answer within --robots-wait; try again later or raise --robots-wait"
	}
	return ""
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
func printSummary(w io.Writer, cr *crawl.Crawler, interrupted, noSeed bool) {
	s := cr.Stats()
	o := cr.Options()
	elapsed := time.Since(s.Started)
	redis := o.Redis != nil
	state := "finished: frontier empty"
	switch {
	case interrupted && redis:
		state = "interrupted: the entries this worker had out are back in the shared queues"
	case interrupted:
		state = "interrupted: state saved, rerun with the same --state to resume"
	case noSeed:
		state = "finished: no seed could be fetched (see crawl.log.jsonl)"
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
	fmt.Fprintf(w, "  errors            %d failed fetch attempts, %d HTTP 4xx/5xx; %d URLs disallowed by robots.txt, %d given up as their robots.txt did not answer within --robots-wait %v\n",
		f.FetchErrors, f.HTTPErrors, f.RobotsDisallowed, f.RobotsUnavailable, o.RobotsWait)
	if p := f.Permanent; p.Total() > 0 {
		fmt.Fprintf(w, "  failed for good   %d URLs: %d refused addresses (--allow-private), %d TLS certificates, %d names not found, %d unsupported schemes, %d malformed URLs\n",
			p.Total(), p.BlockedAddress, p.TLS, p.DNSNotFound, p.UnsupportedScheme, p.MalformedURL)
	}
	if o.Retry.MaxRetries > 0 {
		fmt.Fprintf(w, "  retries           %d failed attempts retried, %d URLs still failing after --max-retries %d, %d waiting for a retry\n",
			f.Retried, f.RetriesExhausted, o.Retry.MaxRetries, s.Retrying)
		fmt.Fprintf(w, "  slowed down       %d times after %d answers 429 or 503 (a host that recovers and is slowed again counts again); %d hosts still slowed\n",
			s.EverSlowed, s.Throttled, s.Slowed)
	}
	fmt.Fprintf(w, "  truncated         %d bodies cut at --max-body-size %d, %d by --fetch-timeout %v, %d by a disconnect\n",
		f.TruncatedLength, o.Fetch.MaxBodySize, f.TruncatedTime, o.Fetch.FetchTimeout, f.TruncatedLost)
	fmt.Fprintf(w, "  outlinks          %d pages cut at --max-outlinks %d, %d links dropped\n", f.OutlinksCapped, o.Fetch.MaxOutlinks, f.LinksDropped)
	if sm := f.Sitemaps; sm.Files > 0 {
		fmt.Fprintf(w, "  sitemaps          %d read, %d URLs listed, %d cut at --sitemap-max-urls; %d malformed, %d not a sitemap, %d over --sitemap-max-bytes, %d gzip bombs, %d indexes nested too deep\n",
			sm.Files, sm.URLs, sm.Cut, sm.Malformed, sm.ContentType, sm.TooLarge, sm.GzipBomb, sm.TooDeep)
	}
	if o.NearDuplicateThreshold >= 0 {
		fmt.Fprintf(w, "  near duplicates   %d pages at resemblance >= %g, %d links not followed; check took %v, index %d bytes\n",
			f.NearDuplicates, o.NearDuplicateThreshold, f.NearDuplicateLinksSkipped, f.NearDuplicateCheck.Round(time.Millisecond), f.NearDuplicateIndexBytes)
	}
	if !o.NoRevisits {
		fmt.Fprintf(w, "  exact duplicates  %d payloads archived before, written as WARC revisits: %d bytes saved\n", f.Revisits, f.RevisitBytes)
	}
	if r := f.Recrawl; len(o.Previous) > 0 {
		fmt.Fprintf(w, "  recrawl           %d URLs captured before: %d unchanged (WARC revisits: %d bytes saved), %d changed, %d gone; %d new\n",
			r.Previous, r.Unchanged, r.BytesSaved, r.Changed, r.Gone, r.New)
	}
	if k := s.Continuous; o.Continuous != nil && redis {
		fmt.Fprintf(w, "  continuous        %d URLs scheduled in the crawl; revisits by this worker: %d changed, %d unchanged; %d gone URLs dropped; the seen-set in Redis does not age; this worker's schedule plans %.3g revisits/s for the crawl\n",
			k.Scheduled, k.Changed, k.Unchanged, k.Dropped, k.PlannedRate)
	} else if o.Continuous != nil {
		fmt.Fprintf(w, "  continuous        %d URLs scheduled; revisits: %d changed, %d unchanged; %d gone URLs dropped, %d URLs aged out of the seen-set; the schedule plans %.3g revisits/s\n",
			k.Scheduled, k.Changed, k.Unchanged, k.Dropped, k.Aged, k.PlannedRate)
	}
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
	}
	// A growing filter, local or in Redis, says how it grew.
	if f := s.Filter; f.Generations > 0 {
		fmt.Fprintf(w, "  duplicate filter  %.0f URLs in %d generations sized for %d, %d bytes; estimated false-positive rate %.3g (target %g)\n",
			f.EstimatedURLs, f.Generations, f.Capacity, f.Bytes, f.FalsePositiveRate, f.Target)
	} else if s.Redis != nil {
		fmt.Fprintf(w, "  duplicate filter  integrity layer %.2f%% full (sized for %d URLs at FP %g)\n", 100*f.Fill, o.ExpectedURLs, o.FalsePositiveRate)
	} else if f.ExpectedURLs > 0 {
		fmt.Fprintf(w, "  duplicate filter  %.0f URLs, estimated false-positive rate %.3g (target %g at %d URLs, fixed size)\n",
			f.EstimatedURLs, f.FalsePositiveRate, f.Target, f.ExpectedURLs)
	}
	if s.FilterOnly && s.Filter.FalsePositiveRate == 0 && s.Filter.EstimatedURLs == 0 {
		fmt.Fprintf(w, "  pages lost        to the duplicate filter's false positives: not estimated (filter-only; its rate is unknown)\n")
	} else if s.FilterOnly {
		fmt.Fprintf(w, "  pages lost        about %.0f to the duplicate filter's false positives (estimated; filter-only)\n", s.LostToFilter)
	} else if s.Redis != nil {
		fmt.Fprintf(w, "  pages lost        0 to the duplicate filter: exact dedup caught %d false positives and queued them, of %d \"maybe seen\" answers checked (fingerprints in Redis; all workers)\n",
			s.FalsePositives, s.ExactChecks)
	} else if s.Pages > 0 || s.New > 0 {
		fmt.Fprintf(w, "  pages lost        0 to the duplicate filter: exact dedup caught %d false positives and queued them, of %d \"maybe seen\" answers checked (%d on disk, %d fingerprints in memory)\n",
			s.FalsePositives, s.ExactChecks, s.ExactLookups, s.ExactInMemory)
	}
	fmt.Fprintf(w, "  output            %s\n", o.Dir)
}

// progress prints the live progress line: one line per interval, rewritten
// in place when stderr is a terminal.
type progress struct {
	log   *slog.Logger // when set, progress goes there as records, not lines
	w     io.Writer
	tty   bool
	cr    *crawl.Crawler
	last  time.Time
	lastN uint64
}

// newProgress prints the progress of cr to w; tty, the writer under w,
// says whether it is a terminal (the line is then rewritten in place).
func newProgress(tty io.Writer, w io.Writer, cr *crawl.Crawler) *progress {
	return &progress{w: w, tty: isTerminal(tty), cr: cr, last: time.Now()}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return tty
}

// lockedWriter serializes the writes of goroutines sharing one writer.
type lockedWriter struct {
	mu sync.Mutex // protects w
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
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
			if p.log != nil {
				p.record()
			} else if p.tty {
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
		line := fmt.Sprintf("%s shared: pages %d queued %d hosts %d in-flight %d", mine, s.Pages, s.Queued, s.Hosts, s.InFlight)
		if s.Retrying > 0 {
			line += fmt.Sprintf(" retrying %d", s.Retrying)
		}
		if s.Slowed > 0 {
			line += fmt.Sprintf(" slowed %d", s.Slowed)
		}
		return line
	}
	line := fmt.Sprintf("pages %d (%.1f/s) queued %d hosts %d in-flight %d errors %d", s.Pages, rate, s.Queued, s.Hosts, s.InFlight, errs)
	if s.Retrying > 0 {
		line += fmt.Sprintf(" retrying %d", s.Retrying)
	}
	if n := s.Fetch.RobotsWaiting; n > 0 {
		line += fmt.Sprintf(" waiting-for-robots.txt %d sites", n)
	}
	if s.Slowed > 0 {
		line += fmt.Sprintf(" slowed %d", s.Slowed)
	}
	if fs := s.Filter; fs.ExpectedURLs > 0 {
		if fs.Generations > 0 {
			line += fmt.Sprintf(" filter gen %d", fs.Generations)
		} else {
			line += " filter"
		}
		line += fmt.Sprintf(" fill %.2f%% est. FP %.2g", 100*fs.Fill, fs.FalsePositiveRate)
		if fs.FalsePositiveRate > fs.Target {
			line += fmt.Sprintf(" WARNING: estimated FP above the target %g; rerun with a larger --expected-urls or without --filter-growth=false", fs.Target)
		}
	}
	return line
}
