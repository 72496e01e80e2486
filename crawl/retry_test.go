package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/faults"
	"github.com/layercrawl/layercrawl/internal/testweb"
	"github.com/layercrawl/layercrawl/storage"
)

// faultyWeb serves a synthetic web through a fault injector.
func faultyWeb(t *testing.T, fo faults.Options, wo testweb.Options) (*faults.Injector, *testweb.Web) {
	t.Helper()
	in, err := faults.New(fo)
	if err != nil {
		t.Fatal(err)
	}
	wo.Wrap = in.Wrap
	w, err := testweb.Start(wo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Close()
		in.Close()
	})
	return in, w
}

// retryOptions are the options of a fast crawl of w that retries quickly:
// Retry-After (1s or a year from the injector) is capped at 20ms, a
// timeout fires after half a second.
func retryOptions(w *testweb.Web, dir string) Options {
	o := Options{Seeds: w.Seeds(), Dir: dir, Concurrency: 16, ExpectedURLs: 100_000}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	o.Fetch.Resolver = w.Resolver()
	o.Fetch.NoEmbeds = true
	o.Fetch.FetchTimeout = 500 * time.Millisecond
	o.Retry = RetryOptions{Backoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxRetryAfter: 20 * time.Millisecond}
	o.Politeness.MaxDelay = 20 * time.Millisecond // a 429 or 503 slows its host down this much at most
	return o
}

// attemptsByURL groups the log's fetch lines by URL, by attempt (workers
// of a Redis-mode crawl log a URL's attempts in several files).
func attemptsByURL(entries []storage.Entry) map[string][]storage.Entry {
	m := map[string][]storage.Entry{}
	for _, e := range entries {
		if e.Attempt > 0 {
			m[e.URL] = append(m[e.URL], e)
		}
	}
	for _, lines := range m {
		slices.SortStableFunc(lines, func(a, b storage.Entry) int { return a.Attempt - b.Attempt })
	}
	return m
}

