package monitor

import (
	"runtime"
	"time"

	"github.com/layercrawl/layercrawl/crawl"
)

// Status is the document of /status.json and of the status page. Every
// table in it is bounded by Options, whatever the size of the crawl.
type Status struct {
	Time    time.Time `json:"time"`
	Started time.Time `json:"started"`
	// Mode is "local" or "redis"; in Redis mode Worker names this
	// process and Redis is the server's URL without userinfo.
	Mode   string `json:"mode"`
	Worker string `json:"worker,omitempty"`
	Redis  string `json:"redis,omitempty"`
	Done   bool   `json:"done"`
	// GOMAXPROCS is how many threads may run the process's Go code at
	// once now; crawler crawl adapts it to the crawl (--cpus).
	GOMAXPROCS int `json:"gomaxprocs"`

	Totals Totals `json:"totals"`
	// Rate holds pages fetched per second over the last samples, oldest
	// first.
	Rate  []RatePoint `json:"rate"`
	Queue Queue       `json:"queue"`
	// Errors counts failed fetches by kind (fetch error kinds, http-4xx,
	// http-5xx); TrapLimits discovered URLs refused by each trap limit;
	// Refused the other refusals (robots.txt, scope, depth...).
	Errors     []Count `json:"errors"`
	TrapLimits []Count `json:"trap_limits"`
	Refused    []Count `json:"refused"`
	Filter     Filter  `json:"filter"`
	// BusiestHosts and SlowestHosts (by mean fetch time) are the top
	// hosts among the first Options.MaxHosts seen; the fetches of later
	// hosts are counted in UntrackedHosts.
	BusiestHosts []HostRow `json:"busiest_hosts"`
	SlowestHosts []HostRow `json:"slowest_hosts"`
	// SlowedHosts are the hosts adaptive politeness slows down most now,
	// after 429 or 503 answers (at most frontier.MaxSlowedHosts; local
	// mode).
	SlowedHosts    []SlowedRow    `json:"slowed_hosts"`
	UntrackedHosts uint64         `json:"untracked_host_fetches"`
	Recent         []FetchRow     `json:"recent"`
	Checkpoint     *CheckpointRow `json:"checkpoint,omitempty"`
	// Workers lists, in Redis mode, every worker of the crawl read from
	// Redis (heartbeats and leases), live ones first, and SharedAt when
	// they and the shared counters were read.
	Workers  []WorkerRow `json:"workers,omitempty"`
	SharedAt time.Time   `json:"shared_at,omitzero"`
	// SharedError is why the last read of the shared counters failed.
	SharedError string `json:"shared_error,omitempty"`
}

// Totals are the crawl's main counters.
type Totals struct {
	// Fetched, FetchErrors, HTTPErrors, Bytes and WARCBytes are this
	// process's in this run; Pages and Errors the crawl's in all runs
	// (and all workers).
	Fetched        uint64  `json:"fetched"`
	FetchErrors    uint64  `json:"fetch_errors"`
	HTTPErrors     uint64  `json:"http_errors"`
	Pages          uint64  `json:"pages"`
	Errors         uint64  `json:"errors"`
	Bytes          uint64  `json:"bytes"`
	WARCBytes      uint64  `json:"warc_bytes"`
	New            uint64  `json:"new"`
	Duplicates     uint64  `json:"duplicates"`
	PagesPerSecond float64 `json:"pages_per_second"`
	// Retried counts attempts that failed transiently and were queued
	// for a retry, RetriesExhausted the URLs whose last retry failed too;
	// Revisits the responses archived as revisit records, NearDuplicates
	// the pages resembling an earlier one (this process, this run).
	Retried          uint64 `json:"retried"`
	RetriesExhausted uint64 `json:"retries_exhausted"`
	Revisits         uint64 `json:"revisits"`
	NearDuplicates   uint64 `json:"near_duplicates"`
	// Recrawl counts what became of the URLs against the earlier crawls'
	// captures (crawl.Options.Previous); absent without them.
	Recrawl *crawl.RecrawlStats `json:"recrawl,omitempty"`
}

