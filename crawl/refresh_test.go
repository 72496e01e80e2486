package crawl

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetaRefreshIsARedirect: a page's <meta http-equiv="refresh"> target
// is followed as a redirect (hop R), as Heritrix counts it and as the
// page's WARC metadata record says, resolved against the page's <base>;
// its links are followed as links (hop L).
func TestMetaRefreshIsARedirect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/":
			w.Write([]byte(`<html><head><base href="/docs/"><meta http-equiv="refresh" content="0; url=next.html"></head>` +
				`<body><a href="other.html">other</a></body></html>`))
		case "/docs/next.html", "/docs/other.html":
			w.Write([]byte(`<html><body>page</body></html>`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	o := Options{Seeds: []string{srv.URL + "/"}, Dir: dir, Concurrency: 2}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatalf("Run: %v", err)
	}
	hops := map[string]string{}
	for _, e := range readLog(t, filepath.Join(dir, "crawl.log.jsonl")) {
		if e.Status == 200 {
			hops[strings.TrimPrefix(e.URL, srv.URL)] = e.HopPath
		}
	}
	if hops["/docs/next.html"] != "R" || hops["/docs/other.html"] != "L" || len(hops) != 3 {
		t.Errorf("hop paths %v, want /docs/next.html R (the refresh) and /docs/other.html L", hops)
	}
}
