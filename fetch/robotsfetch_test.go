package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFetchRobots checks RFC 9309 section 2.3.1's handling of each kind of
// answer, against real servers.
func TestFetchRobots(t *testing.T) {
	const rules = "User-agent: *\nDisallow: /private\n"
	big := func() string {
		var b strings.Builder
		b.WriteString("User-agent: *\nDisallow: /early\n")
		for b.Len() < 1<<20 {
			b.WriteString("Disallow: /padding/padding/padding/padding\n")
		}
		b.WriteString("Disallow: /late\n") // past the 500 KiB cut
		for b.Len() < 10<<20 {
			b.WriteString("Disallow: /padding/padding/padding/padding\n")
		}
		return b.String()
	}()
	redirects := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var i int
			fmt.Sscanf(r.URL.Query().Get("hop"), "%d", &i)
			if i < n {
				http.Redirect(w, r, fmt.Sprintf("/robots.txt?hop=%d", i+1), http.StatusFound)
				return
			}
			fmt.Fprint(w, rules)
		}
	}
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		private     bool // want /private allowed?
		other       bool // want /other allowed?
		wantErr     error
		wantKind    Kind
		wantTrunc   string
		wantBodyLen int
	}{
		{"2.3.1.1 200", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, rules) }, false, true, nil, 0, "", len(rules)},
		{"2.3.1.3 404 allows all", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, true, true, nil, 0, "", -1},
		{"2.3.1.3 403 allows all", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }, true, true, nil, 0, "", -1},
		{"2.3.1.4 500 disallows all", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, false, false, ErrRobotsServerError, 0, "", -1},
		{"429 disallows all, like a 5xx", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		}, false, false, ErrRobotsServerError, 0, "", -1},
		{"2.3.1.4 503 disallows all", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }, false, false, ErrRobotsServerError, 0, "", -1},
		{"2.3.1.2 five redirects followed", redirects(5), false, true, nil, 0, "", len(rules)},
		{"2.3.1.2 six redirects: unavailable", redirects(6), true, true, nil, 0, "", -1},
		{"2.3.1.2 redirect loop: unavailable", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/robots.txt", http.StatusMovedPermanently)
		}, true, true, nil, 0, "", -1},
		{"2.5 10 MiB cut at 500 KiB", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, big) }, true, true, nil, 0, TruncatedLength, DefaultMaxRobotsSize},
		{"2.3.1.4 timeout disallows all", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, false, false, nil, KindTimeout, "", -1},
		{"2.3.1.4 drip disallows all", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "User-agent: *\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, false, false, nil, KindTimeout, TruncatedTime, -1},
	}
	slow := newTestFetcher(t, Options{})
	quick := newTestFetcher(t, Options{RobotsTimeout: 300 * time.Millisecond})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, tt.handler)
			f := slow
			if tt.wantKind == KindTimeout {
				f = quick
			}
			r, res, err := f.FetchRobots(context.Background(), srv.URL+"/some/page?x=1")
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			case tt.wantKind != 0:
				wantKind(t, err, tt.wantKind)
			case err != nil:
				t.Errorf("err = %v, want nil", err)
			}
			if r == nil {
				t.Fatal("nil Robots")
			}
			if got := r.Allowed("layercrawl", "/private"); got != tt.private {
				t.Errorf("Allowed(/private) = %v, want %v", got, tt.private)
			}
			if got := r.Allowed("layercrawl", "/other"); got != tt.other {
				t.Errorf("Allowed(/other) = %v, want %v", got, tt.other)
			}
			if tt.name == "2.5 10 MiB cut at 500 KiB" {
				if r.Allowed("layercrawl", "/early") || !r.Allowed("layercrawl", "/late") {
					t.Errorf("rules before the cut must apply and rules after it must not")
				}
			}
			if res != nil {
				if !strings.HasSuffix(res.URL, "/robots.txt") {
					t.Errorf("Result.URL = %q", res.URL)
				}
				if res.Truncated != tt.wantTrunc {
					t.Errorf("Truncated = %q, want %q", res.Truncated, tt.wantTrunc)
				}
				if tt.wantBodyLen >= 0 && len(res.Body) != tt.wantBodyLen {
					t.Errorf("len(Body) = %d, want %d", len(res.Body), tt.wantBodyLen)
				}
			}
		})
	}
}

