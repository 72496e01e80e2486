package redisfrontier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier"
)

// testClock is a settable clock for Options.Now.
type testClock struct {
	mu sync.Mutex // protects t
	t  time.Time
}

// newTestClock starts at a whole millisecond, so that a due time it gives
// is one (Redis holds them in ms, rounded up).
func newTestClock() *testClock { return &testClock{t: time.UnixMilli(time.Now().UnixMilli())} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// continuousOptions are a continuous frontier's options for the tests: no
// politeness delay, a short poll.
func continuousOptions(now func() time.Time) Options {
	return Options{Continuous: true, Politeness: frontier.PolitenessOptions{Delay: -1}, Poll: 10 * time.Millisecond, Now: now}
}

// nextWithin returns the entry Next hands out within d, or ok false when
// it hands out none (Next must then end with the deadline: a continuous
// frontier with URLs scheduled never reports the crawl exhausted).
func nextWithin(t *testing.T, f *Frontier, d time.Duration) (frontier.Entry, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	e, err := f.Next(ctx)
	switch {
	case err == nil:
		return e, true
	case errors.Is(err, context.DeadlineExceeded):
		return frontier.Entry{}, false
	}
	t.Fatalf("Next = %v, want an entry or the deadline", err)
	return frontier.Entry{}, false
}

// TestScheduleHandsOutWhenDue: Done with a Schedule keeps the URL and its
// record in Redis; Next hands it out again once due and not before (and
// never reports the crawl exhausted meanwhile); a nil Schedule drops it,
// and with nothing left the crawl is exhausted.
func TestScheduleHandsOutWhenDue(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	clock := newTestClock()
	f := openTestFrontier(t, c, continuousOptions(clock.Now))
	u := graph{n: 1}.url(0)
	if _, err := f.AddSeeds(ctx, []string{u}); err != nil {
		t.Fatal(err)
	}
	e, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	due := clock.Now().Add(time.Hour)
	rec := []byte("rec\n\x00\xff one")
	if err := f.Done(ctx, e, frontier.Outcome{Fetched: true, Schedule: &frontier.Schedule{Due: due, Record: rec}}); err != nil {
		t.Fatal(err)
	}
	gotDue, gotRec, ok, err := f.ScheduleRecord(ctx, u)
	if err != nil || !ok || !bytes.Equal(gotRec, rec) || !gotDue.Equal(time.UnixMilli(dueMS(due))) {
		t.Fatalf("ScheduleRecord = %v, %q, %v, %v; want %v, %q", gotDue, gotRec, ok, err, due, rec)
	}
	if st, err := f.Stats(ctx); err != nil || st.Scheduled != 1 || st.Queued != 0 {
		t.Fatalf("Stats = %+v, %v; want Scheduled 1, Queued 0", st, err)
	}
	clock.Advance(time.Hour - time.Second)
	if e, ok := nextWithin(t, f, 150*time.Millisecond); ok {
		t.Fatalf("Next handed out %q a second before it is due", e.URL)
	}
	clock.Advance(time.Second)
	e2, ok := nextWithin(t, f, 2*time.Second)
	if !ok || e2.URL != u || e2.Depth != e.Depth {
		t.Fatalf("Next once due = %+v, %v; want %q", e2, ok, u)
	}
	if _, _, ok, _ := f.ScheduleRecord(ctx, u); !ok {
		t.Error("the record left the schedule when the URL was queued again")
	}
	// Dropped: not handed out again, whenever; with nothing else queued,
	// out or scheduled, the crawl ends (it would otherwise wait for
	// ever: a continuous crawl whose seeds all failed idled until
	// --max-time and exited 0).
	if err := f.Done(ctx, e2, frontier.Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := f.ScheduleRecord(ctx, u); ok || err != nil {
		t.Fatalf("ScheduleRecord after a nil Schedule = %v, %v; want absent", ok, err)
	}
	clock.Advance(48 * time.Hour)
	if e, err := f.Next(ctx); !errors.Is(err, frontier.ErrExhausted) {
		t.Fatalf("Next after the only URL was dropped = %q, %v; want ErrExhausted", e.URL, err)
	}
	if st, err := f.Stats(ctx); err != nil || st.Scheduled != 0 || st.Promoted != 1 {
		t.Fatalf("Stats = %+v, %v; want Scheduled 0, Promoted 1", st, err)
	}
}

// TestScheduleRefused: a zero due time or a record over 64 KiB is refused
// with frontier.ErrScheduleRecord, as frontier.Frontier refuses them, and
// the entry stays out (a later Done completes it).
func TestScheduleRefused(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	f := openTestFrontier(t, c, continuousOptions(nil))
	u := graph{n: 1}.url(0)
	if _, err := f.AddSeeds(ctx, []string{u}); err != nil {
		t.Fatal(err)
	}
	e, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []*frontier.Schedule{{Record: []byte("x")}, {Due: time.Now().Add(time.Hour), Record: make([]byte, maxVisitRecord+1)}} {
		if err := f.Done(ctx, e, frontier.Outcome{Fetched: true, Schedule: sc}); !errors.Is(err, frontier.ErrScheduleRecord) {
			t.Errorf("Done with due %v and a record of %d bytes = %v, want ErrScheduleRecord", sc.Due, len(sc.Record), err)
		}
	}
	big := &frontier.Schedule{Due: time.Now().Add(time.Hour), Record: make([]byte, maxVisitRecord)}
	if err := f.Done(ctx, e, frontier.Outcome{Fetched: true, Schedule: big}); err != nil {
		t.Fatalf("Done with a record of 64 KiB = %v", err)
	}
	if _, rec, ok, err := f.ScheduleRecord(ctx, u); err != nil || !ok || len(rec) != maxVisitRecord {
		t.Fatalf("ScheduleRecord = %d bytes, %v, %v", len(rec), ok, err)
	}
}

// TestScheduleRecordsRoundTrip: ScheduleRecords reads back every URL's
// record and due time as Done stored them, and ScheduleRecord each.
func TestScheduleRecordsRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	clock := newTestClock()
	f := openTestFrontier(t, c, continuousOptions(clock.Now))
	g := graph{n: 1200} // more than one HSCAN page
	var urls []string
	for i := 0; i < g.n; i++ {
		urls = append(urls, g.url(i))
	}
	if _, err := f.AddSeeds(ctx, urls); err != nil {
		t.Fatal(err)
	}
	type want struct {
		due time.Time
		rec []byte
	}
	wants := map[string]want{}
	for range urls {
		e, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i, _ := g.index(e.URL)
		w := want{due: time.UnixMilli(clock.Now().Add(time.Duration(i+1) * time.Minute).UnixMilli()), rec: []byte(fmt.Sprintf("%d\n\x00%s", i, strings.Repeat("\xfe", i%7)))}
		wants[e.URL] = w
		if err := f.Done(ctx, e, frontier.Outcome{Fetched: true, Schedule: &frontier.Schedule{Due: w.due, Record: w.rec}}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	err := f.ScheduleRecords(ctx, func(u string, due time.Time, rec []byte) bool {
		w, ok := wants[u]
		if !ok || !due.Equal(w.due) || !bytes.Equal(rec, w.rec) {
			t.Errorf("ScheduleRecords gave %q due %v record %q; want %v %q", u, due, rec, w.due, w.rec)
		}
		seen[u] = true
		return true
	})
	if err != nil || len(seen) != len(urls) {
		t.Fatalf("ScheduleRecords = %v after %d URLs, want %d", err, len(seen), len(urls))
	}
	for _, u := range urls[:20] {
		due, rec, ok, err := f.ScheduleRecord(ctx, u)
		if w := wants[u]; err != nil || !ok || !due.Equal(w.due) || !bytes.Equal(rec, w.rec) {
			t.Errorf("ScheduleRecord(%q) = %v, %q, %v, %v; want %v %q", u, due, rec, ok, err, w.due, w.rec)
		}
	}
	n := 0
	if err := f.ScheduleRecords(ctx, func(string, time.Time, []byte) bool { n++; return n < 3 }); err != nil || n != 3 {
		t.Errorf("ScheduleRecords stopped by fn after %d calls, %v; want 3", n, err)
	}
}

// twoLeasedWorkers opens two workers of one continuous crawl on a test
// clock, with a one-minute lease, for the tests that kill one of them.
func twoLeasedWorkers(t *testing.T) (*Client, *testClock, *Frontier, *Frontier) {
	t.Helper()
	c := testClient(t)
	clock := newTestClock()
	opts := continuousOptions(clock.Now)
	opts.Lease = time.Minute
	return c, clock, openTestFrontier(t, c, opts), openTestFrontier(t, c, opts)
}

// TestScheduleSurvivesLeaseExpiry: a worker killed between Next and Done
// of a scheduled URL leaves it leased; its lease's expiry queues it again
// for another worker, its schedule record intact, and the dead worker's
// late Done changes nothing.
func TestScheduleSurvivesLeaseExpiry(t *testing.T) {
	ctx := context.Background()
	_, clock, a, b := twoLeasedWorkers(t)
	u := graph{n: 1}.url(0)
	if _, err := a.AddSeeds(ctx, []string{u}); err != nil {
		t.Fatal(err)
	}
	e, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := &frontier.Schedule{Due: clock.Now().Add(10 * time.Minute), Record: []byte("first")}
	if err := a.Done(ctx, e, frontier.Outcome{Fetched: true, Schedule: first}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Minute)
	e, ok := nextWithin(t, a, 2*time.Second)
	if !ok || e.URL != u {
		t.Fatalf("a.Next when due = %+v, %v", e, ok)
	}
	// a is "killed" here. While its lease runs, b gets nothing.
	if e, ok := nextWithin(t, b, 150*time.Millisecond); ok {
		t.Fatalf("b got %q while a holds it", e.URL)
	}
	if due, rec, ok, err := b.ScheduleRecord(ctx, u); err != nil || !ok || string(rec) != "first" || !due.Equal(time.UnixMilli(dueMS(first.Due))) {
		t.Fatalf("schedule while leased = %v %q %v %v; want the first Done's", due, rec, ok, err)
	}
	clock.Advance(a.opts.Lease + time.Second)
	e2, ok := nextWithin(t, b, 2*time.Second)
	if !ok || e2.URL != u {
		t.Fatalf("b.Next after the lease expired = %+v, %v; want %q", e2, ok, u)
	}
	second := &frontier.Schedule{Due: clock.Now().Add(time.Hour), Record: []byte("second")}
	if err := b.Done(ctx, e2, frontier.Outcome{Fetched: true, Schedule: second}); err != nil {
		t.Fatal(err)
	}
	late := &frontier.Schedule{Due: clock.Now().Add(time.Minute), Record: []byte("late")}
	if err := a.Done(ctx, e, frontier.Outcome{Fetched: true, Schedule: late}); err != nil {
		t.Fatalf("the dead worker's late Done = %v", err)
	}
	if due, rec, ok, err := b.ScheduleRecord(ctx, u); err != nil || !ok || string(rec) != "second" || !due.Equal(time.UnixMilli(dueMS(second.Due))) {
		t.Fatalf("schedule after the late Done = %v %q %v %v; want b's", due, rec, ok, err)
	}
	clock.Advance(2 * time.Minute)
	if e, ok := nextWithin(t, b, 150*time.Millisecond); ok {
		t.Fatalf("b got %q at the late Done's due time", e.URL)
	}
	if st, err := b.Stats(ctx); err != nil || st.Scheduled != 1 || st.Requeued != 1 {
		t.Fatalf("Stats = %+v, %v; want Scheduled 1, Requeued 1", st, err)
	}
}

// TestScheduleTwoWorkers: two workers of three goroutines each revisit 30
// URLs on 3 hosts for a second and a half: no URL is handed out before
// the due time its last Done chose (a URL promoted twice, or queued while
// leased, would be), none is out twice at once, and every URL is fetched
// again and again.
func TestScheduleTwoWorkers(t *testing.T) {
	c := testClient(t)
	workers := []*Frontier{openTestFrontier(t, c, continuousOptions(nil)), openTestFrontier(t, c, continuousOptions(nil))}
	g := graph{n: 30}
	var urls []string
	for i := 0; i < g.n; i++ {
		urls = append(urls, g.url(i))
	}
	if _, err := workers[0].AddSeeds(context.Background(), urls); err != nil {
		t.Fatal(err)
	}
	testTwoWorkers(t, workers, urls)
}

// testTwoWorkers drives workers over urls (seeded already) and checks
// them as TestScheduleTwoWorkers says.
func testTwoWorkers(t *testing.T, workers []*Frontier, urls []string) {
	const run = 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var mu sync.Mutex
	out := map[string]bool{}
	due := map[string]time.Time{}
	fetches := map[string]int{}
	var problems []string
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for w, f := range workers {
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					e, err := f.Next(ctx)
					if err != nil {
						if ctx.Err() == nil {
							errs <- err
						}
						return
					}
					now := time.Now()
					mu.Lock()
					if out[e.URL] {
						problems = append(problems, fmt.Sprintf("%s handed out twice at once", e.URL))
					}
					if d, ok := due[e.URL]; ok && now.Before(d) {
						problems = append(problems, fmt.Sprintf("%s handed out %v before due", e.URL, d.Sub(now)))
					}
					out[e.URL] = true
					fetches[e.URL]++
					mu.Unlock()
					time.Sleep(time.Millisecond)
					// 50 to 150 ms, varying by worker and goroutine.
					d := time.Now().Add(time.Duration(50+(w*37+g*13+i*7)%100) * time.Millisecond)
					mu.Lock()
					out[e.URL] = false
					due[e.URL] = time.UnixMilli(dueMS(d))
					mu.Unlock()
					if err := f.Done(context.Background(), e, frontier.Outcome{Fetched: true, Schedule: &frontier.Schedule{Due: d, Record: []byte("r")}}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	for _, u := range urls {
		if fetches[u] < 3 {
			t.Errorf("%s fetched %d times in %v, want at least 3", u, fetches[u], run)
		}
	}
	if st, err := workers[0].Stats(context.Background()); err != nil || st.Scheduled != int64(len(urls)) {
		t.Errorf("Stats = %+v, %v; want Scheduled %d", st, err, len(urls))
	}
}

// TestScheduleCorrupt: a schedule record that does not decode is an error
// wrapping ErrCorrupt, from ScheduleRecord, ScheduleRecords and the
// promotion (Next), and is left where it is.
func TestScheduleCorrupt(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	f := openTestFrontier(t, c, continuousOptions(nil))
	u := "http://h0.test/bad"
	for _, v := range []string{
		"garbage",
		"s1\nh0.test\n" + `{"u":"http://h0.test/bad"}` + "\n",            // no due line
		"s1\nh0.test\n" + `{"u":"http://h0.test/bad"}` + "\nsoon\nrec",   // due not a number
		"s1\nh0.test\n" + `{"u":"http://h0.test/other"}` + "\n1000\nrec", // another URL's entry
		"s1\nh0.test\n" + `{"d":-1}` + "\n1000\nrec",                     // bad entry
		"s1\n\n" + `{"u":"http://h0.test/bad"}` + "\n1000\nrec",          // no host
	} {
		if err := c.rdb.HSet(ctx, f.key("sched"), u, v).Err(); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := f.ScheduleRecord(ctx, u); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ScheduleRecord of %q = %v, want ErrCorrupt", v, err)
		}
		if err := f.ScheduleRecords(ctx, func(string, time.Time, []byte) bool { return true }); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ScheduleRecords over %q = %v, want ErrCorrupt", v, err)
		}
	}
	// The promotion cannot queue a record without host and entry.
	for _, v := range []string{"garbage", "s1\n\nx\n1\n"} {
		if err := c.rdb.HSet(ctx, f.key("sched"), u, v).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.rdb.ZAdd(ctx, f.key("due"), redis.Z{Score: 1, Member: u}).Err(); err != nil {
			t.Fatal(err)
		}
		f.nextDue.Store(0)
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := f.Next(tctx)
		cancel()
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("Next over a due record %q = %v, want ErrCorrupt", v, err)
		}
		if got, err := c.rdb.HGet(ctx, f.key("sched"), u).Result(); err != nil || got != v {
			t.Errorf("the corrupt record is now %q, %v; want it left as %q", got, err, v)
		}
		if n, err := c.rdb.ZCard(ctx, f.key("due")).Result(); err != nil || n != 1 {
			t.Errorf("due set holds %d, %v; want the corrupt URL left in it", n, err)
		}
	}
}

// TestPaceShared: two workers of three goroutines each, pacing at 50 a
// second in all: the slots Redis hands out (by its own clock) hold at
// most R·d + 1 in any window of d, and each caller wakes no sooner than
// its slot by Redis's clock.
func TestPaceShared(t *testing.T) {
	c := testClient(t)
	workers := []*Frontier{openTestFrontier(t, c, continuousOptions(nil)), openTestFrontier(t, c, continuousOptions(nil))}
	testPaceShared(t, workers)
}

func testPaceShared(t *testing.T, workers []*Frontier) {
	ctx := context.Background()
	const rate = 50.0
	every := time.Duration(float64(time.Second) / rate)
	var mu sync.Mutex
	var slots []int64
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for _, f := range workers {
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					wait, slot, err := f.pace(ctx, every)
					if err != nil {
						errs <- err
						return
					}
					if err := sleep(ctx, wait); err != nil {
						errs <- err
						return
					}
					now, err := f.c.rdb.Time(ctx).Result()
					if err != nil {
						errs <- err
						return
					}
					if now.UnixMicro() < slot {
						errs <- fmt.Errorf("woke %v before the slot by Redis's clock", time.Duration(slot-now.UnixMicro())*time.Microsecond)
						return
					}
					mu.Lock()
					slots = append(slots, slot)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i] < slots[j] })
	for i := range slots {
		for j := i + 1; j < len(slots); j++ {
			d := float64(slots[j]-slots[i]) / 1e6
			if n := j - i + 1; float64(n) > rate*d+1+1e-9 {
				t.Fatalf("%d slots within %.4fs, more than R·d+1 = %.2f", n, d, rate*d+1)
			}
		}
	}
	if err := workers[0].Pace(ctx, every); err != nil {
		t.Fatalf("Pace = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := workers[0].Pace(cctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Pace with an ended ctx = %v, want context.Canceled", err)
	}
}

