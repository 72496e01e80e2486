package monitor

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/fetch"
)

// latencyBuckets are the buckets of the fetch-time histograms, in seconds:
// from a fast local server to the default fetch timeout.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// fetchMetrics are the metrics fed by the Observer events. The labelled
// children are resolved once, so that an event costs atomic adds only.
type fetchMetrics struct {
	duration, ttfb, checkpoint prometheus.Histogram
	checkpointBlocked          prometheus.Histogram
	outcomes                   *prometheus.CounterVec
	errKinds                   *prometheus.CounterVec
	classes                    *prometheus.CounterVec
	bytes, warcBytes           prometheus.Counter

	ok, failed, httpError prometheus.Counter
	byKind                [fetch.KindCanceled + 1]prometheus.Counter
	byClass               [6]prometheus.Counter // 1xx to 5xx, [0] other
}

// blockedBuckets are the checkpoint-blocked histogram's bounds: powers of 4
// from 100 µs, and 50 ms, the bound a checkpoint's insert stall is held to, so that the
// blocks over it are counted exactly.
var blockedBuckets = []float64{0.0001, 0.0004, 0.0016, 0.0064, 0.0256, 0.05, 0.1024, 0.4096, 1.6384, 6.5536, 26.2144}

func newFetchMetrics() *fetchMetrics {
	m := &fetchMetrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "layercrawl_fetch_duration_seconds",
			Help: "Time from the start of a fetch until its body was read.", Buckets: latencyBuckets}),
		ttfb: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "layercrawl_fetch_time_to_first_byte_seconds",
			Help: "Time from the start of a fetch to the first byte of the response.", Buckets: latencyBuckets}),
		checkpoint: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "layercrawl_checkpoint_duration_seconds",
			Help: "Duration of the checkpoints of the local crawl state.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		checkpointBlocked: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "layercrawl_checkpoint_blocked_seconds",
			Help: "Part of each checkpoint during which duplicate-filter inserts waited (the filter's memory copy).", Buckets: blockedBuckets}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "layercrawl_fetches_total",
			Help: "Fetches by outcome: ok (2xx/3xx), http_error (4xx/5xx), error (no response)."}, []string{"outcome"}),
		errKinds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "layercrawl_fetch_errors_total",
			Help: "Fetches that got no response, by kind of error."}, []string{"kind"}),
		classes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "layercrawl_http_responses_total",
			Help: "Responses by status class."}, []string{"class"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "layercrawl_fetched_bytes_total",
			Help: "Response body bytes kept (after decompression, up to the body cap)."}),
		warcBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "layercrawl_warc_bytes_total",
			Help: "Compressed bytes of the WARC request and response records written."}),
	}
	m.ok = m.outcomes.WithLabelValues("ok")
	m.httpError = m.outcomes.WithLabelValues("http_error")
	m.failed = m.outcomes.WithLabelValues("error")
	for k := range m.byKind {
		m.byKind[k] = m.errKinds.WithLabelValues(fetch.Kind(k).String())
	}
	m.byClass[0] = m.classes.WithLabelValues("other")
	for c := 1; c < len(m.byClass); c++ {
		m.byClass[c] = m.classes.WithLabelValues(strconv.Itoa(c) + "xx")
	}
	return m
}

func (m *fetchMetrics) observe(ev crawl.FetchEvent) {
	if ev.Err != nil {
		m.failed.Inc()
		if k := int(ev.ErrKind); k < len(m.byKind) {
			m.byKind[k].Inc()
		}
	}
	if ev.Status != 0 {
		if ev.Status >= 400 {
			m.httpError.Inc()
		} else if ev.Err == nil {
			m.ok.Inc()
		}
		c := ev.Status / 100
		if c < 1 || c >= len(m.byClass) {
			c = 0
		}
		m.byClass[c].Inc()
		m.duration.Observe(ev.Duration.Seconds())
		m.ttfb.Observe(ev.TTFB.Seconds())
	}
	m.bytes.Add(float64(ev.Bytes))
	m.warcBytes.Add(float64(ev.WARCBytes))
}

func (m *fetchMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.duration, m.ttfb, m.checkpoint, m.checkpointBlocked, m.outcomes, m.errKinds, m.classes, m.bytes, m.warcBytes}
}

