package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
)

// fakeSource is a crawl whose Stats the test sets.
type fakeSource struct {
	mu   sync.Mutex
	s    crawl.Stats
	opts crawl.Options
}

func (f *fakeSource) Stats() crawl.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s
}

func (f *fakeSource) Options() crawl.Options { return f.opts }

// startMonitor runs a Monitor on a loopback port and returns its base URL.
func startMonitor(t *testing.T, opts Options, src Source) (*Monitor, string) {
	t.Helper()
	if opts.Interval == 0 {
		opts.Interval = 20 * time.Millisecond
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, _, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, ln, src) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return m, "http://" + ln.Addr().String()
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

func sampleStats() crawl.Stats {
	return crawl.Stats{
		Started: time.Unix(1_700_000_000, 0),
		Fetch: crawl.FetchStats{Fetched: 7, Pages: 7, FetchErrors: 1, HTTPErrors: 2, RobotsDisallowed: 3, TruncatedLength: 1,
			Retried: 5, RetriesExhausted: 1, Revisits: 2, RevisitBytes: 300, NearDuplicates: 1,
			Recrawl:   crawl.RecrawlStats{Previous: 20, Unchanged: 14, Changed: 3, New: 2, Gone: 1, BytesSaved: 9000},
			Permanent: crawl.PermanentStats{BlockedAddress: 2, DNSNotFound: 1}, RobotsWaiting: 1,
			Done: crawl.LatencyStats{Count: 9, Sum: 45 * time.Millisecond, Max: 30 * time.Millisecond,
				Buckets: []uint64{2, 4, 6, 7, 7, 7, 8, 8, 9, 9, 9, 9, 9, 9, 9}}},
		Pages: 9, Errors: 3, Queued: 42, Hosts: 5, InFlight: 2, New: 50, Duplicates: 11,
		InMemory: 30, Retrying: 4, Slowed: 2, EverSlowed: 3, Throttled: 6,
		SlowedHosts: []frontier.SlowedHost{{Host: "slow.example", Delay: 4 * time.Second}, {Host: "slower.example", Delay: 2 * time.Second}},
		Admission:   frontier.AdmissionStats{OutOfScope: 4, Limits: frontier.LimitStats{TooLong: 6, HostBudget: 8}},
		Filter:      crawl.FilterStats{Bytes: 1024, ExpectedURLs: 1000, Target: 1e-3, EstimatedURLs: 61, FalsePositiveRate: 2e-7, Fill: 0.03, Generations: 3, Capacity: 7000},
		FilterOnly:  true, LostToFilter: 12.5,
	}
}

func feed(m *Monitor) {
	m.Fetched(crawl.FetchEvent{URL: "http://user:secret@a.example:8080/x?q", At: time.Now(), Duration: 30 * time.Millisecond, TTFB: 10 * time.Millisecond, Status: 200, Bytes: 100, WARCBytes: 80})
	m.Fetched(crawl.FetchEvent{URL: "http://a.example:8080/y", At: time.Now(), Duration: 50 * time.Millisecond, Status: 404, Bytes: 10, WARCBytes: 40})
	m.Fetched(crawl.FetchEvent{URL: "https://b.example/", At: time.Now(), Err: errors.New("dial"), ErrKind: fetch.KindConnect})
	m.Checkpointed(crawl.CheckpointEvent{Generation: 3, Duration: 20 * time.Millisecond, Blocked: time.Millisecond})
}

// waitFor polls cond until it holds or a few seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMetrics(t *testing.T) {
	src := &fakeSource{s: sampleStats()}
	m, base := startMonitor(t, Options{}, src)
	feed(m)
	code, hdr, body := get(t, base+"/metrics")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", code, hdr.Get("Content-Type"))
	}
	// Legacy names: the stricter check, which every scraper accepts.
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, body)
	}
	value := func(name string, labels ...string) float64 {
		t.Helper()
		f := families[name]
		if f == nil {
			t.Fatalf("metric %s missing", name)
		}
	next:
		for _, mt := range f.Metric {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range mt.Label {
					found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
				}
				if !found {
					continue next
				}
			}
			switch {
			case mt.Counter != nil:
				return mt.Counter.GetValue()
			case mt.Gauge != nil:
				return mt.Gauge.GetValue()
			case mt.Histogram != nil:
				return float64(mt.Histogram.GetSampleCount())
			}
		}
		t.Fatalf("metric %s%v missing", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"layercrawl_pages_fetched_total", nil, 7},
		{"layercrawl_fetches_total", []string{"outcome", "ok"}, 1},
		{"layercrawl_fetches_total", []string{"outcome", "http_error"}, 1},
		{"layercrawl_fetches_total", []string{"outcome", "error"}, 1},
		{"layercrawl_fetch_errors_total", []string{"kind", "connect"}, 1},
		{"layercrawl_fetch_errors_total", []string{"kind", "dns"}, 0},
		{"layercrawl_http_responses_total", []string{"class", "4xx"}, 1},
		{"layercrawl_fetched_bytes_total", nil, 110},
		{"layercrawl_warc_bytes_total", nil, 120},
		{"layercrawl_fetch_duration_seconds", nil, 2},
		{"layercrawl_fetch_time_to_first_byte_seconds", nil, 2},
		{"layercrawl_checkpoint_duration_seconds", nil, 1},
		{"layercrawl_queue_entries", nil, 42},
		{"layercrawl_queue_hosts", nil, 5},
		{"layercrawl_fetches_in_flight", nil, 2},
		{"layercrawl_robots_refused_total", []string{"outcome", "disallowed"}, 3},
		{"layercrawl_trap_limit_hits_total", []string{"limit", "max_url_length"}, 6},
		{"layercrawl_trap_limit_hits_total", []string{"limit", "max_host_urls"}, 8},
		{"layercrawl_admission_rejected_total", []string{"reason", "trap_limit"}, 14},
		{"layercrawl_discovered_urls_total", []string{"result", "duplicate"}, 11},
		{"layercrawl_filter_fill_ratio", nil, 0.03},
		{"layercrawl_filter_false_positive_rate_target", nil, 1e-3},
		{"layercrawl_filter_generations", nil, 3},
		{"layercrawl_filter_capacity_urls", nil, 7000},
		{"layercrawl_filter_pages_lost", nil, 12.5},
		{"layercrawl_filter_false_positives_caught_total", nil, 0},
		{"layercrawl_bodies_truncated_total", []string{"reason", "length"}, 1},
		{"layercrawl_queue_entries_in_memory", nil, 30},
		{"layercrawl_queue_entries_spilled", nil, 10}, // 42 queued - 2 out - 30 in memory
		{"layercrawl_hosts_waiting", nil, 3},
		{"layercrawl_hosts_slowed", nil, 2},
		{"layercrawl_hosts_slowed_total", nil, 3},
		{"layercrawl_throttling_responses_total", nil, 6},
		{"layercrawl_retries_total", nil, 5},
		{"layercrawl_permanent_failures_total", []string{"reason", "blocked_address"}, 2},
		{"layercrawl_permanent_failures_total", []string{"reason", "dns_not_found"}, 1},
		{"layercrawl_permanent_failures_total", []string{"reason", "tls_certificate"}, 0},
		{"layercrawl_robots_waiting_sites", nil, 1},
		{"layercrawl_retries_exhausted_total", nil, 1},
		{"layercrawl_retry_waiting_urls", nil, 4},
		{"layercrawl_revisits_total", nil, 2},
		{"layercrawl_revisit_saved_bytes_total", nil, 300},
		{"layercrawl_near_duplicates_total", nil, 1},
		{"layercrawl_recrawl_pages_total", []string{"outcome", "unchanged"}, 14},
		{"layercrawl_recrawl_pages_total", []string{"outcome", "changed"}, 3},
		{"layercrawl_recrawl_pages_total", []string{"outcome", "new"}, 2},
		{"layercrawl_recrawl_pages_total", []string{"outcome", "gone"}, 1},
		{"layercrawl_recrawl_saved_bytes_total", nil, 9000},
		{"layercrawl_frontier_done_duration_seconds", nil, 9},
		{"layercrawl_frontier_done_max_seconds", nil, 0.03},
		{"layercrawl_checkpoint_blocked_seconds", nil, 1},
	} {
		if got := value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
	// No URL, host or credential is a label value.
	for _, bad := range []string{"a.example", "secret", "user"} {
		if strings.Contains(body, bad) {
			t.Errorf("/metrics contains %q", bad)
		}
	}
	promtool(t, body)
}

