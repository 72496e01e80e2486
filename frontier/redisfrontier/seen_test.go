package redisfrontier

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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
		{"paper 3 shards", mlbf.Options{Mode: mlbf.Paper, BitsPerLayer: 9001}, 3, 100, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := testClient(t)
			s, err := OpenSeen(ctx, c, SeenOptions{Filter: tt.opts, Shards: tt.shards, MaxBatch: tt.batch, NoLocalBits: tt.nolocal})
			if err != nil {
				t.Fatal(err)
			}
			whole, _ := mlbf.NewLayout(tt.opts)
			filters := make([]*mlbf.Filter, tt.shards)
			for i := range filters {
				if filters[i], err = mlbf.New(ShardOptions(tt.opts, whole, tt.shards)); err != nil {
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
