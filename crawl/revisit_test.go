package crawl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// mirrorSite serves /, linking to /a, /b, /c and /small: /b and /c serve
// the payload of /a, /small a short page twice (also at /small2), and
// /late (linked from nowhere) /a's payload again.
func mirrorSite(t *testing.T) *httptest.Server {
	t.Helper()
	big := "<html><body>" + strings.Repeat("the same payload under several URLs. ", 60) + "</body></html>"
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><a href="/a">a</a><a href="/b">b</a><a href="/c">c</a><a href="/small">s</a><a href="/small2">s</a></html>`)
	})
	for _, p := range []string{"/a", "/b", "/c", "/late"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, big) })
	}
	for _, p := range []string{"/small", "/small2"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>tiny</html>") })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func mirrorOptions(srv *httptest.Server, dir string) Options {
	o := Options{Seeds: []string{srv.URL + "/"}, Dir: dir, Concurrency: 1, ExpectedURLs: 1000}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	return o
}

// readWARCs returns the records of every WARC file in dir.
func readWARCs(t *testing.T, dir string) []*storage.WARCRecord {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*storage.WARCRecord
	for _, name := range names {
		if err := storage.ReadWARCFile(name, func(rec *storage.WARCRecord) error {
			recs = append(recs, rec)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// A repeated payload is archived once: its other URLs get revisit records
// naming the first, the log's duplicate_of, and Stats the bytes saved.
// The index survives a resume.
func TestRevisits(t *testing.T) {
	srv := mirrorSite(t)
	dir := t.TempDir()
	o := mirrorOptions(srv, dir)
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	log := readLog(t, filepath.Join(dir, "crawl.log.jsonl"))
	dups := map[string]string{}
	for _, e := range log {
		if e.DuplicateOf != "" {
			dups[e.URL] = e.DuplicateOf
		}
	}
	// Concurrency 1 fetches in link order: /a first.
	want := map[string]string{srv.URL + "/b": srv.URL + "/a", srv.URL + "/c": srv.URL + "/a"}
	if fmt.Sprint(dups) != fmt.Sprint(want) {
		t.Errorf("duplicate_of: got %v, want %v (small payloads below RevisitMinSize stay whole)", dups, want)
	}
	s := c.Stats().Fetch
	if s.Revisits != 2 || s.RevisitBytes < 2*DefaultRevisitMinSize {
		t.Errorf("Stats: %d revisits, %d bytes saved; want 2 and over %d", s.Revisits, s.RevisitBytes, 2*DefaultRevisitMinSize)
	}
	var responses, revisits int
	recs := readWARCs(t, filepath.Join(dir, "warc"))
	var a *storage.WARCRecord
	for _, rec := range recs {
		if rec.Header.Get("WARC-Type") == "response" && rec.Header.Get("WARC-Target-URI") == srv.URL+"/a" {
			a = rec
		}
	}
	if a == nil {
		t.Fatal("no response record of /a")
	}
	for _, rec := range recs {
		switch rec.Header.Get("WARC-Type") {
		case "response":
			responses++
		case "revisit":
			revisits++
			if rec.Header.Get("WARC-Refers-To-Target-URI") != srv.URL+"/a" || rec.Header.Get("WARC-Profile") != storage.RevisitProfile {
				t.Errorf("revisit of %s refers to %q", rec.Header.Get("WARC-Target-URI"), rec.Header.Get("WARC-Refers-To-Target-URI"))
			}
			// Within the crawl the original's record is known.
			if rec.Header.Get("WARC-Refers-To") != a.Header.Get("WARC-Record-ID") ||
				rec.Header.Get("WARC-Payload-Digest") != a.Header.Get("WARC-Payload-Digest") {
				t.Errorf("revisit of %s: WARC-Refers-To %q, digest %s; /a is %s, %s", rec.Header.Get("WARC-Target-URI"),
					rec.Header.Get("WARC-Refers-To"), rec.Header.Get("WARC-Payload-Digest"), a.Header.Get("WARC-Record-ID"), a.Header.Get("WARC-Payload-Digest"))
			}
			if _, err := time.Parse(time.RFC3339Nano, rec.Header.Get("WARC-Refers-To-Date")); err != nil {
				t.Errorf("WARC-Refers-To-Date: %v", err)
			}
		}
	}
	// robots.txt (404), /, /a, /small, /small2 in full.
	if responses != 5 || revisits != 2 {
		t.Errorf("WARC: %d responses, %d revisits; want 5 and 2", responses, revisits)
	}

	// Resumed with a new seed: the index from the first run answers.
	o.Seeds = []string{srv.URL + "/late"}
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	log = readLog(t, filepath.Join(dir, "crawl.log.jsonl"))
	last := log[len(log)-1]
	if last.URL != srv.URL+"/late" || last.DuplicateOf != srv.URL+"/a" {
		t.Errorf("after resume: %s duplicate_of %q, want %s/a", last.URL, last.DuplicateOf, srv.URL)
	}

	// NoRevisits archives everything in full.
	dir2 := t.TempDir()
	o = mirrorOptions(srv, dir2)
	o.NoRevisits = true
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, rec := range readWARCs(t, filepath.Join(dir2, "warc")) {
		if rec.Header.Get("WARC-Type") == "revisit" {
			t.Errorf("NoRevisits wrote a revisit of %s", rec.Header.Get("WARC-Target-URI"))
		}
	}
}

// The local payload index keeps the last PayloadDigests digests, and its
// bounds survive reopening the store once flushed.
func TestStorePayloadsBounded(t *testing.T) {
	dir := t.TempDir()
	st, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := openStorePayloads(StoreAdapter{st}, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	date := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	add := func(p *storePayloads, i int) bool {
		t.Helper()
		_, found, err := p.TestAndAdd(ctx, fmt.Sprintf("sha1:D%d", i), storage.Revisit{TargetURI: fmt.Sprintf("http://x/%d", i), Date: date})
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	for i := range 5 {
		if add(p, i) {
			t.Fatalf("digest %d found before it was added", i)
		}
	}
	if p.Len() != 3 {
		t.Errorf("Len = %d, want 3", p.Len())
	}
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err = openStorePayloads(StoreAdapter{st}, 3)
	if err != nil {
		t.Fatal(err)
	}
	// 2, 3, 4 kept; 0 and 1 evicted (asked last: adding 0 evicts 2).
	for _, i := range []int{4, 3, 2, 0, 1} {
		want := i >= 2
		got, _, err := p.TestAndAdd(ctx, fmt.Sprintf("sha1:D%d", i), storage.Revisit{TargetURI: "http://y/", Date: date})
		if err != nil {
			t.Fatal(err)
		}
		if (got.TargetURI != "") != want {
			t.Errorf("digest %d: found %v (%q), want %v", i, got.TargetURI != "", got.TargetURI, want)
		}
		if want && (got.TargetURI != fmt.Sprintf("http://x/%d", i) || !got.Date.Equal(date)) {
			t.Errorf("digest %d: earlier %+v", i, got)
		}
	}
}

// The local payload index, with its writes batched, answers as an index
// that writes every digest at once would (a map and an eviction queue),
// before and after each flush, and what a flush wrote is what a reopened
// store holds: random digests, limits and flush points.
func TestStorePayloadsBatched(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	ctx := context.Background()
	for _, max := range []int64{-1, 0, 1, 5, payloadBatch - 1, payloadBatch, 3 * payloadBatch} {
		dir := t.TempDir()
		st, err := storage.Open(dir, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := openStorePayloads(StoreAdapter{st}, max)
		if err != nil {
			t.Fatal(err)
		}
		model := map[string]string{} // digest -> URI
		var order []string
		for i := range 1000 {
			d := fmt.Sprintf("sha1:D%d", rng.IntN(300))
			uri := fmt.Sprintf("http://x/%d", i)
			got, found, err := p.TestAndAdd(ctx, d, storage.Revisit{TargetURI: uri, Date: time.Unix(int64(i), 0)})
			if err != nil {
				t.Fatal(err)
			}
			want, wantFound := model[d]
			if found != wantFound || (found && got.TargetURI != want) {
				t.Fatalf("max %d, step %d, %s: found %v %q, want %v %q", max, i, d, found, got.TargetURI, wantFound, want)
			}
			if !wantFound {
				if max >= 0 && int64(len(order)) >= max && len(order) > 0 {
					delete(model, order[0])
					order = order[1:]
				}
				model[d] = uri
				order = append(order, d)
			}
			if p.Len() != int64(len(order)) {
				t.Fatalf("max %d, step %d: Len %d, want %d", max, i, p.Len(), len(order))
			}
			if rng.IntN(200) == 0 {
				// Flush, reopen, and go on with what the store holds.
				if err := p.flush(); err != nil {
					t.Fatal(err)
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				if st, err = storage.Open(dir, storage.Options{}); err != nil {
					t.Fatal(err)
				}
				if p, err = openStorePayloads(StoreAdapter{st}, max); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Every key the store holds after a last flush is the model's.
		if err := p.flush(); err != nil {
			t.Fatal(err)
		}
		keys := 0
		if err := st.Ascend([]byte(payloadKeyPrefix), []byte(payloadKeyPrefix+"\xff"), func(k, v []byte) bool {
			keys++
			d := strings.TrimPrefix(string(k), payloadKeyPrefix)
			if ref, err := decodePayloadRef(v); err != nil || model[d] != ref.TargetURI {
				t.Errorf("max %d: store holds %s -> %q (%v), model %q", max, d, ref.TargetURI, err, model[d])
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		orders := 0
		if err := st.Ascend([]byte(payloadOrderPrefix), []byte(payloadOrderPrefix+"\xff"), func(k, v []byte) bool {
			orders++
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if keys != len(model) || orders != len(model) {
			t.Errorf("max %d: store holds %d digests and %d order keys, want %d", max, keys, orders, len(model))
		}
		st.Close()
	}
}

// failingStore fails every Write while fail is set.
type failingStore struct {
	frontier.Store
	fail bool
}

var errWriteRefused = errors.New("write refused")

func (s *failingStore) Write(fn func(w frontier.Writer) error) error {
	if s.fail {
		return errWriteRefused
	}
	return s.Store.Write(fn)
}

// A batch the store refuses fails the call that would have added the next
// digest, which is then not added; the batch is written once the store
// takes writes again.
func TestStorePayloadsWriteFails(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fs := &failingStore{Store: StoreAdapter{st}}
	p, err := openStorePayloads(fs, -1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	add := func(i int) (bool, error) {
		_, found, err := p.TestAndAdd(ctx, fmt.Sprintf("sha1:D%d", i), storage.Revisit{TargetURI: fmt.Sprintf("http://x/%d", i), Date: time.Unix(1, 0)})
		return found, err
	}
	for i := range payloadBatch {
		if _, err := add(i); err != nil {
			t.Fatal(err)
		}
	}
	fs.fail = true
	if _, err := add(payloadBatch); !errors.Is(err, errWriteRefused) {
		t.Fatalf("add with the batch refused: %v, want %v", err, errWriteRefused)
	}
	if p.Len() != payloadBatch {
		t.Errorf("Len %d after the refused add, want %d", p.Len(), payloadBatch)
	}
	fs.fail = false
	if found, err := add(payloadBatch); err != nil || found {
		t.Fatalf("the refused digest again: found %v, %v; want a new digest", found, err)
	}
	if _, err := st.Get([]byte(payloadKeyPrefix + "sha1:D0")); err != nil {
		t.Errorf("the batch is not in the store after the store recovered: %v", err)
	}
	for i := range payloadBatch + 1 {
		if found, err := add(i); err != nil || !found {
			t.Errorf("digest %d: found %v, %v", i, found, err)
		}
	}
}

// countingStore counts the store's Gets.
type countingStore struct {
	frontier.Store
	gets int
}

func (s *countingStore) Get(key []byte) ([]byte, error) {
	s.gets++
	return s.Store.Get(key)
}

// A new digest is not looked up in the store (the filter of known digests
// says it is new), a known one is, also after the index is reopened (the
// filter is rebuilt from the store).
func TestStorePayloadsFilter(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	const n = 1000
	for round := range 3 {
		st, err := storage.Open(dir, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cs := &countingStore{Store: StoreAdapter{st}}
		p, err := openStorePayloads(cs, -1)
		if err != nil {
			t.Fatal(err)
		}
		// round 0 adds digests 0..n-1, round 1 finds them and adds n..2n-1,
		// round 2 finds all 2n.
		for i := range min(2, round+1) * n {
			cs.gets = 0
			d := fmt.Sprintf("sha1:D%d", i)
			_, found, err := p.TestAndAdd(ctx, d, storage.Revisit{TargetURI: "http://x/", Date: time.Unix(1, 0)})
			if err != nil {
				t.Fatal(err)
			}
			if old := i < round*n; found != old {
				t.Fatalf("round %d, %s: found %v, want %v", round, d, found, old)
			}
			if found && cs.gets != 1 {
				t.Errorf("round %d, %s (known): %d store lookups, want 1", round, d, cs.gets)
			}
			if !found && cs.gets > 0 {
				// None but for a false positive, which at 2,000 digests
				// in a filter for 1,000,000 is about 1e-19.
				t.Errorf("round %d, %s (new): %d store lookups", round, d, cs.gets)
			}
		}
		if err := p.flush(); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkStorePayloads adds new digests to the local payload index in an
// embedded store, writing each at once (a flush after every add, as the
// index did before it batched) and batched.
func BenchmarkStorePayloads(b *testing.B) {
	for _, each := range []bool{true, false} {
		name := "batched"
		if each {
			name = "write-each"
		}
		b.Run(name, func(b *testing.B) {
			st, err := storage.Open(b.TempDir(), storage.Options{DeferSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			p, err := openStorePayloads(StoreAdapter{st}, 1_000_000)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			ref := storage.Revisit{TargetURI: "http://docs.test/a/b/page.html", Date: time.Unix(1, 0)}
			i := 0
			for b.Loop() {
				i++
				if _, _, err := p.TestAndAdd(ctx, fmt.Sprintf("sha1:%032d", i), ref); err != nil {
					b.Fatal(err)
				}
				if each {
					if err := p.flush(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