// promtool runs "promtool check metrics" (Debian package prometheus) on an
// exposition: it checks the text format and the naming conventions. It is
// required under CI=true.
func promtool(t *testing.T, exposition string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is required under CI=true (apt-get install prometheus): %v", err)
		}
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestStatusJSON(t *testing.T) {
	src := &fakeSource{s: sampleStats(), opts: crawl.Options{Redis: &crawl.RedisOptions{URL: "redis://admin:hunter2@redis.internal:6379/2", Worker: "w1"}}}
	m, base := startMonitor(t, Options{Recent: 2}, src)
	feed(m)
	var st Status
	waitFor(t, "the fetches in the status", func() bool {
		_, _, body := get(t, base+"/status.json")
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		return len(st.Recent) == 2 && st.Checkpoint != nil
	})
	if st.Totals.Fetched != 7 || st.Queue.Queued != 42 || st.Totals.Bytes != 110 || st.Totals.WARCBytes != 120 ||
		st.Totals.Retried != 5 || st.Totals.RetriesExhausted != 1 || st.Totals.Revisits != 2 || st.Totals.NearDuplicates != 1 ||
		st.Queue.InMemory != 30 || st.Queue.Spilled != 10 || st.Queue.Retrying != 4 || st.Queue.Slowed != 2 {
		t.Errorf("totals %+v queue %+v", st.Totals, st.Queue)
	}
	if st.Totals.Recrawl != nil {
		t.Errorf("recrawl totals %+v in a crawl without earlier crawls", st.Totals.Recrawl)
	}
	if len(st.SlowedHosts) != 2 || st.SlowedHosts[0] != (SlowedRow{Host: "slow.example", DelayMillis: 4000}) {
		t.Errorf("slowed hosts %+v", st.SlowedHosts)
	}
	if !st.Filter.FilterOnly || st.Filter.PagesLost != 12.5 {
		t.Errorf("filter %+v: want filter-only with 12.5 pages lost", st.Filter)
	}
	// Recent is bounded and newest first.
	if st.Recent[0].URL != "https://b.example/" || st.Recent[0].Error != "connect" || st.Recent[1].Status != 404 {
		t.Errorf("recent %+v", st.Recent)
	}
	if len(st.BusiestHosts) != 2 || st.BusiestHosts[0].Host != "a.example:8080" || st.BusiestHosts[0].Fetches != 2 || st.BusiestHosts[0].Errors != 1 {
		t.Errorf("busiest hosts %+v", st.BusiestHosts)
	}
	if st.Mode != "redis" || st.Redis != "redis://redis.internal:6379/2" || st.Worker != "w1" {
		t.Errorf("mode %q redis %q worker %q", st.Mode, st.Redis, st.Worker)
	}
	if want := runtime.GOMAXPROCS(0); st.GOMAXPROCS != want {
		t.Errorf("gomaxprocs %d, want %d", st.GOMAXPROCS, want)
	}
	// Credentials never reach the JSON or the page.
	_, _, page := get(t, base+"/")
	_, _, js := get(t, base+"/status.json")
	for _, body := range []string{page, js} {
		for _, secret := range []string{"hunter2", "admin", "secret", "user:"} {
			if strings.Contains(body, secret) {
				t.Errorf("credential %q shown", secret)
			}
		}
	}
}