// TestScheduleStagedCompletion: a worker that dies after staging a
// completion (its links checked in the seen-set, not queued) leaves its
// schedule in the stage; the worker that finishes the completion stores
// it, so the URL is scheduled, not lost.
func TestScheduleStagedCompletion(t *testing.T) {
	ctx := context.Background()
	c, clock, a, b := twoLeasedWorkers(t)
	g := graph{n: 7}
	if _, err := a.AddSeeds(ctx, g.seeds()[:1]); err != nil {
		t.Fatal(err)
	}
	e, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Done's first two steps, then "SIGKILL".
	l := leaseOf(a, e)
	due := clock.Now().Add(time.Hour)
	st := stage{Batch: a.opts.Seen.NewBatchID(), Fetched: true, Cands: []record{{URL: g.url(1), Depth: 1, Via: e.URL}}}
	var val string
	st.SchedOp, st.SchedDue, val = a.scheduleArgs(l.host, e, &frontier.Schedule{Due: due, Record: []byte("staged\x00")})
	st.SchedURL, st.SchedVal = e.URL, []byte(val)
	stageAndDie(t, c, a, l, st)
	clock.Advance(a.opts.Lease + time.Second)
	e2, ok := nextWithin(t, b, 2*time.Second)
	if !ok || e2.URL != g.url(1) {
		t.Fatalf("b.Next = %+v, %v; want the dead worker's link %q", e2, ok, g.url(1))
	}
	got, rec, ok, err := b.ScheduleRecord(ctx, e.URL)
	if err != nil || !ok || string(rec) != "staged\x00" || !got.Equal(time.UnixMilli(dueMS(due))) {
		t.Fatalf("schedule of the dead worker's URL = %v %q %v %v; want its staged one", got, rec, ok, err)
	}
	if st, err := b.Stats(ctx); err != nil || st.Reclaimed != 1 || st.Scheduled != 1 {
		t.Fatalf("Stats = %+v, %v; want Reclaimed 1, Scheduled 1", st, err)
	}
}

