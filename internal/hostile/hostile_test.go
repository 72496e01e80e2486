package hostile

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, c *http.Client, url string) (*http.Response, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res, b, err
}

// TestEndpoints checks that each host behaves as documented, through a
// plain net/http client (the crawler's view is tested in cmd/crawler).
func TestEndpoints(t *testing.T) {
	s := Start(Options{DripInterval: 10 * time.Millisecond})
	defer s.Close()
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	tests := []struct {
		url      string
		status   int    // 0: the request fails
		contains string // in the first MiB of the body
	}{
		{s.Main + "/", 200, `href="/calendar?d=0"`},
		{s.Main + "/", 200, UnresolvableHost},
		{s.Main + "/robots.txt", 200, "Disallow: /private/"},
		{s.Main + "/links", 200, `href="/links/9999"`},
		{s.Main + "/loop/a", 302, ""},
		{s.Main + "/chain/7", 301, ""},
		{s.Main + "/deep/a/", 200, `href="a/"`},
		{s.Main + "/calendar?d=5", 200, `href="/calendar?d=6"`},
		{s.Main + "/longer/x", 200, "/longer/x" + strings.Repeat("x", LongerStep) + `"`},
		{s.Main + "/reset", 0, ""},
		{s.Main + "/garbage", 0, ""},
		{s.Drip + "/robots.txt", 404, ""},
		{s.HugeRobots + "/", 200, "/after-cut/x"},
		{s.Silent + "/silent", 0, ""},         // the client's deadline
		{s.SlowRobots + "/robots.txt", 0, ""}, // idem
	}
	for _, tc := range tests {
		res, body, err := get(t, c, tc.url)
		if tc.status == 0 {
			if err == nil {
				t.Errorf("%s: status %d, want a failed request", tc.url, res.StatusCode)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if res.StatusCode != tc.status || !bytes.Contains(body, []byte(tc.contains)) {
			t.Errorf("%s: status %d, body %.80q; want %d containing %q", tc.url, res.StatusCode, body, tc.status, tc.contains)
		}
	}

	// The drip never ends: the first MiB takes far longer than the
	// deadline.
	if _, _, err := get(t, c, s.Drip+"/drip"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("drip: err %v, want the deadline", err)
	}
	// The session id changes on every fetch.
	_, a, _ := get(t, c, s.Main+"/session/1/page")
	_, b, _ := get(t, c, s.Main+"/session/1/page")
	if bytes.Equal(a, b) {
		t.Errorf("session page served the same link twice: %q", a)
	}
	if n := s.Requests()[strings.TrimPrefix(s.Main, "http://")+"/session/1/page"]; n != 2 {
		t.Errorf("Requests counted %d fetches of the session page, want 2", n)
	}
}

func TestGeneratedBodies(t *testing.T) {
	b := Bomb()
	if len(b) > 1<<20 {
		t.Errorf("bomb is %d bytes on the wire, want under 1 MiB", len(b))
	}
	// Decode the first 4 MiB only: the whole takes seconds under -race.
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(zr, 4<<20))
	if err != nil || n != 4<<20 {
		t.Errorf("bomb decodes %d bytes, %v; want at least 4 MiB", n, err)
	}
	if len(hugeRobots()) != HugeRobotSize {
		t.Errorf("robots.txt is %d bytes, want %d", len(hugeRobots()), HugeRobotSize)
	}
	if i := bytes.Index(hugeRobots(), []byte("Disallow: /after-cut/")); i < 500<<10 {
		t.Errorf("the after-cut rule is at byte %d, want past 500 KiB", i)
	}
	if got := bytes.Count(manyLinks(), []byte("<a ")); got != ManyLinks {
		t.Errorf("links page has %d links, want %d", got, ManyLinks)
	}
}

// TestStartHost checks the single-host layout: its index links to every
// endpoint on the same host, and each robots mode answers as documented.
func TestStartHost(t *testing.T) {
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	tests := []struct {
		mode     RobotsMode
		status   int // 0: the request fails (the client's deadline)
		contains string
	}{
		{RobotsNormal, 200, "Disallow: /private/"},
		{RobotsHuge, 200, "Disallow: /private/"},
		{RobotsTimeout, 0, ""},
		{RobotsServerError, 500, ""},
		{RobotsMissing, 404, ""},
	}
	for _, tc := range tests {
		h := StartHost(Options{Robots: tc.mode})
		res, body, err := get(t, c, h.URL+"/robots.txt")
		switch {
		case tc.status == 0 && err == nil:
			t.Errorf("mode %d: status %d, want a failed request", tc.mode, res.StatusCode)
		case tc.status != 0 && err != nil:
			t.Errorf("mode %d: %v", tc.mode, err)
		case tc.status != 0 && (res.StatusCode != tc.status || !bytes.Contains(body, []byte(tc.contains))):
			t.Errorf("mode %d: status %d body %.60q; want %d containing %q", tc.mode, res.StatusCode, body, tc.status, tc.contains)
		}
		if tc.mode == RobotsNormal {
			_, body, err := get(t, c, h.URL+"/")
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range h.Links() {
				if !bytes.Contains(body, []byte(`href="`+l+`"`)) {
					t.Errorf("index lacks a link to %s", l)
				}
			}
		}
		h.Close()
	}
}
