package mlbf

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// stripes is the number of key-hash-selected mutexes of a Concurrent.
const stripes = 1024

type stripe struct {
	mu sync.Mutex // serializes test-and-set of the keys hashing to this stripe
	_  [64 - 8]byte
}

// Concurrent is a multi-layer Bloom filter safe for use by many goroutines.
//
// Bits are read with atomic loads and set with atomic ORs, so concurrent
// inserts of different keys never lose a bit. A TestAndAdd or Add that finds
// a bit missing holds one of 1024 mutexes chosen by the key's hash while it
// tests and sets, so of several concurrent TestAndAdd calls for the same new
// key exactly one reports it absent; a key whose bits are all set is
// answered without a lock. Test takes no lock.
type Concurrent struct {
	c       *core
	stripes []stripe
}

// NewConcurrent returns an empty concurrent filter for the options.
func NewConcurrent(opts Options) (*Concurrent, error) {
	c, err := buildCore(opts)
	if err != nil {
		return nil, err
	}
	return newConcurrent(c), nil
}

func newConcurrent(c *core) *Concurrent {
	return &Concurrent{c: c, stripes: make([]stripe, stripes)}
}

func (f *Concurrent) lock(kh *keyHash) *sync.Mutex {
	mu := &f.stripes[kh.ilo%stripes].mu
	mu.Lock()
	return mu
}

// Add inserts the key.
func (f *Concurrent) Add(seg []string) {
	f.TestAndAdd(seg)
}

// Test reports whether the key is (probably) present. A key whose Add or
// TestAndAdd returned before Test was called is always reported present.
func (f *Concurrent) Test(seg []string) bool {
	var kh keyHash
	f.c.hash(seg, &kh)
	return f.c.test(&kh)
}

// TestAndAdd inserts the key and reports whether it was (probably) present
// before the call. Of concurrent calls for the same new key, exactly one
// returns false.
func (f *Concurrent) TestAndAdd(seg []string) bool {
	var kh keyHash
	f.c.hash(seg, &kh)
	return f.testAndAdd(&kh)
}

// testAndAdd answers a key whose bits are all set without a lock: it can
// only report it present, which a concurrent insert of the same key that
// reports it new does not contradict. Otherwise it tests and sets under the
// key's stripe lock, so two inserts of one key that both found a bit missing
// are serialized and the second finds every bit set.
func (f *Concurrent) testAndAdd(kh *keyHash) bool {
	c := f.c
	if c.mode == Paper {
		if c.paperTestAndAddAtomic(kh, false) {
			return true
		}
		mu := f.lock(kh)
		present := c.paperTestAndAddAtomic(kh, true)
		mu.Unlock()
		return present
	}
	missing := c.missingLayers(kh)
	if missing == 0 {
		return true
	}
	mu := f.lock(kh)
	present := c.setLayers(kh, missing)
	mu.Unlock()
	return present
}

// batchChunk is how many keys TestAndAddBatch hashes and touches at once.
const batchChunk = 16

// TestAndAddBatch is TestAndAdd for every key in keys, writing the results
// into present[:len(keys)] (it panics if present is shorter, like copy
// would not). It hashes a chunk of keys first, then touches all their blocks
// with independent loads so that the cache misses overlap, then tests and
// sets each key in order under its stripe lock. A key repeated within the
// batch is reported present from its second occurrence on.
func (f *Concurrent) TestAndAddBatch(keys [][]string, present []bool) {
	f.c.testAndAddBatch(keys, present, f)
}

// testAndAddBatch is the batch form shared by Filter and Concurrent: for
// each chunk of batchChunk keys it hashes them all, touches all their
// blocks (independent loads whose cache misses overlap), then tests and
// sets each in order: with locked's stripe locks and atomic operations if
// locked is not nil (Concurrent), else with plain ones (Filter). It takes
// a pointer rather than the single-key function, because a function value
// would make the keys' hashes escape to the heap (one allocation a call).
func (c *core) testAndAddBatch(keys [][]string, present []bool, locked *Concurrent) {
	_ = present[:len(keys)]
	var khs [batchChunk]keyHash
	for start := 0; start < len(keys); start += batchChunk {
		chunk := keys[start:min(start+batchChunk, len(keys))]
		for i, seg := range chunk {
			c.hash(seg, &khs[i])
		}
		var sink uint64
		for i := range chunk {
			sink += c.touch(&khs[i])
		}
		keepAlive(sink)
		for i := range chunk {
			if locked != nil {
				present[start+i] = locked.testAndAdd(&khs[i])
			} else {
				present[start+i] = c.testAndAdd(&khs[i])
			}
		}
	}
}

var touchSink atomic.Uint64

// keepAlive keeps the touched loads from being optimized away; the branch is
// practically never taken.
func keepAlive(v uint64) {
	if v == 0x5bd1e9955bd1e995 {
		touchSink.Add(1)
	}
}

// TotalBits is the size of the filter in bits, all layers included.
func (f *Concurrent) TotalBits() uint64 { return f.c.totalBits() }

// Mode returns the filter's mode.
func (f *Concurrent) Mode() Mode { return f.c.mode }

// LayerBits returns the size in bits of each layer, the integrity layer
// last.
func (f *Concurrent) LayerBits() []uint64 { return f.c.layerBits() }

// Stats describes the filter's current fill. Under concurrent inserts it is
// approximate.
func (f *Concurrent) Stats() Stats { return f.c.stats(f.c.words, true) }

// lockAll takes every stripe lock: no TestAndAdd or Add is in progress
// until unlockAll.
func (f *Concurrent) lockAll() {
	for i := range f.stripes {
		f.stripes[i].mu.Lock()
	}
}

func (f *Concurrent) unlockAll() {
	for i := range f.stripes {
		f.stripes[i].mu.Unlock()
	}
}