// TestNotContinuousRefused: once a worker made the crawl continuous, Open
// refuses a worker that is not (its Next would end while the schedule
// holds URLs, its Done would leave them out of it); a plain crawl
// becomes continuous with its first continuous worker.
func TestNotContinuousRefused(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	s, err := OpenSeen(ctx, c, SeenOptions{Filter: crawlFilter, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	plain := Options{Seen: s, Normalizer: testNormalizer(t)}
	if _, err := Open(ctx, c, plain); err != nil {
		t.Fatalf("plain worker of a new crawl: %v", err)
	}
	cont := plain
	cont.Continuous = true
	if _, err := Open(ctx, c, cont); err != nil {
		t.Fatalf("continuous worker of a plain crawl: %v", err)
	}
	if _, err := Open(ctx, c, plain); !errors.Is(err, ErrNotContinuous) {
		t.Fatalf("plain worker of a continuous crawl: Open = %v, want ErrNotContinuous", err)
	}
	if _, err := Open(ctx, c, cont); err != nil {
		t.Fatalf("second continuous worker: %v", err)
	}
}

// FuzzDecodeVisit: a schedule record decodes to what was encoded, and
// any other value is either a record of its URL or an ErrCorrupt error,
// never a panic.
func FuzzDecodeVisit(f *testing.F) {
	f.Add("http://a.test/x", "a.test", int64(1700000000000), []byte("rec\n\x00"), "s1\na.test\n{\"u\":\"http://a.test/x\"}\n5\nr")
	f.Add("http://a.test/", "a.test:8080", int64(1), []byte{}, "garbage")
	f.Fuzz(func(t *testing.T, url, host string, due int64, rec []byte, raw string) {
		// URLs are canonical, so valid UTF-8 (JSON, the entry's
		// encoding, would replace invalid bytes).
		if utf8.ValidString(url) && url != "" && host != "" && !strings.Contains(host, "\n") && due > 0 && due < 1<<50 && len(rec) <= maxVisitRecord {
			v := encodeVisit(host, encodeRecord(frontier.Entry{URL: url}), due, rec)
			got, err := decodeVisit(url, v)
			if err != nil || got.host != host || got.entry.URL != url || got.due.UnixMilli() != due || !bytes.Equal(got.record, rec) {
				t.Fatalf("round trip of %q %q %d %q = %+v, %v", url, host, due, rec, got, err)
			}
		}
		got, err := decodeVisit(url, raw)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeVisit(%q) = %v, want an ErrCorrupt error", raw, err)
		}
		if err == nil && (got.entry.URL != url || got.host == "" || got.due.IsZero()) {
			t.Fatalf("decodeVisit(%q) = %+v for URL %q", raw, got, url)
		}
	})
}
