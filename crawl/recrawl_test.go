package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/layercrawl/layercrawl/internal/warciotest"
	"github.com/layercrawl/layercrawl/storage"
)

// recrawlPage is one page of recrawlSite.
type recrawlPage struct {
	body    string
	etag    string // sent as ETag when set
	lastMod string // sent as Last-Modified when set
	gone    bool   // answered 404
	moved   string // answered 301 to this path
}

// recrawlSite is a site whose pages change between crawls and which
// answers conditional requests as nginx does: If-None-Match first, then
// If-Modified-Since (an exact match of the date, as nginx's default).
type recrawlSite struct {
	srv *httptest.Server

	mu    sync.Mutex // protects pages and conds
	pages map[string]recrawlPage
	conds map[string][2]string // path -> If-None-Match, If-Modified-Since of its last request
}

func startRecrawlSite(t *testing.T, pages map[string]recrawlPage) *recrawlSite {
	t.Helper()
	s := &recrawlSite{pages: pages, conds: make(map[string][2]string)}
	ln, err := net.Listen("tcp", "127.0.33.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *recrawlSite) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p, ok := s.pages[r.URL.Path]
	inm, ims := r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
	s.conds[r.URL.Path] = [2]string{inm, ims}
	s.mu.Unlock()
	if !ok || p.gone {
		http.NotFound(w, r)
		return
	}
	if p.moved != "" {
		http.Redirect(w, r, p.moved, http.StatusMovedPermanently)
		return
	}
	if p.etag != "" {
		w.Header().Set("ETag", p.etag)
	}
	if p.lastMod != "" {
		w.Header().Set("Last-Modified", p.lastMod)
	}
	switch {
	case inm != "" && p.etag != "":
		if inm == p.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	case ims != "" && p.lastMod != "" && ims == p.lastMod:
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	io.WriteString(w, p.body)
}

func (s *recrawlSite) set(path string, p recrawlPage) {
	s.mu.Lock()
	s.pages[path] = p
	s.mu.Unlock()
}

func (s *recrawlSite) cond(path string) [2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conds[path]
}

func page(title string, links ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>%s</title></head><body><p>%s %s</p>", title, title, strings.Repeat("text ", 40))
	for _, l := range links {
		fmt.Fprintf(&b, `<a href="%s">%s</a>`, l, l)
	}
	b.WriteString("</body></html>")
	return b.String()
}

const (
	lm1 = "Mon, 02 Jan 2006 15:04:05 GMT"
	lm2 = "Tue, 03 Jan 2006 15:04:05 GMT"
)

// recrawlPages is the first crawl's site: one page per case of a recrawl.
func recrawlPages() map[string]recrawlPage {
	return map[string]recrawlPage{
		"/":        {body: page("index", "/both", "/etag", "/lastmod", "/neither", "/changed", "/gone", "/samebody", "/redirect"), etag: `"i1"`, lastMod: lm1},
		"/both":    {body: page("both"), etag: `"b1"`, lastMod: lm1},       // 304 on If-None-Match
		"/etag":    {body: page("etag"), etag: `"e1"`},                     // 304 on If-None-Match
		"/lastmod": {body: page("lastmod"), lastMod: lm1},                  // 304 on If-Modified-Since
		"/neither": {body: page("neither")},                                // 200, same payload
		"/changed": {body: page("changed v1"), etag: `"c1"`, lastMod: lm1}, // 200, new payload
		"/gone":    {body: page("gone"), etag: `"g1"`},                     // 404
		// A new ETag and date (a touched file) but the same bytes: a 200
		// of the same payload.
		"/samebody": {body: page("samebody"), etag: `"s1"`, lastMod: lm1},
		"/redirect": {moved: "/both"}, // the same redirect again: unchanged
	}
}

// changeRecrawlSite makes the changes between the crawls.
func changeRecrawlSite(s *recrawlSite) {
	s.set("/changed", recrawlPage{body: page("changed v2", "/new"), etag: `"c2"`, lastMod: lm2})
	s.set("/gone", recrawlPage{gone: true})
	s.set("/new", recrawlPage{body: page("new"), etag: `"n1"`})
	s.set("/samebody", recrawlPage{body: page("samebody"), etag: `"s2"`, lastMod: lm2})
}

func recrawlOptions(s *recrawlSite, dir string, previous ...string) Options {
	o := Options{Dir: dir, Concurrency: 2, ExpectedURLs: 10_000, Previous: previous}
	o.Seeds = []string{s.srv.URL + "/"}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	return o
}

// warcRecords reads every record of dir's WARC files (dir/warc), in file
// order; a directory without any fails the test.
func warcRecords(t *testing.T, dir string) []*storage.WARCRecord {
	t.Helper()
	recs := readWARCs(t, filepath.Join(dir, "warc"))
	if len(recs) == 0 {
		t.Fatalf("no WARC records in %s", dir)
	}
	return recs
}

// wantRecrawl is what the second crawl should make of each path.
var wantRecrawl = map[string]struct {
	recrawl, profile string
	cond             [2]string // If-None-Match, If-Modified-Since sent
}{
	"/both":     {"unchanged", storage.RevisitNotModified, [2]string{`"b1"`, lm1}},
	"/etag":     {"unchanged", storage.RevisitNotModified, [2]string{`"e1"`, ""}},
	"/lastmod":  {"unchanged", storage.RevisitNotModified, [2]string{"", lm1}},
	"/neither":  {"unchanged", storage.RevisitProfile, [2]string{}},
	"/samebody": {"unchanged", storage.RevisitProfile, [2]string{`"s1"`, lm1}},
	"/changed":  {"changed", "", [2]string{`"c1"`, lm1}},
	"/gone":     {"gone", "", [2]string{`"g1"`, ""}},
	"/new":      {"new", "", [2]string{}},
	"/redirect": {"unchanged", "", [2]string{}},
	"/":         {"unchanged", storage.RevisitNotModified, [2]string{`"i1"`, lm1}},
}

// checkRecrawl checks the second crawl's log, counts and WARC records
// against the first crawl's responses (first: its directory).
func checkRecrawl(t *testing.T, s *recrawlSite, c *Crawler, first, second string) {
	t.Helper()
	st := c.Stats().Fetch.Recrawl
	checkRecrawlDirs(t, s, []string{first}, []string{second}, readLog(t, filepath.Join(second, "crawl.log.jsonl")), st)
	if st.Previous != 9 {
		t.Errorf("%d previous captures imported, want 9", st.Previous)
	}
}

// checkRecrawlDirs checks the second crawl (its directories, its log
// entries, and its counts summed over its workers, Previous left out)
// against the first crawl's responses (its directories).
func checkRecrawlDirs(t *testing.T, s *recrawlSite, firsts, seconds []string, entries []storage.Entry, st RecrawlStats) {
	t.Helper()
	// The responses of the first crawl, by record id.
	responses := make(map[string]*storage.WARCRecord)
	for _, first := range firsts {
		// A Redis worker may have archived nothing.
		for _, r := range readWARCs(t, filepath.Join(first, "warc")) {
			if r.Header.Get("WARC-Type") == "response" {
				responses[r.Header.Get("WARC-Record-ID")] = r
			}
		}
	}
	if len(responses) == 0 {
		t.Fatalf("no response records in %v", firsts)
	}
	byURL := make(map[string]storage.Entry)
	for _, e := range entries {
		path := strings.TrimPrefix(e.URL, s.srv.URL)
		if _, ok := byURL[path]; ok {
			t.Errorf("%s: logged twice", path)
		}
		byURL[path] = e
	}
	var recs []*storage.WARCRecord
	for _, second := range seconds {
		recs = append(recs, readWARCs(t, filepath.Join(second, "warc"))...)
	}
	revisits := make(map[string]*storage.WARCRecord)
	fulls := make(map[string]bool)
	for _, r := range recs {
		path := strings.TrimPrefix(r.Header.Get("WARC-Target-URI"), s.srv.URL)
		switch r.Header.Get("WARC-Type") {
		case "revisit":
			revisits[path] = r
		case "response":
			fulls[path] = true
		}
	}
	for path, want := range wantRecrawl {
		e, ok := byURL[path]
		if !ok {
			t.Errorf("%s: not in the second crawl's log", path)
			continue
		}
		if e.Recrawl != want.recrawl {
			t.Errorf("%s: recrawl %q (status %d), want %q", path, e.Recrawl, e.Status, want.recrawl)
		}
		if got := s.cond(path); got != want.cond {
			t.Errorf("%s: sent If-None-Match, If-Modified-Since %q, want %q", path, got, want.cond)
		}
		rv := revisits[path]
		if want.profile == "" {
			if rv != nil {
				t.Errorf("%s: archived as a revisit (%s), want a response", path, rv.Header.Get("WARC-Profile"))
			}
			if want.recrawl == "gone" && e.Status != 404 {
				t.Errorf("%s: logged status %d, want 404", path, e.Status)
			}
			if want.recrawl != "gone" && !fulls[path] {
				t.Errorf("%s: no response record", path)
			}
			continue
		}
		if rv == nil {
			t.Errorf("%s: no revisit record", path)
			continue
		}
		if got := rv.Header.Get("WARC-Profile"); got != want.profile {
			t.Errorf("%s: WARC-Profile %q, want %q", path, got, want.profile)
		}
		ref := responses[rv.Header.Get("WARC-Refers-To")]
		if ref == nil {
			t.Errorf("%s: WARC-Refers-To %q names no response record of the first crawl", path, rv.Header.Get("WARC-Refers-To"))
			continue
		}
		if e.Previous != rv.Header.Get("WARC-Refers-To") {
			t.Errorf("%s: log names previous %q, the revisit %q", path, e.Previous, rv.Header.Get("WARC-Refers-To"))
		}
		for _, f := range [][2]string{
			{"WARC-Refers-To-Target-URI", "WARC-Target-URI"},
			{"WARC-Refers-To-Date", "WARC-Date"},
			{"WARC-Payload-Digest", "WARC-Payload-Digest"},
		} {
			if got, want := rv.Header.Get(f[0]), ref.Header.Get(f[1]); got != want || got == "" {
				t.Errorf("%s: revisit's %s %q, the response's %s %q", path, f[0], got, f[1], want)
			}
		}
	}
	want := RecrawlStats{Unchanged: 7, Changed: 1, New: 1, Gone: 1}
	saved := st.BytesSaved
	st.BytesSaved, st.Previous = 0, 0
	if st != want {
		t.Errorf("recrawl stats %+v, want %+v", st, want)
	}
	if saved < 6*200 {
		t.Errorf("bytes saved %d, want at least the six unchanged pages' payloads", saved)
	}
}

// checkRevisitsResolve reads the WARC files of dirs with warcio.js and
// checks that every revisit record refers to a response record among them
// with the same target URI, date and payload digest.
func checkRevisitsResolve(t *testing.T, dirs ...string) {
	t.Helper()
	var files []string
	for _, d := range dirs {
		f, _ := filepath.Glob(filepath.Join(d, "warc", "*.warc.gz"))
		files = append(files, f...)
	}
	recs := warciotest.Read(t, filepath.Join("..", "storage", "testdata", "warcio_check.mjs"), files...)
	responses := make(map[string]warciotest.Record)
	for _, r := range recs {
		if r.Type == "response" {
			responses[r.Headers["WARC-Record-ID"]] = r
		}
	}
	n := 0
	for _, r := range recs {
		if r.Type != "revisit" {
			continue
		}
		n++
		ref, ok := responses[r.Headers["WARC-Refers-To"]]
		switch {
		case !ok:
			t.Errorf("warcio.js: revisit of %s refers to %q, no response record", r.Headers["WARC-Target-URI"], r.Headers["WARC-Refers-To"])
		case ref.Headers["WARC-Payload-Digest"] != r.Headers["WARC-Payload-Digest"],
			ref.Headers["WARC-Target-URI"] != r.Headers["WARC-Refers-To-Target-URI"],
			ref.Headers["WARC-Date"] != r.Headers["WARC-Refers-To-Date"]:
			t.Errorf("warcio.js: revisit %v does not match the response it refers to %v", r.Headers, ref.Headers)
		}
	}
	if n == 0 {
		t.Errorf("warcio.js read no revisit records in %d files", len(files))
	}
}

func TestRecrawlConditional(t *testing.T) {
	for _, rebuild := range []bool{false, true} {
		t.Run(fmt.Sprintf("rebuild=%v", rebuild), func(t *testing.T) {
			s := startRecrawlSite(t, recrawlPages())
			first, second := t.TempDir(), filepath.Join(t.TempDir(), "second")
			if _, err := run(t, context.Background(), recrawlOptions(s, first)); err != nil {
				t.Fatal(err)
			}
			if rebuild {
				// The history is rebuilt from the WARC files.
				if err := os.RemoveAll(filepath.Join(first, "state")); err != nil {
					t.Fatal(err)
				}
			}
			changeRecrawlSite(s)
			c, err := run(t, context.Background(), recrawlOptions(s, second, first))
			if err != nil {
				t.Fatal(err)
			}
			checkRecrawl(t, s, c, first, second)
			checkRevisitsResolve(t, first, second)
		})
	}
}

// TestRecrawlChain checks that a third crawl, given the second, refers its
// revisits to the first crawl's responses, not to the second's revisits.
func TestRecrawlChain(t *testing.T) {
	s := startRecrawlSite(t, recrawlPages())
	first, second, third := t.TempDir(), t.TempDir(), t.TempDir()
	if _, err := run(t, context.Background(), recrawlOptions(s, first)); err != nil {
		t.Fatal(err)
	}
	changeRecrawlSite(s)
	if _, err := run(t, context.Background(), recrawlOptions(s, second, first)); err != nil {
		t.Fatal(err)
	}
	o := recrawlOptions(s, third, second)
	o.Seeds = nil // the second crawl's seeds
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	ids := make(map[string]string) // response record id -> crawl
	for name, dir := range map[string]string{"first": first, "second": second} {
		for _, r := range warcRecords(t, dir) {
			if r.Header.Get("WARC-Type") == "response" {
				ids[r.Header.Get("WARC-Record-ID")] = name
			}
		}
	}
	wantFrom := map[string]string{"/both": "first", "/neither": "first", "/changed": "second", "/new": "second", "/samebody": "first"}
	got := make(map[string]string)
	for _, r := range warcRecords(t, third) {
		if r.Header.Get("WARC-Type") != "revisit" {
			continue
		}
		path := strings.TrimPrefix(r.Header.Get("WARC-Target-URI"), s.srv.URL)
		got[path] = ids[r.Header.Get("WARC-Refers-To")]
		if got[path] == "" {
			t.Errorf("%s: WARC-Refers-To %s is no response record of the earlier crawls", path, r.Header.Get("WARC-Refers-To"))
		}
	}
	for path, want := range wantFrom {
		if got[path] != want {
			t.Errorf("%s: revisit refers to the %q crawl's response, want the %s's", path, got[path], want)
		}
	}
	if _, ok := got["/gone"]; ok {
		t.Errorf("/gone: revisit of a page gone in the second crawl")
	}
}

func TestRecrawlBadPrevious(t *testing.T) {
	s := startRecrawlSite(t, recrawlPages())
	good := t.TempDir()
	if _, err := run(t, context.Background(), recrawlOptions(s, good)); err != nil {
		t.Fatal(err)
	}
	notCrawl := t.TempDir()
	os.WriteFile(filepath.Join(notCrawl, "notes.txt"), []byte("hello"), 0o644)

	badWARC := t.TempDir()
	os.MkdirAll(filepath.Join(badWARC, "warc"), 0o755)
	os.WriteFile(filepath.Join(badWARC, "warc", "x-00001.warc.gz"), []byte("this is not a WARC file at all\r\n\r\n"), 0o644)

	otherFormat := t.TempDir()
	st, err := storage.Open(filepath.Join(otherFormat, "state"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(func(w storage.Writer) error { return w.Set([]byte(historyVersionKey), []byte("capture-history v9")) }); err != nil {
		t.Fatal(err)
	}
	st.Close()

	for _, tc := range []struct {
		name, dir, mention string
	}{
		{"missing", filepath.Join(good, "nope"), filepath.Join(good, "nope")},
		{"not a crawl", notCrawl, notCrawl},
		{"bad WARC", badWARC, filepath.Join(badWARC, "warc", "x-00001.warc.gz")},
		{"other format", otherFormat, "capture-history v9"},
		{"itself", "", "own output directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if tc.dir == "" {
				tc.dir = out
			}
			o := recrawlOptions(s, out, good, tc.dir)
			_, err := New(o)
			if !errors.Is(err, ErrPrevious) {
				t.Fatalf("New: %v, want ErrPrevious", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not name %q", err, tc.mention)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--out %s was created (%v) though a previous crawl was refused", out, err)
			}
		})
	}
	// The good one is left as it was: read-only.
	if _, err := run(t, context.Background(), recrawlOptions(s, filepath.Join(t.TempDir(), "ok"), good)); err != nil {
		t.Fatal(err)
	}
}

// TestRecrawlScopeSeeds checks PreviousScopeSeeds: only the earlier seeds
// are queued, and the links of a page answered 304 are read from its
// earlier capture, so that the pages below it are checked too.
func TestRecrawlScopeSeeds(t *testing.T) {
	s := startRecrawlSite(t, map[string]recrawlPage{
		"/":      {body: page("root", "/a"), etag: `"r"`},
		"/a":     {body: page("a", "/b"), etag: `"a"`},
		"/b":     {body: page("b v1"), etag: `"b1"`},
		"/other": {body: page("other"), etag: `"o"`}, // captured first, linked from nowhere later
	})
	first, second := t.TempDir(), t.TempDir()
	o := recrawlOptions(s, first)
	o.Seeds = append(o.Seeds, s.srv.URL+"/other")
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	s.set("/b", recrawlPage{body: page("b v2"), etag: `"b2"`})
	s.set("/other", recrawlPage{body: page("other v2"), etag: `"o2"`})
	o = recrawlOptions(s, second, first)
	o.Seeds = []string{s.srv.URL + "/"}
	o.PreviousScope = PreviousScopeSeeds
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	got := make(map[string]string)
	for _, e := range readLog(t, filepath.Join(second, "crawl.log.jsonl")) {
		got[strings.TrimPrefix(e.URL, s.srv.URL)] = e.Recrawl
	}
	// /other was a seed of the first crawl: a seed of this one too.
	want := map[string]string{"/": "unchanged", "/a": "unchanged", "/b": "changed", "/other": "changed"}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s: recrawl %q, want %q (log: %v)", path, got[path], w, got)
		}
	}
}
