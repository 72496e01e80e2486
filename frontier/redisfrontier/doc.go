// Package redisfrontier lets several crawler processes, on one machine or
// many, share one crawl through Redis: a seen-set (a multi-layer Bloom
// filter held in Redis bitmaps) and a frontier (per-host queues with
// politeness and leases). Workers talk only to Redis, never to each other.
//
// # Seen-set
//
// [Seen] implements frontier.Seen. The filter is split into N shards (by
// default 1 on a single server and 16 on a Cluster, more if needed so that
// no bitmap key exceeds SeenOptions.MaxKeyBytes); a URL goes to the shard
// its integrity hash selects ([mlbf.Layout.Probes] returns that route),
// and each shard holds
// all L+1 layers one after the other in one bitmap key, beside its marker
// and its stored answers under one hash tag, so every key one check
// touches sits on one Redis Cluster slot. Every layer of a shard is
// 1/N of the whole layer: the Redis filter holds exactly the bits of N
// in-memory mlbf.Filter values made with [ShardOptions] of [SeenSizing]'s
// options (tested bit for bit). Layers 1..L then see each common segment
// (a host) once per shard, which loosens their early filtering; the
// integrity layer, which carries the false-positive target, is unaffected.
//
// A filter sized from a target (SeenOptions.Filter with ExpectedURLs and
// FalsePositiveRate, or Growth) gets about half the probes per layer mlbf
// would give it ([SeenSizing]): each probe a new URL sets is one operation
// of the script, so Redis's CPU per new URL follows k, while the bits
// grow slowly below the best k. At 1%, k=3 costs Redis 0.92 µs of CPU
// per new URL against 1.49 µs at mlbf's k=6, for 27% more bits (12.6 per
// URL against 9.9); a pipelined SADD of the URL's SHA1 costs 0.93 µs and
// about 640 bits (BenchmarkSeenVsSADD, docs/BENCHMARKS.md).
//
// A check-and-insert is one Lua script call per shard (EVALSHA), atomic on
// the server: of any number of concurrent checks of one new URL, from any
// number of goroutines and processes, exactly one reports it new. The
// probes are computed by the worker, which sends only those it does not
// know to be set (bits only go from 0 to 1: those it set or saw set
// itself, and those an earlier URL of the same call sets).
// [Seen.TestAndAddBatch] checks many URLs in one pipelined round trip, and
// concurrent [Seen.TestAndAdd] calls are gathered into such batches. The
// parameters (the bit layout's version, mlbf.HashID, mode, layers,
// hashes, shard sizes, batch size) are stored with the filter; a worker
// configured differently, or one that lays the bits out another way (an
// older layercrawl), fails to start with [ErrIncompatible]. Every script
// call carries an id and its answer is kept for SeenOptions.ResultTTL, so
// a call retried after a lost reply gets its first answer, not its own
// bits.
//
// # Exact check
//
// With SeenOptions.Exact the filter's "maybe seen" answers are verified,
// so that no new URL is lost to a false positive. Each key's fingerprint
// ([Fingerprint]: the first 8 bytes of the SHA-256 of the canonical URL,
// as frontier.Frontier's exact check) goes with its probes into the same
// script call, which adds it to a bucket set of the key's shard,
// {tag}:x:<bucket> (the bucket is chosen by the fingerprint's high
// bits), after the filter's test-and-set: a key the filter answered
// present whose fingerprint SADD added is a false positive, answered new
// (and counted in the hash {tag}:xs). The check is part of the atomic
// call, so of any number of concurrent checks of one new URL exactly one
// reports it new, and the stored answer of a retried or replayed call
// carries it. A "new" answer of the filter stays final: two URLs whose
// fingerprints collide lose one only if the filter errs for it too
// (docs/DESIGN.md, "Exact dedup"). The bucket keys are named by the
// script under the shard's hash tag, so on a Cluster they sit on the
// shard's slot.
//
// Fingerprints are sent as signed 64-bit decimals, which Redis keeps in an
// intset: 8 bytes each, sorted, while a set holds at most
// set-max-intset-entries (512 by default). The buckets are sized when the
// seen-set is created, ExactBucketFill (128) fingerprints each at
// SeenOptions.ExactURLs, so that they stay intsets up to 3x that count;
// BenchmarkSeenExact measured 9.8 bytes of Redis memory per URL for the
// buckets on a million URLs (docs/DISTRIBUTED.md has the figures and the
// command). Past about 4x, buckets turn into hash tables, several times
// larger per URL: size ExactURLs for the crawl, or raise
// set-max-intset-entries.
//
// # Salt and mode
//
// With SeenOptions.Salted the worker that creates a seen-set draws a
// random 64-bit salt (mlbf.Options.Salt) and stores it with the
// parameters, with the mode (exact or filter-only) and the exact check's
// bucket count; every other worker, and a resumed crawl, reads them from
// there before computing a probe, so all agree on every bit's position.
// Two workers creating a seen-set at once both read it absent; the one
// whose claim loses opens it again with the winner's choices. A seen-set
// stored without them (an earlier layercrawl's) opens unsalted and
// filter-only.
//
// # A seen-set that grows
//
// With SeenOptions.Growth the filter grows as a scalable Bloom filter
// (Almeida et al. 2007; mlbf.Scalable is the in-memory one): generation
// i holds Growth.ExpectedURLs·Growth^i keys at rate
// p·(1-r)·r^i (mlbf.ScalableOptions.Generation), so the compound rate
// stays within p = Growth.FalsePositiveRate however many URLs arrive.
// Generations are kept per shard, as keys under the shard's hash tag:
// {tag}:bits is generation 0, {tag}:bits:<i> generation i, each 1/N of
// the whole generation (ShardOptions), and the hash {tag}:g holds the
// shard's generation count g and the keys its newest generation reported
// new, n. A key's shard is the same in every generation. Inserts go to
// the newest generation; the shard's script counts the keys it reports
// new and, when n reaches the generation's per-shard capacity, adds the
// next generation in the same atomic step (allocating its bitmap at full
// size, which blocks Redis for the time it takes to zero it) and stops the
// call there. A shard with Growth^i x more keys than another sits on
// one Cluster slot all the same, so on a Cluster the shards grow
// independently and spread over the masters as before.
//
// Old generations never change again. Each worker downloads them once
// (GETRANGE, 4 MiB at a time) and tests every key against them itself:
// a key found there is sent with no probes, answered present by the
// script, and leaves the newest generation untouched. The worker sends
// its generation count with every call; a script that finds the shard
// grown past it changes nothing and replies "stale" with the count, and
// the worker downloads what became old and sends the call again. So
// exactly one of any number of concurrent checks of a new URL reports it
// new, across a growth too. A call stopped by a growth goes on from its
// first unanswered key under its id plus that index, and every stored
// answer carries the generation count it was computed with and the count
// after it: a retried call or a replayed batch gets the first answers and
// the same split into calls, whichever worker finishes it and whatever
// the generations are by then. A generation count or any growth
// parameter (growth, tightening, first capacity, target, the generations
// MaxKeyBytes allows and their geometry) that differs from the one stored
// fails OpenSeen with [ErrIncompatible], naming the difference; a fixed
// and a growing seen-set refuse each other. [Seen.Growth] reports every
// shard's generations, their keys, bits and fill, and the estimated
// compound rate; Fill reports the newest generations.
//
// Costs. Redis holds every generation: with growth 2 and tightening 0.5,
// 12.5x the first capacity at 1% takes 4 generations (the newest
// two-thirds full) and 23.3 bits per URL, against 12.6 for a fixed filter
// sized for the final count (TestSeenGrowthStaysWithinTarget, which
// measures 0.86% false positives). Every worker holds the old
// generations in memory (44% of those bits), whatever NoLocalBits says,
// plus (without NoLocalBits) the bits it knows set in the newest ones: at
// most the filter's size in Redis, as for a fixed filter. A worker
// downloads each generation of each shard once, when it becomes old (or
// when the worker starts). Per key, the worker hashes it once per
// generation, and the script sets the newest generation's probes, more of
// them as the rate tightens. A generation whose per-shard bitmap would
// exceed MaxKeyBytes is never added: a shard that reaches the last allowed
// generation keeps inserting into it past its capacity and its rate
// climbs (GrowthStats.Saturated); choose Shards for the URLs expected.
//
// # Frontier
//
// [Frontier] mirrors the method set of frontier.Frontier (AddSeeds, Next,
// Done, Stats), using its Entry and Outcome types, so one crawl loop drives
// both. Per-host queues are Redis lists (sorted sets with inlinks: see
// Crawl order); a sorted set orders the hosts that
// may be fetched by the time they may next be fetched (politeness holds
// across workers), and a second sorted set holds host leases with their
// expiry: a host is out to at most one worker at a time. All frontier keys
// share one hash tag (one Cluster slot); every state change is one Lua
// script.
//
// A completed fetch is recorded in two steps: first its discovered links
// are staged under the host's lease, then they are checked in the seen-set
// with a batch id recorded in the stage, then the new ones are queued and
// the lease released in one script. If the worker dies, its lease expires:
// an unstaged entry goes back to the head of its host's queue (so at most
// the entries in flight are fetched twice: at-least-once); a staged one is
// finished by the next worker, which replays the seen-set calls under the
// same ids and so gets the same answers. No discovered URL is lost.
//
// An entry that ends failed without a retry leaves a failure record (its
// time and entry) in a hash beside the queues: [Frontier.RetryFailed]
// queues them all again, each once whichever workers call it, and
// AddSeeds queues again a seed given again that failed before the
// worker's run began, when the crawl is idle. [Frontier.Defer] puts an
// entry back at the head of its host's queue, its attempt count
// unchanged, and holds the host for every worker until a given time: the
// crawl's robots.txt prerequisite. Every response is counted in the
// shared stats (Stats.Responses), so that a worker can tell a crawl that
// fetched nothing.
//
// Every discovered link and redirect target passes the same checks as in
// the single-machine frontier before the seen-set, through one
// frontier.Admission per Frontier: scope, Allow/Deny, depth, redirect hops
// and the trap limits of Options.Limits (URL length, path segments,
// repeated segments, URLs per host, children per prefix). The static
// checks (length, segments, repeats) behave exactly as on one machine. The
// counting ones (MaxHostURLs, MaxChildren) and every refusal count are per
// worker, not shared: each worker counts only the URLs it discovered and
// queued (a host may get up to one budget per worker in all), and it
// checks a whole page's links before the seen-set answers, so one page may
// overshoot a budget by its own new links. [Frontier.WorkerStats] returns
// this worker's counts; [Frontier.Stats] the shared ones.
//
// # Crawl order
//
// With Options.Order frontier.OrderInlinks (order.go) a page's distinct
// links are counted in a count-min sketch with conservative update held
// in one string key, counting as a countmin.Sketch of its shape and seed,
// by the same script that queues its new URLs, under the host's lease (so
// a retried or replayed commit counts once). A host's URLs wait in a
// sorted set ranked by their count, seeds first, the oldest first among
// equals; a counted link raises a queued URL in place. Hosts whose
// politeness delay has passed move to a second sorted set ranked by their
// best URL, and Next leases the best. The first worker of a crawl stores
// its order and the sketch's shape and seed; a worker given another order
// fails with [ErrOrderMismatch].
//
// # Continuous crawling
//
// With Options.Continuous (schedule.go) the frontier keeps the crawl's
// revisit schedule, as frontier.Frontier does in its store: Done with an
// Outcome.Schedule stores the URL's due time in a sorted set and its
// visit record (the caller's record, with the host and entry that queue
// it again) in a hash, in the script call that completes the lease, so
// that a worker killed at any point leaves the URL leased (its lease's
// expiry queues it again) or scheduled, never lost and never twice. Next
// moves due URLs into their hosts' queues, 256 per script call, when the
// earliest due time (returned with every reply of its script) has come,
// and never reports a continuous crawl exhausted. [Frontier.ScheduleRecord]
// and [Frontier.ScheduleRecords] read the records back. [Frontier.Pace]
// spaces all the workers' fetches by one slot sequence kept in Redis, on
// the server's clock (TIME): a crawl-wide budget.
//
// # Persistence and Redis restarts
//
// While Redis is unreachable (or loading, or failing over) every call
// retries with exponential backoff until its context ends (a script reply
// of an unexpected shape is not retried: it is an error wrapping
// [ErrCorrupt], never read as an empty answer); nothing a
// worker has not seen acknowledged is lost, because every write is
// idempotent or guarded by a lease token. Next is idempotent per lease
// token too: a retry after a lost reply gets the lease the first attempt
// took, rather than taking a second one and orphaning the first until it
// expires. Redis with persistence (AOF, or
// RDB saved at shutdown) keeps the whole crawl across a restart. Without
// persistence the crawl's keys vanish; the seen-set detects that through
// its per-shard markers and fails with [ErrStateLost] instead of silently
// crawling everything again. See docs/DISTRIBUTED.md.
//
// An outage is reported once when it starts and once when it ends, with
// its duration, to Config.Logger, which also receives go-redis's own log
// lines (process-wide: see [Client]). [Dial] gives up after
// Config.ConnectTimeout with [ErrUnreachable]. Worker liveness survives
// an outage: every liveness key expires by the clock meanwhile, so a
// worker reaps nothing until it has been connected without a break for
// [ReapGrace] (a third of the liveness), long enough for every live
// worker to beat again; a worker that died before the outage is reaped
// then (TestDeadWorkerReclaimedAcrossOutage: 13s after its death, with a
// 10s outage half a second after it, at the default 2s heartbeat).
//
// # Concurrency
//
// Client, Seen and Frontier are safe for concurrent use. No goroutines are
// started.
package redisfrontier
