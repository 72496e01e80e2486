package faults

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/internal/testdns"
	"github.com/layercrawl/layercrawl/internal/testweb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "<p>fine</p>")
})

func newInjector(t *testing.T, o Options) *Injector {
	t.Helper()
	in, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// client returns a plain net/http client. Its timeout is short only where
// a Timeout fault is expected: elsewhere a real answer must never be
// given up on, even under -race on a loaded machine.
func client(t *testing.T, resolver *net.Resolver, timeout time.Duration) *http.Client {
	tr := &http.Transport{DialContext: (&net.Dialer{Resolver: resolver}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

func get(c *http.Client, u string) (*http.Response, []byte, error) {
	res, err := c.Get(u)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

// TestFaults serves each fault once and checks that a plain net/http
// client sees the right kind of error, then that the next attempt
// succeeds.
func TestFaults(t *testing.T) {
	all := append(Transient(),
		Fault{Kind: Status, Status: 429, RetryAfter: RetryAfterGarbage},
		Fault{Kind: Status, Status: 503, RetryAfter: RetryAfterYear},
		Fault{Kind: Status, Status: 503, RetryAfter: RetryAfterSeconds})
	for _, f := range all {
		t.Run(f.String(), func(t *testing.T) {
			in := newInjector(t, Options{Rate: 1, MaxFailures: 1, Faults: []Fault{f}, RetryAfterSeconds: 7})
			srv := Start(ok, in)
			defer srv.Close()
			defer in.Close()
			timeout := time.Minute
			if f.Kind == Timeout {
				timeout = 300 * time.Millisecond
			}
			c := client(t, nil, timeout)
			start := time.Now()
			res, _, err := get(c, srv.URL+"/x")
			switch f.Kind {
			case Reset:
				if !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("err %v, want a connection reset", err)
				}
			case Timeout:
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Errorf("err %v, want a timeout", err)
				}
			case Truncated:
				if !errors.Is(err, io.ErrUnexpectedEOF) || res == nil || res.StatusCode != 200 {
					t.Errorf("err %v, want a 200 whose body ends early", err)
				}
			case Status:
				if err != nil || res.StatusCode != f.Status {
					t.Fatalf("status %v, %v; want %d", res, err, f.Status)
				}
				checkRetryAfter(t, f.RetryAfter, res.Header.Get("Retry-After"), start, 7*time.Second)
			}
			res, body, err := get(c, srv.URL+"/x")
			if err != nil || res.StatusCode != 200 || string(body) != "<p>fine</p>" {
				t.Errorf("second attempt: %v %q %v, want the page", res, body, err)
			}
			if got := in.Attempts(srv.URL + "/x"); got != 2 {
				t.Errorf("%d attempts counted, want 2", got)
			}
		})
	}
}

func checkRetryAfter(t *testing.T, ra RetryAfter, v string, sent time.Time, delay time.Duration) {
	t.Helper()
	secs, errInt := strconv.Atoi(v)
	date, errDate := http.ParseTime(v)
	switch ra {
	case NoRetryAfter:
		if v != "" {
			t.Errorf("Retry-After %q, want none", v)
		}
	case RetryAfterSeconds:
		if errInt != nil || time.Duration(secs)*time.Second != delay {
			t.Errorf("Retry-After %q, want %v in seconds", v, delay)
		}
	case RetryAfterDate:
		if wait := date.Sub(sent); errDate != nil || wait < delay-time.Second || wait > delay+3*time.Second {
			t.Errorf("Retry-After %q (%v away), want a date about %v away", v, wait, delay)
		}
	case RetryAfterGarbage:
		if errInt == nil || errDate == nil {
			t.Errorf("Retry-After %q parses", v)
		}
	case RetryAfterYear:
		if wait := date.Sub(sent); errDate != nil || wait < 364*24*time.Hour {
			t.Errorf("Retry-After %q (%v away), want a year", v, wait)
		}
	}
}

// TestLookupFaults checks the resolver's failures: a temporary DNS error
// and a refused connection, each for its burst only.
func TestLookupFaults(t *testing.T) {
	srv := Start(ok, newInjector(t, Options{}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	base := func(host string) ([]netip.Addr, error) {
		if host == "a.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, testdns.ErrNotFound
	}
	for _, kind := range []Kind{DNS, Refused} {
		// Bursts long enough for one lookup under -race on a loaded
		// machine, and requests further apart than a burst.
		o := Options{MaxFailures: 2, Burst: 300 * time.Millisecond}
		if kind == DNS {
			o.DNSRate = 1
		} else {
			o.RefusedRate = 1
		}
		in := newInjector(t, o)
		c := client(t, testdns.New(in.Lookup(base)), time.Minute)
		u := "http://a.test:" + port + "/"
		for burst := range 3 {
			_, _, err := get(c, u)
			switch {
			case burst == 2 && err != nil:
				t.Errorf("%v, burst 2: %v, want success after MaxFailures bursts", kind, err)
			case burst < 2 && kind == DNS:
				var de *net.DNSError
				if !errors.As(err, &de) || !de.IsTemporary {
					t.Errorf("burst %d: err %v, want a temporary DNS error", burst, err)
				}
			case burst < 2 && kind == Refused:
				if !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("burst %d: err %v, want connection refused", burst, err)
				}
			}
			time.Sleep(350 * time.Millisecond)
		}
		if got := in.Served()[Fault{Kind: kind}]; got != 2 {
			t.Errorf("%v served %d times, want 2", kind, got)
		}
	}
}

// TestHostModes checks the whole-host misbehaviours.
func TestHostModes(t *testing.T) {
	in := newInjector(t, Options{StormRequests: 3, Hosts: map[string]HostMode{
		"forever.test": Forever429, "storm.test": Storm503, "flaky.test": ResetEverySecond}})
	srv := Start(ok, in)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := client(t, testdns.New(func(string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}), time.Minute)
	status := func(host, path string) int {
		res, _, err := get(c, "http://"+host+":"+port+path)
		if err != nil {
			if errors.Is(err, syscall.ECONNRESET) {
				return -1
			}
			t.Fatalf("%s%s: %v", host, path, err)
		}
		return res.StatusCode
	}
	for i := range 6 {
		if got := status("forever.test", "/"+strconv.Itoa(i)); got != 429 {
			t.Errorf("forever.test request %d: %d, want 429", i, got)
		}
		want := 200
		if i < 3 {
			want = 503
		}
		if got := status("storm.test", "/"+strconv.Itoa(i%2)); got != want {
			t.Errorf("storm.test request %d: %d, want %d", i, got, want)
		}
		want = 200
		if i%2 == 1 {
			want = -1
		}
		if got := status("flaky.test", "/"); got != want {
			t.Errorf("flaky.test request %d: %d, want %d (-1: reset)", i, got, want)
		}
	}
	if got := status("forever.test", "/robots.txt"); got != 200 {
		t.Errorf("robots.txt of a 429 host: %d, want it served (Options.Robots off)", got)
	}
	p, _ := in.Plan("http://forever.test:" + port + "/x")
	if !p.Forever || p.Faults[0].Status != 429 {
		t.Errorf("plan of a 429 host: %+v", p)
	}
	if _, _, err := in.Outcome("http://storm.test:"+port+"/x", 3); err == nil {
		t.Error("Outcome on a storm host: no error")
	}
}

// TestPlan checks that Plan predicts every attempt, and Outcome what a
// client with a retry budget ends with.
func TestPlan(t *testing.T) {
	in := newInjector(t, Options{Seed: 5, Rate: 0.5, MaxFailures: 4,
		Faults: []Fault{{Kind: Reset}, {Kind: Truncated}, {Kind: Status, Status: 502}, {Kind: Status, Status: 429, RetryAfter: RetryAfterSeconds}}})
	srv := Start(ok, in)
	defer srv.Close()
	c := client(t, nil, time.Minute)
	var failures, maxRun int
	for i := range 200 {
		u := srv.URL + "/p" + strconv.Itoa(i)
		plan, err := in.Plan(u)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; ; n++ {
			res, _, err := get(c, u)
			var got Fault
			switch {
			case errors.Is(err, syscall.ECONNRESET):
				got = Fault{Kind: Reset}
			case errors.Is(err, io.ErrUnexpectedEOF):
				got = Fault{Kind: Truncated}
			case err != nil:
				t.Fatalf("%s attempt %d: %v", u, n, err)
			case res.StatusCode != 200:
				got = Fault{Kind: Status, Status: res.StatusCode}
				if res.Header.Get("Retry-After") != "" {
					got.RetryAfter = RetryAfterSeconds
				}
			}
			var want Fault
			if n < len(plan.Faults) {
				want = plan.Faults[n]
			}
			if got != want {
				t.Fatalf("%s attempt %d: %v, plan says %v", u, n, got, want)
			}
			if got.Kind == None {
				break
			}
			failures++
		}
		maxRun = max(maxRun, len(plan.Faults))
		last, attempts, err := in.Outcome(u, 1)
		if err != nil || (len(plan.Faults) > 1) != (last.Kind != None) || attempts != min(len(plan.Faults)+1, 2) {
			t.Errorf("%s: Outcome with 1 retry = %v, %d, %v; plan %v", u, last, attempts, err, plan.Faults)
		}
	}
	if maxRun > 4 || maxRun < 2 || failures < 100 || failures > 300 {
		t.Errorf("%d failures over 200 URLs at rate 0.5, longest run %d (bound 4)", failures, maxRun)
	}
}

// TestFetchKinds checks that the fetch package classifies each fault as
// the kind a retry policy needs.
func TestFetchKinds(t *testing.T) {
	base := func(host string) ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil }
	for _, tc := range []struct {
		o    Options
		want fetch.Kind
	}{
		{Options{Rate: 1, Faults: []Fault{{Kind: Reset}}}, fetch.KindConnectionReset},
		{Options{Rate: 1, Faults: []Fault{{Kind: Timeout}}}, fetch.KindTimeout},
		{Options{Rate: 1, Faults: []Fault{{Kind: Truncated}}}, fetch.KindTruncated},
		{Options{DNSRate: 1}, fetch.KindDNS},
		{Options{RefusedRate: 1}, fetch.KindConnect},
	} {
		in := newInjector(t, tc.o)
		srv := Start(ok, in)
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		timeout := time.Minute
		if tc.want == fetch.KindTimeout {
			timeout = 300 * time.Millisecond
		}
		f, err := fetch.New(fetch.Options{AllowPrivate: true, Resolver: testdns.New(in.Lookup(base)), FetchTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Fetch(context.Background(), "http://a.test:"+port+"/")
		if got := fetch.KindOf(err); got != tc.want {
			t.Errorf("%+v: kind %v (%v), want %v", tc.o, got, err, tc.want)
		}
		f.Close()
		srv.Close()
		in.Close()
	}
}

// TestWebCoverage wraps a synthetic web with 20% of attempts failing
// transiently and fetches every URL a crawl of it fetches, retrying each
// failure up to MaxFailures times: every URL succeeds, after exactly the
// attempts its Plan says. Timeout faults are left out: the exact count
// needs a client that never gives up on a real answer, and a timeout
// short enough to test them does under -race on a loaded machine (an
// abandoned attempt still counts on the server). TestFetchKinds covers
// them.
func TestWebCoverage(t *testing.T) {
	var faults []Fault
	for _, f := range Transient() {
		if f.Kind != Timeout {
			faults = append(faults, f)
		}
	}
	in := newInjector(t, Options{Seed: 11, Rate: 0.2, Faults: faults})
	w, err := testweb.Start(testweb.Options{Hosts: 5, Pages: 150, Wrap: in.Wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer in.Close()
	e, err := w.Expected(testweb.ExpectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fetch.New(fetch.Options{AllowPrivate: true, Resolver: w.Resolver(), FetchTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	urls := e.Fetched()
	var mu sync.Mutex
	failed := 0
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for attempt := 0; ; attempt++ {
				res, err := f.Fetch(context.Background(), u)
				if err == nil && (res.Status < 500 && res.Status != 408 && res.Status != 425 && res.Status != 429) {
					break
				}
				mu.Lock()
				failed++
				mu.Unlock()
				if attempt == DefaultMaxFailures {
					p, _ := in.Plan(u)
					st := 0
					if res != nil {
						st = res.Status
					}
					t.Errorf("%s still failing after %d retries: %v status %d; plan %v, server counted %d", u, attempt, err, st, p.Faults, in.Attempts(u))
					return
				}
			}
			_, want, err := in.Outcome(u, DefaultMaxFailures)
			if got := in.Attempts(u); err != nil || got != want {
				t.Errorf("%s: %d attempts, Outcome says %d (%v)", u, got, want, err)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d URLs, %d failed attempts, all fetched", len(urls), failed)
	if failed < len(urls)/10 {
		t.Errorf("only %d failed attempts for %d URLs at rate 0.2", failed, len(urls))
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{Rate: -0.1}, {Rate: 1.1}, {DNSRate: 0.6, RefusedRate: 0.6}, {RetryAfterSeconds: -1},
		{Faults: []Fault{{Kind: DNS}}}, {Faults: []Fault{{Kind: Status, Status: 200}}},
		{Hosts: map[string]HostMode{"A.test": Forever429}}, {Hosts: map[string]HostMode{"a.test": 9}},
		{Rate: 0.5, Faults: []Fault{}},
	} {
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: err %v, want ErrInvalidOptions", o, err)
		}
	}
}
