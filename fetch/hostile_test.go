package fetch_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/internal/hostile"
)

// hostileFetcher returns a Fetcher that may reach loopback and resolves no
// name, closed when the test ends.
func hostileFetcher(t *testing.T, opts fetch.Options) *fetch.Fetcher {
	t.Helper()
	opts.AllowPrivate = true
	// No DNS server: the unresolvable name fails at once on any machine.
	opts.Resolver = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS server in this test")
	}}
	f, err := fetch.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// TestHostileFetchEveryEndpoint fetches each endpoint once and checks that the
// fetch-level defences end it with the specific outcome it should have.
func TestHostileFetchEveryEndpoint(t *testing.T) {
	site := hostile.StartHost(hostile.Options{DripInterval: 50 * time.Millisecond})
	defer site.Close()
	// tight cuts the hostile endpoints short; roomy lets the well-formed
	// pages through even on a loaded machine under -race.
	const tightLimit, roomyLimit = 256 << 10, 4 << 20
	tight := hostileFetcher(t, fetch.Options{FetchTimeout: time.Second, ResponseHeaderTimeout: 500 * time.Millisecond, MaxBodySize: tightLimit})
	roomy := hostileFetcher(t, fetch.Options{FetchTimeout: 10 * time.Second, MaxBodySize: roomyLimit})

	tests := []struct {
		path   string
		kind   fetch.Kind // 0: no error
		status int
		trunc  string
		links  int // -1: not checked
		loc    string
		tight  bool
	}{
		{"/", 0, 200, "", len(site.Links()), "", false},
		{hostile.PathDrip, fetch.KindTimeout, 200, fetch.TruncatedTime, -1, "", true},
		{hostile.PathSilent, fetch.KindTimeout, 0, "", -1, "", true},
		{hostile.PathEndless, 0, 200, fetch.TruncatedLength, -1, "", true},
		{hostile.PathBig, 0, 200, fetch.TruncatedLength, 0, "", true},
		{hostile.PathBomb, 0, 200, fetch.TruncatedLength, 0, "", true},
		{hostile.PathReset, fetch.KindConnectionReset, 0, "", -1, "", false},
		{hostile.PathResetMidBody, fetch.KindConnectionReset, 200, fetch.TruncatedDisconnect, 1, "", false},
		{hostile.PathShort, fetch.KindTruncated, 200, fetch.TruncatedDisconnect, 0, "", false},
		{hostile.PathGarbage, fetch.KindProtocol, 0, "", -1, "", false},
		{hostile.PathManyLinks, 0, 200, "", fetch.DefaultMaxOutlinks, "", false},
		{hostile.PathBadBytes, 0, 200, "", 2, "", false},
		{hostile.PathRedirectLoop, 0, 302, "", 0, "/loop/b", false},
		{hostile.PathRedirectChain, 0, 301, "", 0, "/chain/1", false},
		{hostile.PathDeep + "a/a/", 0, 200, "", 1, "", false},
		{hostile.PathCalendar, 0, 200, "", 2, "", false},
		{hostile.PathSession, 0, 200, "", 1, "", false},
		{hostile.PathLonger, 0, 200, "", 1, "", false},
		{hostile.PathUnresolvable, 0, 200, "", 1, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f, limit := roomy, roomyLimit
			if tt.tight {
				f, limit = tight, tightLimit
			}
			start := time.Now()
			res, err := f.Fetch(context.Background(), site.URL+tt.path)
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %v: a defence did not fire", took)
			}
			if got := fetch.KindOf(err); (err != nil) != (tt.kind != 0) || (err != nil && got != tt.kind) {
				t.Fatalf("err = %v (kind %v), want kind %v (none if other)", err, got, tt.kind)
			}
			if tt.status == 0 {
				if res != nil {
					t.Errorf("got a Result with status %d, want none", res.Status)
				}
				return
			}
			if res == nil {
				t.Fatalf("no Result")
			}
			if res.Status != tt.status || res.Truncated != tt.trunc || res.Location != tt.loc {
				t.Errorf("status %d truncated %q location %q; want %d %q %q", res.Status, res.Truncated, res.Location, tt.status, tt.trunc, tt.loc)
			}
			if len(res.Body) > limit {
				t.Errorf("body of %d bytes exceeds the %d cap", len(res.Body), limit)
			}
			if tt.links >= 0 && len(res.Links) != tt.links {
				t.Errorf("%d links, want %d", len(res.Links), tt.links)
			}
		})
	}

	_, err := roomy.Fetch(context.Background(), hostile.UnresolvableURL)
	if fetch.KindOf(err) != fetch.KindDNS {
		t.Errorf("unresolvable link: err %v, want kind dns", err)
	}
}

// TestHostileRobotsModes checks what each robots.txt behaviour means for the
// crawler, through the fetch package's RFC 9309 handling.
func TestHostileRobotsModes(t *testing.T) {
	tests := []struct {
		mode         hostile.RobotsMode
		private      bool // /private/secret allowed?
		afterCut     bool // /after-cut/x allowed?
		other        bool // /x allowed?
		wantErr      bool
		wantTruncLen bool
	}{
		{hostile.RobotsNormal, false, true, true, false, false},
		{hostile.RobotsHuge, false, true, true, false, true},
		{hostile.RobotsTimeout, false, false, false, true, false},
		{hostile.RobotsServerError, false, false, false, true, false},
		{hostile.RobotsMissing, true, true, true, false, false},
	}
	f := hostileFetcher(t, fetch.Options{RobotsTimeout: 300 * time.Millisecond})
	for _, tt := range tests {
		site := hostile.StartHost(hostile.Options{Robots: tt.mode})
		r, res, err := f.FetchRobots(context.Background(), site.URL+"/")
		site.Close()
		if (err != nil) != tt.wantErr {
			t.Errorf("mode %d: err %v, want error %v", tt.mode, err, tt.wantErr)
		}
		got := [3]bool{r.Allowed("layercrawl", hostile.PathPrivate), r.Allowed("layercrawl", "/after-cut/x"), r.Allowed("layercrawl", "/x")}
		if want := [3]bool{tt.private, tt.afterCut, tt.other}; got != want {
			t.Errorf("mode %d: allowed (private, after-cut, other) = %v, want %v", tt.mode, got, want)
		}
		if tt.wantTruncLen && (res == nil || res.Truncated != fetch.TruncatedLength || len(res.Body) != fetch.DefaultMaxRobotsSize) {
			t.Errorf("mode %d: huge robots.txt not cut at %d bytes", tt.mode, fetch.DefaultMaxRobotsSize)
		}
	}
}
