package redisfrontier

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/mlbf"
)

// smallFilter is small enough that random keys give false positives, so
// agreement tests cover positives that are not true duplicates.
var smallFilter = mlbf.Options{Layers: 3, Hashes: 3, LayerBits: []uint64{4096, 8192, 8192, 16384}}

func randomKey(r *rand.Rand) []string {
	seg := make([]string, r.IntN(7))
	for i := range seg {
		seg[i] = "s" + strconv.Itoa(r.IntN(50))
	}
	return seg
}

func seedRand(t testing.TB) *rand.Rand {
	seed := rand.Uint64()
	if s := os.Getenv("LCREDIS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with LCREDIS_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed>>1))
}

// TestSeenAgreesWithFilter: a Redis seen-set of N shards answers every
// TestAndAdd exactly as N in-memory mlbf.Filters of ShardOptions with keys
// routed by Shard, and its bitmaps hold exactly the bits of the probes.
func TestSeenAgreesWithFilter(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opts    mlbf.Options
		shards  int
		batch   int
		nolocal bool
	}{
		{"improved 1 shard", smallFilter, 1, 4096, false},
		{"improved 1 shard no local bits", smallFilter, 1, 4096, true},
		{"improved 4 shards batch 7", smallFilter, 4, 7, false},
		{"improved from a target 2 shards", mlbf.Options{ExpectedURLs: 3000, FalsePositiveRate: 0.01}, 2, 4096, false},
		{"paper 3 shards", mlbf.Options{Mode: mlbf.Paper, BitsPerLayer: 9001}, 3, 100, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := testClient(t)
			s, err := OpenSeen(ctx, c, SeenOptions{Filter: tt.opts, Shards: tt.shards, MaxBatch: tt.batch, NoLocalBits: tt.nolocal})
			if err != nil {
				t.Fatal(err)
			}
			sized := SeenSizing(tt.opts)
			whole, _ := mlbf.NewLayout(sized)
			filters := make([]*mlbf.Filter, tt.shards)
			for i := range filters {
				if filters[i], err = mlbf.New(ShardOptions(sized, whole, tt.shards)); err != nil {
					t.Fatal(err)
				}
			}
			lay := s.Layout()
			r := seedRand(t)
			// want[shard][layer] is the set of bits the probes set.
			want := make([][]map[uint64]bool, tt.shards)
			for i := range want {
				want[i] = make([]map[uint64]bool, lay.Layers()+1)
				for j := range want[i] {
					want[i][j] = map[uint64]bool{}
				}
			}
			var presentCount int
			for round := 0; round < 6; round++ {
				keys := make([][]string, 500)
				for i := range keys {
					keys[i] = randomKey(r)
				}
				got := make([]bool, len(keys))
				if err := s.TestAndAddBatch(ctx, keys, got); err != nil {
					t.Fatal(err)
				}
				for i, k := range keys {
					probes, route := lay.Probes(k, nil)
					sh := Shard(route, tt.shards)
					for _, p := range probes {
						want[sh][p.Layer][p.Bit] = true
					}
					if w := filters[sh].TestAndAdd(k); got[i] != w {
						t.Fatalf("round %d key %q: redis TestAndAdd = %v, in-memory filter = %v", round, k, got[i], w)
					}
					if got[i] {
						presentCount++
					}
				}
			}
			if presentCount == 0 || presentCount == 3000 {
				t.Fatalf("degenerate run: %d of 3000 present", presentCount)
			}
			// Each shard's bitmap holds the layers at s.base; no bit
			// outside them (padding) is ever set.
			sizes := lay.LayerBits()
			for sh := 0; sh < tt.shards; sh++ {
				b, err := c.rdb.Get(ctx, s.keys[sh][2]).Bytes()
				if err != nil {
					t.Fatalf("shard %d: %v", sh, err)
				}
				n := make([]int, lay.Layers()+1)
				for i, x := range b {
					for bit := 0; bit < 8; bit++ {
						if x&(0x80>>bit) == 0 {
							continue
						}
						off := uint64(i*8 + bit)
						l := 0
						for l < len(sizes) && off >= s.base[l]+sizes[l] {
							l++
						}
						if l == len(sizes) || off < s.base[l] {
							t.Fatalf("shard %d: bit %d set in redis, outside every layer", sh, off)
						}
						if !want[sh][l][off-s.base[l]] {
							t.Fatalf("shard %d layer %d: bit %d set in redis, not by any probe", sh, l, off-s.base[l])
						}
						n[l]++
					}
				}
				for l := range n {
					if n[l] != len(want[sh][l]) {
						t.Fatalf("shard %d layer %d: redis has %d bits set, probes %d", sh, l, n[l], len(want[sh][l]))
					}
				}
			}
		})
	}
}

