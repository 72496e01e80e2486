// Package frontier holds the crawl frontier: per-host queues with politeness,
// the duplicate check of every discovered URL against a multi-layer Bloom
// filter before it is queued, and spilling to the embedded store.
//
// # Basics
//
// Open a [Frontier] over a [Store] (the embedded store, or anything with an
// atomic batch), a [Seen] set (an mlbf.Concurrent behind a small adapter, or
// the Redis seen-set of a distributed crawl) and a [Normalizer]. Add seeds
// with [Frontier.AddSeeds]; then workers loop on [Frontier.Next], fetch the
// entry, optionally call [Frontier.Release] as soon as the request is over
// (so that the host's next entry can go out while this one is archived),
// and report the outcome with [Frontier.Done], until Next returns
// [ErrExhausted] or [ErrPageLimit].
//
// Every discovered link goes through one path: resolved against its page's
// base URL and normalized (Normalizer.Resolve), checked against the scope
// (host, registrable domain or any, then the allow and deny expressions),
// the depth limit and, for redirect targets, the redirect-hop limit, and
// only then checked-and-inserted in the seen-set with ONE TestAndAdd call.
// Only URLs the seen-set reports new are queued.
//
// # Crawler traps
//
// Before the seen-set, a discovered link (not a seed) passes the [Limits],
// each counted in [Stats].Limits when it refuses a URL:
//
//   - MaxURLLength (2083 bytes) cuts ever-longer URLs;
//   - MaxPathSegments (20) cuts ever-deeper paths;
//   - MaxSegmentRepeats (2) cuts a path in which one segment recurs, as
//     the relative link "a/" makes on /a/: /a/a/a/ is refused;
//   - MaxHostURLs (100,000) is a per-host budget of URLs queued per run;
//   - MaxChildren (10,000) bounds the distinct children one prefix of the
//     seen-set's layers gains per run, where the layers are the host, each
//     path segment, then the query: a calendar's ?d=N variants, a session
//     id in the path or a generated name per link all pile children on one
//     prefix while each URL looks ordinary.
//
// The depth limit (MaxDepth, 20 hops) and the redirect-hop limit
// (MaxRedirects, 10) stop whatever gets past them. The counting limits
// use a fixed-size count-min sketch and a Bloom filter of prefixes (about
// 6 MiB by default, whatever the crawl's size): a sketch collision can
// refuse a URL early, a Bloom false positive late, and the counts restart
// with each run (a resumed crawl gets a fresh budget).
//
// Queues are per host (host[:port] of the canonical URL). A host never has
// two entries out at once; after a fetch the host waits
// max(Options.Delay, robots Crawl-delay capped at Options.MaxCrawlDelay),
// raised by adaptive politeness when the fetch was reported with
// [Frontier.ReleaseOutcome] (PolitenessOptions.AdaptiveDelay: DelayFactor
// times its response time; a 429 or 503 doubles the delay up to MaxDelay).
// An entry done with Outcome.RetryAt becomes a stored retry record of its
// host, handed out again, with Attempt+1, once due; a retry never holds
// its host's queue back (retry.go). An entry done with Outcome.Failed
// leaves a failure record, so that a seed given again to AddSeeds, or
// every failed URL (RetryFailed), is queued again (failed.go). Defer puts
// an entry back untouched and holds its host, for a prerequisite such as
// robots.txt.
// Ready hosts are served from a heap ordered by ready time, so hosts that
// waited longest go first (round-robin) and one big site cannot starve the
// others. Within a host, entries leave in discovery order, so a crawl is
// breadth-first.
//
// With Options.Order set to [OrderInlinks], every link of a completed page
// is counted once in a count-min sketch (package countmin, conservative
// update), new URL or not; a host's window is served highest count first
// (seeds above all), and among the hosts whose delay has passed the one
// with the best count goes first. The counts live in memory, never in the
// queue's records: a link raises the rank of its URL if the URL is in its
// host's window, and spilled entries are ranked when read back
// (order.go). [Frontier.Inlinks] returns the sketch for the caller to
// persist; politeness is the same in both orders.
//
// # Persistence
//
// The store is the queue's source of truth: every queued entry is written to
// it, and memory holds only a window of each host's head (Options.HostWindow
// entries, Options.MemoryWindow in all), so the queue is bounded by disk, not
// RAM. Memory still holds one small record per host with queued entries.
//
// A completed fetch is recorded in ONE atomic batch that deletes its entry,
// writes the newly discovered entries, a journal record of every URL just
// inserted into the seen-set, and the counters. Batches of concurrent workers
// are grouped into one store write (group commit). [Frontier.Done] returns
// only after its batch is durable, so after a crash at most the entries
// that workers held (handed out, or released but not yet done: at most one
// per worker) are fetched again. A host is released (its politeness delay
// starts and its next entry may go out) at Release or at the start of Done,
// before the batch is written.
//
// "Durable" is what the Store's Write promises. A store that syncs every
// write to disk makes that hold after a crash of the machine too. A store
// whose Write only hands the batch to the operating system (a [Syncer],
// such as storage.Store with DeferSync) makes it hold after a crash of the
// process, kill -9 included; after a crash of the machine the store comes
// back at an earlier batch (the queue and the journal stay consistent, as
// they are in the same batches), and the fetches completed since the last
// Sync are made again. Checkpoint syncs such a store before the seen-set is
// captured, so a snapshot never claims a URL the disk lacks. Each synced
// write costs a disk flush that Done waits for; at a few thousand pages a
// second it held every worker in Done and stalled the fetches (docs/BENCHMARKS.md).
//
// The seen-set must never claim a URL that the store does not hold: after a
// crash it would be skipped for ever. [Frontier.Checkpoint] therefore stops
// new inserts, waits until every insert already made is durable, lets the
// caller capture the seen-set (for example an mlbf snapshot written with
// storage.WriteFileAtomic), and only once that capture is persisted trims
// the journal it covers. On [Open] the journal left in the store is
// replayed into the seen-set, which the caller has loaded from the last
// snapshot beforehand; [CheckpointGeneration] tells the caller whether a
// snapshot must exist, and Stats.Journal how long the replay would be.
//
// # Concurrency
//
// All methods of a Frontier are safe for concurrent use. The frontier starts
// no goroutines: the group commit is led by whichever Done call arrives
// first.
//
// # Errors
//
// Entries and state that fail to decode are reported as *[CorruptError]
// (errors.Is(err, [ErrCorrupt])). A failed store write breaks the frontier:
// every later call returns the first such error, because the seen-set may
// already hold URLs that the store lost; resume from the store instead.
//
// # Caveats
//
// Scope is decided by host name (without port) and registrable domain of the
// seeds, which are recorded in the store and stay in force on resume.
package frontier
