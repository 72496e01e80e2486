package frontier

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// fpTable against a map, with the fingerprints 0 and 1 (one fingerprint
// in the table) and enough others to double it several times.
func TestFPTable(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	var tb fpTable
	ref := map[uint64]bool{}
	norm := func(fp uint64) uint64 { return max(fp, 1) }
	fps := []uint64{0, 1, 2, 1 << 63, ^uint64(0)}
	for range 20_000 {
		fps = append(fps, r.Uint64())
	}
	// A run of fingerprints that share their high bits, and so their
	// first slot: the probe sequence wraps around the array.
	for i := range uint64(100) {
		fps = append(fps, ^uint64(0)-i)
	}
	for i, fp := range fps {
		if got, want := tb.has(fp), ref[norm(fp)]; got != want {
			t.Fatalf("has(%#x) before add %d = %v, want %v", fp, i, got, want)
		}
		if got, want := tb.add(fp), !ref[norm(fp)]; got != want {
			t.Fatalf("add(%#x) = %v, want %v", fp, got, want)
		}
		ref[norm(fp)] = true
		if !tb.has(fp) {
			t.Fatalf("has(%#x) after add = false", fp)
		}
	}
	if tb.n != len(ref) {
		t.Errorf("n = %d, want %d", tb.n, len(ref))
	}
	if 5*tb.n > 4*len(tb.slot) {
		t.Errorf("%d fingerprints in %d slots: over 80%%", tb.n, len(tb.slot))
	}
	for range 20_000 {
		fp := r.Uint64()
		if got, want := tb.has(fp), ref[norm(fp)]; got != want {
			t.Fatalf("has(%#x) = %v, want %v", fp, got, want)
		}
	}
}

// commitFP is what a frontier's batch does for one URL taken for new: the
// fingerprint written to the store, then forgotten by the pending set.
func commitFP(t *testing.T, x *exactSet, store *memStore, fp uint64) {
	t.Helper()
	ops := []*op{{fps: []uint64{fp}}}
	if err := store.Write(func(w Writer) error { return x.write(w, ops) }); err != nil {
		t.Fatal(err)
	}
	x.committed(ops)
}

// A set whose memory bound is too small for its fingerprints spills, stripe
// by stripe, and still answers exactly: for the fingerprints it kept in
// memory without the store, for the others from the store; a set loaded
// from the store answers the same.
func TestExactSetSpill(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	store := newMemStore()
	// One first table per stripe: it spills at 80% of fpTableMin.
	const memory = 8 * exactStripes * fpTableMin
	x := newExactSet(store, memory, false)
	check := func(x *exactSet, fp uint64, maybe bool) bool {
		defer x.lock(fp)()
		seen, _, err := x.check(fp, maybe)
		if err != nil {
			t.Fatal(err)
		}
		return seen
	}
	var fps []uint64
	for range 2 * exactStripes * fpTableMin {
		fp := r.Uint64()
		// Half the new URLs come as the filter's false positives.
		if check(x, fp, r.IntN(2) == 0) {
			t.Fatalf("new fingerprint %#x reported seen", fp)
		}
		// Seen again before its batch is committed: pending or in memory.
		if !check(x, fp, true) {
			t.Fatalf("uncommitted fingerprint %#x reported new", fp)
		}
		commitFP(t, x, store, fp)
		fps = append(fps, fp)
	}
	spilled := 0
	for i := range x.stripes {
		if x.stripes[i].spilled.Load() {
			spilled++
		}
		if n := len(x.stripes[i].pending); n != 0 {
			t.Errorf("stripe %d: %d fingerprints still pending after their commit", i, n)
		}
	}
	if spilled != exactStripes {
		t.Errorf("%d of %d stripes spilled, want all", spilled, exactStripes)
	}
	// A bound of B bytes holds at least B/20 fingerprints (DefaultExactMemory).
	if mem := x.inMemory.Load(); mem < memory/20 || mem >= int64(len(fps)) {
		t.Errorf("%d of %d fingerprints in memory, want at least %d and not all", mem, len(fps), memory/20)
	}
	loaded := newExactSet(store, memory, false)
	if err := loaded.load(); err != nil {
		t.Fatal(err)
	}
	for _, y := range []*exactSet{x, loaded} {
		before := y.lookups.Load()
		for _, fp := range fps {
			if !check(y, fp, true) {
				t.Fatalf("stored fingerprint %#x reported new", fp)
			}
		}
		if y.lookups.Load() == before {
			t.Errorf("no store lookups for a spilled set")
		}
		fp := r.Uint64()
		if check(y, fp, true) {
			t.Errorf("absent fingerprint %#x reported seen", fp)
		}
	}
}

// Workers racing on the same fingerprints: each is reported new exactly
// once, in memory and spilled (run with -race). The seen-set is simulated
// under the stripe's lock, as the frontier calls it: it answers "maybe
// seen" for what it holds and for a quarter of the new fingerprints.
func TestExactSetRace(t *testing.T) {
	for _, memory := range []int64{DefaultExactMemory, -1} {
		store := newMemStore()
		x := newExactSet(store, memory, false)
		const workers, n = 8, 2000
		var news [workers]int
		var filter sync.Map
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 2))
				for i := range n {
					fp := uint64(i)*0x9e3779b97f4a7c15 + 1
					unlock := x.lock(fp)
					_, held := filter.LoadOrStore(fp, true)
					seen, _, err := x.check(fp, held || r.IntN(4) == 0)
					unlock()
					if err != nil {
						t.Error(err)
						return
					}
					if !seen {
						news[w]++
						ops := []*op{{fps: []uint64{fp}}}
						if err := store.Write(func(wr Writer) error { return x.write(wr, ops) }); err != nil {
							t.Error(err)
							return
						}
						x.committed(ops)
					}
				}
			}()
		}
		wg.Wait()
		total := 0
		for _, k := range news {
			total += k
		}
		if total != n {
			t.Errorf("memory %d: %d fingerprints reported new, want %d", memory, total, n)
		}
	}
}