// snapshot returns a consistent copy of the bits: every insert either
// completed before it or had not started.
func (f *Concurrent) snapshot() []uint64 {
	w := touched(len(f.c.words))
	f.copyWords(w)
	return w
}

// copyWords copies the bits into w, of their length, with every insert
// held.
func (f *Concurrent) copyWords(w []uint64) {
	f.lockAll()
	defer f.unlockAll()
	for i := range w {
		w[i] = atomic.LoadUint64(&f.c.words[i])
	}
}

// touched returns n zero words whose memory the process has touched: a
// fresh allocation is mapped page by page as it is first written, and on
// a virtual machine those faults cost far more than the copy (a 20 MB
// filter: 88-170 ms against 1.4-5.7 ms for the copy into touched memory,
// docs/BENCHMARKS.md). Copying under the stripe locks into
// touched memory holds inserts for the copy alone.
func touched(n int) []uint64 {
	w := make([]uint64, n)
	const wordsPerPage = 4096 / 8
	for i := 0; i < n; i += wordsPerPage {
		w[i] = 0
	}
	return w
}

// Merge ORs a consistent snapshot of other into f. It fails with an error
// wrapping ErrIncompatible unless both have identical parameters. Merging a
// filter into itself is a no-op.
func (f *Concurrent) Merge(other *Concurrent) error {
	if err := f.c.sameShape(other.c); err != nil {
		return err
	}
	if other == f {
		return nil
	}
	w := other.snapshot()
	f.lockAll()
	defer f.unlockAll()
	for i, v := range w {
		if v != 0 {
			atomic.OrUint64(&f.c.words[i], v)
		}
	}
	return nil
}

// touch loads the first word of every block (improved) or every probed word
// (paper) of the key, returning their sum.
func (c *core) touch(kh *keyHash) uint64 {
	var s uint64
	w := c.words
	if c.mode == Paper {
		for i := 0; i < kh.n; i++ {
			s += atomic.LoadUint64(&w[c.layers[i].off+paperPos(kh.lo[i], kh.hi[i], 0, c.layers[i].bits)>>6])
		}
		return s
	}
	for i := 0; i < kh.n; i++ {
		s += atomic.LoadUint64(&w[c.blockWord(i, kh.lo[i])])
	}
	return s + atomic.LoadUint64(&w[c.blockWord(c.L, kh.ilo)])
}

// missingLayers returns the set of the key's layers (bit i for layer i,
// bit kh.n for the integrity layer; improved mode) that miss at least one
// probed bit. It loads every layer's probes without a branch on their
// values: the loads are independent, so their cache misses overlap, and
// the test-and-set that may follow under the lock then hits the cache.
// Bits are never cleared while inserts run, so a layer found complete here
// stays complete.
func (c *core) missingLayers(kh *keyHash) uint32 {
	var set uint32
	var pb [MaxHashes]uint16
	for i := 0; i <= kh.n; i++ {
		blk, hi, full := c.keyBlock(kh, i)
		if full {
			continue
		}
		var miss uint64
		for _, b := range blockProbes(hi, c.k, &pb) {
			miss |= ^atomic.LoadUint64(&blk[b>>6]) & (1 << (b & 63))
		}
		set |= uint32((miss|-miss)>>63) << i // 1 if miss != 0
	}
	return set
}

// setLayers re-tests the layers in set (from missingLayers) and, if a bit
// is still missing, sets every probed bit of those layers with one atomic
// OR per probe, reporting whether the key was present. The caller holds
// the key's stripe lock, so a concurrent insert of the same key that also
// found bits missing waits here and then finds them all set.
//
// The ORs are unconditional: an OR of a bit that is already set changes
// nothing, and a branch per probe on the loaded value (or per word, to
// merge the probes falling in one word) is unpredictable; measured at 10M
// keys its mispredictions cost more than the few extra locked ORs.
func (c *core) setLayers(kh *keyHash, set uint32) bool {
	var miss uint64
	var pb [MaxHashes]uint16
	for s := set; s != 0; s &= s - 1 {
		i := bits.TrailingZeros32(s)
		blk, hi, _ := c.keyBlock(kh, i)
		for _, b := range blockProbes(hi, c.k, &pb) {
			miss |= ^atomic.LoadUint64(&blk[b>>6]) & (1 << (b & 63))
		}
	}
	if miss == 0 {
		return true
	}
	for s := set; s != 0; s &= s - 1 {
		i := bits.TrailingZeros32(s)
		blk, hi, _ := c.keyBlock(kh, i)
		for _, b := range blockProbes(hi, c.k, &pb) {
			atomic.OrUint64(&blk[b>>6], 1<<(b&63))
		}
	}
	return false
}

func (c *core) paperTestAndAddAtomic(kh *keyHash, add bool) bool {
	var laddr [MaxHashes]uint64
	w := c.words
	present := true
	probe := func(l *layer, pos uint64) bool {
		p := &w[l.off+pos>>6]
		bit := uint64(1) << (pos & 63)
		if atomic.LoadUint64(p)&bit == 0 {
			if !add {
				return false
			}
			present = false
			atomic.OrUint64(p, bit)
		}
		return true
	}
	for i := 0; i < kh.n; i++ {
		l := &c.layers[i]
		for j := 0; j < c.k; j++ {
			pos := paperPos(kh.lo[i], kh.hi[i], j, l.bits)
			laddr[j] ^= pos
			if !probe(l, pos) {
				return false
			}
		}
	}
	l := &c.layers[c.L]
	for j := 0; j < c.k; j++ {
		if !probe(l, laddr[j]%l.bits) {
			return false
		}
	}
	return present
}

// Salt returns the filter's Options.Salt.
func (f *Concurrent) Salt() uint64 { return f.c.salt }
