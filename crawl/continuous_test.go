package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/changeweb"
	"github.com/layercrawl/layercrawl/revisit"
	"github.com/layercrawl/layercrawl/storage"
)

func startChangeWeb(t *testing.T, o changeweb.Options) *changeweb.Web {
	t.Helper()
	w, err := changeweb.Start(o, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func continuousOptions(w *changeweb.Web, dir string, k ContinuousOptions) Options {
	o := Options{Seeds: w.Roots(), Dir: dir, Concurrency: 4, ExpectedURLs: 10_000, Continuous: &k}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	return o
}

// runFor runs a crawl of o until d has passed and checks that it stopped
// for that reason, with its state saved.
func runFor(t *testing.T, o Options, d time.Duration) *Crawler {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c, err := run(t, ctx, o)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("continuous crawl returned %v, want it to run until stopped", err)
	}
	return c
}

// fetchesByURL returns the log's fetch start times per URL, in order.
func fetchesByURL(entries []storage.Entry) map[string][]time.Time {
	m := map[string][]time.Time{}
	for _, e := range entries {
		m[e.URL] = append(m[e.URL], e.FetchedAt)
	}
	for _, ts := range m {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	return m
}

// storeKeys counts the keys of a crawl's state by table (the key up to
// its first '/'; "x/h" for the capture history, other x/ keys whole).
func storeKeys(t *testing.T, stateDir string) map[string]int {
	t.Helper()
	st, err := storage.Open(stateDir, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := map[string]int{}
	if err := st.Ascend(nil, []byte{0xff}, func(k, _ []byte) bool {
		table, _, _ := strings.Cut(string(k), "/")
		if strings.HasPrefix(string(k), "x/h/") {
			table = "x/h"
		} else if strings.HasPrefix(string(k), "x/") {
			table = string(k)
		}
		n[table]++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestContinuousChangeWeb crawls the changing web continuously: every
// page is fetched again and again, never before its interval has passed;
// a revisit is a conditional request, logged changed or unchanged, and an
// unchanged page is archived as a revisit record of an earlier response of
// the same URL. A second run resumes the schedule (no URL is new again,
// none is fetched before it is due), and the state's keys do not grow
// with the revisits.
func TestContinuousChangeWeb(t *testing.T) {
	const pages = 24
	w := startChangeWeb(t, changeweb.Options{Seed: 7, Pages: pages, Hosts: 3, Fastest: 300 * time.Millisecond, Slowest: 30 * time.Second})
	dir := t.TempDir()
	const minInterval = 300 * time.Millisecond
	o := continuousOptions(w, dir, ContinuousOptions{Revisit: revisit.Options{Min: minInterval, Max: 1200 * time.Millisecond}})
	c := runFor(t, o, 3*time.Second)
	s := c.Stats()
	if s.Continuous.Scheduled != pages || s.New != pages {
		t.Errorf("scheduled %d, new %d; want every one of the %d pages", s.Continuous.Scheduled, s.New, pages)
	}
	if s.Continuous.Changed == 0 || s.Continuous.Unchanged == 0 {
		t.Errorf("continuous stats %+v: want changed and unchanged revisits", s.Continuous)
	}
	logPath := filepath.Join(dir, "crawl.log.jsonl")
	first := readLog(t, logPath)
	lastOfRun1 := map[string]time.Time{}
	recrawl := map[string]int{}
	for _, e := range first {
		if _, ok := w.PageOf(e.URL); !ok {
			t.Fatalf("logged %s, not a page", e.URL)
		}
		recrawl[e.Recrawl]++
		lastOfRun1[e.URL] = e.FetchedAt
	}
	if recrawl["new"] != pages || recrawl["changed"] == 0 || recrawl["unchanged"] == 0 || len(recrawl) != 3 {
		t.Errorf("recrawl fields of the log %v, want %d new and both changed and unchanged", recrawl, pages)
	}
	byURL := fetchesByURL(first)
	for u, ts := range byURL {
		if len(ts) < 2 {
			t.Errorf("%s fetched %d times in 3s at a 1.2s maximum interval", u, len(ts))
		}
	}
	checkIntervals(t, byURL, minInterval)
	// Revisit records refer to an earlier response of the same URL.
	responses := map[string]string{} // record id -> target
	var notModified, sameDigest int
	for _, r := range warcRecords(t, dir) {
		h := r.Header
		switch h.Get("WARC-Type") {
		case "response":
			responses[h.Get("WARC-Record-ID")] = h.Get("WARC-Target-URI")
		case "revisit":
			if got := responses[h.Get("WARC-Refers-To")]; got == "" || got != h.Get("WARC-Target-URI") {
				t.Errorf("revisit of %s refers to %s (%q), not an earlier response of it", h.Get("WARC-Target-URI"), h.Get("WARC-Refers-To"), got)
			}
			switch h.Get("WARC-Profile") {
			case storage.RevisitNotModified:
				notModified++
			case storage.RevisitProfile:
				sameDigest++
			}
		}
	}
	if notModified == 0 || notModified+sameDigest != int(s.Continuous.Unchanged) {
		t.Errorf("%d server-not-modified and %d identical-payload-digest revisit records, want %d unchanged revisits and some 304s",
			notModified, sameDigest, s.Continuous.Unchanged)
	}
	var served304 uint64
	for p := range pages {
		_, nm := w.Served(p)
		served304 += nm
	}
	if served304 == 0 {
		t.Error("the server answered no conditional request with 304")
	}
	keys1 := storeKeys(t, filepath.Join(dir, "state"))

	// Resume: the schedule goes on.
	o.Seeds = nil
	c = runFor(t, o, 2*time.Second)
	if !c.Resumed() {
		t.Fatal("second run did not resume")
	}
	if s := c.Stats(); s.Continuous.Scheduled != pages || s.New != 0 {
		t.Errorf("resumed: scheduled %d, new %d; want %d, 0", s.Continuous.Scheduled, s.New, pages)
	}
	all := readLog(t, logPath)
	second := all[len(first):]
	if len(second) < pages {
		t.Fatalf("resumed run fetched %d URLs, want every page again", len(second))
	}
	seen := map[string]bool{}
	for _, e := range second {
		if e.Recrawl != "changed" && e.Recrawl != "unchanged" {
			t.Errorf("resumed run: %s logged %q, want a revisit", e.URL, e.Recrawl)
		}
		if !seen[e.URL] && e.FetchedAt.Sub(lastOfRun1[e.URL]) < minInterval-20*time.Millisecond {
			t.Errorf("resumed run fetched %s %v after the first run's last fetch, before its interval", e.URL, e.FetchedAt.Sub(lastOfRun1[e.URL]))
		}
		seen[e.URL] = true
	}
	checkIntervals(t, fetchesByURL(all), minInterval)
	keys2 := storeKeys(t, filepath.Join(dir, "state"))
	// Memory flat: the revisits of the second run added no key.
	for _, table := range []string{"t", "v", "q", "j", "f", "x/h", "h", "e", "r"} {
		if keys2[table] > pages || keys2[table] > max(keys1[table], pages) {
			t.Errorf("table %s: %d keys after %d fetches, %d after %d; want at most %d (one per page)",
				table, keys2[table], len(all), keys1[table], len(first), pages)
		}
	}
	if keys2["v"] != pages || keys2["t"]+keys2["q"] > pages {
		t.Errorf("schedule: %d records, %d due entries and %d queued; want %d records and each URL in one place", keys2["v"], keys2["t"], keys2["q"], pages)
	}
}

// checkIntervals checks that no URL was fetched twice within min (a small
// tolerance: the due time counts from just before the request starts).
func checkIntervals(t *testing.T, byURL map[string][]time.Time, min time.Duration) {
	t.Helper()
	for u, ts := range byURL {
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d < min-20*time.Millisecond {
				t.Errorf("%s fetched twice %v apart, below the %v minimum interval", u, d, min)
			}
		}
	}
}

// TestContinuousBudget runs a continuous crawl whose schedule asks for
// more fetches than its budget allows: the fetches of any one-second
// window stay within the budget, the budget is used, and politeness holds
// (one request at a time per host, the delay between them).
func TestContinuousBudget(t *testing.T) {
	const pages, hosts = 60, 6
	w := startChangeWeb(t, changeweb.Options{Seed: 3, Pages: pages, Hosts: hosts, Fastest: 200 * time.Millisecond, Slowest: 10 * time.Second})
	dir := t.TempDir()
	const budget = 12.0
	const delay = 60 * time.Millisecond
	o := continuousOptions(w, dir, ContinuousOptions{Budget: budget, Revisit: revisit.Options{Min: 100 * time.Millisecond, Max: 500 * time.Millisecond}})
	o.Concurrency = hosts
	o.Politeness.Delay = delay
	o.Politeness.MaxDelay = -1 // a fixed delay, to check against
	const run = 3 * time.Second
	runFor(t, o, run)
	entries := readLog(t, filepath.Join(dir, "crawl.log.jsonl"))
	var starts []time.Time
	perHost := map[string][]storage.Entry{}
	for _, e := range entries {
		starts = append(starts, e.FetchedAt)
		host := e.URL[:strings.Index(e.URL[len("http://"):], "/")+len("http://")]
		perHost[host] = append(perHost[host], e)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	// Slots are budget⁻¹ apart: a window of 1s holds at most budget+1.
	for i := range starts {
		j := i
		for j < len(starts) && starts[j].Sub(starts[i]) < time.Second {
			j++
		}
		if n := j - i; n > int(budget)+1 {
			t.Fatalf("%d fetches in the second from %v, budget %v/s", n, starts[i], budget)
		}
	}
	if float64(len(starts)) < 0.6*budget*run.Seconds() {
		t.Errorf("%d fetches in %v at a budget of %v/s: the budget is not used", len(starts), run, budget)
	}
	for host, es := range perHost {
		slices.SortFunc(es, func(a, b storage.Entry) int { return a.FetchedAt.Compare(b.FetchedAt) })
		for i := 1; i < len(es); i++ {
			prevEnd := es[i-1].FetchedAt.Add(time.Duration(es[i-1].DurationMS * float64(time.Millisecond)))
			if gap := es[i].FetchedAt.Sub(prevEnd); gap < delay-5*time.Millisecond {
				t.Errorf("%s: a request %v after the previous one ended, delay %v", host, gap, delay)
			}
		}
	}
}

func TestContinuousOptions(t *testing.T) {
	base := func() Options {
		return Options{Dir: t.TempDir(), Seeds: []string{"http://a.test/"}, Continuous: &ContinuousOptions{}}
	}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
	}{
		{"budget", func(o *Options) { o.Continuous.Budget = -1 }},
		{"bounds", func(o *Options) { o.Continuous.Revisit.Min, o.Continuous.Revisit.Max = time.Hour, time.Minute }},
	} {
		o := base()
		tc.mod(&o)
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: New = %v, want ErrInvalidOptions", tc.name, err)
		}
	}
}

func TestVisitRecordCodec(t *testing.T) {
	v := visitRecord{rec: revisit.Record{Visits: 3, Changes: 1, Observed: time.Minute, Changed: 20 * time.Second,
		Last: time.Unix(1_764_000_000, 5).UTC(), Interval: time.Hour}, gone: 2}
	b, err := v.marshal()
	if err != nil {
		t.Fatal(err)
	}
	var got visitRecord
	if err := got.unmarshal(b); err != nil || got.gone != v.gone || !got.rec.Last.Equal(v.rec.Last) || got.rec.Visits != 3 || got.rec.Interval != time.Hour {
		t.Fatalf("round trip %+v, %v; want %+v", got, err, v)
	}
	for _, bad := range [][]byte{nil, {2}, {1}, {1, 0}, append([]byte{1, 0x80}, b[2:]...)} {
		if err := got.unmarshal(bad); !errors.Is(err, errVisitRecord) {
			t.Errorf("unmarshal %x = %v, want errVisitRecord", bad, err)
		}
	}
}

func FuzzVisitRecord(f *testing.F) {
	b, _ := visitRecord{rec: revisit.Record{Visits: 1, Last: time.Unix(1, 0)}, gone: 1}.marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var v visitRecord
		if err := v.unmarshal(b); err != nil {
			if !errors.Is(err, errVisitRecord) {
				t.Fatalf("error %v does not wrap errVisitRecord", err)
			}
			return
		}
		b2, err := v.marshal()
		if err != nil {
			t.Fatal(err)
		}
		var v2 visitRecord
		if err := v2.unmarshal(b2); err != nil || v2.gone != v.gone || v2.rec.Visits != v.rec.Visits || !v2.rec.Last.Equal(v.rec.Last) {
			t.Fatalf("%x: re-decodes as %+v, %v; want %+v", b, v2, err, v)
		}
	})
}

// TestContinuousAging checks the aging seen-set end to end: a URL gone
// three visits in a row leaves the schedule, stays a duplicate while a
// page still links to it, is forgotten once no link has named it for two
// windows (twice --revisit-max each), and is fetched again, as new, when
// a link leads to it again.
func TestContinuousAging(t *testing.T) {
	s := startRecrawlSite(t, map[string]recrawlPage{
		"/":  {body: page("index", "/a")},
		"/a": {gone: true},
	})
	dir := t.TempDir()
	o := recrawlOptions(s, dir)
	o.Continuous = &ContinuousOptions{Revisit: revisit.Options{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}}
	go func() {
		time.Sleep(1200 * time.Millisecond)
		s.set("/", recrawlPage{body: page("index v2")})
		time.Sleep(2400 * time.Millisecond)
		s.set("/a", recrawlPage{body: page("a is back")})
		s.set("/", recrawlPage{body: page("index v3", "/a")})
	}()
	c := runFor(t, o, 5*time.Second)
	st := c.Stats().Continuous
	if st.Dropped != 1 || st.Aged == 0 {
		t.Errorf("continuous stats %+v: want /a dropped once and aged out", st)
	}
	var got []string
	for _, e := range readLog(t, filepath.Join(dir, "crawl.log.jsonl")) {
		if strings.HasSuffix(e.URL, "/a") {
			got = append(got, fmt.Sprintf("%d %s", e.Status, e.Recrawl))
		}
	}
	want := []string{"404 ", "404 gone", "404 gone", "200 new"}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("fetches of /a: %q, want %q then revisits", got, want)
	}
	for _, g := range got[len(want):] {
		if g != "200 unchanged" {
			t.Errorf("fetches of /a: %q, want %q then unchanged revisits", got, want)
		}
	}
}

// TestContinuousLastModified: pages whose Last-Modified says they have not
// changed for far longer than StillDated × Max are revisited at Max from
// their first fetch (revisit.Record.Still), where without dates the
// schedule first has to watch them stay unchanged for Max.
func TestContinuousLastModified(t *testing.T) {
	const pages = 24
	const maxInterval = 2 * time.Second
	const run = 5 * time.Second
	fetches := func(history time.Duration) (map[string][]time.Time, Stats) {
		w := startChangeWeb(t, changeweb.Options{Seed: 3, Pages: pages, Hosts: 3, Never: 1, History: history})
		dir := t.TempDir()
		o := continuousOptions(w, dir, ContinuousOptions{Budget: 50, Revisit: revisit.Options{Min: 100 * time.Millisecond, Max: maxInterval}})
		c := runFor(t, o, run)
		return fetchesByURL(readLog(t, filepath.Join(dir, "crawl.log.jsonl"))), c.Stats()
	}
	dated, s := fetches(0) // versions up to a year old
	if len(dated) != pages || s.Continuous.Changed != 0 {
		t.Fatalf("dated: %d URLs fetched, %d changes; want all %d, none changed", len(dated), s.Continuous.Changed, pages)
	}
	total := 0
	for u, ts := range dated {
		total += len(ts)
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d < maxInterval-50*time.Millisecond {
				t.Errorf("%s, dated months back, revisited after %v, want Max %v", u, d, maxInterval)
			}
		}
	}
	undated, _ := fetches(-1) // every version dated when the server started
	utotal := 0
	for _, ts := range undated {
		utotal += len(ts)
	}
	t.Logf("fetches of %d never-changing pages in %v: %d dated months back, %d dated at the start", pages, run, total, utotal)
	if utotal <= total {
		t.Errorf("pages dated at the start fetched %d times, dated months back %d: want more without the old dates", utotal, total)
	}
}

