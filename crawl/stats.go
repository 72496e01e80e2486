package crawl

import (
	"math"
	"slices"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/mlbf"
)

// Stats is a snapshot of a crawl's counters. Fetch counts and Admission are
// this process's, in this run; the rest describe the whole crawl.
type Stats struct {
	// Started is when Run started; zero before.
	Started time.Time
	// Resumed says whether the crawl resumed a saved state (local mode).
	Resumed bool

	Fetch FetchStats

	// Pages is the number of completed fetches in all runs (and by all
	// workers); Errors those that failed.
	Pages, Errors uint64
	// Queued counts entries waiting (and out), on Hosts hosts; InFlight
	// the entries out.
	Queued int64
	// Retrying counts URLs waiting for a retry after a transient
	// failure (Options.Retry): including those out in local mode, in the
	// hosts' retry sets in Redis mode.
	Retrying int64
	// Slowed counts the hosts whose delay is raised now because they
	// answered 429 or 503, EverSlowed those slowed down in this run (in
	// the whole crawl in Redis mode), and Throttled the 429 and 503
	// answers (adaptive politeness).
	Slowed     int
	EverSlowed uint64
	Throttled  uint64
	// SlowedHosts lists the most slowed of them (at most
	// frontier.MaxSlowedHosts; local mode).
	SlowedHosts []frontier.SlowedHost
	Hosts       int
	InFlight    int
	// InMemory counts the queued entries held in the frontier's memory
	// windows; the others waiting are only on disk (spilled; local mode).
	InMemory int
	// New and Duplicates count discovered URLs the seen-set took for new
	// (and queued) and for seen, in this run (all workers in Redis mode).
	New, Duplicates uint64
	// CachedLinks counts the duplicates the frontier's link cache caught
	// before resolving them (local mode).
	CachedLinks uint64
	// ExactChecks counts the filter's "maybe seen" answers checked against
	// the fingerprints of the queued URLs, and FalsePositives those that
	// were new URLs after all, queued instead of lost; ExactLookups those
	// of the checks that read the store (past Options.ExactMemory), and
	// ExactInMemory the fingerprints held in memory (the exact check, the
	// default: see Options.FilterOnly; this run).
	ExactChecks, FalsePositives, ExactLookups, ExactInMemory uint64
	// FilterOnly says the duplicate filter decides alone: no "maybe seen"
	// answer is checked (Options.FilterOnly, or a resumed state begun
	// filter-only). In Redis mode ExactChecks and FalsePositives are the
	// whole crawl's (every worker, every run), from its shared counters.
	FilterOnly bool
	// LostToFilter counts the discovered pages lost to the duplicate
	// filter: new URLs it took for seen, never queued. 0 by construction
	// with the exact check; filter-only, estimated as
	// Filter.ExpectedFalsePositives: each URL charged the rate of the fill
	// it met, not the final rate (which overstated the loss about 6x).
	// Against the false positives the exact check counted on the same
	// crawl: within 1.3x with a fixed filter; an upper estimate, 1.2-2.3x,
	// with a growing one whose first generation was too small to fill its
	// segment layers (TestLostToFilterEstimate).
	LostToFilter float64
	// Admission counts the discovered URLs refused before the seen-set,
	// by reason (this process, this run).
	Admission frontier.AdmissionStats
	// Journal is the number of seen-set inserts a resume would replay;
	// Checkpoint the last checkpoint's generation (local mode).
	Journal    int64
	Checkpoint uint64

	// Continuous describes a continuous crawl (Options.Continuous); zero
	// otherwise.
	Continuous ContinuousStats

	// Filter describes the default duplicate filter; zero when Options.Seen
	// replaced it.
	Filter FilterStats

	// Redis holds the shared counters of a Redis-mode crawl as last read
	// (every second while Run runs, and at its end); nil in local mode.
	Redis *RedisStats
}