// TestRetriesReachFullCoverage crawls a synthetic web of which a fifth of
// the responses fail transiently, in every way the injector has (resets,
// timeouts, truncated bodies, 408/425/429/5xx with every kind of
// Retry-After), each URL at most three times: with the default three
// retries the crawl fetches every page, each URL exactly as often as the
// injector's plan says, and the log has one line per attempt, numbered,
// "will-retry: REASON" on all but the last.
func TestRetriesReachFullCoverage(t *testing.T) {
	pages, timeout := 320, 500*time.Millisecond
	if raceEnabled {
		// Three times slower: fewer pages, and a timeout that a loaded
		// server does not meet by chance.
		pages, timeout = 160, time.Second
	}
	in, w := faultyWeb(t, faults.Options{Seed: 12, Rate: 0.2}, testweb.Options{Hosts: 16, Pages: pages})
	exp, err := w.Expected(testweb.ExpectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := exp.Fetched()
	dir := t.TempDir()
	start := time.Now()
	o := retryOptions(w, dir)
	o.Fetch.FetchTimeout = timeout
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	took := time.Since(start)
	entries := readLog(t, filepath.Join(dir, "crawl.log.jsonl"))
	retried, extra := checkRetriedCoverage(t, in, want, entries)
	s := c.Stats()
	if s.Fetch.Retried != uint64(retried) || s.Fetch.RetriesExhausted != 0 || s.Retrying != 0 {
		t.Errorf("Stats: retried %d, exhausted %d, retrying %d; want %d, 0, 0", s.Fetch.Retried, s.Fetch.RetriesExhausted, s.Retrying, retried)
	}
	t.Logf("%d URLs, %d retried attempts (%d beyond the plan), %d log lines, %v", len(want), retried, extra, len(entries), took)
}

// TestRetriesReachFullCoverageRedis is TestRetriesReachFullCoverage with
// two workers sharing a Redis frontier: a URL that failed waits in its
// host's retry set in Redis and comes back, to either worker, as the next
// attempt.
func TestRetriesReachFullCoverageRedis(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the same code paths are race-tested on smaller crawls")
	}
	prefix := testRedisPrefix(t, "retries")
	const pages = 240
	in, w := faultyWeb(t, faults.Options{Seed: 13, Rate: 0.2}, testweb.Options{Hosts: 16, Pages: pages})
	exp, err := w.Expected(testweb.ExpectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := retryOptions(w, dir)
	o.Concurrency = 8
	stats := runRedisWorkers(t, 2, o, prefix)
	logs, _ := filepath.Glob(filepath.Join(dir, "crawl-*.log.jsonl"))
	var entries []storage.Entry
	for _, l := range logs {
		entries = append(entries, readLog(t, l)...)
	}
	retried, extra := checkRetriedCoverage(t, in, exp.Fetched(), entries)
	var counted uint64
	for _, s := range stats {
		counted += s.Fetch.Retried
	}
	shared := stats[0].Redis
	if counted != uint64(retried) || shared == nil || shared.Retried != uint64(retried) || shared.Retrying != 0 {
		t.Errorf("retries counted by the workers %d, in Redis %+v; want %d, none waiting", counted, shared, retried)
	}
	t.Logf("%d URLs, %d retried attempts (%d beyond the plan), %d log lines", len(exp.Fetched()), retried, extra, len(entries))
}

// checkRetriedCoverage checks a crawl of a faulty web: every URL of want
// fetched in the end, each with one log line per attempt, as many as the
// injector's plan (or more, never fewer), numbered, "will-retry" on all
// but the last. It returns the retried attempts and those beyond the plan.
func checkRetriedCoverage(t *testing.T, in *faults.Injector, want []string, entries []storage.Entry) (retried, extra int) {
	t.Helper()
	byURL := attemptsByURL(entries)
	var got []string
	for u := range byURL {
		got = append(got, u)
	}
	slices.Sort(got)
	if m := missingFrom(want, got); len(m) > 0 {
		t.Errorf("%d of %d URLs never fetched, as %q", len(m), len(want), m[:min(len(m), 5)])
	}
	for _, u := range want {
		lines := byURL[u]
		last, attempts, err := in.Outcome(u, DefaultMaxRetries)
		if err != nil {
			t.Fatal(err)
		}
		if last.Kind != faults.None {
			t.Fatalf("%s: the plan fails it %d times, past the retries", u, attempts)
		}
		// A request that timed out before the server saw it (a loaded
		// machine) is one more attempt than the plan: lines may exceed
		// the plan, never fall short of it nor of the server's count.
		if len(lines) < attempts || len(lines) < in.Attempts(u) || len(lines) > DefaultMaxRetries+1 {
			p, _ := in.Plan(u)
			t.Errorf("%s: %d log lines, %d requests; the plan says %d attempts (%v)", u, len(lines), in.Attempts(u), attempts, p.Faults)
			for _, l := range lines {
				t.Logf("attempt %d: status %d, error %q, %.1f ms", l.Attempt, l.Status, l.Error, l.DurationMS)
			}
			continue
		}
		for i, l := range lines {
			switch {
			case l.Attempt != i+1:
				t.Errorf("%s line %d: attempt %d", u, i+1, l.Attempt)
			case i < len(lines)-1 && (!strings.HasPrefix(l.Error, "will-retry: ") || l.RetryAt.IsZero()):
				t.Errorf("%s attempt %d: error %q, retry_at %v; want will-retry", u, i+1, l.Error, l.RetryAt)
			case i == len(lines)-1 && (l.Error != "" || !l.RetryAt.IsZero()):
				t.Errorf("%s last attempt: error %q, retry_at %v; want a success", u, l.Error, l.RetryAt)
			}
		}
		retried += len(lines) - 1
		extra += len(lines) - attempts
	}
	if retried < len(want)/8 {
		t.Errorf("only %d retries for %d URLs at a 20%% failure rate", retried, len(want))
	}
	return retried, extra
}

// TestRetryBadInput checks hostile retry cases: a host that
// answers 429 for ever, a 503 storm over a host, a host that resets every
// second connection, and Retry-After set to garbage or a year away. None
// may hang the crawl or lose a URL without a final, specific log line.
func TestRetryBadInput(t *testing.T) { testRetryBadInput(t, false) }

// TestRetryBadInputRedis is TestRetryBadInput with two workers sharing a
// Redis frontier: retries and throttling live in Redis.
func TestRetryBadInputRedis(t *testing.T) { testRetryBadInput(t, true) }

func testRetryBadInput(t *testing.T, redisMode bool) {
	probe, err := testweb.Start(testweb.Options{Hosts: 4, Pages: 60})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{probe.HostName(0), probe.HostName(1), probe.HostName(2), probe.HostName(3)}
	probe.Close()
	in, w := faultyWeb(t, faults.Options{
		Seed: 3, Rate: 0.3,
		Faults: []faults.Fault{
			{Kind: faults.Status, Status: 503, RetryAfter: faults.RetryAfterGarbage},
			{Kind: faults.Status, Status: 429, RetryAfter: faults.RetryAfterYear},
		},
		Hosts:         map[string]faults.HostMode{names[0]: faults.Forever429, names[1]: faults.Storm503, names[2]: faults.ResetEverySecond},
		StormRequests: DefaultMaxRetries, // the root's last retry gets through
	}, testweb.Options{Hosts: 4, Pages: 60, CrossLinks: -1})
	exp, err := w.Expected(testweb.ExpectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := retryOptions(w, dir)
	var entries []storage.Entry
	if redisMode {
		runRedisWorkers(t, 2, o, testRedisPrefix(t, "badinput"))
		logs, _ := filepath.Glob(filepath.Join(dir, "crawl-*.log.jsonl"))
		for _, l := range logs {
			entries = append(entries, readLog(t, l)...)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := run(t, ctx, o); err != nil {
			t.Fatalf("Run: %v", err)
		}
		entries = readLog(t, filepath.Join(dir, "crawl.log.jsonl"))
	}
	byURL := attemptsByURL(entries)
	forever := w.Root(0)
	for u, lines := range byURL {
		last := lines[len(lines)-1]
		if len(lines) > DefaultMaxRetries+1 {
			t.Errorf("%s: %d attempts, more than 1+%d retries", u, len(lines), DefaultMaxRetries)
		}
		if strings.HasPrefix(last.Error, "will-retry") {
			t.Errorf("%s: last line %q is not final", u, last.Error)
		}
		if strings.HasPrefix(u, forever) && last.Error != "retries-exhausted: 429" {
			t.Errorf("%s on the 429-for-ever host: last line %q after %d attempts", u, last.Error, len(lines))
		}
	}
	// The 429 host's root is fetched 4 times and fails; the others reach
	// every page, whatever their storm, resets and Retry-After values.
	resetLost, unreached := 0, 0
	for _, u := range exp.Fetched() {
		if strings.HasPrefix(u, forever) {
			continue
		}
		lines := byURL[u]
		if len(lines) == 0 && strings.HasPrefix(u, w.Root(2)) {
			unreached++ // only linked from a page the resets lost (checked below)
			continue
		}
		if len(lines) == 0 {
			t.Errorf("%s: never fetched", u)
			continue
		}
		last := lines[len(lines)-1]
		if strings.HasPrefix(u, w.Root(2)) && strings.HasPrefix(last.Error, "retries-exhausted: connection-reset: ") {
			// Every second connection reset: a URL whose attempts all
			// fall on even connections runs out of retries, and says so.
			resetLost++
			continue
		}
		if last.Error != "" {
			p, _ := in.Plan(u)
			t.Errorf("%s: final line %q after %d attempts (plan %v)", u, last.Error, len(lines), p)
		}
	}
	if n := len(byURL[forever]); n != DefaultMaxRetries+1 {
		t.Errorf("429 host root: %d attempts, want %d", n, DefaultMaxRetries+1)
	}
	if unreached > 0 && resetLost == 0 {
		t.Errorf("%d URLs of the host resetting every second connection never fetched, though none of its pages was lost", unreached)
	}
	t.Logf("%d URLs of the host resetting every second connection ran out of retries, %d more not reached", resetLost, unreached)
}

func TestRetryWait(t *testing.T) {
	o := RetryOptions{Backoff: time.Second, MaxBackoff: 10 * time.Second, MaxRetryAfter: time.Minute}
	none := time.Duration(-1)
	for _, tc := range []struct {
		name       string
		o          RetryOptions
		attempt    int
		retryAfter time.Duration
		jitter     float64
		want       time.Duration
	}{
		{"first, least jitter", o, 1, none, 0, 500 * time.Millisecond},
		{"first, middle", o, 1, none, 0.5, time.Second},
		{"third doubles twice", o, 3, none, 0.5, 4 * time.Second},
		{"capped", o, 10, none, 0.99, 10 * time.Second},
		{"huge attempt", o, 1 << 30, none, 0.5, 10 * time.Second},
		{"Retry-After longer", o, 1, 30 * time.Second, 0.5, 30 * time.Second},
		{"Retry-After shorter", o, 3, time.Second, 0.5, 4 * time.Second},
		{"Retry-After a year, capped", o, 1, 365 * 24 * time.Hour, 0.5, time.Minute},
		{"Retry-After uncapped", RetryOptions{Backoff: time.Second, MaxBackoff: time.Second, MaxRetryAfter: -1}, 1, 2 * time.Hour, 0.5, 2 * time.Hour},
		{"no backoff", RetryOptions{Backoff: -1, MaxBackoff: time.Second, MaxRetryAfter: time.Minute}, 4, none, 0.5, 0},
		{"no backoff cap", RetryOptions{Backoff: time.Second, MaxBackoff: -1, MaxRetryAfter: time.Minute}, 11, none, 0.5, 1024 * time.Second},
	} {
		if got := tc.o.Wait(tc.attempt, tc.retryAfter, tc.jitter); got != tc.want {
			t.Errorf("%s: Wait(%d, %v, %v) = %v, want %v", tc.name, tc.attempt, tc.retryAfter, tc.jitter, got, tc.want)
		}
	}

	// Without a cap the doubling stops short of overflowing.
	uncapped := RetryOptions{Backoff: time.Second, MaxBackoff: -1, MaxRetryAfter: time.Minute}
	if got := uncapped.Wait(1<<20, none, 0.99); got < time.Duration(1)<<61 {
		t.Errorf("uncapped Wait after 2^20 attempts = %v: overflowed", got)
	}
}

func TestRetryOptionsDefaults(t *testing.T) {
	var o RetryOptions
	o.EnsureDefaults()
	if o.MaxRetries != DefaultMaxRetries || o.Backoff != DefaultRetryBackoff || o.MaxBackoff != DefaultMaxBackoff || o.MaxRetryAfter != DefaultMaxRetryAfter {
		t.Errorf("defaults %+v", o)
	}
	bad := Options{Dir: t.TempDir(), Retry: RetryOptions{MaxRetries: maxRetries + 1}}
	bad.EnsureDefaults()
	if err := bad.Validate(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("MaxRetries %d: %v, want ErrInvalidOptions", bad.Retry.MaxRetries, err)
	}
}

// TestRobotsUnavailableRetried checks RFC 9309 §2.3.1.4's "later retry",
// with robots.txt as a prerequisite: a site whose robots.txt answers 503
// twice is not disallowed for the rest of the crawl; its URLs wait, their
// own attempts untouched, and are fetched once robots.txt answers.
func TestRobotsUnavailableRetried(t *testing.T) {
	var robotsCalls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			if robotsCalls.Add(1) <= 2 {
				http.Error(w, "deploying", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
		case "/":
			fmt.Fprint(w, `<a href="/a">a</a> <a href="/private">p</a>`)
		default:
			fmt.Fprint(w, "page")
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	o := Options{Seeds: []string{srv.URL + "/"}, Dir: dir, Concurrency: 2, ExpectedURLs: 1000}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	o.Retry = RetryOptions{Backoff: 20 * time.Millisecond, MaxRetries: 1}
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range readLog(t, filepath.Join(dir, "crawl.log.jsonl")) {
		got = append(got, fmt.Sprintf("%s %d %d %.26s", strings.TrimPrefix(e.URL, srv.URL), e.Attempt, e.Status, e.Error))
	}
	want := []string{
		"/ 1 200 ",
		"/a 1 200 ",
		"/private 0 0 robots-disallowed",
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := robotsCalls.Load(); n != 3 {
		t.Errorf("robots.txt fetched %d times, want 3", n)
	}
	if s := c.Stats().Fetch; s.Retried != 0 || s.RobotsUnavailable != 0 {
		t.Errorf("retried %d, robots-unavailable %d; want 0, 0: robots.txt's failures are not the page's", s.Retried, s.RobotsUnavailable)
	}
}

// TestRetrySurvivesStop checks that a URL waiting for its retry when the
// crawl is stopped is part of the saved state: the crawl made again on
// the same directory fetches it as attempt 2.
func TestRetrySurvivesStop(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<a href="/a">a</a>`)
		case "/a":
			if calls.Add(1) == 1 {
				http.Error(w, "deploying", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "a")
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	o := Options{Seeds: []string{srv.URL + "/"}, Dir: dir, Concurrency: 2, ExpectedURLs: 1000}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	o.Retry = RetryOptions{Backoff: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.OnPage = func(p *Page) error {
		if p.Retry {
			cancel() // stop while /a waits for its retry
		}
		return nil
	}
	c, err := run(t, ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v, want context.Canceled", err)
	}
	if s := c.Stats(); s.Retrying != 1 || s.Queued != 0 {
		t.Fatalf("stopped with %d retrying, %d queued; want 1, 0", s.Retrying, s.Queued)
	}
	o.Seeds, o.OnPage = nil, nil
	c, err = run(t, context.Background(), o)
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if !c.Resumed() {
		t.Error("second run did not resume")
	}
	var got []string
	for _, e := range readLog(t, filepath.Join(dir, "crawl.log.jsonl")) {
		got = append(got, fmt.Sprintf("%s %d %d %.10s", strings.TrimPrefix(e.URL, srv.URL), e.Attempt, e.Status, e.Error))
	}
	want := []string{"/ 1 200 ", "/a 1 503 will-retry", "/a 2 200 "}
	if !slices.Equal(got, want) {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