// Queue describes the frontier.
type Queue struct {
	Queued   int64  `json:"queued"`
	Hosts    int    `json:"hosts"`
	InFlight int    `json:"in_flight"`
	Journal  int64  `json:"journal"`
	Gen      uint64 `json:"checkpoint"`
	// InMemory and Spilled split the waiting entries between the memory
	// windows and the disk; Retrying counts URLs waiting for a retry;
	// Slowed the hosts slowed down now (local mode).
	InMemory int   `json:"in_memory"`
	Spilled  int64 `json:"spilled"`
	Retrying int64 `json:"retrying"`
	Slowed   int   `json:"slowed"`
}

// WorkerRow is a worker of a Redis-mode crawl: its lease id, its name,
// "alive" or "gone" (its liveness expired) or "no heartbeat" (it holds
// leases but does not beat), the age of its last beat in seconds (-1
// without one), its pages and entries in flight as it last reported, and
// the hosts it holds leased now.
type WorkerRow struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	State       string  `json:"state"`
	BeatAgeSecs float64 `json:"beat_age_s"`
	Pages       uint64  `json:"pages"`
	InFlight    int     `json:"in_flight"`
	Leased      int     `json:"leased"`
}

// SlowedRow is a host adaptive politeness slowed down.
type SlowedRow struct {
	Host        string  `json:"host"`
	DelayMillis float64 `json:"delay_ms"`
}

// Filter describes the duplicate filter against its target.
type Filter struct {
	Fill              float64 `json:"fill"`
	EstimatedURLs     float64 `json:"estimated_urls"`
	FalsePositiveRate float64 `json:"false_positive_rate"`
	Target            float64 `json:"target"`
	ExpectedURLs      uint64  `json:"expected_urls"`
	Bytes             uint64  `json:"bytes"`
	Generations       int     `json:"generations"` // 0: a fixed-size filter
	Capacity          uint64  `json:"capacity"`
	// FilterOnly: the filter decides alone (no exact check of its "maybe
	// seen" answers).
	FilterOnly bool `json:"filter_only"`
	// PagesLost are the discovered pages lost to the filter's false
	// positives: 0 by construction with the exact check, estimated when
	// filter-only (crawl.Stats.LostToFilter).
	PagesLost float64 `json:"pages_lost"`
	// FalsePositivesCaught are the filter's false positives the exact
	// check caught and queued, this run.
	FalsePositivesCaught uint64 `json:"false_positives_caught"`
}

// Count is a named counter.
type Count struct {
	Name string `json:"name"`
	N    uint64 `json:"n"`
}

// RatePoint is one sample of the fetch rate.
type RatePoint struct {
	Time           time.Time `json:"t"`
	PagesPerSecond float64   `json:"pps"`
}

// HostRow is a line of a host table.
type HostRow struct {
	Host       string  `json:"host"`
	Fetches    uint64  `json:"fetches"`
	Errors     uint64  `json:"errors"`
	MeanMillis float64 `json:"mean_ms"`
}

// FetchRow is one recent fetch; URL is without userinfo.
type FetchRow struct {
	At        time.Time `json:"at"`
	URL       string    `json:"url"`
	Status    int       `json:"status"`
	Error     string    `json:"error,omitempty"`
	Millis    float64   `json:"ms"`
	Bytes     int64     `json:"bytes"`
	Truncated string    `json:"truncated,omitempty"`
}

// CheckpointRow describes the last checkpoint.
type CheckpointRow struct {
	Generation    uint64    `json:"generation"`
	At            time.Time `json:"at"`
	Millis        float64   `json:"ms"`
	BlockedMillis float64   `json:"blocked_ms"`
}

