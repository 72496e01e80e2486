package mlbf

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentExactlyOnce hammers the same keys from many goroutines: for
// every key exactly one TestAndAdd (single or batched) must report it new,
// and none may report a key absent after its insert returned.
func TestConcurrentExactlyOnce(t *testing.T) {
	const goroutines = 16
	keys := 2000
	if raceEnabled {
		keys = 600
	}
	for _, mode := range []Mode{Improved, Paper} {
		f, err := NewConcurrent(Options{Mode: mode, ExpectedURLs: uint64(keys) * 4, BitsPerLayer: 1 << 18})
		if err != nil {
			t.Fatal(err)
		}
		segs := make([][]string, keys)
		for i := range segs {
			segs[i] = []string{fmt.Sprintf("h%d.example", i%37), "p", fmt.Sprint(i)}
		}
		news := make([]atomic.Int32, keys)
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				if g%2 == 1 {
					present := make([]bool, 7)
					for start := (g * 131) % keys; start < keys+(g*131)%keys; start += 7 {
						var batch [][]string
						var idx []int
						for i := start; i < start+7; i++ {
							batch = append(batch, segs[i%keys])
							idx = append(idx, i%keys)
						}
						f.TestAndAddBatch(batch, present)
						for j, p := range present[:len(batch)] {
							if !p {
								news[idx[j]].Add(1)
							}
						}
					}
					return
				}
				for n := 0; n < keys; n++ {
					i := (n + g*97) % keys
					if !f.TestAndAdd(segs[i]) {
						news[i].Add(1)
					}
					if !f.Test(segs[i]) {
						t.Errorf("%v: key %d absent right after TestAndAdd", mode, i)
					}
				}
			}(g)
		}
		wg.Wait()
		// A false positive could make a key's first insert report present;
		// the filter is sized for 4x the keys, so allow a few such keys but
		// never two "new" reports for one key.
		zero := 0
		for i := range news {
			switch n := news[i].Load(); {
			case n > 1:
				t.Fatalf("%v: key %q reported new %d times", mode, strings.Join(segs[i], "/"), n)
			case n == 0:
				zero++
			}
		}
		if zero > keys/100 {
			t.Errorf("%v: %d keys never reported new (false positives), want < %d", mode, zero, keys/100)
		}
	}
}

// TestConcurrentNoFalseNegatives: goroutines insert random keys (single and
// batched) while checking, against their own Go maps, that every key they
// inserted stays present; at the end every key of every map is present.
func TestConcurrentNoFalseNegatives(t *testing.T) {
	_, seed := seedRand(t)
	f, err := NewConcurrent(Options{ExpectedURLs: 4000, FalsePositiveRate: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	const goroutines = 6
	per := 1500
	if raceEnabled {
		per = 400
	}
	maps := make([]map[string][]string, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			mine := map[string][]string{}
			present := make([]bool, 4)
			for i := 0; i < per; i++ {
				seg := randomKey(r)
				key := fmt.Sprintf("%d:%s", len(seg), strings.Join(seg, "/"))
				if i%3 == 0 {
					f.TestAndAddBatch([][]string{seg, seg, {}, seg[:len(seg)/2]}, present)
					if !present[1] {
						t.Errorf("batch: second copy of %q reported absent", seg)
					}
					half := seg[:len(seg)/2]
					mine[fmt.Sprintf("%d:%s", len(half), strings.Join(half, "/"))] = half
					mine["0:"] = []string{}
				} else if _, had := mine[key]; !f.TestAndAdd(seg) && had {
					t.Errorf("%q inserted before, reported absent", seg)
				}
				mine[key] = seg
				for _, s := range mine {
					if !f.Test(s) {
						t.Errorf("false negative for %q", s)
						return
					}
					break // one spot check per step; all are checked at the end
				}
			}
			maps[g] = mine
		}(g)
	}
	wg.Wait()
	for g, m := range maps {
		for _, s := range m {
			if !f.Test(s) {
				t.Fatalf("goroutine %d: false negative for %q", g, s)
			}
		}
	}
}

// TestConcurrentMatchesFilter inserts the same keys, one goroutine, into a
// Filter and a Concurrent of the same options: every TestAndAdd answer and
// the final bits must be identical, so the concurrent test-and-set (its
// lock-free pre-check, re-test and per-probe ORs) sets exactly the bits of
// the single-goroutine one. k=5 exercises the re-mixed probes beyond the
// third.
func TestConcurrentMatchesFilter(t *testing.T) {
	r, _ := seedRand(t)
	tests := []struct {
		name string
		opts Options
	}{
		{"improved k=3", Options{ExpectedURLs: 3000, FalsePositiveRate: 0.05}},
		{"improved k=5", Options{ExpectedURLs: 3000, FalsePositiveRate: 0.05, Hashes: 5}},
		{"paper", Options{Mode: Paper, BitsPerLayer: 1 << 14}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewConcurrent(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var keys [][]string
			for i := 0; i < 4000; i++ {
				seg := randomKey(r)
				if len(keys) > 0 && i%5 == 0 {
					seg = keys[r.IntN(len(keys))] // a repeat: the present path
				}
				keys = append(keys, seg)
				if got, want := c.TestAndAdd(seg), f.TestAndAdd(seg); got != want {
					t.Fatalf("key %d %q: Concurrent.TestAndAdd = %v, Filter.TestAndAdd = %v", i, seg, got, want)
				}
			}
			got, err := c.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			want, err := f.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Concurrent and Filter bits differ after the same %d inserts", len(keys))
			}
		})
	}
}