// TestContinuousNothingToRevisit checks that a continuous crawl with
// nothing to fetch ever again ends as a plain crawl does: its only seed
// refused for good (a private address without AllowPrivate), it returns
// ErrNoSeedFetched at once, where it used to idle until stopped and
// report success; and a crawl whose every page is gone ends when the
// last one leaves the schedule.
func TestContinuousNothingToRevisit(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	k := ContinuousOptions{Revisit: revisit.Options{Min: 50 * time.Millisecond, Max: 100 * time.Millisecond}}
	o := Options{Seeds: []string{srv.URL + "/"}, Dir: t.TempDir(), Concurrency: 2, ExpectedURLs: 1000, Continuous: &k}
	o.Politeness.Delay = -1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := run(t, ctx, o); !errors.Is(err, ErrNoSeedFetched) {
		t.Errorf("refused seed: Run = %v, want ErrNoSeedFetched", err)
	}
	// Answered 404 GoneAfter times in a row, the seed leaves the
	// schedule, and the crawl has nothing left.
	o.Dir = t.TempDir()
	o.Fetch.AllowPrivate = true
	c, err := run(t, ctx, o)
	if err != nil && !errors.Is(err, ErrNoSeedFetched) {
		t.Fatalf("gone seed: Run = %v, want it to end by itself", err)
	}
	if s := c.Stats(); s.Continuous.Dropped != 1 || s.Continuous.Scheduled != 0 {
		t.Errorf("gone seed: continuous stats %+v, want it dropped and nothing scheduled", s.Continuous)
	}
}