func TestFetchRobotsUnreachable(t *testing.T) {
	addr := closedAddr(t)
	f := newTestFetcher(t, Options{})
	r, res, err := f.FetchRobots(context.Background(), "http://"+addr+"/")
	wantKind(t, err, KindConnect)
	if res != nil || !r.DisallowsAll() {
		t.Errorf("unreachable robots.txt: result %v, disallow-all %v", res, r.DisallowsAll())
	}
	// A redirect to an unreachable place makes robots.txt unreachable, not
	// the 3xx before it (which would mean "unavailable": allow all).
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+addr+"/robots.txt", http.StatusMovedPermanently)
	})
	r, _, err = f.FetchRobots(context.Background(), srv.URL+"/")
	wantKind(t, err, KindConnect)
	if !r.DisallowsAll() {
		t.Errorf("robots.txt redirected to a refused port must mean disallow all")
	}
	if _, _, err := f.FetchRobots(context.Background(), "ftp://x/"); KindOf(err) != KindUnsupportedScheme {
		t.Errorf("invalid site URL: err %v", err)
	}
}

func TestSiteKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://Example.COM/a", "http://example.com:80"},
		{"https://example.com/", "https://example.com:443"},
		{"http://example.com:8080/x?y", "http://example.com:8080"},
		{"http://[::1]/", "http://[::1]:80"},
	}
	for _, tt := range tests {
		got, err := SiteKey(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("SiteKey(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := SiteKey("mailto:x@y"); err == nil {
		t.Errorf("SiteKey(mailto) did not fail")
	}
}

// fakeSource counts fetches per site; fetches wait for gate when it is set.
type fakeSource struct {
	mu     sync.Mutex // guards calls
	calls  map[string]int
	gate   chan struct{}
	err    error
	robots func(site string, call int) *Robots
}

func (s *fakeSource) FetchRobots(ctx context.Context, siteURL string) (*Robots, *Result, error) {
	site, err := SiteKey(siteURL)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[site]++
	n := s.calls[site]
	s.mu.Unlock()
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return DisallowAllRobots(), nil, ctx.Err()
		}
	}
	if s.robots != nil {
		return s.robots(site, n), nil, s.err
	}
	return AllowAllRobots(), nil, s.err
}

func (s *fakeSource) count(site string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[site]
}

func TestRobotsCacheSingleflight(t *testing.T) {
	src := &fakeSource{gate: make(chan struct{})}
	var fetched atomic.Int32
	c := NewRobotsCache(src, RobotsCacheOptions{OnFetch: func(string, *Result, error) error { fetched.Add(1); return nil }})
	const n = 20
	got := make([]*Robots, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Get(context.Background(), fmt.Sprintf("http://example.com/page%d", i))
			if err != nil {
				t.Error(err)
			}
			got[i] = r
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(src.gate)
	wg.Wait()
	if calls := src.count("http://example.com:80"); calls != 1 {
		t.Errorf("robots.txt fetched %d times, want 1", calls)
	}
	if fetched.Load() != 1 {
		t.Errorf("OnFetch called %d times, want 1", fetched.Load())
	}
	for i := range got {
		if got[i] == nil || got[i] != got[0] {
			t.Fatalf("Get %d returned %p, want the shared %p", i, got[i], got[0])
		}
	}
}

// An error from OnFetch (the crawl could not archive the exchange) is
// returned by Get and leaves nothing cached, so the next Get fetches again.
func TestRobotsCacheOnFetchError(t *testing.T) {
	src := &fakeSource{}
	errArchive := errors.New("disk full")
	fail := true
	c := NewRobotsCache(src, RobotsCacheOptions{OnFetch: func(string, *Result, error) error {
		if fail {
			return errArchive
		}
		return nil
	}})
	if r, err := c.Get(context.Background(), "http://example.com/a"); !errors.Is(err, errArchive) || r != nil {
		t.Fatalf("Get = %v, %v; want nil, an error wrapping %v", r, err, errArchive)
	}
	fail = false
	if r, err := c.Get(context.Background(), "http://example.com/b"); err != nil || r == nil {
		t.Fatalf("Get after the error = %v, %v; want robots, nil", r, err)
	}
	if calls := src.count("http://example.com:80"); calls != 2 {
		t.Errorf("robots.txt fetched %d times, want 2 (the failed OnFetch cached nothing)", calls)
	}
}

func TestRobotsCacheExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := &fakeSource{}
	c := NewRobotsCache(src, RobotsCacheOptions{Now: func() time.Time { return now }})
	get := func() {
		t.Helper()
		if _, err := c.Get(context.Background(), "https://a.example/x"); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		advance time.Duration
		calls   int
	}{
		{0, 1},
		{23 * time.Hour, 1},
		{2 * time.Hour, 2}, // 25h after the first fetch: RFC 9309 section 2.4's 24h
		{time.Hour, 2},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		get()
		if got := src.count("https://a.example:443"); got != s.calls {
			t.Errorf("step %d: %d fetches, want %d", i, got, s.calls)
		}
	}

	// An unreachable answer is retried after ErrorMaxAge.
	src2 := &fakeSource{err: errors.New("unreachable"), robots: func(string, int) *Robots { return DisallowAllRobots() }}
	c2 := NewRobotsCache(src2, RobotsCacheOptions{Now: func() time.Time { return now }, ErrorMaxAge: 10 * time.Minute})
	r, err := c2.Get(context.Background(), "http://b.example/")
	if err != nil || !r.DisallowsAll() {
		t.Fatalf("Get = %v, %v; want disallow-all and nil error", r, err)
	}
	now = now.Add(11 * time.Minute)
	c2.Get(context.Background(), "http://b.example/")
	if got := src2.count("http://b.example:80"); got != 2 {
		t.Errorf("unreachable robots.txt fetched %d times after ErrorMaxAge, want 2", got)
	}
}

