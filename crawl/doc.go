// Package crawl is layercrawl's crawl engine: it drives a frontier with a
// pool of fetchers, archives every exchange as WARC and logs every fetch,
// checkpoints its state so that a crawl stopped in any way resumes, and
// hands each page to the embedding program. The crawler command is a thin
// layer over it; a Go program gets the same crawl by importing it.
//
// # Basics
//
// Fill in Options (Seeds and Dir are enough), make a Crawler with New, and
// call Run. Run returns nil when the frontier is exhausted or MaxPages is
// reached, an error matching ErrNoSeedFetched when the crawl got not a
// single response and its seeds failed, or the context's cause when the
// context ended first. Close releases the state and the output files.
// Making a Crawler again with the same Dir (or StateDir) resumes the
// crawl; New without seeds on a directory with nothing to resume is
// ErrInvalidOptions.
//
// Every discovered URL goes through one path: resolved against its page's
// base and normalized (package urlnorm), checked against Options.Admission
// (scope, allow/deny, depth, redirect hops, trap limits), then checked and
// inserted in the duplicate filter in one atomic call (a multi-layer Bloom
// filter, package mlbf) before it is queued (package frontier). Hosts are
// served round-robin, one request per host at a time, at most one every
// Options.Politeness.Delay (raised by robots.txt Crawl-delay, and in
// local mode by the host's response time and its 429 and 503 answers), and
// robots.txt (RFC 9309) is obeyed.
//
// A crawl fetches what its archive needs to replay a page:
// the page requisites (images, scripts, stylesheets, media, and the
// @import and url() of stylesheets) of a page in scope, from any host up
// to Admission.MaxEmbedHops embed hops outside the scope and exempt from
// the depth limit (Fetch.NoEmbeds turns them off); the sitemaps named by
// each site's robots.txt, their indexes and the pages they list
// (NoSitemaps turns them off). Every URL records its hop path (L link, E
// embed, R redirect, S sitemap), logged as hop_path, and every HTML page
// gets a WARC metadata record listing its outlinks, as Heritrix writes
// them.
//
// A fetch that fails transiently (a refused or reset connection, a
// timeout, a truncated body, a temporary DNS failure, HTTP 408, 425, 429,
// 500, 502, 503, 504) is retried up to Options.Retry.MaxRetries times, with
// exponential backoff, jitter and the server's Retry-After (capped); in
// local mode the retry is part of the frontier's state and never holds its
// host's other URLs back. Each attempt has its own log line and WARC
// records; a URL's last failure is logged "retries-exhausted: REASON". A
// permanent failure ends its URL at once, logged with its own reason: a
// refused address ("blocked-address"), a certificate that fails
// verification ("tls-certificate"), a name that does not exist
// ("dns-not-found", after one retry), an unsupported scheme or a
// malformed URL (FetchStats.Permanent counts them). A log line names its
// reason and its cause once; the URL is the line's own.
//
// A site's robots.txt is a prerequisite of its URLs, as in Heritrix:
// while it answers 5xx or 429, or does not answer, the site is taken as
// fully disallowed (RFC 9309 §2.3.1.4) and its URLs wait with their host,
// their own retries untouched, while robots.txt is fetched again on its
// own backoff; after Options.RobotsWait they are logged
// "robots-unavailable". In Redis mode the host waits in Redis
// (redisfrontier.Frontier.Defer), for every worker, and the wait counts
// from the first failure any worker saw (redisfrontier.RobotsWaits). A
// permanent failure of robots.txt ends the site's URLs at once with its
// reason.
//
// A URL whose last attempt failed keeps a failure record in the state: a
// seed given again is queued again on resume, and Options.RetryFailed
// queues every failed URL again.
//
// # Guarantees
//
//   - Every completed fetch has its crawl-log line and WARC records
//     handed to the operating system before its URL is marked done, and
//     made durable (Log.Sync, Archive.Sync) before any checkpoint that
//     covers it: a resumed crawl never lacks the record of a page it will
//     not fetch again.
//   - A crawl stopped through its context lets the fetches under way
//     finish for StopGrace and repeats none of them on resume. After a
//     crash of the process (kill -9) at most Concurrency fetches are
//     repeated; after a crash of the machine, the fetches completed since
//     the last checkpoint are, unless SyncWrites.
//   - No discovered URL is lost: the duplicate filter never holds a URL
//     the state lacks. The filter is snapshotted at checkpoints (inserts
//     wait only while it copies its bits in memory, and the copy is
//     written while they go on); the
//     inserts since the last snapshot are journaled in the store and
//     replayed on resume. A missing or stale snapshot is ErrCorruptState,
//     never a silent restart.
//   - The filter may take a new URL for a seen one (a false positive, at
//     about FalsePositiveRate once ExpectedURLs are in it). By default a
//     local crawl checks every "maybe seen" answer the link cache does not
//     confirm against 64-bit fingerprints of the queued URLs, held in
//     memory (up to Options.ExactMemory) and kept in the state, written
//     with the queue, so no URL is lost (Stats.FalsePositives counts the
//     rescued ones). In Redis mode the fingerprints are in Redis and the
//     check is part of the seen-set's atomic script call. With
//     Options.FilterOnly the filter decides alone and its false positives
//     are not fetched; Stats.LostToFilter estimates them. Each new crawl
//     salts the filter's hashes afresh (kept in its snapshots, or with the
//     seen-set in Redis), so that the URLs lost differ from crawl to
//     crawl.
//   - A full disk ends the crawl with an error matching syscall.ENOSPC
//     and naming the path; the embedded store refuses writes while less
//     than storage.Options.DiskReserve is free, so its state stays whole,
//     and the crawl resumes once there is room.
//
// # Duplicate content
//
// A 2xx response whose whole payload was archived before under any URL
// (same SHA-1, at least Options.RevisitMinSize bytes) is written as a WARC
// revisit record referring to the first one and logged with duplicate_of;
// the payload index is in the store (or Redis) and bounded by
// Options.PayloadDigests. Every 2xx HTML page is checked against the pages
// before it for near-duplicate text (package neardup: MinHash-LSH, about 280
// bytes per page) and logged with near_duplicate_of at
// Options.NearDuplicateThreshold; Options.SkipNearDuplicateLinks then
// drops its links when the earlier page is on the same host. Both checks
// are best effort across a crash: a page completed after the last
// checkpoint may be archived in full, or missed as a near-duplicate
// candidate, after a resume.
//
// # Options
//
// Every limit follows one convention, the same in the crawler command,
// its config file and this package: zero takes the documented default, a
// negative value turns the limit off. The fetcher's defences (body size,
// timeouts) cannot be turned off: a negative value is invalid. Options
// embed the option types of the packages below (frontier.AdmissionOptions,
// frontier.PolitenessOptions, fetch.Options, urlnorm.Options), each with
// its own defaults, so a setting is defined once. Every error of Validate
// wraps ErrInvalidOptions.
//
// # Hooks
//
// Options.OnPage is called for every fetch attempt, after it is archived
// and logged and before its links are queued: it may read the page, store
// data, remove links (not followed) and add links (followed through the
// same checks). An error from it stops the crawl, and the page is fetched
// again on resume, so a hook's work is at-least-once per page.
// Crawler.Add queues more URLs while Run runs. Options.Observer receives
// an event per fetch (status, error kind, latency, time to first byte,
// sizes) and per checkpoint, for metrics (package monitor); it cannot
// fail the crawl, and without one the crawl pays a nil test per fetch.
//
// Options.Collector lets a colly user keep their scraping code. The crawl
// hands every fetched response to the Collector through a transport that
// answers from memory, so colly runs its own OnResponse, OnHTML, OnXML and
// OnScraped callbacks with its own semantics (charset, <base href>,
// goquery selectors); a callback's Request.Visit is caught before any
// request and becomes a link of the page, followed through the crawl's
// scope, limits and duplicate filter. colly's DOM is built only when a
// Collector is given. Fetching itself stays in package fetch, which uses
// colly as its HTTP engine but records the raw exchange for the WARC
// files, enforces the body cap after decompression, and never follows
// redirects (each hop is a discovered URL, normalized and deduplicated).
//
// # Pluggable parts
//
// The output sinks (Log, Archive), the local seen-set (Seen, optionally a
// Snapshotter) and the local store (frontier.Store) are small interfaces,
// each defaulting to layercrawl's own implementation: a JSON-lines crawl
// log, WARC 1.1 files, an mlbf filter and an embedded pebble store. The
// crawl closes only what it opened. WriteSnapshot and ReadSnapshot read
// and write the seen-set snapshot format.
//
// # Redis mode
//
// With Options.Redis, the process is one worker of a crawl shared through
// Redis (package redisfrontier): the frontier, the duplicate filter and
// robots.txt live in Redis, there is no local state, and the crawl log and
// WARC files are the worker's own (named after Options.Redis.Worker). The
// API is the same; Stats then reports the shared counters as last read.
//
// # Concurrency
//
// A Crawler's methods are safe for concurrent use. Run starts
// Options.Concurrency workers and the checkpoint task, and returns after
// all have stopped. OnPage and the Collector's callbacks run on the
// workers, many at once.
package crawl
