package crawl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/storage"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// memState is an in-memory frontier.Store. Its clone is what a kill -9
// leaves of a local crawl's store: every Write that returned, nothing of
// one in progress (storage.Store's batches reach the operating system
// before Write returns). afterWrite, if set, runs after each Write with
// its number, outside the lock.
type memState struct {
	mu         sync.Mutex // protects m and writes
	m          map[string][]byte
	writes     int
	afterWrite func(n int, keys []string)
}

func newMemState() *memState { return &memState{m: map[string][]byte{}} }

func (s *memState) Get(k []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[string(k)]
	if !ok {
		return nil, frontier.ErrNotFound
	}
	return slices.Clone(v), nil
}

type memBatch struct {
	keys []string
	vals [][]byte // nil: delete
}

func (b *memBatch) Set(k, v []byte) error {
	b.keys, b.vals = append(b.keys, string(k)), append(b.vals, append([]byte{}, v...))
	return nil
}

func (b *memBatch) Delete(k []byte) error {
	b.keys, b.vals = append(b.keys, string(k)), append(b.vals, nil)
	return nil
}

func (s *memState) Write(fn func(frontier.Writer) error) error {
	var b memBatch
	if err := fn(&b); err != nil {
		return err
	}
	s.mu.Lock()
	for i, k := range b.keys {
		if b.vals[i] == nil {
			delete(s.m, k)
		} else {
			s.m[k] = b.vals[i]
		}
	}
	s.writes++
	n, hook := s.writes, s.afterWrite
	s.mu.Unlock()
	if hook != nil {
		hook(n, b.keys)
	}
	return nil
}

func (s *memState) Ascend(start, end []byte, fn func(k, v []byte) bool) error {
	s.mu.Lock()
	var keys []string
	for k := range s.m {
		if k >= string(start) && k < string(end) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = s.m[k]
	}
	s.mu.Unlock()
	for i, k := range keys {
		if !fn([]byte(k), vals[i]) {
			break
		}
	}
	return nil
}

func (s *memState) clone() *memState {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := newMemState()
	for k, v := range s.m {
		c.m[k] = slices.Clone(v)
	}
	return c
}

type agingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *agingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *agingClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// agingWindow is the tests' AgeWindow: a rotation every two rounds.
const (
	agingWindow = time.Hour
	agingRound  = 30 * time.Minute
)