// FetchStats counts this process's fetch attempts in this run.
type FetchStats struct {
	Fetched           uint64 // requests that reached a host
	Pages             uint64 // attempts handed to the hooks and the frontier (fetched or failed)
	FetchErrors       uint64 // requests that failed: timeouts, resets, DNS, ...
	HTTPErrors        uint64 // responses with a 4xx or 5xx status
	RobotsDisallowed  uint64 // URLs robots.txt disallowed
	RobotsWaiting     int    // sites whose URLs wait for their robots.txt now (Options.RobotsWait)
	RobotsUnavailable uint64 // URLs that ended as their site's robots.txt could not be fetched within Options.RobotsWait (RFC 9309: disallow all)
	TruncatedLength   uint64 // bodies cut at Fetch.MaxBodySize
	TruncatedTime     uint64 // bodies cut by Fetch.FetchTimeout
	TruncatedLost     uint64 // bodies cut by the server going away
	OutlinksCapped    uint64 // pages whose links were cut at Fetch.MaxOutlinks
	LinksDropped      uint64 // links so cut
	Sitemaps          SitemapStats
	Revisits          uint64 // responses archived as WARC revisit records: their payload was archived before
	RevisitBytes      uint64 // payload bytes those revisits did not store again
	Recrawl           RecrawlStats

	NearDuplicates            uint64        // HTML pages resembling an earlier page at Options.NearDuplicateThreshold
	NearDuplicateLinksSkipped uint64        // links not followed: their page nearly duplicates an earlier page of its host (SkipNearDuplicateLinks)
	NearDuplicateCheck        time.Duration // time spent in the near-duplicate check (shingling, query); the text comes from the link extraction's pass
	NearDuplicateIndexBytes   uint64        // memory of the near-duplicate index (local mode; 0 in Redis mode, where Redis holds it)
	Retried                   uint64        // attempts that failed transiently and were queued for a retry
	RetriesExhausted          uint64        // URLs whose last retry failed transiently too
	// Permanent counts the URLs that ended at once, by reason: the same
	// request would fail the same way.
	Permanent PermanentStats

	// Done is the time the frontier took to take each completed attempt
	// (Frontier.Done: admitting its links, the seen-set inserts, the
	// store's batch), waits for a checkpoint's copy of the filter
	// included: the crawl's insert stalls.
	Done LatencyStats
}

// Spilled returns the queued entries held only on disk: neither in a
// memory window nor out (local mode).
func (s Stats) Spilled() int64 {
	return max(0, s.Queued-int64(s.InFlight)-int64(s.InMemory))
}

// FilterStats describe the duplicate filter.
type FilterStats struct {
	Bytes        uint64  // memory of its bits
	ExpectedURLs uint64  // what it is sized for
	Target       float64 // its false-positive target at ExpectedURLs
	// EstimatedURLs and FalsePositiveRate are estimated from the fill of
	// its bits: the distinct URLs inserted, and the rate at which a new
	// URL is now wrongly taken for seen.
	EstimatedURLs     float64
	FalsePositiveRate float64
	// ExpectedFalsePositives estimates how many new URLs it took for seen
	// so far: the rate each met when it was tested, summed over the
	// inserts (mlbf.Stats.ExpectedFalsePositives). With the exact check
	// they were queued all the same (Stats.FalsePositives counts them);
	// filter-only they are Stats.LostToFilter.
	ExpectedFalsePositives float64
	// Fill is the share of set bits in the layer that carries the target
	// (the integrity layer): of the newest generation, for a growing
	// filter.
	Fill float64
	// Generations counts a growing filter's generations (mlbf.Scalable:
	// each larger, with a tighter rate); 0 for a fixed-size filter.
	Generations int
	// Capacity is the URLs the filter is sized for now: ExpectedURLs for
	// a fixed filter, the sum of its generations' capacities for a
	// growing one.
	Capacity uint64
}

// RedisStats are a Redis-mode crawl's shared counters.
type RedisStats struct {
	redisfrontier.Stats
	// Fill is the share of set bits of each layer of the shared filter.
	Fill []float64
	// Workers are the crawl's workers from their heartbeats, live ones
	// first (at most 1,000).
	Workers []redisfrontier.WorkerInfo
	// At is when they were read; Err why the last read failed, if it did.
	At  time.Time
	Err error
}

