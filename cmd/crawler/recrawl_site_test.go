package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/nginxtest"
	"github.com/layercrawl/layercrawl/internal/warciotest"
	"github.com/layercrawl/layercrawl/storage"
)

// TestRecrawlDocSite measures a recrawl of a real documentation site
// served by nginx (gzip, ETag and Last-Modified on), a copy of the
// directory in $LAYERCRAWL_RECRAWL_SITE (for example
// /usr/share/doc/python-django-doc/html): a first crawl; then 10% of the
// HTML pages changed, 5% touched (new time, same bytes), 5% deleted, and
// 2% new pages linked from the changed ones; a second crawl with
// --previous. It checks that every unchanged page is a revisit, every
// changed and new page archived in full, every deleted page gone, and that
// every revisit resolves (read with warcio.js across both directories) to
// a response of the same payload digest; it logs the figures. Skipped
// without $LAYERCRAWL_RECRAWL_SITE.
func TestRecrawlDocSite(t *testing.T) {
	src := os.Getenv("LAYERCRAWL_RECRAWL_SITE")
	if src == "" {
		t.Skip("set LAYERCRAWL_RECRAWL_SITE to a static site's directory (e.g. /usr/share/doc/python-django-doc/html)")
	}
	root := filepath.Join(t.TempDir(), "site")
	if out, err := exec.Command("cp", "-a", "--dereference", src, root).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	// Debian's doc packages gzip some files and link to others outside
	// the tree: the crawl takes what nginx serves.
	srv := nginxtest.Start(t, nginxtest.Options{Root: root})
	var pages []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".html") {
			pages = append(pages, p)
		}
		return nil
	})
	slices.Sort(pages)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	// No retries, no robots.txt wait: Django's docs link to
	// http://127.0.0.1:8000/, in scope on nginxtest's 127.0.0.1, where
	// nothing answers (its robots.txt would be waited for 5 minutes).
	common := []string{"--delay", "-1", "--allow-private", "--concurrency", "8", "--expected-urls", "100000", "--progress-interval", "-1", "--max-depth", "-1", "--max-retries", "-1", "--robots-wait", "-1"}
	t0 := time.Now()
	if code, _, stderr := runCrawler(t, context.Background(), append(common, "--out", first, srv.URL+"/index.html")...); code != 0 {
		t.Fatalf("first crawl exited %d:\n%s", code, stderr)
	}
	firstTime := time.Since(t0)

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LAYERCRAWL_RECRAWL_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (LAYERCRAWL_RECRAWL_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 33))
	order := rng.Perm(len(pages))
	n10, n5 := len(pages)/10, len(pages)/20
	urlOf := func(p string) string { return srv.URL + "/" + filepath.ToSlash(strings.TrimPrefix(p, root+"/")) }
	later := time.Now().Add(time.Hour)
	want := make(map[string]string) // URL -> recrawl, for the pages changed
	var changed []string
	for _, i := range order[:n10] {
		changed = append(changed, pages[i])
	}
	nNew := max(1, len(pages)/50)
	for k, p := range changed {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		add := fmt.Sprintf("<p>Changed for the recrawl measurement (%d).</p>", k)
		if k < nNew {
			name := fmt.Sprintf("recrawl-new-%d.html", k)
			add += fmt.Sprintf(`<a href="/%s">new page %d</a>`, name, k)
			np := filepath.Join(root, name)
			if err := os.WriteFile(np, []byte(fmt.Sprintf("<html><body><h1>New page %d</h1>%s</body></html>", k, strings.Repeat("<p>new text</p>", 50))), 0o644); err != nil {
				t.Fatal(err)
			}
			want[urlOf(np)] = "new"
		}
		s := string(b)
		if i := strings.LastIndex(s, "</body>"); i >= 0 {
			s = s[:i] + add + s[i:]
		} else {
			s += add
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, later, later)
		want[urlOf(p)] = "changed"
	}
	for _, i := range order[n10 : n10+n5] {
		os.Chtimes(pages[i], later, later)
		want[urlOf(pages[i])] = "unchanged" // touched: a 200 of the same payload
	}
	for _, i := range order[n10+n5 : n10+2*n5] {
		os.Remove(pages[i])
		want[urlOf(pages[i])] = "gone"
	}

	t0 = time.Now()
	code, stdout, stderr := runCrawler(t, context.Background(), append(common, "--out", second, "--previous", first)...)
	if code != 0 {
		t.Fatalf("second crawl exited %d:\n%s", code, stderr)
	}
	secondTime := time.Since(t0)
	t.Logf("second crawl:\n%s", stdout)

	fetched1 := make(map[string]int)
	for _, e := range readLog(t, filepath.Join(first, "crawl.log.jsonl")) {
		fetched1[e.URL] = e.Status
	}
	got := make(map[string]storage.Entry)
	counts := make(map[string]int)
	for _, e := range readLog(t, filepath.Join(second, "crawl.log.jsonl")) {
		got[e.URL] = e
		counts[e.Recrawl]++
	}
	bad := 0
	for u, w := range want {
		if _, ok := fetched1[u]; !ok && w != "new" {
			continue // not reached by the first crawl
		}
		if g := got[u].Recrawl; g != w {
			bad++
			if bad <= 10 {
				t.Errorf("%s: recrawl %q (status %d), want %q", u, g, got[u].Status, w)
			}
		}
	}
	for u, s := range fetched1 {
		if _, ok := want[u]; ok || s != 200 {
			continue
		}
		if g := got[u].Recrawl; g != "unchanged" {
			bad++
			if bad <= 10 {
				t.Errorf("%s (not changed): recrawl %q (status %d), want unchanged", u, g, got[u].Status)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d URLs not as expected", bad)
	}

	// WARC bytes: the second crawl's files against its changed and new
	// pages' response records.
	sizes := func(d string) (total int64, byType map[string]int64, byURL map[string]int64, revisits int) {
		byType, byURL = make(map[string]int64), make(map[string]int64)
		files, _ := filepath.Glob(filepath.Join(d, "warc", "*.warc.gz"))
		for _, p := range files {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			total += fi.Size()
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			r := storage.NewWARCReader(f)
			var prev *storage.WARCRecord
			end := func(at int64) {
				if prev != nil {
					byType[prev.Header.Get("WARC-Type")] += at - prev.Offset
					if prev.Header.Get("WARC-Type") == "response" {
						byURL[prev.Header.Get("WARC-Target-URI")] += at - prev.Offset
					}
				}
			}
			for {
				rec, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				end(rec.Offset)
				prev = rec
				if rec.Header.Get("WARC-Type") == "revisit" {
					revisits++
				}
			}
			end(fi.Size())
			f.Close()
		}
		return
	}
	total1, _, _, _ := sizes(first)
	total2, byType2, byURL2, revisits := sizes(second)
	var changedNew int64
	for u, w := range want {
		if w == "changed" || w == "new" {
			changedNew += byURL2[u]
		}
	}
	budget := int64(1.2*float64(changedNew)) + 2048*int64(revisits)
	t.Logf("pages: %d HTML files; first crawl %d URLs in %v, WARC %d bytes", len(pages), len(fetched1), firstTime.Round(time.Millisecond), total1)
	t.Logf("second crawl in %v (%.2fx the first): recrawl counts %v", secondTime.Round(time.Millisecond), secondTime.Seconds()/firstTime.Seconds(), counts)
	t.Logf("second crawl WARC %d bytes (%.1f%% of the first): by record type %v; changed and new pages' response records %d bytes; %d revisits; goal 1.2 x %d + 2048 x %d = %d bytes: %s",
		total2, 100*float64(total2)/float64(total1), byType2, changedNew, revisits, changedNew, revisits, budget, map[bool]string{true: "met", false: "NOT met"}[total2 <= budget])

	// Every revisit resolves to a response of the same payload digest.
	var files []string
	for _, d := range []string{first, second} {
		f, _ := filepath.Glob(filepath.Join(d, "warc", "*.warc.gz"))
		files = append(files, f...)
	}
	recs := warciotest.Read(t, filepath.Join("..", "..", "storage", "testdata", "warcio_check.mjs"), files...)
	responses := make(map[string]warciotest.Record)
	for _, r := range recs {
		if r.Type == "response" {
			responses[r.Headers["WARC-Record-ID"]] = r
		}
	}
	resolved := 0
	for _, r := range recs {
		if r.Type != "revisit" {
			continue
		}
		ref, ok := responses[r.Headers["WARC-Refers-To"]]
		if !ok || ref.Headers["WARC-Payload-Digest"] != r.Headers["WARC-Payload-Digest"] || ref.Headers["WARC-Target-URI"] != r.Headers["WARC-Refers-To-Target-URI"] {
			t.Errorf("revisit of %s does not resolve: refers to %s", r.Headers["WARC-Target-URI"], r.Headers["WARC-Refers-To"])
			continue
		}
		resolved++
	}
	t.Logf("warcio.js: %d records in %d files; %d revisits, every one resolved to a response of the same payload digest: %v", len(recs), len(files), resolved, resolved == revisits)
}