// Describe implements prometheus.Collector.
func (m *fetchMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *fetchMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// statsCollector exposes the last sample of Crawler.Stats: a scrape never
// calls into the crawl.
type statsCollector struct{ m *Monitor }

type statDesc struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

func newStat(name, help string, typ prometheus.ValueType, labels ...string) statDesc {
	return statDesc{prometheus.NewDesc(name, help, labels, nil), typ}
}

var (
	statPagesFetched = newStat("layercrawl_pages_fetched_total", "Requests that reached a host, by this process in this run.", prometheus.CounterValue)
	statPagesDone    = newStat("layercrawl_pages_processed_total", "Fetch attempts handed to the hooks and the frontier, by this process in this run.", prometheus.CounterValue)
	statRobots       = newStat("layercrawl_robots_refused_total", "URLs refused by robots.txt: disallowed, or unavailable (robots.txt could not be fetched).", prometheus.CounterValue, "outcome")
	statTruncated    = newStat("layercrawl_bodies_truncated_total", "Response bodies cut, by reason.", prometheus.CounterValue, "reason")
	statLinksDropped = newStat("layercrawl_outlinks_dropped_total", "Links dropped beyond the per-page outlink cap.", prometheus.CounterValue)
	statDiscovered   = newStat("layercrawl_discovered_urls_total", "Discovered URLs that reached the duplicate filter, by result (new and queued, or duplicate).", prometheus.CounterValue, "result")
	statRejected     = newStat("layercrawl_admission_rejected_total", "Discovered URLs refused before the duplicate filter, by reason.", prometheus.CounterValue, "reason")
	statTraps        = newStat("layercrawl_trap_limit_hits_total", "Discovered URLs refused by a trap limit, by limit.", prometheus.CounterValue, "limit")
	statQueued       = newStat("layercrawl_queue_entries", "Entries in the frontier, waiting or out.", prometheus.GaugeValue)
	statHosts        = newStat("layercrawl_queue_hosts", "Hosts with queued entries or one out.", prometheus.GaugeValue)
	statInFlight     = newStat("layercrawl_fetches_in_flight", "Entries out for fetching.", prometheus.GaugeValue)
	statJournal      = newStat("layercrawl_journal_entries", "Seen-set inserts a resume would replay (local mode).", prometheus.GaugeValue)
	statCrawlPages   = newStat("layercrawl_crawl_pages", "Completed fetches of the crawl in all its runs (and all workers).", prometheus.GaugeValue)
	statCrawlErrors  = newStat("layercrawl_crawl_errors", "Failed fetches of the crawl in all its runs (and all workers).", prometheus.GaugeValue)
	statFill         = newStat("layercrawl_filter_fill_ratio", "Share of set bits in the duplicate filter's integrity layer.", prometheus.GaugeValue)
	statFPEstimated  = newStat("layercrawl_filter_false_positive_rate", "Estimated rate at which the duplicate filter takes a new URL for seen.", prometheus.GaugeValue)
	statFPTarget     = newStat("layercrawl_filter_false_positive_rate_target", "The duplicate filter's false-positive target: kept by a growing filter, met at its expected URLs by a fixed one.", prometheus.GaugeValue)
	statFilterURLs   = newStat("layercrawl_filter_estimated_urls", "Distinct URLs in the duplicate filter, estimated from its fill.", prometheus.GaugeValue)
	statFilterBytes  = newStat("layercrawl_filter_bytes", "Memory of the duplicate filter's bits.", prometheus.GaugeValue)
	statFilterGens   = newStat("layercrawl_filter_generations", "Generations of the growing duplicate filter (each larger, with a tighter rate); 0 for a fixed-size filter.", prometheus.GaugeValue)
	statFilterCap    = newStat("layercrawl_filter_capacity_urls", "URLs the duplicate filter is sized for now: the expected URLs of a fixed filter, the sum of a growing filter's generations.", prometheus.GaugeValue)
	statPagesLost    = newStat("layercrawl_filter_pages_lost", "Discovered pages lost to the duplicate filter's false positives: 0 by construction with the exact check (the default), estimated from the filter's rate when filter-only.", prometheus.GaugeValue)
	statFPCaught     = newStat("layercrawl_filter_false_positives_caught_total", "False positives of the duplicate filter the exact check caught and queued, by this process in this run.", prometheus.CounterValue)
	statStart        = newStat("layercrawl_start_time_seconds", "When the crawl's Run started, in Unix seconds.", prometheus.GaugeValue)
	statInMemory     = newStat("layercrawl_queue_entries_in_memory", "Queued entries held in the frontier's memory windows (local mode).", prometheus.GaugeValue)
	statSpilled      = newStat("layercrawl_queue_entries_spilled", "Queued entries held only on disk: neither in a memory window nor out (local mode).", prometheus.GaugeValue)
	statHostsWaiting = newStat("layercrawl_hosts_waiting", "Hosts with queued entries and none out: waiting for their delay or a worker.", prometheus.GaugeValue)
	statSlowed       = newStat("layercrawl_hosts_slowed", "Hosts whose delay adaptive politeness raised after a 429 or 503 answer, now (local mode).", prometheus.GaugeValue)
	statEverSlowed   = newStat("layercrawl_hosts_slowed_total", "Times a host went from its normal pace to slowed, this run (local mode).", prometheus.CounterValue)
	statThrottled    = newStat("layercrawl_throttling_responses_total", "Answers 429 or 503 that asked to slow down, this run (local mode).", prometheus.CounterValue)
	statRetries      = newStat("layercrawl_retries_total", "Fetch attempts that failed transiently and were queued for a retry, by this process in this run.", prometheus.CounterValue)
	statExhausted    = newStat("layercrawl_retries_exhausted_total", "URLs whose last retry failed transiently too, by this process in this run.", prometheus.CounterValue)
	statRetrying     = newStat("layercrawl_retry_waiting_urls", "URLs waiting for a retry, including those out (local mode).", prometheus.GaugeValue)
	statRevisits     = newStat("layercrawl_revisits_total", "Responses archived as WARC revisit records, their payload archived before, this run.", prometheus.CounterValue)
	statRevisitBytes = newStat("layercrawl_revisit_saved_bytes_total", "Payload bytes the revisit records did not store again, this run.", prometheus.CounterValue)
	statNearDups     = newStat("layercrawl_near_duplicates_total", "HTML pages resembling an earlier page at the near-duplicate threshold, this run.", prometheus.CounterValue)
	statDone         = newStat("layercrawl_frontier_done_duration_seconds", "Time the frontier took to take a completed fetch (its links admitted and inserted in the duplicate filter, its batch stored), checkpoint waits included, this run.", prometheus.UntypedValue)
	statPermanent    = newStat("layercrawl_permanent_failures_total", "URLs that ended at once without a retry, as the same request would fail the same way, by reason, this run.", prometheus.CounterValue, "reason")
	statRobotsWait   = newStat("layercrawl_robots_waiting_sites", "Sites whose URLs wait for their robots.txt to answer (local mode).", prometheus.GaugeValue)
	statRecrawl      = newStat("layercrawl_recrawl_pages_total", "With earlier crawls given (--previous): URLs by what became of them against their earlier capture, unchanged (archived as a revisit), changed, new or gone, this run.", prometheus.CounterValue, "outcome")
	statRecrawlBytes = newStat("layercrawl_recrawl_saved_bytes_total", "With earlier crawls given (--previous): payload bytes the unchanged pages' revisit records did not store again, this run.", prometheus.CounterValue)
	statDoneMax      = newStat("layercrawl_frontier_done_max_seconds", "Longest time the frontier took to take a completed fetch, this run.", prometheus.GaugeValue)

	allStats = []statDesc{statPagesFetched, statPagesDone, statRobots, statTruncated, statLinksDropped, statDiscovered,
		statRejected, statTraps, statQueued, statHosts, statInFlight, statJournal, statCrawlPages, statCrawlErrors,
		statFill, statFPEstimated, statFPTarget, statFilterURLs, statFilterBytes, statFilterGens, statFilterCap, statPagesLost, statFPCaught, statStart,
		statInMemory, statSpilled, statHostsWaiting, statSlowed, statEverSlowed, statThrottled,
		statRetries, statExhausted, statRetrying, statRevisits, statRevisitBytes, statNearDups, statDone, statDoneMax,
		statPermanent, statRobotsWait, statRecrawl, statRecrawlBytes}
)

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allStats {
		ch <- d.desc
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.stats.Load()
	if s == nil {
		return // not sampled yet
	}
	put := func(d statDesc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d.desc, d.typ, v, labels...)
	}
	f := s.Fetch
	put(statPagesFetched, float64(f.Fetched))
	put(statPagesDone, float64(f.Pages))
	put(statRobots, float64(f.RobotsDisallowed), "disallowed")
	put(statRobots, float64(f.RobotsUnavailable), "unavailable")
	p := f.Permanent
	put(statPermanent, float64(p.BlockedAddress), "blocked_address")
	put(statPermanent, float64(p.TLS), "tls_certificate")
	put(statPermanent, float64(p.DNSNotFound), "dns_not_found")
	put(statPermanent, float64(p.UnsupportedScheme), "unsupported_scheme")
	put(statPermanent, float64(p.MalformedURL), "malformed_url")
	put(statRobotsWait, float64(f.RobotsWaiting))
	put(statTruncated, float64(f.TruncatedLength), "length")
	put(statTruncated, float64(f.TruncatedTime), "time")
	put(statTruncated, float64(f.TruncatedLost), "disconnect")
	put(statLinksDropped, float64(f.LinksDropped))
	put(statDiscovered, float64(s.New), "new")
	put(statDiscovered, float64(s.Duplicates), "duplicate")
	a := s.Admission
	put(statRejected, float64(a.OutOfScope), "out_of_scope")
	put(statRejected, float64(a.Filtered), "filtered")
	put(statRejected, float64(a.TooDeep), "too_deep")
	put(statRejected, float64(a.TooManyRedirects), "too_many_redirects")
	put(statRejected, float64(a.Invalid), "invalid")
	put(statRejected, float64(a.Limits.Total()), "trap_limit")
	l := a.Limits
	put(statTraps, float64(l.TooLong), "max_url_length")
	put(statTraps, float64(l.TooManySegments), "max_path_segments")
	put(statTraps, float64(l.RepeatedSegment), "max_segment_repeats")
	put(statTraps, float64(l.HostBudget), "max_host_urls")
	put(statTraps, float64(l.TooManyChildren), "max_children")
	put(statQueued, float64(s.Queued))
	put(statHosts, float64(s.Hosts))
	put(statInFlight, float64(s.InFlight))
	put(statJournal, float64(s.Journal))
	put(statCrawlPages, float64(s.Pages))
	put(statCrawlErrors, float64(s.Errors))
	put(statFill, s.Filter.Fill)
	put(statFPEstimated, s.Filter.FalsePositiveRate)
	put(statFPTarget, s.Filter.Target)
	put(statFilterURLs, s.Filter.EstimatedURLs)
	put(statFilterBytes, float64(s.Filter.Bytes))
	put(statFilterGens, float64(s.Filter.Generations))
	put(statFilterCap, float64(s.Filter.Capacity))
	put(statPagesLost, s.LostToFilter)
	put(statFPCaught, float64(s.FalsePositives))
	if !s.Started.IsZero() {
		put(statStart, float64(s.Started.UnixNano())/1e9)
	}
	put(statInMemory, float64(s.InMemory))
	put(statSpilled, float64(s.Spilled()))
	put(statHostsWaiting, float64(max(0, s.Hosts-s.InFlight)))
	put(statSlowed, float64(s.Slowed))
	put(statEverSlowed, float64(s.EverSlowed))
	put(statThrottled, float64(s.Throttled))
	put(statRetries, float64(f.Retried))
	put(statExhausted, float64(f.RetriesExhausted))
	put(statRetrying, float64(s.Retrying))
	put(statRevisits, float64(f.Revisits))
	put(statRevisitBytes, float64(f.RevisitBytes))
	put(statNearDups, float64(f.NearDuplicates))
	r := f.Recrawl
	put(statRecrawl, float64(r.Unchanged), "unchanged")
	put(statRecrawl, float64(r.Changed), "changed")
	put(statRecrawl, float64(r.New), "new")
	put(statRecrawl, float64(r.Gone), "gone")
	put(statRecrawlBytes, float64(r.BytesSaved))
	d := f.Done
	if len(d.Buckets) == len(crawl.DoneBuckets()) {
		buckets := make(map[float64]uint64, len(d.Buckets))
		for i, b := range crawl.DoneBuckets() {
			buckets[b.Seconds()] = d.Buckets[i]
		}
		ch <- prometheus.MustNewConstHistogram(statDone.desc, d.Count, d.Sum.Seconds(), buckets)
	}
	put(statDoneMax, d.Max.Seconds())
}