// TestRobotsCacheStale checks that a refresh finding the site unreachable
// keeps the last good file (RFC 9309 section 2.4), for at most MaxStale.
func TestRobotsCacheStale(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	good, _ := ParseRobots([]byte("User-agent: *\nDisallow: /private\n"))
	var unreachable atomic.Bool
	src := &fakeSource{robots: func(string, int) *Robots {
		if unreachable.Load() {
			return DisallowAllRobots()
		}
		return good
	}}
	c := NewRobotsCache(srcWithErr{src, &unreachable}, RobotsCacheOptions{Now: func() time.Time { return now }, MaxStale: 72 * time.Hour})
	get := func() *Robots {
		t.Helper()
		r, err := c.Get(context.Background(), "http://a.example/")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	steps := []struct {
		advance     time.Duration
		unreachable bool
		wantGood    bool
		calls       int
	}{
		{0, false, true, 1},
		{25 * time.Hour, true, true, 2},  // refresh fails: the good file stays
		{2 * time.Hour, true, true, 3},   // ErrorMaxAge (1h) later: retried, still failing, 27h stale
		{48 * time.Hour, true, false, 4}, // 75h after the good fetch: past MaxStale, disallow all
		{2 * time.Hour, false, true, 5},  // back: the new good file
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		unreachable.Store(s.unreachable)
		r := get()
		if gotGood := r == good; gotGood != s.wantGood {
			t.Errorf("step %d: got the good file %v, want %v", i, gotGood, s.wantGood)
		}
		if got := src.count("http://a.example:80"); got != s.calls {
			t.Errorf("step %d: %d fetches, want %d", i, got, s.calls)
		}
	}
}

// srcWithErr makes fakeSource report an error while *failing is set.
type srcWithErr struct {
	*fakeSource
	failing *atomic.Bool
}

func (s srcWithErr) FetchRobots(ctx context.Context, site string) (*Robots, *Result, error) {
	r, res, err := s.fakeSource.FetchRobots(ctx, site)
	if err == nil && s.failing.Load() {
		err = errors.New("unreachable")
	}
	return r, res, err
}

func TestRobotsCacheLeaderCanceled(t *testing.T) {
	src := &fakeSource{gate: make(chan struct{})}
	c := NewRobotsCache(src, RobotsCacheOptions{})
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() {
		_, err := c.Get(leaderCtx, "http://a.example/")
		leaderDone <- err
	}()
	for src.count("http://a.example:80") == 0 {
		time.Sleep(time.Millisecond)
	}
	waiterDone := make(chan *Robots, 1)
	go func() {
		r, err := c.Get(context.Background(), "http://a.example/")
		if err != nil {
			t.Error(err)
		}
		waiterDone <- r
	}()
	time.Sleep(20 * time.Millisecond)
	cancelLeader()
	if err := <-leaderDone; !errors.Is(err, context.Canceled) {
		t.Errorf("leader err = %v, want context.Canceled", err)
	}
	// The waiter takes over the fetch: release it.
	for src.count("http://a.example:80") < 2 {
		time.Sleep(time.Millisecond)
	}
	close(src.gate)
	if r := <-waiterDone; r == nil || r.DisallowsAll() {
		t.Errorf("waiter got %v, want the allow-all answer of its own fetch", r)
	}

	// A waiter whose own ctx ends returns at once.
	src2 := &fakeSource{gate: make(chan struct{})}
	c2 := NewRobotsCache(src2, RobotsCacheOptions{})
	leader2 := make(chan struct{})
	go func() {
		defer close(leader2)
		c2.Get(context.Background(), "http://b.example/")
	}()
	for src2.count("http://b.example:80") == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c2.Get(ctx, "http://b.example/"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiter err = %v, want DeadlineExceeded", err)
	}
	close(src2.gate)
	<-leader2
	if _, err := c2.Get(context.Background(), "http://b.example/"); err != nil {
		t.Error(err)
	}
}

func TestRobotsCacheEviction(t *testing.T) {
	src := &fakeSource{}
	c := NewRobotsCache(src, RobotsCacheOptions{MaxEntries: 2})
	for _, h := range []string{"a", "b", "a", "c", "a", "b"} {
		if _, err := c.Get(context.Background(), "http://"+h+".example/"); err != nil {
			t.Fatal(err)
		}
	}
	// a stays recent; b is evicted by c, then fetched again.
	want := map[string]int{"a": 1, "b": 2, "c": 1}
	for h, n := range want {
		if got := src.count("http://" + h + ".example:80"); got != n {
			t.Errorf("%s fetched %d times, want %d", h, got, n)
		}
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d, want 2", c.Len())
	}
	if _, err := c.Get(context.Background(), "not a url"); err == nil {
		t.Errorf("Get(invalid URL) did not fail")
	}
}

// TestRobotsCacheWithFetcher runs the cache over a real Fetcher: many
// goroutines asking about one site cause one robots.txt request.
func TestRobotsCacheWithFetcher(t *testing.T) {
	var hits atomic.Int32
	var srvURL string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			if r.Host != strings.TrimPrefix(srvURL, "http://") {
				t.Errorf("Host header %q, want %q", r.Host, strings.TrimPrefix(srvURL, "http://"))
			}
			hits.Add(1)
			time.Sleep(50 * time.Millisecond)
			fmt.Fprint(w, "User-agent: layercrawl\nDisallow: /no\nCrawl-delay: 2\n")
		}
	})
	srvURL = srv.URL
	f := newTestFetcher(t, Options{})
	c := NewRobotsCache(f, RobotsCacheOptions{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Get(context.Background(), fmt.Sprintf("%s/no/%d", srv.URL, i))
			if err != nil {
				t.Error(err)
				return
			}
			if r.Allowed(DefaultUserAgent, fmt.Sprintf("/no/%d", i)) || r.CrawlDelay(DefaultUserAgent) != 2*time.Second {
				t.Errorf("robots rules not applied")
			}
		}()
	}
	wg.Wait()
	if n := hits.Load(); n != 1 {
		t.Errorf("robots.txt requested %d times, want 1", n)
	}
}

// urlSource records the site URL it is asked about.
type urlSource struct{ got chan string }

func (s urlSource) FetchRobots(_ context.Context, siteURL string) (*Robots, *Result, error) {
	s.got <- siteURL
	return AllowAllRobots(), nil, nil
}

// TestRobotsCacheHostHeader: the cache keys sites with an explicit default
// port but must not fetch robots.txt as "example.com:80", which would be
// the Host header; some servers treat that as another virtual host.
func TestRobotsCacheHostHeader(t *testing.T) {
	src := urlSource{got: make(chan string, 1)}
	c := NewRobotsCache(src, RobotsCacheOptions{})
	if _, err := c.Get(context.Background(), "http://Example.com/a/b?c"); err != nil {
		t.Fatal(err)
	}
	ru, err := RobotsURL(<-src.got)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ru.String(), "http://Example.com/robots.txt"; got != want {
		t.Errorf("robots.txt fetched as %q, want %q", got, want)
	}
}
