package crawl

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/internal/changeweb"
	"github.com/layercrawl/layercrawl/revisit"
	"github.com/layercrawl/layercrawl/storage"
)

// TestContinuousRedis runs a continuous crawl of the changing web with
// two Redis-mode workers sharing one crawl: every page is fetched again
// and again, never within the minimum interval of its last fetch by
// either worker; every fetch after a URL's first is a conditional request
// against the last capture, whichever worker made it (logged changed or
// unchanged, an unchanged one archived as a revisit record of an earlier
// response of the URL, in either worker's WARC file, 304s among them);
// the budget holds for both workers together; the shared Stats count the
// schedule; and a worker's scheduler summary rebuilt from the shared
// records holds every page.
func TestContinuousRedis(t *testing.T) {
	prefix := testRedisPrefix(t, "continuous")
	const pages = 16
	w := startChangeWeb(t, changeweb.Options{Seed: 7, Pages: pages, Hosts: 3, Fastest: 300 * time.Millisecond, Slowest: 30 * time.Second})
	dir := t.TempDir()
	const minInterval = 300 * time.Millisecond
	// The schedule asks for more: 16 pages at most 1.2s apart.
	const budget = 12.0
	// The crawl runs for run from its first fetch (a worker's start takes
	// a second and a half under -race on a loaded machine).
	const run = 4500 * time.Millisecond
	var crawlers [2]*Crawler
	var errs [2]error
	var reads [2]atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopper := &stopAfterFirstFetch{d: run, stop: func() { cancel(context.DeadlineExceeded) }}
	for i := range crawlers {
		o := continuousOptions(w, dir, ContinuousOptions{Budget: budget, Revisit: revisit.Options{Min: minInterval, Max: 1200 * time.Millisecond}})
		o.Concurrency = 3
		o.Observer = stopper
		o.Redis = &RedisOptions{URL: "redis://" + capturesTestRedis, Prefix: prefix, Worker: "w" + string(rune('0'+i))}
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.wrapSchedule = func(s scheduleStore) scheduleStore { return countingSchedule{s, &reads[i]} }
		crawlers[i] = c
		wg.Go(func() { errs[i] = c.Run(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) || stopper.first.IsZero() {
			t.Fatalf("worker %d returned %v, want it to run until stopped", i, err)
		}
	}
	// A stopping worker hands back the entries it took and did not
	// finish (those waiting for the budget, with a budget the schedule
	// asks more of): no host stays leased to a worker that left, which
	// would hold its site until the lease expired.
	rc, err := redisfrontier.Dial(context.Background(), redisfrontier.Config{URL: "redis://" + capturesTestRedis, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if st, err := redisfrontier.ReadStats(context.Background(), rc); err != nil || st.Leased != 0 {
		t.Errorf("after both workers stopped: %d hosts leased (err %v), want 0", st.Leased, err)
	}
	var changed, unchanged uint64
	for i, c := range crawlers {
		s := c.Stats()
		if s.Continuous.Scheduled != pages {
			t.Errorf("worker %d: shared stats say %d scheduled, want %d", i, s.Continuous.Scheduled, pages)
		}
		changed += s.Continuous.Changed
		unchanged += s.Continuous.Unchanged
	}
	if changed == 0 || unchanged == 0 {
		t.Errorf("changed %d, unchanged %d revisits: want both", changed, unchanged)
	}

	// The logs of both workers, in fetch order.
	var entries []storage.Entry
	byWorker := map[string]int{}
	logs, _ := filepath.Glob(filepath.Join(dir, "crawl-*.log.jsonl"))
	for _, l := range logs {
		es := readLog(t, l)
		byWorker[l] = len(es)
		entries = append(entries, es...)
	}
	if len(byWorker) != 2 {
		t.Fatalf("logs %v, want one per worker", logs)
	}
	// A fetch reads its URL's shared record once, before the request (the
	// capture it is conditional on), and uses it again for the visit
	// record after it. A read may have no log line: the stop cut its
	// fetch short, one per fetching goroutine.
	for i, c := range crawlers {
		logged := byWorker[filepath.Join(dir, "crawl-"+c.opts.Redis.Worker+".log.jsonl")]
		if n := reads[i].Load(); n > int64(logged+c.opts.Concurrency) {
			t.Errorf("worker %d read the schedule %d times for %d logged fetches, want one read a fetch", i, n, logged)
		}
	}
	slices.SortFunc(entries, func(a, b storage.Entry) int { return a.FetchedAt.Compare(b.FetchedAt) })
	first := map[string]bool{}
	recrawl := map[string]int{}
	var starts []time.Time
	for _, e := range entries {
		if _, ok := w.PageOf(e.URL); !ok {
			t.Fatalf("logged %s, not a page", e.URL)
		}
		starts = append(starts, e.FetchedAt)
		recrawl[e.Recrawl]++
		if !first[e.URL] {
			first[e.URL] = true
			if e.Recrawl != "new" {
				t.Errorf("first fetch of %s logged %q, want new", e.URL, e.Recrawl)
			}
			continue
		}
		// Conditional on the last capture, also when the other worker
		// made it.
		if e.Recrawl != "changed" && e.Recrawl != "unchanged" {
			t.Errorf("revisit of %s at %v logged %q, want changed or unchanged", e.URL, e.FetchedAt, e.Recrawl)
		}
	}
	if recrawl["new"] != pages {
		t.Errorf("%d URLs logged new, want %d", recrawl["new"], pages)
	}
	byURL := fetchesByURL(entries)
	for u, ts := range byURL {
		if len(ts) < 2 {
			t.Errorf("%s fetched %d times in %v at a 1.2s maximum interval", u, len(ts), run)
		}
	}
	checkIntervals(t, byURL, minInterval)
	// The budget is the crawl's: the slots of a window of 1s number at
	// most budget+1 for both workers together (TestPaceShared checks
	// that exactly, on Redis's clock). A fetch starts some time after its
	// slot (robots.txt, a busy machine), so the log's times may bunch:
	// 100ms of that is allowed: the slots of 1.1s.
	window := 1100 * time.Millisecond
	limit := int(budget*window.Seconds()) + 1
	for i := range starts {
		j := i
		for j < len(starts) && starts[j].Sub(starts[i]) < time.Second {
			j++
		}
		if n := j - i; n > limit {
			t.Fatalf("%d fetches of both workers in the second from %v, budget %v/s (at most %d allowed)", n, starts[i], budget, limit)
		}
	}
	if span := starts[len(starts)-1].Sub(starts[0]); float64(len(starts)) < 0.6*budget*span.Seconds() {
		t.Errorf("%d fetches in %v at a budget of %v/s: the budget is not used", len(starts), span, budget)
	}

	// Revisit records refer to an earlier response of the same URL, in
	// either worker's WARC file.
	type resp struct{ target, file string }
	responses := map[string]resp{}
	type rec struct {
		h    storage.WARCHeader
		file string
	}
	var revisits []rec
	files, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
	for _, name := range files {
		if err := storage.ReadWARCFile(name, func(r *storage.WARCRecord) error {
			switch r.Header.Get("WARC-Type") {
			case "response":
				responses[r.Header.Get("WARC-Record-ID")] = resp{r.Header.Get("WARC-Target-URI"), name}
			case "revisit":
				revisits = append(revisits, rec{r.Header, name})
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var notModified, sameDigest, otherFile int
	for _, r := range revisits {
		h := r.h
		got, ok := responses[h.Get("WARC-Refers-To")]
		if !ok || got.target != h.Get("WARC-Target-URI") || h.Get("WARC-Refers-To-Target-URI") != got.target {
			t.Errorf("revisit of %s refers to %s (%v), not an earlier response of it", h.Get("WARC-Target-URI"), h.Get("WARC-Refers-To"), got)
		}
		if got.file != r.file {
			otherFile++
		}
		switch h.Get("WARC-Profile") {
		case storage.RevisitNotModified:
			notModified++
		case storage.RevisitProfile:
			sameDigest++
		}
	}
	if notModified == 0 || notModified+sameDigest != int(unchanged) {
		t.Errorf("%d server-not-modified and %d identical-payload-digest revisit records, want %d unchanged revisits and some 304s",
			notModified, sameDigest, unchanged)
	}
	t.Logf("%d fetches (%v by log) in %v, %d revisit records, %d of them referring to another WARC file", len(entries), byWorker, starts[len(starts)-1].Sub(starts[0]).Round(time.Millisecond), notModified+sameDigest, otherFile)

	// A worker's summary, rebuilt from the shared records, holds every
	// page, the other worker's fetches included.
	c := crawlers[0]
	if err := c.rebuildScheduler(context.Background(), c.cont); err != nil {
		t.Fatal(err)
	}
	if n := c.cont.sched.Load().Len(); n != pages {
		t.Errorf("rebuilt scheduler summary holds %d pages, want %d", n, pages)
	}
}

// stopAfterFirstFetch is an Observer that calls stop d after the first
// fetch of any worker it observes.
type stopAfterFirstFetch struct {
	d    time.Duration
	stop func()

	once  sync.Once
	first time.Time // set once, before the timer starts
}

func (s *stopAfterFirstFetch) Fetched(FetchEvent) {
	s.once.Do(func() {
		s.first = time.Now()
		time.AfterFunc(s.d, s.stop)
	})
}

func (*stopAfterFirstFetch) Checkpointed(CheckpointEvent) {}

// FuzzSharedRecord: the record a Redis continuous crawl keeps with a
// schedule splits back into the visit record and capture it was made of,
// and any other bytes give the parts or an ErrCorruptState error, never a
// panic.
func FuzzSharedRecord(f *testing.F) {
	f.Add([]byte("\x01\x02"), "\"e1\"", 200, []byte("\x02\x01\x02{}"))
	f.Add([]byte{}, "", 0, []byte("\xff\xff"))
	f.Fuzz(func(t *testing.T, rec []byte, etag string, status int, raw []byte) {
		var cp *Capture
		if status != 0 {
			cp = &Capture{URL: "http://a.test/", Status: status, ETag: etag, Fetched: time.Unix(1700000000, 0).UTC()}
		}
		sc, err := redisSchedule{}.schedule(time.Unix(1, 0), rec, nil, cp)
		if err != nil {
			t.Fatal(err)
		}
		gotRec, gotCp, err := decodeSharedRecord("http://a.test/", sc.Record, true)
		if err != nil || !bytes.Equal(gotRec, rec) || (cp == nil) != (gotCp == nil) {
			t.Fatalf("round trip of %q and %+v = %q, %+v, %v", rec, cp, gotRec, gotCp, err)
		}
		if cp != nil && (gotCp.Status != cp.Status || !gotCp.Fetched.Equal(cp.Fetched) || utf8.ValidString(etag) && gotCp.ETag != etag) {
			t.Fatalf("capture %+v came back as %+v", cp, gotCp)
		}
		if _, _, err := decodeSharedRecord("http://a.test/", raw, true); err != nil && !errors.Is(err, ErrCorruptState) {
			t.Fatalf("decodeSharedRecord(%q) = %v, want an ErrCorruptState error", raw, err)
		}
	})
}

// countingSchedule counts the reads of one URL's entry in a schedule
// store.
type countingSchedule struct {
	scheduleStore
	n *atomic.Int64
}

func (c countingSchedule) visit(ctx context.Context, url string) ([]byte, *Capture, bool, error) {
	c.n.Add(1)
	return c.scheduleStore.visit(ctx, url)
}
