package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCrawlPrevious crawls a directory served by net/http's file server
// (Last-Modified from the files' times, If-Modified-Since answered with
// 304) twice, with files changed, touched, deleted and added between, and
// checks the second crawl's log and summary.
func TestCrawlPrevious(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	write := func(name, body string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	const n = 20
	var index strings.Builder
	for i := range n {
		fmt.Fprintf(&index, `<a href="p%d.html">%d</a> `, i, i)
		write(fmt.Sprintf("p%d.html", i), fmt.Sprintf("<html><body>page %d %s</body></html>", i, strings.Repeat("words ", 300)), old)
	}
	write("index.html", "<html><body>"+index.String()+"</body></html>", old)
	ln, err := net.Listen("tcp", "127.0.33.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.FileServer(http.Dir(root)))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	common := []string{"--delay", "-1", "--allow-private", "--concurrency", "4", "--expected-urls", "10000", "--progress-interval", "-1"}
	if code, _, stderr := runCrawler(t, context.Background(), append(common, "--out", first, srv.URL+"/")...); code != 0 {
		t.Fatalf("first crawl exited %d:\n%s", code, stderr)
	}
	later := old.Add(time.Hour)
	write("p0.html", "<html><body>page 0 changed <a href=\"new.html\">new</a></body></html>", later) // changed
	body1, _ := os.ReadFile(filepath.Join(root, "p1.html"))
	write("p1.html", string(body1), later)                    // touched
	os.Remove(filepath.Join(root, "p2.html"))                 // deleted
	write("new.html", "<html><body>new</body></html>", later) // added

	// A directory that is not a crawl's output is refused before --out
	// is created.
	bad := filepath.Join(dir, "bad")
	if code, _, stderr := runCrawler(t, context.Background(), append(common, "--out", bad, "--previous", root)...); code != 2 || !strings.Contains(stderr, root) {
		t.Errorf("--previous %s (not a crawl): exit %d, stderr %q; want 2 naming it", root, code, stderr)
	}
	if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--out %s created by a refused crawl (%v)", bad, err)
	}
	// In Redis mode too, before Redis is contacted.
	if code, _, stderr := runCrawler(t, context.Background(), append(common, "--out", bad, "--previous", root, "--redis", "redis://127.0.0.1:1", srv.URL+"/")...); code != 2 || !strings.Contains(stderr, root) {
		t.Errorf("--previous %s (not a crawl) with --redis: exit %d, stderr %q; want 2 naming it", root, code, stderr)
	}
	if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--out %s created by a refused Redis crawl (%v)", bad, err)
	}

	// No seeds: the first crawl's.
	code, stdout, stderr := runCrawler(t, context.Background(), append(common, "--out", second, "--previous", first)...)
	if code != 0 {
		t.Fatalf("second crawl exited %d:\n%s", code, stderr)
	}
	t.Logf("second crawl:\n%s", stdout)
	want := map[string]string{"/p0.html": "changed", "/p1.html": "unchanged", "/p2.html": "gone", "/new.html": "new", "/p3.html": "unchanged", "/": "unchanged"}
	got := make(map[string]string)
	for _, e := range readLog(t, filepath.Join(second, "crawl.log.jsonl")) {
		got[strings.TrimPrefix(e.URL, srv.URL)] = e.Recrawl
		if e.Recrawl == "unchanged" && e.Previous == "" {
			t.Errorf("%s: unchanged without the previous capture", e.URL)
		}
	}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s: recrawl %q, want %q", path, got[path], w)
		}
	}
	wantLine := fmt.Sprintf("%d URLs captured before: %d unchanged", n+1, n+1-2)
	if !strings.Contains(stdout, wantLine) || !strings.Contains(stdout, "1 changed, 1 gone; 1 new") {
		t.Errorf("summary lacks %q and the changed, gone and new counts:\n%s", wantLine, stdout)
	}
}