func testNormalizer(t testing.TB) *urlnorm.Normalizer {
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// openAging opens a continuous frontier with an aging exact set over st,
// behind seen.
// newAgingSeen is the local seen-set the aging tests run: 1,000 URLs
// expected at 0.1%, small enough that a churning site grows it.
func newAgingSeen(t testing.TB) *localSeen {
	t.Helper()
	ls, err := newLocalSeen(Options{ExpectedURLs: 1000, FalsePositiveRate: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// newAgingClock starts the aging tests' clock.
func newAgingClock() *agingClock {
	return &agingClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func openAging(t testing.TB, st frontier.Store, seen frontier.Seen, clk *agingClock) *frontier.Frontier {
	t.Helper()
	f, err := frontier.Open(context.Background(), frontier.Options{
		Store: st, Seen: seen, Normalizer: testNormalizer(t), Domain: urlnorm.RegistrableDomain,
		Politeness: frontier.PolitenessOptions{Delay: -1}, Now: clk.now,
		Continuous: true, ExactDedup: true, AgeWindow: agingWindow,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return f
}

// churnSite is a continuous crawl's site: a hub revisited every round
// that links, each round, to perRound new URLs (each fetched once and
// gone), and pages /r0../r{revisited-1} that are revisited every 50
// minutes and that nothing links to after the seeds.
type churnSite struct {
	perRound, revisited int
	round               atomic.Int64
	clk                 *agingClock
}

const churnHub = "http://a.test/"

func (s *churnSite) seeds() []string {
	seeds := []string{churnHub}
	for i := range s.revisited {
		seeds = append(seeds, fmt.Sprintf("http://a.test/r%d", i))
	}
	return seeds
}

func (s *churnSite) outcome(e frontier.Entry) frontier.Outcome {
	now := s.clk.now()
	switch {
	case e.URL == churnHub:
		out := frontier.Outcome{Fetched: true, Schedule: &frontier.Schedule{Due: now.Add(agingRound - time.Minute)}}
		r := s.round.Load()
		for i := range s.perRound {
			out.Links = append(out.Links, fmt.Sprintf("http://a.test/n%d/%d", r, i))
		}
		return out
	case strings.HasPrefix(e.URL, "http://a.test/r"):
		return frontier.Outcome{Fetched: true, Schedule: &frontier.Schedule{Due: now.Add(50 * time.Minute)}}
	}
	return frontier.Outcome{Fetched: true, Failed: true} // gone: leaves the schedule
}

// drain fetches everything Next hands out without waiting (a frontier
// with nothing queued or scheduled, one resumed from a crash before the
// seeds were written, is exhausted).
func (s *churnSite) drain(t testing.TB, f *frontier.Frontier) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		e, err := f.Next(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, frontier.ErrExhausted) {
			return
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if err := f.Done(context.Background(), e, s.outcome(e)); err != nil {
			t.Fatalf("Done %s: %v", e.URL, err)
		}
	}
}

// next runs one round: the clock moves on, then everything due is
// fetched.
func (s *churnSite) next(t testing.TB, f *frontier.Frontier) {
	t.Helper()
	s.clk.add(agingRound)
	s.round.Add(1)
	s.drain(t, f)
}

// urls returns every URL the site has named up to round r.
func (s *churnSite) urls() []string {
	u := s.seeds()
	for r := range s.round.Load() + 1 {
		for i := range s.perRound {
			u = append(u, fmt.Sprintf("http://a.test/n%d/%d", r, i))
		}
	}
	return u
}

// liveNotInFilter returns the URLs whose fingerprints the store holds as
// live (tagged with its generation or the one before, frontier/aging.go)
// and that seen does not hold: the invariant is that there are none, for
// seen's "new" answers are final.
func liveNotInFilter(t testing.TB, st frontier.Store, seen *localSeen, urls []string) []string {
	t.Helper()
	v, err := st.Get([]byte("m/age"))
	if err != nil || len(v) == 0 || v[0] != 1 {
		t.Fatalf("m/age = %x, %v", v, err)
	}
	g, _ := binary.Uvarint(v[1:])
	gen := uint32(g)
	norm := testNormalizer(t)
	var missing []string
	for _, u := range urls {
		sum := sha256.Sum256([]byte(u))
		tag, err := st.Get(append([]byte("f/"), sum[:8]...))
		if errors.Is(err, frontier.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		live := len(tag) == 0 || binary.BigEndian.Uint32(tag)+1 >= gen
		if live && !seen.test(norm.Segments(u)) {
			missing = append(missing, u)
		}
	}
	return missing
}

// hideRotator hides localSeen's Rotator: the filter as it was before it
// aged, for comparison.
type hideRotator struct{ s *localSeen }

func (h hideRotator) TestAndAdd(ctx context.Context, seg []string) (bool, error) {
	return h.s.TestAndAdd(ctx, seg)
}

// TestAgingFilterMemoryFlat (issue 35): a continuous crawl of a site whose
// URLs churn (each round new ones, each fetched once and gone) keeps the
// duplicate filter's memory flat over many rotations, where a filter that
// does not age grows by its bits per URL for every URL ever seen.
func TestAgingFilterMemoryFlat(t *testing.T) {
	if raceEnabled {
		t.Skip("a memory bound over 36,000 URLs in one goroutine: .ci/run runs it without -race (racetests); TestAgingFilterRace race-tests the rotation")
	}
	const rounds = 24
	const perRound = 1500
	// The filter's size follows the rotations (a new current generation
	// starts small and grows as it takes URLs), so the test compares the
	// largest size over rounds 9-16 with the largest over rounds 17-24:
	// four rotations each, whatever the phase a sample falls on.
	run := func(t *testing.T, aging bool) (early, final uint64, live int) {
		ls := newAgingSeen(t)
		db, err := storage.Open(t.TempDir(), storage.Options{DeferSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		clk := newAgingClock()
		var seen frontier.Seen = ls
		if !aging {
			seen = hideRotator{ls}
		}
		f := openAging(t, StoreAdapter{db}, seen, clk)
		site := &churnSite{perRound: perRound, clk: clk}
		if _, err := f.AddSeeds(context.Background(), site.seeds()); err != nil {
			t.Fatal(err)
		}
		site.drain(t, f)
		for r := 1; r <= rounds; r++ {
			site.next(t, f)
			switch b := ls.stats().Bytes; {
			case r > rounds/3 && r <= 2*rounds/3:
				early = max(early, b)
			case r > 2*rounds/3:
				final = max(final, b)
			}
		}
		if m := liveNotInFilter(t, StoreAdapter{db}, ls, site.urls()); len(m) > 0 {
			t.Fatalf("%d live URLs not in the filter, e.g. %s", len(m), m[0])
		}
		// Live: the URLs of the last two windows (four rounds) and the hub.
		return early, final, 4*perRound + 1
	}
	early, final, live := run(t, true)
	t.Logf("aging filter: at most %d bytes in rounds %d-%d, %d in rounds %d-%d: %.2f bytes per live URL", early, rounds/3+1, 2*rounds/3, final, 2*rounds/3+1, rounds, float64(final)/float64(live))
	if final > early {
		t.Errorf("aging filter grew from %d to %d bytes over %d rotations of a churning site", early, final, (rounds-rounds/3)/2)
	}
	early0, final0, _ := run(t, false)
	t.Logf("filter without aging: at most %d bytes in rounds %d-%d, %d in rounds %d-%d: %.2f bytes per live URL", early0, rounds/3+1, 2*rounds/3, final0, 2*rounds/3+1, rounds, float64(final0)/float64(live))
	if final0 < 2*early0 {
		t.Errorf("filter without aging: %d then %d bytes; the comparison expects it to grow with every URL seen", early0, final0)
	}
}

// TestAgingFilterKeepsRevisited: a URL fetched on its schedule and never
// linked again stays in the filter across many rotations (the fetch
// inserts it), so a link to it is a duplicate, not a second fetch.
func TestAgingFilterKeepsRevisited(t *testing.T) {
	ls := newAgingSeen(t)
	clk := newAgingClock()
	st := newMemState()
	f := openAging(t, st, ls, clk)
	site := &churnSite{perRound: 5, revisited: 3, clk: clk}
	if _, err := f.AddSeeds(context.Background(), site.seeds()); err != nil {
		t.Fatal(err)
	}
	site.drain(t, f)
	for range 12 { // six hours, six rotations
		site.next(t, f)
	}
	if m := liveNotInFilter(t, st, ls, site.urls()); len(m) > 0 {
		t.Fatalf("live URLs not in the filter: %v", m)
	}
	// Now the hub links to the revisited pages: duplicates.
	before := f.Stats()
	clk.add(agingRound)
	var e frontier.Entry
	for e.URL != churnHub {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var err error
		e, err = f.Next(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if e.URL != churnHub {
			if err := f.Done(context.Background(), e, site.outcome(e)); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := frontier.Outcome{Fetched: true, Links: site.seeds()[1:]}
	if err := f.Done(context.Background(), e, out); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.New != before.New || s.FalsePositives != before.FalsePositives {
		t.Errorf("links to the revisited pages: new %d -> %d, false positives %d -> %d; want duplicates", before.New, s.New, before.FalsePositives, s.FalsePositives)
	}
}

// checkpointSeen saves ls at a checkpoint of f, as Crawler.checkpoint does,
// into *snap.
func checkpointSeen(f *frontier.Frontier, ls *localSeen, snap *[]byte, mu *sync.Mutex) error {
	capture := ls.prepareSnapshot()
	return f.Checkpoint(context.Background(), func(gen uint64) (func(context.Context) error, error) {
		copy, err := capture()
		if err != nil {
			return nil, err
		}
		return func(context.Context) error {
			var b bytes.Buffer
			if err := WriteSnapshot(&b, gen, copy); err != nil {
				return err
			}
			mu.Lock()
			*snap = b.Bytes()
			mu.Unlock()
			return nil
		}, nil
	})
}

// resumeSeen is what a resumed crawl's seen-set is: the snapshot the
// store's checkpoint names, loaded (loadSnapshot), or a new filter.
func resumeSeen(t testing.TB, st frontier.Store, snap []byte) *localSeen {
	t.Helper()
	ls := newAgingSeen(t)
	gen, err := frontier.CheckpointGeneration(st)
	if err != nil {
		t.Fatal(err)
	}
	if gen == 0 {
		return ls
	}
	got, err := ReadSnapshot(bytes.NewReader(snap), ls)
	if err != nil || got < gen {
		t.Fatalf("snapshot of checkpoint %d, %v; the store records %d", got, err, gen)
	}
	return ls
}

// TestAgingFilterKill9 kills a continuous crawl (the store as its writes
// left it, the filter as its last snapshot) after each of many writes,
// those of rotations among them, resumes it and runs it on across two
// more rotations: the resumed filter must hold every URL the store holds
// as live, at the resume and after every round since.
func TestAgingFilterKill9(t *testing.T) {
	if raceEnabled {
		t.Skip("30 crash points, each resumed and run five rounds, in one goroutine: .ci/run runs it without -race (racetests); TestAgingFilterRace race-tests the rotation")
	}
	const rounds = 12
	type crash struct {
		write int
		st    *memState
		snap  []byte
		clk   time.Time
		round int64
	}
	var crashes []crash
	ls := newAgingSeen(t)
	clk := newAgingClock()
	site := &churnSite{perRound: 6, revisited: 3, clk: clk}
	st := newMemState()
	var snapMu sync.Mutex
	var snap []byte
	rng := rand.New(rand.NewPCG(35, 1))
	st.afterWrite = func(n int, keys []string) {
		rotation := slices.Contains(keys, "m/age")
		if !rotation && rng.IntN(6) != 0 {
			return
		}
		snapMu.Lock()
		c := crash{write: n, st: st.clone(), snap: snap, clk: clk.now(), round: site.round.Load()}
		snapMu.Unlock()
		crashes = append(crashes, c)
	}
	f := openAging(t, st, ls, clk)
	if _, err := f.AddSeeds(context.Background(), site.seeds()); err != nil {
		t.Fatal(err)
	}
	site.drain(t, f)
	for r := 1; r <= rounds; r++ {
		site.next(t, f)
		if r%3 == 1 {
			if err := checkpointSeen(f, ls, &snap, &snapMu); err != nil {
				t.Fatal(err)
			}
		}
	}
	st.afterWrite = nil
	t.Logf("%d crash points", len(crashes))
	for _, c := range crashes {
		clk2 := &agingClock{t: c.clk}
		s2 := &churnSite{perRound: site.perRound, revisited: site.revisited, clk: clk2}
		s2.round.Store(c.round)
		ls2 := resumeSeen(t, c.st, c.snap)
		f2 := openAging(t, c.st, ls2, clk2)
		if m := liveNotInFilter(t, c.st, ls2, s2.urls()); len(m) > 0 {
			t.Fatalf("crash after write %d: resumed filter misses live URLs %v", c.write, m)
		}
		s2.drain(t, f2)
		for r := range 5 {
			s2.next(t, f2)
			if m := liveNotInFilter(t, c.st, ls2, s2.urls()); len(m) > 0 {
				t.Fatalf("crash after write %d, round %d after the resume: filter misses live URLs %v", c.write, r+1, m)
			}
		}
	}
}

// TestAgingFilterRace runs workers, rotations and checkpoints together
// (run it with -race): the filter and the tags change generation together,
// and at the end the filter holds every live URL.
func TestAgingFilterRace(t *testing.T) {
	ls := newAgingSeen(t)
	clk := newAgingClock()
	st := newMemState()
	f := openAging(t, st, ls, clk)
	// Many hubs, so that workers run in parallel, each linking to new
	// URLs and to a few of an earlier round's.
	var seeds []string
	for h := range 8 {
		seeds = append(seeds, fmt.Sprintf("http://h%d.a.test/", h))
	}
	if _, err := f.AddSeeds(context.Background(), seeds); err != nil {
		t.Fatal(err)
	}
	var round atomic.Int64
	var named sync.Map
	outcome := func(e frontier.Entry) frontier.Outcome {
		now := clk.now()
		if !strings.HasSuffix(e.URL, "/") {
			return frontier.Outcome{Fetched: true, Schedule: &frontier.Schedule{Due: now.Add(50 * time.Minute)}}
		}
		out := frontier.Outcome{Fetched: true, Schedule: &frontier.Schedule{Due: now.Add(10 * time.Minute)}}
		r := round.Load()
		for i := range 10 {
			for _, rr := range []int64{r, r / 2} {
				u := fmt.Sprintf("%sp%d-%d", e.URL, rr, i)
				named.Store(u, true)
				out.Links = append(out.Links, u)
			}
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var errs atomic.Value
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				// Next times its waits by the real clock: look again often.
				nctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
				e, err := f.Next(nctx)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
					continue
				}
				if err != nil {
					errs.Store(err)
					return
				}
				if err := f.Done(context.Background(), e, outcome(e)); err != nil {
					errs.Store(err)
					return
				}
			}
		}()
	}
	var snapMu sync.Mutex
	var snap []byte
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			time.Sleep(2 * time.Millisecond)
			clk.add(10 * time.Minute) // a rotation every 6 ticks
			round.Add(1)
			if i%5 == 0 {
				if err := checkpointSeen(f, ls, &snap, &snapMu); err != nil {
					errs.Store(err)
					return
				}
			}
			_ = ls.stats()
		}
	}()
	wg.Wait()
	if err, _ := errs.Load().(error); err != nil {
		t.Fatal(err)
	}
	urls := slices.Clone(seeds)
	named.Range(func(k, _ any) bool { urls = append(urls, k.(string)); return true })
	if m := liveNotInFilter(t, st, ls, urls); len(m) > 0 {
		t.Fatalf("%d live URLs not in the filter, e.g. %v", len(m), m[0])
	}
	if g := ls.state.Load().gen; g < 3 {
		t.Errorf("generation %d at the end: the test did not rotate enough", g)
	}
	t.Logf("%d URLs named, generation %d", len(urls), ls.state.Load().gen)
}

// TestAgingSnapshotRoundTrip: the aging format holds every filter and the
// generation, and a non-aging set writes the plain mlbf format.
func TestAgingSnapshotRoundTrip(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		ls := newTestFilter(t, fixed)
		plain, _ := ls.Snapshot()
		var b bytes.Buffer
		if _, err := plain.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		if m := b.String()[:4]; m != map[bool]string{true: "MLBF", false: "MLBS"}[fixed] {
			t.Fatalf("fixed %v: a set that does not age writes %q", fixed, m)
		}
		a, b2 := []string{"http://a.test", "a"}, []string{"http://a.test", "b"}
		for g := range uint32(3) {
			swap, err := ls.PrepareRotation(g)
			if err != nil {
				t.Fatal(err)
			}
			swap()
			ls.add([]string{"http://a.test", fmt.Sprint(g)})
		}
		ls.add(a) // generation 2's
		swap, _ := ls.PrepareRotation(3)
		swap()
		ls.add(b2)
		copy, err := ls.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		b.Reset()
		if _, err := copy.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		to := newTestFilter(t, !fixed)
		if _, err := to.ReadFrom(bytes.NewReader(b.Bytes())); err != nil {
			t.Fatal(err)
		}
		got := to.state.Load()
		if got.gen != 3 || len(got.older) != 1 || got.older[0].until != 3 || (got.fixed != nil) != fixed {
			t.Fatalf("fixed %v: read back generation %d, %d older filters; want generation 3, one older (until 3)", fixed, got.gen, len(got.older))
		}
		for _, k := range [][]string{a, b2} {
			if !to.test(k) {
				t.Errorf("fixed %v: %v lost in the round trip", fixed, k)
			}
		}
		var again bytes.Buffer
		c2, _ := to.Snapshot()
		if _, err := c2.WriteTo(&again); err != nil || !bytes.Equal(again.Bytes(), b.Bytes()) {
			t.Errorf("fixed %v: re-encoding differs (%v)", fixed, err)
		}
	}
}

// TestAgingResumeHolds: a set loaded from a snapshot keeps every filter it
// loaded answering until the store's generation's fingerprints are dead
// (two rotations after it), whatever generation the snapshot was of.
func TestAgingResumeHolds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		snapGen  uint32
		storeGen uint32
	}{{"same generation", 5, 5}, {"snapshot a generation behind", 4, 5}, {"three behind", 2, 5}} {
		ls := newTestFilter(t, false)
		rot := func(s *localSeen, g uint32) {
			swap, err := s.PrepareRotation(g)
			if err != nil {
				t.Fatal(err)
			}
			swap()
		}
		rot(ls, tc.snapGen-1)
		prevKey := []string{"http://a.test", "prev"}
		ls.add(prevKey)
		rot(ls, tc.snapGen)
		curKey := []string{"http://a.test", "cur"}
		ls.add(curKey)
		copy, _ := ls.Snapshot()
		var b bytes.Buffer
		copy.WriteTo(&b)
		to := newTestFilter(t, false)
		if _, err := to.ReadFrom(&b); err != nil {
			t.Fatal(err)
		}
		rot(to, tc.storeGen) // Open
		rot(to, tc.storeGen+1)
		for _, k := range [][]string{prevKey, curKey} {
			if !to.test(k) {
				t.Errorf("%s: %v forgotten one rotation after the resume", tc.name, k)
			}
		}
		rot(to, tc.storeGen+2)
		if n := len(to.state.Load().older); n != 1 {
			t.Errorf("%s: %d older filters two rotations after the resume, want 1", tc.name, n)
		}
	}
}

// FuzzAgingSeen feeds arbitrary bytes to the seen-set's reader: it must
// fail with mlbf's errors or read a set whose encoding reads back the
// same, never panic.
func FuzzAgingSeen(f *testing.F) {
	for _, fixed := range []bool{false, true} {
		ls := newTestFilter(f, fixed)
		for g := range uint32(3) {
			swap, _ := ls.PrepareRotation(g)
			swap()
			ls.add([]string{"http://a.test", fmt.Sprint(g)})
		}
		copy, _ := ls.Snapshot()
		var b bytes.Buffer
		copy.WriteTo(&b)
		f.Add(b.Bytes())
	}
	f.Add([]byte("LCAG\x01\x00\x00\x00\x00\x00\x09\x00\x00\x00"))
	dst := newTestFilter(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := dst.ReadFrom(bytes.NewReader(data)); err != nil {
			if !errors.Is(err, mlbf.ErrFormat) && !errors.Is(err, mlbf.ErrChecksum) {
				t.Fatalf("error %v wraps neither mlbf.ErrFormat nor mlbf.ErrChecksum", err)
			}
			return
		}
		copy, err := dst.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := copy.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		back := newTestFilter(t, false)
		if _, err := back.ReadFrom(bytes.NewReader(b.Bytes())); err != nil {
			t.Fatalf("re-encoding does not read back: %v", err)
		}
	})
}

// BenchmarkSeenTestAndAdd compares the seen-set's TestAndAdd of new URLs
// (the costly case: the previous generation's filter is tested too) with
// one filter and with two (aging, after a rotation), each filter holding
// 100,000 URLs. Run alternated: -bench SeenTestAndAdd -count 10.
func BenchmarkSeenTestAndAdd(b *testing.B) {
	norm := testNormalizer(b)
	keys := make([][]string, 1<<16)
	for i := range keys {
		keys[i] = norm.Segments(fmt.Sprintf("http://h%d.a.test/p/%d", i%97, i))
	}
	for _, aging := range []bool{false, true} {
		b.Run(map[bool]string{false: "one", true: "aging"}[aging], func(b *testing.B) {
			ls, err := newLocalSeen(Options{ExpectedURLs: 1 << 20, FalsePositiveRate: 0.001})
			if err != nil {
				b.Fatal(err)
			}
			fill := func() {
				for i := range 100_000 {
					ls.add(norm.Segments(fmt.Sprintf("http://f.test/%d/%d", ls.state.Load().gen, i)))
				}
			}
			fill()
			if aging {
				for g := range uint32(2) {
					swap, err := ls.PrepareRotation(g)
					if err != nil {
						b.Fatal(err)
					}
					swap()
				}
				fill()
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i%len(keys) == 0 && i > 0 {
					b.StopTimer()
					for j := range keys {
						keys[j][len(keys[j])-1] += "x" // new keys again
					}
					b.StartTimer()
				}
				ls.TestAndAdd(ctx, keys[i%len(keys)])
			}
		})
	}
}
