package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/storage"
)

// site serves 60 linked pages, a redirect, a 404, a PDF, and a robots.txt
// that disallows /private/.
func site() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		switch p := r.URL.Path; {
		case p == "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		case p == "/":
			fmt.Fprint(w, `<title>Home</title><a href="/p/0">first</a> <a href="/p/20">20</a> <a href="/moved">moved</a> <a href="/private/x">secret</a>`)
		case p == "/moved":
			http.Redirect(w, r, "/p/50", http.StatusMovedPermanently)
		case p == "/doc.pdf":
			w.Header().Set("Content-Type", "application/pdf")
			fmt.Fprint(w, "%PDF-1.4 not really")
		case strings.HasPrefix(p, "/p/"):
			if _, err := fmt.Sscanf(p, "/p/%d", &i); err != nil || i < 0 || i >= 60 {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `<title>Page %d</title><a href="%d">next</a> <a href="../p/%d#top">prev</a> <a href="/doc.pdf">pdf</a> <a href="/gone">gone</a>`,
				i, i+1, max(i-1, 0))
		default:
			http.NotFound(w, r)
		}
	})
}

// build compiles a package of the module in moduleDir into dir and returns
// the binary's path.
func build(t *testing.T, dir, moduleDir, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// archived returns "status URL" of every log line and "URL digest" of
// every WARC response record in a crawl's output.
func archived(t *testing.T, out string) (log, warc []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(out, "crawl.log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := storage.ReadCrawlLog(f, func(e storage.Entry) error {
		log = append(log, fmt.Sprintf("%d %s %s", e.Status, e.URL, e.Error))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "warc", "*.warc.gz"))
	for _, p := range files {
		if err := storage.ReadWARCFile(p, func(rec *storage.WARCRecord) error {
			if rec.Header.Get("WARC-Type") == "response" {
				warc = append(warc, rec.Header.Get("WARC-Target-URI")+" "+rec.Header.Get("WARC-Payload-Digest"))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(log)
	slices.Sort(warc)
	return log, warc
}

// TestSameAsCrawler crawls one site with this program, which uses package
// crawl only, and with "crawler crawl": the same URLs must be fetched with
// the same outcome, and the same payloads archived.
func TestSameAsCrawler(t *testing.T) {
	srv := httptest.NewServer(site())
	defer srv.Close()
	dir := t.TempDir()
	embed := build(t, dir, ".", ".", "embed")
	// The crawler command is built in its own module: this one needs only
	// what package crawl imports (go.sum: go mod tidy in this directory).
	crawler := build(t, dir, "../..", "./cmd/crawler", "crawler")

	outEmbed, outCrawler := filepath.Join(dir, "embed-out"), filepath.Join(dir, "crawler-out")
	cmd := exec.Command(embed, "-out", outEmbed, "-allow-private", "-delay", "-1ns", srv.URL+"/")
	titles, err := cmd.Output()
	if err != nil {
		t.Fatalf("embed: %v", err)
	}
	if n := strings.Count(string(titles), "\n"); n != 61 {
		t.Errorf("embed printed %d titles, want 61 (home and 60 pages):\n%s", n, titles)
	}
	cmd = exec.Command(crawler, "crawl", "--out", outCrawler, "--allow-private", "--delay", "-1", "--progress-interval", "-1", srv.URL+"/")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crawler crawl: %v\n%s", err, out)
	}

	logE, warcE := archived(t, outEmbed)
	logC, warcC := archived(t, outCrawler)
	if !slices.Equal(logE, logC) {
		t.Errorf("crawl logs differ:\nembed   %v\ncrawler %v", logE, logC)
	}
	if !slices.Equal(warcE, warcC) {
		t.Errorf("archived responses differ:\nembed   %v\ncrawler %v", warcE, warcC)
	}
	// The home page and 60 pages (all within the default depth of 20), the
	// redirect, the PDF, two 404s (/gone, /p/60), and the disallowed URL,
	// logged but never fetched.
	if len(logE) != 66 || !slices.ContainsFunc(logE, func(s string) bool { return strings.Contains(s, "robots-disallowed") }) {
		t.Errorf("embed log: %d lines, want 66 with one robots-disallowed:\n%v", len(logE), logE)
	}
}