// Stats returns the crawl's counters. It does no I/O: in Redis mode the
// shared counters are those last read.
func (c *Crawler) Stats() Stats {
	k := &c.counters
	c.mu.Lock()
	s := Stats{Started: c.started, Resumed: c.resumed}
	c.mu.Unlock()
	s.Fetch = FetchStats{
		Fetched:           k.fetched.Load(),
		Pages:             k.pages.Load(),
		FetchErrors:       k.fetchErrors.Load(),
		HTTPErrors:        k.httpErrors.Load(),
		RobotsDisallowed:  k.robotsDenied.Load(),
		RobotsUnavailable: k.robotsUnavailable.Load(),
		RobotsWaiting:     c.prereq.waiting(),
		TruncatedLength:   k.cutLength.Load(),
		TruncatedTime:     k.cutTime.Load(),
		TruncatedLost:     k.cutDisconnect.Load(),
		OutlinksCapped:    k.outlinksCapped.Load(),
		LinksDropped:      k.linksDropped.Load(),
		Sitemaps:          c.sitemaps.stats(),
		Revisits:          k.revisits.Load(),
		RevisitBytes:      k.revisitBytes.Load(),
		Recrawl:           k.recrawl.stats(),
		Retried:           k.retried.Load(),
		RetriesExhausted:  k.retriesExhausted.Load(),
		Permanent:         k.permanent.stats(),
		Done:              k.done.stats(),
	}
	c.nearDupStats(&s.Fetch)
	if c.front != nil {
		f := c.front.Stats()
		s.Pages, s.Errors, s.Queued, s.Hosts, s.InFlight = f.Pages, f.Errors, f.Queued, f.Hosts, f.InFlight
		s.Retrying = f.Retrying
		s.Slowed, s.EverSlowed, s.Throttled, s.SlowedHosts = f.Slowed, f.EverSlowed, f.Throttled, f.SlowedHosts
		s.InMemory = f.Memory
		s.New, s.Duplicates, s.CachedLinks = f.New, f.Duplicates, f.CachedLinks
		s.ExactChecks, s.FalsePositives, s.ExactLookups, s.ExactInMemory = f.ExactChecks, f.FalsePositives, f.ExactLookups, f.ExactInMemory
		s.FilterOnly = !c.front.Exact()
		s.Admission = frontier.AdmissionStats{Invalid: f.Invalid, TooDeep: f.TooDeep, TooManyRedirects: f.TooManyRedirects,
			OutOfScope: f.OutOfScope, Filtered: f.Filtered, Limits: f.Limits}
		s.Journal, s.Checkpoint = f.Journal, f.Checkpoint
		s.Continuous = continuousStats(c.cont, f.Scheduled, f.Aged)
	}
	if c.filter != nil {
		s.Filter = c.filter.stats()
		s.Filter.ExpectedURLs, s.Filter.Target = c.opts.ExpectedURLs, c.opts.FalsePositiveRate
		if s.Filter.Capacity == 0 {
			s.Filter.Capacity = c.opts.ExpectedURLs
		}
	}
	var rfront *redisfrontier.Frontier
	if r := c.redis; r != nil {
		r.mu.Lock()
		rfront = r.front
		r.mu.Unlock()
	}
	if r := c.redis; rfront != nil {
		s.Admission = rfront.WorkerStats()
		r.mu.Lock()
		rs := &RedisStats{Stats: r.shared, Fill: append([]float64(nil), r.fill...), Workers: append([]redisfrontier.WorkerInfo(nil), r.workers...), At: r.at, Err: r.err}
		growth := r.growth // replaced whole by each refresh, never changed
		exact := r.exact
		cont := r.cont
		r.mu.Unlock()
		s.Redis = rs
		s.Pages, s.Errors, s.Queued, s.Hosts, s.InFlight = rs.Pages, rs.Errors, rs.Queued, int(rs.Hosts), int(rs.Leased)
		s.New, s.Duplicates, s.Retrying = rs.New, rs.Dup, rs.Retrying
		s.Slowed, s.EverSlowed, s.Throttled = int(rs.Slowed), rs.EverSlowed, rs.Throttled
		// The seen-set in Redis does not age: Aged stays 0.
		s.Continuous = continuousStats(cont, rs.Scheduled, 0)
		s.Filter = FilterStats{ExpectedURLs: c.opts.ExpectedURLs, Target: c.opts.FalsePositiveRate, Capacity: c.opts.ExpectedURLs}
		if n := len(rs.Fill); n > 0 {
			s.Filter.Fill = rs.Fill[n-1]
		}
		if lay := r.seen.Layout(); growth == nil && len(rs.Fill) > 0 {
			// A fixed filter: estimated from its integrity layer's fill,
			// as mlbf does for the local one.
			bits := lay.LayerBits()
			m := bits[len(bits)-1] * uint64(r.seen.Shards())
			k := lay.Hashes()
			if f := s.Filter.Fill; f < 1 {
				s.Filter.EstimatedURLs = -float64(m) / float64(k) * math.Log1p(-f)
				n := uint64(s.Filter.EstimatedURLs)
				s.Filter.FalsePositiveRate = mlbf.BlockedFalsePositiveRate(k, m, n)
				// The rate integrated over the inserts, as for a
				// generation of a growing filter (the shards' blocks
				// all alike, so one filter of their bits stands for them).
				s.Filter.ExpectedFalsePositives = mlbf.BlockedExpectedFalsePositives(k, m, n)
			} else {
				s.Filter.FalsePositiveRate = 1
			}
			for _, b := range bits {
				s.Filter.Bytes += b / 8 * uint64(r.seen.Shards())
			}
		}
		if g := growth; g != nil {
			s.Filter.Capacity = 0
			for i, n := range g.Capacity {
				s.Filter.Capacity += n
				s.Filter.EstimatedURLs += float64(g.Keys[i])
			}
			s.Filter.ExpectedFalsePositives = g.ExpectedFalsePositives
			s.Filter.Generations = slices.Max(g.Generations)
			s.Filter.FalsePositiveRate = g.FalsePositiveRate
			for _, b := range g.Bits {
				s.Filter.Bytes += b / 8
			}
		}
		s.FilterOnly = !r.seen.Exact()
		s.ExactChecks, s.FalsePositives = exact.Checks, exact.Caught
	}
	if s.FilterOnly {
		s.LostToFilter = s.Filter.ExpectedFalsePositives
	}
	return s
}