func TestSeenRefusesOtherParameters(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	if _, err := OpenSeen(ctx, c, SeenOptions{Filter: smallFilter, Shards: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSeen(ctx, c, SeenOptions{Filter: smallFilter, Shards: 2}); err != nil {
		t.Fatalf("same parameters: %v", err)
	}
	other := smallFilter
	other.LayerBits = []uint64{4096, 8192, 8192, 32768}
	tests := []struct {
		name string
		opts SeenOptions
	}{
		{"layer size", SeenOptions{Filter: other, Shards: 2}},
		{"shards", SeenOptions{Filter: smallFilter, Shards: 3}},
		{"hashes", SeenOptions{Filter: mlbf.Options{Layers: 3, Hashes: 4, LayerBits: smallFilter.LayerBits}, Shards: 2}},
		{"mode", SeenOptions{Filter: mlbf.Options{Mode: mlbf.Paper, Layers: 3, BitsPerLayer: 8192}, Shards: 2}},
	}
	for _, tt := range tests {
		_, err := OpenSeen(ctx, c, tt.opts)
		if !errors.Is(err, ErrIncompatible) {
			t.Errorf("%s: OpenSeen error = %v, want ErrIncompatible", tt.name, err)
		}
	}
}

// TestSeenRefusesOldLayout: the keys of a crawl started by a layercrawl
// that laid the bits out another way (v1: one key per layer) are refused
// with a message that says so, never read with this layout.
func TestSeenRefusesOldLayout(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	s, err := OpenSeen(ctx, c, SeenOptions{Filter: smallFilter, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	old := "v1" + strings.TrimPrefix(s.Params(), seenLayout)
	if err := c.rdb.Set(ctx, s.metaKey(), old, 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = OpenSeen(ctx, c, SeenOptions{Filter: smallFilter, Shards: 2})
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), `bit layout "v1"`) {
		t.Fatalf("OpenSeen over a v1 seen-set: error = %v, want ErrIncompatible naming the layout", err)
	}
}

// TestSeenSizing: a filter sized from a target gets half mlbf's k, rounded
// up, at no more than 1.5x the integrity bits; options that fix k or the
// sizes are left alone.
func TestSeenSizing(t *testing.T) {
	integrity := func(o mlbf.Options) uint64 {
		lay, err := mlbf.NewLayout(o)
		if err != nil {
			t.Fatal(err)
		}
		b := lay.LayerBits()
		return b[len(b)-1]
	}
	for _, tt := range []struct {
		n    uint64
		p    float64
		want int // SeenSizing's k
	}{
		{1 << 20, 0.05, 2},
		{1 << 20, 0.01, 3},
		{1 << 20, 0.005, 4},
		{1 << 20, 0.001, 4},
		{1 << 20, 0.0001, 6},
		{20_000_000, 0.001, 4},
		{0, 0, 3}, // mlbf's defaults: 1%
	} {
		o := mlbf.Options{ExpectedURLs: tt.n, FalsePositiveRate: tt.p}
		got := SeenSizing(o)
		mine := o
		mine.EnsureDefaults()
		if got.Hashes != tt.want || got.ExpectedURLs != tt.n || got.FalsePositiveRate != tt.p {
			t.Errorf("SeenSizing(n=%d, p=%v) = %+v, want the same options with Hashes %d", tt.n, tt.p, got, tt.want)
		}
		if ratio := float64(integrity(got)) / float64(integrity(mine)); ratio > 1.5 || got.Hashes > (mine.Hashes+1)/2 {
			t.Errorf("n=%d p=%v: k %d (mlbf's %d) costs %.3fx mlbf's integrity bits, want at most 1.5x from half its k",
				tt.n, tt.p, got.Hashes, mine.Hashes, ratio)
		}
	}
	for _, o := range []mlbf.Options{
		{ExpectedURLs: 1000, FalsePositiveRate: 0.01, Hashes: 7},
		smallFilter,
		{Mode: mlbf.Paper, BitsPerLayer: 9001},
	} {
		if got := SeenSizing(o); got.Hashes != o.Hashes {
			t.Errorf("SeenSizing(%+v) set Hashes %d, want the options unchanged", o, got.Hashes)
		}
	}
	s, err := OpenSeen(context.Background(), testClient(t), SeenOptions{Filter: mlbf.Options{ExpectedURLs: 50_000, FalsePositiveRate: 0.001}})
	if err != nil {
		t.Fatal(err)
	}
	if k := s.Layout().Hashes(); k != 4 {
		t.Errorf("OpenSeen at 0.1%%: k = %d, want SeenSizing's 4", k)
	}
}

// TestSeenSizingRate: at SeenSizing's k the measured false-positive rate
// is within 20% of the blocked formula's and at or below the target. The
// filter is an in-memory twin: a Redis seen-set holds exactly its bits
// (TestSeenAgreesWithFilter).
func TestSeenSizingRate(t *testing.T) {
	const n = 40_000
	for _, p := range []float64{0.01, 0.001} {
		o := SeenSizing(mlbf.Options{ExpectedURLs: n, FalsePositiveRate: p})
		f, err := mlbf.New(o)
		if err != nil {
			t.Fatal(err)
		}
		key := func(i int) []string {
			return []string{fmt.Sprintf("h%d.example.org", i%997), fmt.Sprintf("d%d", i%7919), fmt.Sprintf("p%d.html", i)}
		}
		for i := 0; i < n; i++ {
			f.TestAndAdd(key(i))
		}
		queries := int(500 / p) // about 500 false positives expected
		fp := 0
		for i := n; i < n+queries; i++ {
			if f.Test(key(i)) {
				fp++
			}
		}
		bits := f.LayerBits()
		predicted := mlbf.BlockedFalsePositiveRate(o.Hashes, bits[len(bits)-1], n)
		got := float64(fp) / float64(queries)
		sigma := math.Sqrt(p * (1 - p) / float64(queries))
		t.Logf("p=%v k=%d: measured %.5f, predicted %.5f", p, o.Hashes, got, predicted)
		if got > p+4*sigma || math.Abs(got/predicted-1) > 0.2 {
			t.Errorf("p=%v k=%d: measured rate %.5f over %d queries, predicted %.5f: want within 20%% of it and at most the target",
				p, o.Hashes, got, queries, predicted)
		}
	}
}

// TestSeenOpensEarlierK: a crawl an earlier layercrawl started with mlbf's
// k (before SeenSizing) opens with that k, fixed or growing; one started
// with SeenSizing's k is refused by such a layercrawl, as any worker of
// other parameters is.
func TestSeenOpensEarlierK(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opts SeenOptions
	}{
		{"fixed", SeenOptions{Filter: mlbf.Options{ExpectedURLs: 50_000, FalsePositiveRate: 0.01}, Shards: 2}},
		{"growth", SeenOptions{Growth: &mlbf.ScalableOptions{ExpectedURLs: 20_000, FalsePositiveRate: 0.01}, Shards: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := testClient(t)
			earlier, err := openSeen(ctx, c, tt.opts, false)
			if err != nil {
				t.Fatal(err)
			}
			key := []string{"a.com", "b", "c"}
			if present, err := earlier.TestAndAdd(ctx, key); err != nil || present {
				t.Fatalf("earlier worker, first TestAndAdd: %v, %v", present, err)
			}
			s, err := OpenSeen(ctx, c, tt.opts)
			if err != nil {
				t.Fatalf("OpenSeen over a crawl started with mlbf's k: %v", err)
			}
			if s.Params() != earlier.Params() {
				t.Errorf("params %q, want the earlier crawl's %q", s.Params(), earlier.Params())
			}
			if present, err := s.TestAndAdd(ctx, key); err != nil || !present {
				t.Errorf("the earlier worker's URL: present %v, %v; want present", present, err)
			}

			fresh := testClient(t)
			if _, err := OpenSeen(ctx, fresh, tt.opts); err != nil {
				t.Fatal(err)
			}
			if _, err := openSeen(ctx, fresh, tt.opts, false); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "hashes") && !strings.Contains(err.Error(), "gensig") {
				t.Errorf("a worker with mlbf's k over a crawl with SeenSizing's: error = %v, want ErrIncompatible naming the difference", err)
			}
		})
	}
}

func TestSeenStateLost(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	s, err := OpenSeen(ctx, c, SeenOptions{Filter: smallFilter, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TestAndAdd(ctx, []string{"a.com", "x"}); err != nil {
		t.Fatal(err)
	}
	// What a restart of a Redis without persistence looks like to this
	// crawl (FLUSHDB would wipe other users' keys: delete ours only).
	deletePrefix(t, c.rdb.(*redis.Client), c.prefix)
	_, err = s.TestAndAdd(ctx, []string{"a.com", "y"})
	if !errors.Is(err, ErrStateLost) {
		t.Fatalf("after the keys vanished: error = %v, want ErrStateLost", err)
	}
}

// TestSeenRetryIsIdempotent replays a script call whose reply was "lost":
// the retry must return the first answer (new), not find its own bits.
func TestSeenRetryIsIdempotent(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	s, err := OpenSeen(ctx, c, SeenOptions{Filter: smallFilter, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	keys := [][]string{{"a.com", "1"}, {"a.com", "2"}, {"b.com"}, {"a.com", "1"}}
	calls := s.prepare(keys, s.NewBatchID())
	if err := s.run(ctx, calls); err != nil {
		t.Fatal(err)
	}
	first := map[int]string{}
	for _, cl := range calls {
		first[cl.shard] = cl.ans
		cl.done, cl.ans = false, ""
	}
	if err := s.run(ctx, calls); err != nil {
		t.Fatal(err)
	}
	for _, cl := range calls {
		if cl.ans != first[cl.shard] {
			t.Errorf("shard %d: retried call answered %q, first answer %q", cl.shard, cl.ans, first[cl.shard])
		}
	}
	got := make([]bool, len(keys))
	if err := s.TestAndAddBatch(ctx, keys, got); err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		if !p {
			t.Errorf("key %q: a fresh call reports it new after it was inserted", keys[i])
		}
	}
}

// atomicityURLs are the keys the atomicity tests race on; the filter is
// sized so that false positives among them are practically impossible
// (the integrity layer alone gives about 6e-7 per key).
func atomicityURLs(n int) [][]string {
	keys := make([][]string, n)
	for i := range keys {
		keys[i] = []string{fmt.Sprintf("h%d.example", i%7), "dir" + strconv.Itoa(i%31), "page" + strconv.Itoa(i) + ".html"}
	}
	return keys
}

var atomicityFilter = mlbf.Options{LayerBits: []uint64{1 << 16, 1 << 18, 1 << 18, 1 << 18, 1 << 20}}

// raceSeen checks the keys from several goroutines, each in its own order
// and mixing single calls with batches, and returns how often each key was
// reported new.
func raceSeen(ctx context.Context, s *Seen, keys [][]string, goroutines int, seed uint64) ([]int, error) {
	return raceSeens(ctx, []*Seen{s}, keys, goroutines, seed)
}

// raceSeens is raceSeen over several Seen values (workers): goroutine g
// uses seens[g%len(seens)].
func raceSeens(ctx context.Context, seens []*Seen, keys [][]string, goroutines int, seed uint64) ([]int, error) {
	counts := make([]int, len(keys))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s := seens[g%len(seens)]
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			order := r.Perm(len(keys))
			for start := 0; start < len(order); {
				n := 1 + r.IntN(64)
				end := min(start+n, len(order))
				idx := order[start:end]
				start = end
				news := make([]int, 0, len(idx))
				if g%2 == 0 {
					batch := make([][]string, len(idx))
					for i, j := range idx {
						batch[i] = keys[j]
					}
					present := make([]bool, len(idx))
					if err := s.TestAndAddBatch(ctx, batch, present); err != nil {
						errs <- err
						return
					}
					for i, p := range present {
						if !p {
							news = append(news, idx[i])
						}
					}
				} else {
					for _, j := range idx {
						p, err := s.TestAndAdd(ctx, keys[j])
						if err != nil {
							errs <- err
							return
						}
						if !p {
							news = append(news, j)
						}
					}
				}
				mu.Lock()
				for _, j := range news {
					counts[j]++
				}
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	return counts, <-errs
}

func TestSeenAtomicGoroutines(t *testing.T) {
	checkSeenAtomicGoroutines(t, testClient(t))
}

// checkSeenAtomicGoroutines races 12 goroutines over 3,000 new URLs on a
// 4-shard seen-set of c: each must be reported new exactly once.
func checkSeenAtomicGoroutines(t *testing.T, c *Client) {
	ctx := context.Background()
	s, err := OpenSeen(ctx, c, SeenOptions{Filter: atomicityFilter, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	keys := atomicityURLs(3000)
	counts, err := raceSeen(ctx, s, keys, 12, rand.Uint64())
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range counts {
		if n != 1 {
			t.Errorf("key %q reported new %d times, want exactly 1", keys[i], n)
		}
	}
}

func init() {
	helpers["seen"] = seenHelper
}

// seenHelper is one process of TestSeenAtomicProcesses: it races on the
// keys with several goroutines and prints the indexes it saw new.
func seenHelper() int {
	ctx := context.Background()
	url := os.Getenv("LCREDIS_URL")
	if url == "" {
		url = "redis://" + testAddr
	}
	c, err := Dial(ctx, Config{URL: url, Prefix: os.Getenv("LCREDIS_PREFIX")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	s, err := OpenSeen(ctx, c, SeenOptions{Filter: atomicityFilter, Shards: 4})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	seed, _ := strconv.ParseUint(os.Getenv("LCREDIS_SEED"), 10, 64)
	counts, err := raceSeen(ctx, s, atomicityURLs(3000), 4, seed)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	for i, n := range counts {
		for ; n > 0; n-- {
			fmt.Fprintln(w, i)
		}
	}
	w.Flush()
	return 0
}

// TestSeenAtomicProcesses runs three processes of four goroutines each on
// the same new keys: across all of them, each key is reported new exactly
// once.
func TestSeenAtomicProcesses(t *testing.T) {
	c := testClient(t)
	counts := runSeenProcesses(t, "redis://"+testAddr, c.prefix)
	for i, n := range counts {
		if n != 1 {
			t.Errorf("key %d reported new %d times across processes, want exactly 1", i, n)
		}
	}
}
