package crawl

import (
	"compress/gzip"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// ErrInvalidOptions is wrapped by every error of Options.Validate, and so of
// New for bad options.
var ErrInvalidOptions = errors.New("crawl: invalid options")

// Defaults of Options.
const (
	DefaultConcurrency        = 16
	DefaultExpectedURLs       = 10_000_000
	DefaultFalsePositiveRate  = 1e-3
	DefaultCheckpointInterval = 30 * time.Second
	DefaultStopGrace          = 10 * time.Second
	DefaultWARCMaxSize        = 1 << 30
	DefaultRedisLease         = 2 * time.Minute
	DefaultRedisHeartbeat     = 2 * time.Second
	// DefaultRedisConnectTimeout is RedisOptions.ConnectTimeout's default.
	DefaultRedisConnectTimeout = 10 * time.Second
	DefaultRevisitMinSize      = 1024
	DefaultPayloadDigests      = 1_000_000
	// DefaultNearDuplicateThreshold is the estimated resemblance at which
	// a page counts as a near-duplicate (docs/BENCHMARKS.md, "Near-duplicates").
	DefaultNearDuplicateThreshold = 0.7
	DefaultNearDuplicatePages     = 1_000_000
)

// Options configures a Crawler. The zero value of every field takes the
// default its comment documents; a negative limit turns it off. New copies
// the Options (and the slices in them) it is given.
type Options struct {
	// Seeds are the URLs the crawl starts from; their host names (or
	// registrable domains) make the crawl's scope. On resume they may be
	// empty: the state remembers the scope and the queue. Seeds already
	// seen are not queued again.
	Seeds []string

	// Dir is the output directory: the crawl log (crawl.log.jsonl, or
	// crawl-WORKER.log.jsonl in Redis mode) and the WARC files (warc/)
	// go there unless Log and Archive are given. Required unless both
	// are. In Redis mode the worker's own state, its capture history,
	// goes to Dir/state-WORKER.
	Dir string
	// StateDir holds the local crawl's state: the embedded store (the
	// queue and the journal of seen-set inserts) and the seen-set
	// snapshots. A crawl run again with the same StateDir resumes.
	// Default Dir/state. Not used in Redis mode, nor with Store and a
	// Seen that is not a Snapshotter.
	StateDir string

	// Concurrency is the number of fetches in flight; one host never has
	// more than one. Default DefaultConcurrency (16).
	Concurrency int
	// Admission are the rules discovered URLs must pass: scope,
	// Allow/Deny, depth, redirect hops and trap limits.
	Admission frontier.AdmissionOptions
	// Politeness says how often one host may be asked: the delay between
	// two requests (default 1s) and the cap on robots.txt Crawl-delay.
	Politeness frontier.PolitenessOptions
	// MaxPages stops the crawl after this many pages in all its runs (and
	// all its workers); 0 and negative: no limit.
	MaxPages int64
	// Order is the order URLs are fetched in: frontier.OrderFIFO (the
	// default: each host's URLs in discovery order, hosts in turn, close
	// to breadth-first) or frontier.OrderInlinks (the most linked-to URLs
	// first, by in-link counts from distinct fetched pages held in a
	// count-min sketch sized from ExpectedURLs, or from MaxPages when less
	// (frontier.InlinksSketchShape), and kept in checkpoints, or in Redis
	// shared by the workers; seeds first). Politeness is the same in both.
	// In Redis mode the first worker fixes the crawl's order, and a worker
	// given another fails to start (redisfrontier.ErrOrderMismatch).
	Order frontier.Order
	// Fetch configures the HTTP fetcher: user agent, timeouts, body and
	// outlink caps, the private-address guard.
	Fetch fetch.Options
	// Retry says how often and when a URL whose fetch failed transiently
	// is fetched again: MaxRetries (default 3), exponential Backoff with
	// jitter, Retry-After capped at MaxRetryAfter. See RetryOptions.
	Retry RetryOptions
	// RobotsWait bounds how long a site's URLs wait for its robots.txt,
	// a prerequisite fetched before them: while it answers 5xx or 429,
	// or does not answer, the site is taken as fully disallowed (RFC 9309
	// §2.3.1.4) and its URLs wait, without spending their own retries,
	// while robots.txt is fetched again after Retry's backoff (or its
	// Retry-After). Once RobotsWait has passed since the first failure,
	// the waiting URLs end as "robots-unavailable", and the site's URLs
	// end so at once for RobotsWait more; then robots.txt is tried afresh.
	// A refused address, a certificate that fails verification or a name
	// that does not exist (after one retry) ends them at once. Default
	// DefaultRobotsWait (5m); negative: no wait, the first failure ends
	// them. In Redis mode the host waits in Redis, for every worker, and
	// the wait counts from the first failure any worker saw.
	RobotsWait time.Duration
	// RetryFailed queues again, when the crawl starts, every URL whose
	// last attempt failed in earlier runs (the state keeps a record of
	// each; in Redis mode a hash shared by the workers, so that of
	// workers started with it each URL is queued once). Without it only
	// the seeds given again are.
	RetryFailed bool
	// Normalize configures URL normalization (the zero value is the
	// default normalization).
	Normalize urlnorm.Options

	// NoSitemaps turns sitemaps off. By default the Sitemap lines of
	// every robots.txt the crawl reads are queued (as sitemaps, hop type
	// S), sitemap indexes are followed (at most MaxSitemapNesting levels)
	// and the pages a sitemap lists are queued one S hop further, through
	// the same normalization, scope, trap limits and duplicate check as
	// links, with their <lastmod> in the crawl log.
	NoSitemaps bool
	// Sitemap limits one sitemap file: MaxURLs (default 50,000; the rest
	// are cut and counted in FetchStats.SitemapURLsCut; negative: no
	// limit) and MaxBytes (default 50 MiB, counted after decompression;
	// a longer file is read that far and counted as too large, or as a
	// gzip bomb; it cannot be turned off). MaxURLLength as in
	// fetch.SitemapOptions.
	Sitemap fetch.SitemapOptions

	// ExpectedURLs is what the default duplicate filter (a multi-layer
	// Bloom filter) is first sized for; default DefaultExpectedURLs (10M).
	// Past it the filter adds a generation, twice as large, and so on
	// (mlbf.Scalable), unless FixedFilter is set. It is fixed when a crawl
	// starts: a resumed crawl keeps its filter.
	ExpectedURLs uint64
	// FalsePositiveRate is the default duplicate filter's target rate: the
	// share of new URLs wrongly taken for seen and skipped. A growing
	// filter keeps its compound rate within it however many URLs arrive
	// (its first generation gets half of it, the next a quarter, ...); a
	// fixed one meets it at ExpectedURLs and climbs past them. Default
	// DefaultFalsePositiveRate (1e-3).
	FalsePositiveRate float64
	// FixedFilter keeps the default duplicate filter at its ExpectedURLs
	// sizing (an mlbf.Concurrent, or in Redis a fixed seen-set), without
	// generations: 11% less memory at ExpectedURLs at 0.1% (15.7 against
	// 17.5 bits per URL), but past them its rate climbs and drops new
	// URLs. Fixed when a crawl starts: a resumed local crawl keeps the
	// kind its snapshot holds; in Redis mode the first worker's choice is
	// stored, and a worker that differs is refused. Default off: the
	// filter grows (in Redis, by generations that are keys).
	FixedFilter bool
	// FilterOnly lets the duplicate filter decide alone: a URL it
	// answers "maybe seen" for is dropped, and its false positives (at
	// most about FalsePositiveRate of the new URLs) are lost;
	// Stats.LostToFilter estimates them. By default (FilterOnly false) a
	// local crawl checks every "maybe seen" answer the link cache does
	// not confirm against 64-bit fingerprints of the queued URLs, held in
	// memory (ExactMemory) and kept in the state's store in the batch that
	// queues each URL, so that a false positive never drops a URL
	// (Stats.FalsePositives counts those it caught). The mode is fixed
	// when a crawl starts: a resumed crawl keeps the mode its state
	// records, except that FilterOnly ends the exact check of a crawl
	// begun with it for good; a state begun filter-only (as every state
	// written before the exact check became the default) resumes
	// filter-only, as its queued URLs have no fingerprints. In Redis mode
	// the fingerprints are in Redis, checked in the seen-set's script
	// (redisfrontier.SeenOptions.Exact), and the mode is the crawl's: the
	// worker that creates the crawl's seen-set fixes it, and every other
	// worker and later run keeps it (a crawl begun by a layercrawl without
	// the check stays filter-only).
	FilterOnly bool
	// ExactDedup is the exact check, now the default.
	//
	// Deprecated: it is on unless FilterOnly is set; setting it has no
	// effect, and with FilterOnly it is an error.
	ExactDedup bool
	// ExactMemory bounds the memory tables of the exact check's
	// fingerprints, in bytes (10 to 20 bytes per URL): past it the
	// checks they cannot answer are looked up in the store, a point lookup
	// each. Default: 16 bytes per ExpectedURLs, at least 64 MiB (160 MB at
	// the default 10M, enough for at least 8 million URLs).
	ExactMemory int64

	// CheckpointInterval is how often the seen-set is snapshotted and the
	// journal of its inserts trimmed; default 30s. The interval runs from
	// the end of one checkpoint to the start of the next.
	CheckpointInterval time.Duration
	// SyncWrites flushes the state to disk after every batch of completed
	// pages, so that after a crash of the machine (not only of the
	// process) at most Concurrency fetches are repeated. Without it the
	// state reaches the disk at every checkpoint and at the end; a crash
	// of the process (kill -9) still repeats at most Concurrency fetches.
	SyncWrites bool
	// StopGrace is how long fetches under way may finish once the Run
	// context ends, so that they are completed rather than repeated on
	// resume; default DefaultStopGrace (10s); negative: none.
	StopGrace time.Duration

	// WARC configures the default archive's files: Prefix, MaxFileSize
	// (default 1 GiB), GzipLevel (default 1, the fastest; records up to
	// 6 KiB then use deflate's fixed codes) and the warcinfo fields.
	WARC storage.WARCOptions

	// NoRevisits archives every response in full. By default a 2xx
	// response whose whole payload (at least RevisitMinSize bytes) was
	// archived before under any URL is written as a WARC revisit record
	// (profile identical-payload-digest) referring to the first one, and
	// logged with duplicate_of.
	NoRevisits bool
	// RevisitMinSize is the smallest payload written as a revisit: a
	// revisit record costs about 700 bytes, so a smaller payload saves
	// nothing. Default DefaultRevisitMinSize (1024); negative: no minimum.
	RevisitMinSize int64

	// Previous lists the output directories (Dir) of earlier crawls
	// of the same sites. The crawl imports their capture history (from
	// their state, or rebuilt from their WARC files when the state has
	// none) into its own state, re-checks the URLs they fetched
	// (PreviousScope) with conditional requests, and archives what did
	// not change as revisit records of their responses: a 304 with
	// profile server-not-modified, a 2xx of the same payload with
	// identical-payload-digest. New checks every directory before it
	// creates anything (ErrPrevious). In Redis mode every worker is given
	// the same directories (a Redis crawl's may all be given: its
	// workers' state-WORKER directories are read, or its WARC files): it
	// imports their history into its own state (Dir/state-WORKER), and
	// the workers together queue each earlier URL once.
	Previous []string
	// PreviousScope says which of the earlier crawls' URLs are queued:
	// PreviousScopeAll (the default) every one, at its recorded depth;
	// PreviousScopeSeeds their seeds only (the others are fetched, with
	// conditional requests, if links lead to them again).
	PreviousScope string
	// Continuous makes the crawl continuous: it runs until Run's context
	// ends, fetching every URL again when the revisit schedule says (see
	// ContinuousOptions). nil (default): the crawl ends when its queue
	// is empty. In Redis mode every worker of the crawl sets it: the
	// schedule, the records and the budget are shared in Redis, and the
	// seen-set there does not age (every URL ever discovered stays in
	// it).
	Continuous *ContinuousOptions
	// PayloadDigests bounds the payload index (in the store, or in
	// Redis): the last PayloadDigests digests archived in full are
	// remembered, about 150 bytes each on disk. Default
	// DefaultPayloadDigests (1M); negative: no limit.
	PayloadDigests int64
	// Payloads replaces the payload index (local mode only).
	Payloads PayloadIndex

	// NearDuplicateThreshold is the estimated resemblance (Jaccard of
	// 4-word shingle sets, package neardup) at which a fetched HTML page
	// is logged as near_duplicate_of the earlier page it resembles most.
	// Default DefaultNearDuplicateThreshold (0.7); negative: no check.
	// The index (neardup.MinHash by one permutation hashing, 32 values in
	// 8 LSH bands) holds about 280 bytes per page and is snapshotted with
	// the seen-set; in Redis mode it is in Redis, shared by the workers
	// (about 870 bytes per page there: docs/BENCHMARKS.md).
	NearDuplicateThreshold float64
	// SkipNearDuplicateLinks does not follow the links of a page that
	// nearly duplicates an earlier page of the same host: calendars and
	// session loops repeat their pages.
	SkipNearDuplicateLinks bool
	// NearDuplicatePages bounds the pages indexed (later pages are still
	// checked, not added); default DefaultNearDuplicatePages (1M, about
	// 280 MB of index); negative: no limit.
	NearDuplicatePages int64

	// Redis, when set, runs this process as one worker of a crawl shared
	// through Redis: the frontier, the seen-set and robots.txt are in
	// Redis and there is no local state.
	Redis *RedisOptions

	// Seen replaces the duplicate filter: local mode only. A Seen that
	// is a Snapshotter is saved at checkpoints and loaded on resume; any
	// other is replayed from the journal kept in the store, which then
	// is never trimmed.
	Seen Seen
	// Store replaces the embedded store of the local state (local mode
	// only); a storage.Store under StateDir by default.
	Store frontier.Store
	// Log replaces the default crawl log (a storage.CrawlLog under Dir).
	// The crawl does not close a Log it was given.
	Log Log
	// Archive replaces the default WARC writer (a storage.WARCWriter
	// under Dir/warc). The crawl does not close an Archive it was given.
	Archive Archive

	// OnPage, when set, is called for every fetch that got a response or
	// failed, after its exchange is archived and logged and before its
	// links are queued. It may read the page, record data, and change
	// Page.Links: links it removes are not followed, links it adds are.
	// An error stops the crawl, and the page is fetched again on resume.
	// It is called from many goroutines at once.
	OnPage func(p *Page) error
	// Collector, when set, receives every fetched response as if it had
	// fetched it itself: its OnResponse, OnHTML, OnXML, OnScraped and
	// OnError callbacks run with colly's Request.Depth, and the URLs they
	// Visit are followed as the page's links (through the same scope,
	// limits and duplicate filter). A redirect runs no callback: its
	// target runs them, as in colly. The crawl owns fetching, robots.txt
	// and duplicate detection, so New sets the Collector's transport,
	// AllowURLRevisit (true), IgnoreRobotsTxt (true), Async (false),
	// MaxBodySize (0: Fetch.MaxBodySize applies) and CacheDir (none).
	// Validate rejects a Collector with AllowedDomains,
	// DisallowedDomains, URLFilters, DisallowedURLFilters, MaxDepth,
	// MaxRequests or a UserAgent other than colly's default or
	// Fetch.UserAgent, and names the crawl option that does the same.
	Collector *colly.Collector

	// Logger receives the crawl's operational messages (start, resume,
	// checkpoints, warnings); default: discarded. The per-fetch record is
	// the crawl log, not this.
	Logger *slog.Logger

	// Observer, when set, receives an event per fetch and per checkpoint
	// (latencies, status, sizes) beside the counters of Crawler.Stats; see
	// package monitor. Default: none.
	Observer Observer

	// Now is the clock; default time.Now.
	Now func() time.Time
}

// RedisOptions configure the Redis mode of a crawl.
type RedisOptions struct {
	// URL is redis://[user:password@]host:port[/db] or rediss:// (TLS).
	// Required.
	URL string
	// Prefix starts every key of the crawl, so that several crawls share
	// one Redis; default redisfrontier.DefaultPrefix.
	Prefix string
	// Cluster connects to a Redis Cluster; further seed nodes come as
	// addr= query parameters of URL.
	Cluster bool
	// Lease is how long a worker holds a host per entry: a dead worker's
	// entries go to another worker when it expires. It must exceed the
	// fetch timeout; default the larger of DefaultRedisLease (2m) and
	// twice Fetch.FetchTimeout.
	Lease time.Duration
	// Heartbeat is how often the worker renews its liveness in Redis; the
	// liveness lasts three beats. When a worker's liveness expires (it was
	// killed, or stopped for longer), another worker's next beat ends its
	// leases, so its hosts come back within about four beats however long
	// Lease is; after a Redis outage, one beat after the others are
	// connected again (redisfrontier.ReapGrace). Default DefaultRedisHeartbeat (2s); negative: no beats, a
	// dead worker's hosts wait for their leases to expire.
	Heartbeat time.Duration
	// Worker names this process among the crawl's workers, in its log
	// and WARC file names; default host name and process id.
	Worker string
	// ConnectTimeout bounds how long Run waits for Redis to answer at
	// the start (retrying while it is unreachable or loading its data);
	// then Run fails with an error wrapping
	// redisfrontier.ErrUnreachable. Once connected, a worker rides out
	// outages of any length. Default DefaultRedisConnectTimeout (10s);
	// negative: wait until Run's context ends.
	ConnectTimeout time.Duration
}

// EnsureDefaults fills in the zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.StateDir == "" && o.Dir != "" {
		o.StateDir = o.Dir + "/state"
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	o.Admission.EnsureDefaults()
	o.Politeness.EnsureDefaults()
	o.Fetch.EnsureDefaults()
	o.Sitemap.EnsureDefaults()
	o.Retry.EnsureDefaults()
	if o.RobotsWait == 0 {
		o.RobotsWait = DefaultRobotsWait
	}
	if o.ExpectedURLs == 0 {
		o.ExpectedURLs = DefaultExpectedURLs
	}
	if o.FalsePositiveRate == 0 {
		o.FalsePositiveRate = DefaultFalsePositiveRate
	}
	if o.ExactMemory == 0 {
		o.ExactMemory = max(frontier.DefaultExactMemory, int64(min(o.ExpectedURLs, math.MaxInt64/16)*16))
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.StopGrace == 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.RevisitMinSize == 0 {
		o.RevisitMinSize = DefaultRevisitMinSize
	}
	if o.PayloadDigests == 0 {
		o.PayloadDigests = DefaultPayloadDigests
	}
	if o.NearDuplicateThreshold == 0 {
		o.NearDuplicateThreshold = DefaultNearDuplicateThreshold
	}
	if o.NearDuplicatePages == 0 {
		o.NearDuplicatePages = DefaultNearDuplicatePages
	}
	if o.WARC.MaxFileSize == 0 {
		o.WARC.MaxFileSize = DefaultWARCMaxSize
	}
	if o.WARC.GzipLevel == 0 {
		o.WARC.GzipLevel = gzip.BestSpeed
	}
	if o.Redis != nil {
		r := *o.Redis
		if r.Lease == 0 {
			r.Lease = max(DefaultRedisLease, 2*o.Fetch.FetchTimeout)
		}
		if r.Heartbeat == 0 {
			r.Heartbeat = DefaultRedisHeartbeat
		}
		if r.ConnectTimeout == 0 {
			r.ConnectTimeout = DefaultRedisConnectTimeout
		}
		if r.Worker == "" {
			r.Worker = workerName()
		}
		o.Redis = &r
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PreviousScope == "" {
		o.PreviousScope = PreviousScopeAll
	}
	if o.Continuous != nil {
		k := *o.Continuous
		k.ensureDefaults()
		o.Continuous = &k
	}
}

// Validate reports whether the options can make a Crawler. It expects
// EnsureDefaults to have run.
func (o *Options) Validate() error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
	}
	switch {
	case o.Dir == "" && (o.Log == nil || o.Archive == nil):
		return invalid("Dir is required unless both Log and Archive are given")
	case o.Concurrency < 1:
		return invalid("Concurrency %d is below 1", o.Concurrency)
	case o.PreviousScope != PreviousScopeAll && o.PreviousScope != PreviousScopeSeeds:
		return invalid("PreviousScope %q is not %q or %q", o.PreviousScope, PreviousScopeAll, PreviousScopeSeeds)
	case len(o.Previous) > 0 && o.Dir == "":
		return invalid("Previous needs Dir: the crawl keeps the earlier crawls' capture history there")
	case len(o.Previous) > 0 && o.Store != nil:
		return invalid("Previous needs the crawl's own state (StateDir), not Options.Store")
	case !(o.FalsePositiveRate > 0 && o.FalsePositiveRate < 1):
		return invalid("FalsePositiveRate %g is not in (0, 1)", o.FalsePositiveRate)
	case o.ExactDedup && o.FilterOnly:
		return invalid("ExactDedup and FilterOnly ask for opposite duplicate checks")
	case o.NearDuplicateThreshold > 1:
		return invalid("NearDuplicateThreshold %g is above 1", o.NearDuplicateThreshold)
	case o.CheckpointInterval < 0:
		return invalid("CheckpointInterval %v is negative", o.CheckpointInterval)
	case o.Sitemap.MaxBytes < 0:
		return invalid("Sitemap.MaxBytes %d is negative: a fetch's size cannot be unlimited", o.Sitemap.MaxBytes)
	case o.WARC.MaxFileSize < 0:
		return invalid("WARC.MaxFileSize %d is negative", o.WARC.MaxFileSize)
	case o.WARC.GzipLevel < gzip.BestSpeed || o.WARC.GzipLevel > gzip.BestCompression:
		return invalid("WARC.GzipLevel %d is not 1 to 9", o.WARC.GzipLevel)
	}
	if o.Collector != nil {
		if why := checkCollector(o.Collector, o.Fetch.UserAgent); why != "" {
			return invalid("Collector: %s", why)
		}
	}
	if o.Redis != nil {
		switch r := o.Redis; {
		case r.URL == "":
			return invalid("Redis.URL is required")
		case !validWorkerName(r.Worker):
			return invalid("Redis.Worker %q: only letters, digits, '-', '_' and '.' go into file names", r.Worker)
		case o.Seen != nil || o.Store != nil || o.Payloads != nil:
			return invalid("Seen, Store and Payloads are local-mode options: in Redis mode they are in Redis")
		case r.Heartbeat > 0 && r.Heartbeat < 10*time.Millisecond:
			return invalid("Redis.Heartbeat %v: at least 10ms, or negative for none", r.Heartbeat)
		case r.Lease <= o.Fetch.FetchTimeout:
			// An entry whose fetch runs to its timeout must still be
			// done before the lease ends, or it is fetched twice.
			return invalid("Redis.Lease %v must exceed Fetch.FetchTimeout %v", r.Lease, o.Fetch.FetchTimeout)
		}
	}
	if err := o.Retry.validate(); err != nil {
		return err
	}
	if o.Continuous != nil {
		if err := o.Continuous.validate(); err != nil {
			return invalid("%w", err)
		}
	}
	for _, err := range []error{o.Admission.Validate(), o.Politeness.Validate(), o.Fetch.Validate(), o.Normalize.Validate()} {
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
	}
	return nil
}