func TestHostTablesBounded(t *testing.T) {
	m, err := New(Options{MaxHosts: 100, TopHosts: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		m.Fetched(crawl.FetchEvent{URL: "http://h" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".example/", Status: 200, Duration: time.Duration(i) * time.Millisecond})
	}
	var st Status
	m.tables(&st)
	if len(st.BusiestHosts) != 3 || len(st.SlowestHosts) != 3 || len(m.hosts) != 100 || st.UntrackedHosts != 900 {
		t.Errorf("busiest %d slowest %d tracked %d untracked %d", len(st.BusiestHosts), len(st.SlowestHosts), len(m.hosts), st.UntrackedHosts)
	}
	if st.SlowestHosts[0].MeanMillis < st.SlowestHosts[2].MeanMillis {
		t.Errorf("slowest hosts not sorted: %+v", st.SlowestHosts)
	}
}

func TestListen(t *testing.T) {
	for _, c := range []struct {
		addr        string
		allowRemote bool
		wantErr     error
	}{
		{"127.0.0.1:0", false, nil},
		{"localhost:0", false, nil},
		{"[::1]:0", false, nil},
		{"0.0.0.0:0", false, ErrRemoteAddr},
		{":0", false, ErrRemoteAddr},
		{"0.0.0.0:0", true, nil},
	} {
		ln, remote, err := Listen(c.addr, c.allowRemote)
		if ln != nil {
			ln.Close()
		}
		if c.wantErr != nil && !errors.Is(err, c.wantErr) || c.wantErr == nil && err != nil && !strings.Contains(err.Error(), "address") {
			t.Errorf("Listen(%q, %v) = %v, want %v", c.addr, c.allowRemote, err, c.wantErr)
		}
		if wantRemote := c.addr == "0.0.0.0:0" || c.addr == ":0"; remote != wantRemote {
			t.Errorf("Listen(%q): remote %v", c.addr, remote)
		}
	}
	if _, _, err := Listen("no-port", false); err == nil {
		t.Error("Listen without a port succeeded")
	}
}

func TestPprofOnlyWhenAsked(t *testing.T) {
	src := &fakeSource{s: sampleStats()}
	for _, on := range []bool{false, true} {
		_, base := startMonitor(t, Options{Pprof: on}, src)
		code, _, _ := get(t, base+"/debug/pprof/")
		if want := map[bool]int{false: 404, true: 200}[on]; code != want {
			t.Errorf("pprof %v: GET /debug/pprof/ = %d, want %d", on, code, want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{Recent: -1}, {MaxHosts: -1}, {Interval: time.Microsecond}, {WriteTimeout: -1}, {MaxConns: -5}} {
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:p@h.example/a@b":     "http://h.example/a@b",
		"redis://:pw@r:6379/0":         "redis://r:6379/0",
		"https://h.example/?u=a:b@c":   "https://h.example/?u=a:b@c",
		"http://a@b@h.example#x":       "http://h.example#x",
		"no scheme":                    "no scheme",
		"http://h.example":             "http://h.example",
		"rediss://user@h:1?addr=x:1@y": "rediss://h:1?addr=x:1@y",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"http://u:p@h/", "redis://:pw@r:6379/0", "x://@", "://a@b/c@d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := redactURL(s)
		i := strings.Index(got, "://")
		if i < 0 {
			if got != s {
				t.Fatalf("redactURL(%q) = %q changed a string without scheme", s, got)
			}
			return
		}
		auth := got[i+3:]
		if end := strings.IndexAny(auth, "/?#"); end >= 0 {
			auth = auth[:end]
		}
		if strings.Contains(auth, "@") {
			t.Fatalf("redactURL(%q) = %q keeps userinfo", s, got)
		}
		if h := hostOf(s); !strings.EqualFold(h, auth) {
			t.Fatalf("hostOf(%q) = %q, redacted authority %q", s, h, auth)
		}
	})
}

// Without JavaScript the page shows the same numbers, rendered by the
// server, and reloads itself; fetched URLs are escaped, and the page's
// policy lets only its own inline script and style run.
func TestPageWithoutScript(t *testing.T) {
	src := &fakeSource{s: sampleStats()}
	m, base := startMonitor(t, Options{}, src)
	feed(m)
	m.Fetched(crawl.FetchEvent{URL: `http://x.example/"><script>alert(1)</script>`, Status: 200})
	var page string
	var hdr http.Header
	waitFor(t, "the fetches on the page", func() bool {
		_, hdr, page = get(t, base+"/")
		return strings.Contains(page, "x.example")
	})
	for _, want := range []string{
		`<b id="fetched" data-k="totals.fetched">7</b>`,
		`<b id="queued" data-k="queue.queued">42</b>`,
		fmt.Sprintf(`<span id="gomaxprocs" data-k="gomaxprocs">%d</span>`, runtime.GOMAXPROCS(0)),
		`<td>max-url-length</td><td>6</td>`,
		`<td>connect</td><td>1</td>`,
		`<td>http-4xx</td><td>1</td>`,
		`<noscript><meta http-equiv="refresh" content="5"></noscript>`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("fetched URL not escaped")
	}
	csp := hdr.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, cspHash(pageScript)) || !strings.Contains(page, "<script>"+pageScript+"</script>") {
		t.Errorf("CSP %q does not match the inline script", csp)
	}
	if strings.Contains(page, "src=\"http") || strings.Contains(page, "href=\"http") {
		t.Error("page loads an external asset")
	}
}

// TestStatusWorkers: in Redis mode the status lists every worker from its
// heartbeat (state, age of the last beat, pages, in flight) with the hosts
// it holds, and lease holders that do not beat.
func TestStatusWorkers(t *testing.T) {
	now := time.Now()
	s := sampleStats()
	s.Redis = &crawl.RedisStats{
		Stats: redisfrontier.Stats{Holders: map[string]int{"aaa": 2, "bbb": 1}},
		Workers: []redisfrontier.WorkerInfo{
			{ID: "aaa", Name: "host-1", Pages: 10, InFlight: 2, At: now.Add(-1500 * time.Millisecond), Alive: true},
			{ID: "ccc", Name: "host-3", Pages: 4, At: now.Add(-time.Minute)},
		},
		At: now,
	}
	src := &fakeSource{s: s, opts: crawl.Options{Redis: &crawl.RedisOptions{URL: "redis://127.0.0.1:6379", Worker: "host-1"}}}
	_, base := startMonitor(t, Options{}, src)
	var st Status
	waitFor(t, "the workers in the status", func() bool {
		_, _, body := get(t, base+"/status.json")
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		return len(st.Workers) > 0
	})
	want := []WorkerRow{
		{ID: "aaa", Name: "host-1", State: "alive", Pages: 10, InFlight: 2, Leased: 2},
		{ID: "ccc", Name: "host-3", State: "gone", Pages: 4},
		{ID: "bbb", State: "no heartbeat", BeatAgeSecs: -1, Leased: 1},
	}
	if len(st.Workers) != len(want) {
		t.Fatalf("workers %+v, want %+v", st.Workers, want)
	}
	for i, w := range st.Workers {
		age := w.BeatAgeSecs
		w.BeatAgeSecs = want[i].BeatAgeSecs
		if w != want[i] {
			t.Errorf("worker %d: %+v, want %+v", i, w, want[i])
		}
		if i == 0 && (age < 1.4 || age > 10) || i == 1 && (age < 59 || age > 70) {
			t.Errorf("worker %s: last beat %.1fs ago", w.ID, age)
		}
	}
	if _, _, page := get(t, base+"/"); !strings.Contains(page, "<td>host-3</td><td>gone</td>") {
		t.Errorf("the page does not list the gone worker")
	}
}

// TestStatusRecrawl checks the recrawl counts of a crawl given earlier
// crawls in the status document and on the page.
func TestStatusRecrawl(t *testing.T) {
	src := &fakeSource{s: sampleStats(), opts: crawl.Options{Previous: []string{"/crawls/week1"}}}
	m, base := startMonitor(t, Options{}, src)
	feed(m)
	var st Status
	waitFor(t, "the recrawl counts in the status", func() bool {
		_, _, body := get(t, base+"/status.json")
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		return st.Totals.Recrawl != nil
	})
	want := crawl.RecrawlStats{Previous: 20, Unchanged: 14, Changed: 3, New: 2, Gone: 1, BytesSaved: 9000}
	if *st.Totals.Recrawl != want {
		t.Errorf("recrawl totals %+v, want %+v", *st.Totals.Recrawl, want)
	}
	_, _, page := get(t, base+"/")
	for _, s := range []string{`data-k="totals.recrawl.unchanged">14<`, `data-k="totals.recrawl.gone">1<`, `data-k="totals.recrawl.bytes_saved">9000<`} {
		if !strings.Contains(page, s) {
			t.Errorf("status page lacks %s", s)
		}
	}
}
