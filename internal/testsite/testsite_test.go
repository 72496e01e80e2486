package testsite

import (
	"net/http"
	"strings"
	"testing"
)

func TestExpected(t *testing.T) {
	s, _ := Start(t, 5000)
	req, denied := s.Expected()
	have := map[string]bool{}
	for _, u := range req {
		have[u] = true
	}
	for i := range s.Pages {
		if !have[s.PageURL(i)] {
			t.Fatalf("page %d (%s) not reachable", i, s.PageURL(i))
		}
	}
	for _, u := range denied {
		if !strings.Contains(u, "/private/") && !strings.HasSuffix(u, ".pdf") {
			t.Errorf("denied %s is not covered by a robots rule", u)
		}
		if have[u] {
			t.Errorf("%s is both requested and denied", u)
		}
	}
	for _, want := range []string{"/loop/a", "/loop/b", "/go/", "/go2/", "/missing/", "/files/", "/hub.html"} {
		found := false
		for _, u := range req {
			if strings.Contains(u, want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no requested URL contains %q", want)
		}
	}
	if len(req) < 5000 || len(denied) == 0 {
		t.Errorf("requested %d, denied %d", len(req), len(denied))
	}
}

func TestServe(t *testing.T) {
	s, hosts := Start(t, 300)
	tests := []struct {
		url    string
		status int
		where  string // a substring of the body or the Location
	}{
		{s.PageURL(7), 200, "page 7"},
		{"http://" + s.Addrs[0] + "/robots.txt", 200, "Disallow: /private/"},
		{"http://" + s.Addrs[1] + "/robots.txt", 200, "Disallow: /*.pdf$"},
		{"http://" + s.Addrs[1] + "/d0/p7.html", 200, "page 7"},
		{"http://" + s.Addrs[0] + "/d0/p7.html", 404, ""},
		{"http://" + s.Addrs[0] + "/go/7", 301, s.PageURL(7)},
		{"http://" + s.Addrs[0] + "/go2/7", 302, "/go/7"},
		{"http://" + s.Addrs[2] + "/loop/a", 301, "/loop/b"},
		{"http://" + s.Addrs[0] + "/hub.html", 200, "/d0/p21.html"},
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range tests {
		resp, err := client.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			body.Write(buf[:n])
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.url, resp.StatusCode, tc.status)
		}
		if got := body.String() + resp.Header.Get("Location"); !strings.Contains(got, tc.where) {
			t.Errorf("%s: %q does not contain %q", tc.url, got, tc.where)
		}
	}
	if n := hosts[1].Requests()[s.PageURL(7)]; n != 2 {
		t.Errorf("host 1 recorded %d requests of page 7, want 2", n)
	}
}
