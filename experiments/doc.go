// Package experiments replays real URL sets through the classic Bloom filter
// and the multi-layer Bloom filter to measure false positives and timings,
// reproducing Figs. 5-7 of the MLBF paper (Cen, Xu and Sun) and comparing
// the structures fairly (equal memory, equal probes).
//
// # Basics
//
// LoadDataset reads URL files once (plain text or gzip, detected by content;
// plain lists, Sogou query-log lines and "id<TAB>url" lines), as if
// concatenated, and keeps each distinct URL once. NewPlan splits the
// distinct URLs, deterministically for a seed, into an insertion sequence
// and a disjoint holdout set, and fixes the checkpoints n. Run makes one
// insertion pass per structure and, at each checkpoint, runs both
// workloads: url+id (the paper's: each inserted URL queried with its unique
// ID appended) and holdout (real URLs never inserted): the n sweep, in
// which each structure's memory is fixed. The memory sweep fixes n instead
// (Plan.SweepN, by default the largest checkpoint) and rebuilds every
// structure at each total memory of bits per URL times n
// (BuildSweepStructures), one insertion pass per size, then runs the same
// workloads: the false-positive rate against bits per URL at fixed n. RunFP
// does all of it and writes fp.csv (a trailing sweep column tells the rows
// of the two sweeps apart), the plots (PNG and SVG) and report.md.
//
// # Crawl order
//
// RunOrder measures crawl orders rather than filters: it generates a web
// with a known link graph (internal/linkweb), serves it on loopback, crawls
// it once per OrderVariant per run (interleaved; in this process, or as
// child processes of a crawler binary, OrderConfig.Crawler) with a page
// budget, and scores each crawl's pages, in the order their fetches
// started, by the share of the top pages by in-degree and the PageRank
// they hold. It also simulates fifo, exact in-link order and count-min
// sketches of several sizes on the same graph, and writes
// order_runs.csv, order_curves.csv, plots and report.md. The web and the
// simulations are deterministic for a seed; the crawls are not (fetches
// complete in any order), hence several runs and intervals. A crawl's
// state lives in OutDir/crawls and is removed after the crawl.
//
// # Guarantees
//
//   - Determinism: for given sources, options and seed, the plan, the
//     structures and every count (queries, false positives, members
//     excluded) are identical across runs and Go versions (the permutation
//     uses its own SplitMix64 generator). Timings are wall-clock and vary.
//   - Checkpoints: queries never change a filter, so at checkpoint n the
//     filter holds exactly the first n URLs of the insertion sequence; the
//     insert time at n is the mean over those n insertions. The memory
//     sweep's filters hold exactly the first SweepN URLs.
//   - Equal memory in the memory sweep: every structure gets b·n bits (the
//     multi-layer ones rounded down to their layer granularity, never up);
//     a point a structure cannot be built at is left out and reported, not
//     given more memory.
//   - Ground truth: a query whose key equals an inserted URL's key is a true
//     member, not a false positive; it is excluded from the counted queries
//     and reported (excluded_members). The key is the exact string for
//     classic filters and the segment list for multi-layer filters, which
//     drop the scheme.
//   - Errors: bad input lines are counted by reason and skipped, never
//     fatal, whatever their length or encoding (invalid UTF-8 is kept byte
//     for byte). An unreadable file, a corrupt gzip stream, bad options or a
//     cancelled context end the run with an error prefixed "experiments:";
//     option errors wrap ErrInvalidOptions, empty inputs ErrNoData.
//   - Requested n values beyond the data are reported (Plan.Dropped) and the
//     last checkpoint is all the data: nothing is padded.
//   - Outputs are written to a temporary file and renamed into place.
//
// # Concurrency
//
// The functions may be called concurrently on distinct values. Run measures
// RunOptions.Parallel structures at once (default 1, for clean timings);
// a Plan is read-only once built and shared by them. A nil *Progress is a
// valid no-op; a non-nil one is safe for concurrent use.
//
// # Caveats
//
// The whole dataset, the url+id query strings and, during Run's set-up, one
// key index live in memory: about 700 MiB of peak RSS for the 1.5 million
// URLs of the shared datasets.
package experiments