// buildStatus makes the status document from a sample of the crawl's Stats
// and the Monitor's own tallies.
func (m *Monitor) buildStatus(s crawl.Stats, o *crawl.Options, rate []RatePoint, done bool) *Status {
	st := &Status{Time: m.opts.Now(), Started: s.Started, Mode: "local", Done: done, Rate: rate, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if o.Redis != nil {
		st.Mode, st.Worker, st.Redis = "redis", o.Redis.Worker, redactURL(o.Redis.URL)
	}
	f := s.Fetch
	st.Totals = Totals{Fetched: f.Fetched, FetchErrors: f.FetchErrors, HTTPErrors: f.HTTPErrors,
		Pages: s.Pages, Errors: s.Errors, New: s.New, Duplicates: s.Duplicates,
		Retried: f.Retried, RetriesExhausted: f.RetriesExhausted, Revisits: f.Revisits, NearDuplicates: f.NearDuplicates}
	if len(o.Previous) > 0 {
		r := f.Recrawl
		st.Totals.Recrawl = &r
	}
	if n := len(rate); n > 0 {
		st.Totals.PagesPerSecond = rate[n-1].PagesPerSecond
	}
	st.Queue = Queue{Queued: s.Queued, Hosts: s.Hosts, InFlight: s.InFlight, Journal: s.Journal, Gen: s.Checkpoint,
		InMemory: s.InMemory, Spilled: s.Spilled(), Retrying: s.Retrying, Slowed: s.Slowed}
	st.SlowedHosts = make([]SlowedRow, len(s.SlowedHosts))
	for i, h := range s.SlowedHosts {
		st.SlowedHosts[i] = SlowedRow{Host: h.Host, DelayMillis: float64(h.Delay) / float64(time.Millisecond)}
	}
	l := s.Admission.Limits
	st.TrapLimits = []Count{{"max-url-length", l.TooLong}, {"max-path-segments", l.TooManySegments},
		{"max-segment-repeats", l.RepeatedSegment}, {"max-host-urls", l.HostBudget}, {"max-children", l.TooManyChildren}}
	a := s.Admission
	st.Refused = []Count{{"robots-disallowed", f.RobotsDisallowed}, {"robots-unavailable", f.RobotsUnavailable},
		{"out-of-scope", a.OutOfScope}, {"filtered", a.Filtered}, {"too-deep", a.TooDeep},
		{"too-many-redirects", a.TooManyRedirects}, {"invalid", a.Invalid},
		{"blocked-address", f.Permanent.BlockedAddress}, {"tls-certificate", f.Permanent.TLS},
		{"dns-not-found", f.Permanent.DNSNotFound}, {"unsupported-scheme", f.Permanent.UnsupportedScheme},
		{"malformed-url", f.Permanent.MalformedURL}}
	st.Filter = Filter{Fill: s.Filter.Fill, EstimatedURLs: s.Filter.EstimatedURLs, FalsePositiveRate: s.Filter.FalsePositiveRate,
		Target: s.Filter.Target, ExpectedURLs: s.Filter.ExpectedURLs, Bytes: s.Filter.Bytes,
		Generations: s.Filter.Generations, Capacity: s.Filter.Capacity,
		FilterOnly: s.FilterOnly, PagesLost: s.LostToFilter, FalsePositivesCaught: s.FalsePositives}
	if r := s.Redis; r != nil {
		st.SharedAt = r.At
		if r.Err != nil {
			st.SharedError = r.Err.Error()
		}
		st.Workers = workerRows(r, st.Time)
	}
	m.tables(st)
	return st
}

// maxWorkers bounds the workers listed in Redis mode.
const maxWorkers = 100

// workerRows lists the workers of r: those that beat (live ones first, as
// read), then lease holders that do not beat, by leases held.
func workerRows(r *crawl.RedisStats, now time.Time) []WorkerRow {
	var rows []WorkerRow
	seen := map[string]bool{}
	for _, w := range r.Workers {
		if len(rows) == maxWorkers {
			return rows
		}
		state := "alive"
		if !w.Alive {
			state = "gone"
		}
		seen[w.ID] = true
		rows = append(rows, WorkerRow{ID: w.ID, Name: w.Name, State: state, BeatAgeSecs: max(0, now.Sub(w.At).Seconds()),
			Pages: w.Pages, InFlight: w.InFlight, Leased: r.Holders[w.ID]})
	}
	var silent []Count
	for id, n := range r.Holders {
		if !seen[id] {
			silent = append(silent, Count{Name: id, N: uint64(n)})
		}
	}
	sortCounts(silent)
	for _, c := range silent {
		if len(rows) == maxWorkers {
			break
		}
		rows = append(rows, WorkerRow{ID: c.Name, State: "no heartbeat", BeatAgeSecs: -1, Leased: int(c.N)})
	}
	return rows
}
