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
// reached, or the context's cause when the context ended first. Close
// releases the state and the output files. Making a Crawler again with the
// same Dir (or StateDir) resumes the crawl.
//
// Every discovered URL goes through one path: resolved against its page's
// base and normalized (package urlnorm), checked against Options.Admission
// (scope, allow/deny, depth, redirect hops, trap limits), then checked and
// inserted in the duplicate filter in one atomic call (a multi-layer Bloom
// filter, package mlbf) before it is queued (package frontier). Hosts are
// served round-robin, one request per host at a time, at most one every
// Options.Politeness.Delay (raised by robots.txt Crawl-delay), and
// robots.txt (RFC 9309) is obeyed.
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
//     the state lacks. The filter is snapshotted at checkpoints (the copy
//     is taken while inserts wait, and written while they go on); the
//     inserts since the last snapshot are journaled in the store and
//     replayed on resume. A missing or stale snapshot is ErrCorruptState,
//     never a silent restart.
//   - The filter may take a new URL for a seen one (a false positive, at
//     about FalsePositiveRate once ExpectedURLs are in it); that URL is
//     then not fetched. Stats.Filter estimates the rate as the crawl goes.
//     With Options.ExactDedup every "maybe seen" answer is checked
//     against fingerprints of the queued URLs kept in the state, written
//     with the queue, and no URL is lost (Stats.FalsePositives counts the
//     rescued ones).
//   - A full disk ends the crawl with an error matching syscall.ENOSPC
//     and naming the path; the embedded store refuses writes while less
//     than storage.Options.DiskReserve is free, so its state stays whole,
//     and the crawl resumes once there is room.
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
// Crawler.Add queues more URLs while Run runs.
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
