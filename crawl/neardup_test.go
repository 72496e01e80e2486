package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/internal/mutate"
	"github.com/layercrawl/layercrawl/neardup"
	"github.com/layercrawl/layercrawl/storage"
)

// calendarSite serves / linking to /day/1 and /other; /day/N is the same
// long text with its date and one word changed, linking to /day/N+1 (a
// calendar trap); /other is an unrelated text.
func calendarSite(t *testing.T) *httptest.Server {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 5))
	vocab := mutate.Vocabulary(rng, 5000)
	body := mutate.Text(rng, vocab, 600)
	other := strings.Join(mutate.Text(rng, vocab, 600), " ")
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><a href="/day/1">d</a><a href="/other">o</a></html>`)
	})
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><body><p>%s</p></body></html>", other)
	})
	mux.HandleFunc("/day/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		words := append([]string(nil), body...)
		words[n%len(words)] = "changed"
		fmt.Fprintf(w, "<html><body><h1>Day %d</h1><p>%s</p><a href=\"/day/%d\">next</a></body></html>", n, strings.Join(words, " "), n+1)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestNearDuplicates(t *testing.T) {
	srv := calendarSite(t)
	dir := t.TempDir()
	o := Options{Seeds: []string{srv.URL + "/"}, Dir: dir, Concurrency: 1, ExpectedURLs: 1000, MaxPages: 12}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	log := readLog(t, filepath.Join(dir, "crawl.log.jsonl"))
	var near int
	for _, e := range log {
		switch {
		case e.URL == srv.URL+"/other" || e.URL == srv.URL+"/day/1" || e.URL == srv.URL+"/":
			if e.NearDuplicateOf != "" {
				t.Errorf("%s: near_duplicate_of %s", e.URL, e.NearDuplicateOf)
			}
		case strings.HasPrefix(e.URL, srv.URL+"/day/"):
			near++
			if !strings.HasPrefix(e.NearDuplicateOf, srv.URL+"/day/") || e.Resemblance < o.NearDuplicateThreshold {
				t.Errorf("%s: near_duplicate_of %q at %.3f", e.URL, e.NearDuplicateOf, e.Resemblance)
			}
		}
	}
	if near < 5 {
		t.Errorf("only %d calendar pages fetched", near)
	}
	if s := c.Stats().Fetch; s.NearDuplicates != uint64(near) || s.NearDuplicateIndexBytes == 0 {
		t.Errorf("Stats: %d near-duplicates (log: %d), index %d bytes", s.NearDuplicates, near, s.NearDuplicateIndexBytes)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", NearDuplicateFile)); err != nil {
		t.Errorf("no snapshot: %v", err)
	}

	// With SkipNearDuplicateLinks the calendar stops at its first repeat:
	// /, /day/1, /other, /day/2 (a near-duplicate: its link is cut).
	dir2 := t.TempDir()
	o.Dir = dir2
	o.SkipNearDuplicateLinks = true
	c, err = run(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var fetched []string
	for _, e := range readLog(t, filepath.Join(dir2, "crawl.log.jsonl")) {
		if !strings.HasSuffix(e.URL, "/robots.txt") {
			fetched = append(fetched, strings.TrimPrefix(e.URL, srv.URL))
		}
	}
	if got := strings.Join(fetched, " "); got != "/ /day/1 /other /day/2" {
		t.Errorf("with SkipNearDuplicateLinks fetched %s", got)
	}
	if s := c.Stats().Fetch; s.NearDuplicateLinksSkipped != 1 {
		t.Errorf("%d links skipped, want 1", s.NearDuplicateLinksSkipped)
	}

	// Resumed with a new seed: the snapshot's pages are still there.
	o.Seeds = []string{srv.URL + "/day/100"}
	o.MaxPages = 0
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	log = readLog(t, filepath.Join(dir2, "crawl.log.jsonl"))
	if last := log[len(log)-1]; last.URL != srv.URL+"/day/100" || !strings.HasPrefix(last.NearDuplicateOf, srv.URL+"/day/") {
		t.Errorf("after resume: %s near_duplicate_of %q", last.URL, last.NearDuplicateOf)
	}

	// Off: no check.
	dir3 := t.TempDir()
	o = Options{Seeds: []string{srv.URL + "/"}, Dir: dir3, Concurrency: 1, MaxPages: 5, NearDuplicateThreshold: -1}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, e := range readLog(t, filepath.Join(dir3, "crawl.log.jsonl")) {
		if e.NearDuplicateOf != "" {
			t.Errorf("check off, but %s near_duplicate_of %s", e.URL, e.NearDuplicateOf)
		}
	}
}

// A state written when the crawler used the bit-sliced PMBF resumes with
// it: the snapshot's pages are still matched, and the index stays Sliced.
func TestNearDuplicatesResumeSliced(t *testing.T) {
	srv := calendarSite(t)
	dir := t.TempDir()
	o := Options{Seeds: []string{srv.URL + "/"}, Dir: dir, Concurrency: 1, ExpectedURLs: 1000, MaxPages: 3}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	// The state as the earlier crawler left it: /day/1 in a Sliced index.
	resp, err := http.Get(srv.URL + "/day/1")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	sl, err := neardup.NewSliced(neardup.SlicedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sl.Add(xxh3.HashString(srv.URL+"/day/1"), neardup.NewDoc(body))
	b, err := sl.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state", NearDuplicateFile)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	o.Seeds = []string{srv.URL + "/day/100"}
	o.MaxPages = 0
	o.MaxPages = 5 // the 3 before, /day/100 and one more
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	// Only the Sliced snapshot knows /day/1 (the first crawl's own
	// snapshot was replaced): a page of the resumed crawl matched with it
	// shows the snapshot was read.
	log := readLog(t, filepath.Join(dir, "crawl.log.jsonl"))
	var matched bool
	for _, e := range log[3:] {
		matched = matched || e.NearDuplicateOf == srv.URL+"/day/1"
	}
	if !matched {
		t.Errorf("no page of the resumed crawl matched /day/1 of the Sliced snapshot: %+v", log[3:])
	}
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := neardup.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := idx.(*neardup.Sliced); !ok || idx.Len() < 2 {
		t.Errorf("after the resume the snapshot holds a %T of %d pages, want the Sliced index grown", idx, idx.Len())
	}
}

// The pages' URLs reach the store in batches, are found while pending,
// and are all in the store after a flush (which every snapshot does
// first).
func TestNearDupURLsBatched(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// During each batch's write, its URLs are still found.
	hooked := &hookStore{Store: StoreAdapter{st}}
	nd := &nearDups{store: hooked}
	var duringWrite []string
	hooked.before = func() {
		u, err := nd.url(0)
		duringWrite = append(duringWrite, u)
		if err != nil {
			t.Errorf("url of a page whose batch is being written: %v", err)
		}
	}
	const n = nearDupURLBatch + 44
	stored := func() int {
		c := 0
		if err := st.Ascend([]byte(nearDupURLPrefix), []byte(nearDupURLPrefix+"\xff"), func(_, _ []byte) bool { c++; return true }); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for i := range n {
		if err := nd.remember(uint64(i), fmt.Sprintf("http://a.test/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := stored(); got != nearDupURLBatch {
		t.Errorf("%d URLs in the store after %d pages, want one batch of %d", got, n, nearDupURLBatch)
	}
	for i := range n {
		if u, err := nd.url(uint64(i)); err != nil || u != fmt.Sprintf("http://a.test/%d", i) {
			t.Fatalf("url(%d) = %q, %v", i, u, err)
		}
	}
	if err := nd.flush(); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got != n {
		t.Errorf("%d URLs in the store after a flush, want %d", got, n)
	}
	if len(duringWrite) != 2 || duringWrite[0] != "http://a.test/0" {
		t.Errorf("url(0) during the two writes: %q", duringWrite)
	}
	if _, err := nd.url(n + 1); !errors.Is(err, frontier.ErrNotFound) {
		t.Errorf("url of an unknown page: %v, want frontier.ErrNotFound", err)
	}
}

// hookStore calls before at the start of every Write.
type hookStore struct {
	frontier.Store
	before func()
}

func (h *hookStore) Write(fn func(frontier.Writer) error) error {
	h.before()
	return h.Store.Write(fn)
}
