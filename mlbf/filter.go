package mlbf

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// layer is one Bloom filter inside the bit array.
type layer struct {
	off    uint64 // first word in core.words
	bits   uint64 // m of this layer
	blocks uint64 // improved mode: bits / 512
}

// core is the bit array and geometry shared by Filter and Concurrent.
type core struct {
	mode   Mode
	L      int
	k      int
	layers []layer // L+1, the last is the integrity layer
	words  []uint64
	salt   uint64 // Options.Salt (improved mode)
}

// newShape returns a core of the given geometry without its bit array (for
// a Layout), and the number of words the array needs.
func newShape(mode Mode, L, k int, sizes []uint64) (c *core, words uint64) {
	c = &core{mode: mode, L: L, k: k, layers: make([]layer, len(sizes))}
	for i, b := range sizes {
		c.layers[i] = layer{off: words, bits: b, blocks: b / blockBits}
		words += (b + 63) / 64 // improved sizes are whole blocks
	}
	return c, words
}

// alignedWords returns n zeroed words starting on a 64-byte boundary, so
// that every 512-bit block is one cache line.
func alignedWords(n uint64) []uint64 {
	w := make([]uint64, n+blockWords)
	adviseHugePages(w)
	skip := (blockBits/8 - uintptr(unsafe.Pointer(&w[0]))%(blockBits/8)) % (blockBits / 8) / 8
	return w[skip : uint64(skip)+n : uint64(skip)+n]
}

func (c *core) hash(seg []string, kh *keyHash) {
	hashKey(seg, c.L, c.mode == Improved, c.salt, kh)
}

// totalBits is the sum of the layer sizes.
func (c *core) totalBits() uint64 {
	var t uint64
	for _, l := range c.layers {
		t += l.bits
	}
	return t
}

// blockWord returns the first word of the block holding layer i's probes
// for hash lo (improved mode).
func (c *core) blockWord(i int, lo uint64) uint64 {
	l := &c.layers[i]
	return l.off + fastrange(lo, l.blocks)*blockWords
}

// keyLayer returns the layer (c.L for the integrity layer, used at i ==
// kh.n) and the hash (its high bits pick the block, its low bits the
// probes) of the key's i-th used layer, in improved mode.
func (c *core) keyLayer(kh *keyHash, i int) (li int, h uint64) {
	if i == kh.n {
		return c.L, kh.ilo
	}
	return i, kh.lo[i]
}

// keyBlock returns the 512-bit block of the key's i-th used layer (the
// integrity layer at i == kh.n) and the hash its probes come from. full is
// true when the layer is one block with every bit set, so that any probes
// in it are set: the segment layers of the default sizing are one block
// each, full after their first few hundred segments, and the callers skip
// their probes then (the answer is the same; only the work is saved).
func (c *core) keyBlock(kh *keyHash, i int) (blk []uint64, hi uint64, full bool) {
	li, h := c.keyLayer(kh, i)
	blk = c.words[c.blockWord(li, h):][:blockWords:blockWords]
	if c.layers[li].blocks == 1 {
		and := ^uint64(0)
		for j := range blk {
			and &= atomic.LoadUint64(&blk[j])
		}
		full = and == ^uint64(0)
	}
	return blk, h, full
}

// test is Algorithm 2 (paper mode) or the improved query: it returns false
// at the first missing bit. Its loads are atomic, so that Concurrent's Test
// may run beside inserts (on amd64 and arm64 an atomic load is a plain
// load).
func (c *core) test(kh *keyHash) bool {
	if c.mode == Paper {
		return c.paperTestAndAddAtomic(kh, false)
	}
	var pb [MaxHashes]uint16
	for i := 0; i <= kh.n; i++ {
		blk, hi, full := c.keyBlock(kh, i)
		if full {
			continue
		}
		for _, b := range blockProbes(hi, c.k, &pb) {
			if atomic.LoadUint64(&blk[b>>6])&(1<<(b&63)) == 0 {
				return false
			}
		}
	}
	return true
}

// testAndAdd sets all the key's bits and reports whether all were set.
// Improved mode is branch-free per probe: the block addresses of all
// layers are known from the hashes, so their cache misses overlap.
func (c *core) testAndAdd(kh *keyHash) bool {
	if c.mode == Paper {
		return c.paperTestAndAdd(kh, true)
	}
	var missing uint64
	var pb [MaxHashes]uint16
	for i := 0; i <= kh.n; i++ {
		blk, hi, full := c.keyBlock(kh, i)
		if full {
			continue
		}
		if c.k == 3 {
			// The default k, unrolled: blockBit(hi, j) for j < 3 is
			// the j-th 9-bit slice of hi.
			b0, b1, b2 := hi&(blockBits-1), hi>>9&(blockBits-1), hi>>18&(blockBits-1)
			o0 := blk[b0>>6]
			missing |= ^o0 & (1 << (b0 & 63))
			blk[b0>>6] = o0 | 1<<(b0&63)
			o1 := blk[b1>>6]
			missing |= ^o1 & (1 << (b1 & 63))
			blk[b1>>6] = o1 | 1<<(b1&63)
			o2 := blk[b2>>6]
			missing |= ^o2 & (1 << (b2 & 63))
			blk[b2>>6] = o2 | 1<<(b2&63)
			continue
		}
		for _, b := range blockProbes(hi, c.k, &pb) {
			bit := uint64(1) << (b & 63)
			old := blk[b>>6]
			missing |= ^old & bit
			blk[b>>6] = old | bit
		}
	}
	return missing == 0
}

// paperTestAndAdd runs Algorithm 1 (add) or Algorithm 2 (!add) of the paper:
// the same k positions Hash_j(a_i) mod m in every layer i, LAddr[j] ^=
// Hash_j(a_i), then the integrity bits LAddr[j] mod m.
func (c *core) paperTestAndAdd(kh *keyHash, add bool) bool {
	var laddr [MaxHashes]uint64
	w := c.words
	present := true
	for i := 0; i < kh.n; i++ {
		l := &c.layers[i]
		for j := 0; j < c.k; j++ {
			pos := paperPos(kh.lo[i], kh.hi[i], j, l.bits)
			laddr[j] ^= pos
			p := &w[l.off+pos>>6]
			bit := uint64(1) << (pos & 63)
			if *p&bit == 0 {
				if !add {
					return false
				}
				present = false
				*p |= bit
			}
		}
	}
	l := &c.layers[c.L]
	for j := 0; j < c.k; j++ {
		// The XOR of values below m can reach the next power of two
		// minus one; the paper is silent, we reduce it mod m.
		pos := laddr[j] % l.bits
		p := &w[l.off+pos>>6]
		bit := uint64(1) << (pos & 63)
		if *p&bit == 0 {
			if !add {
				return false
			}
			present = false
			*p |= bit
		}
	}
	return present
}

// sameShape reports whether c and o have identical parameters.
func (c *core) sameShape(o *core) error {
	if c.mode != o.mode || c.L != o.L || c.k != o.k || len(c.layers) != len(o.layers) {
		return fmt.Errorf("%w: mode/layers/hashes %v/%d/%d vs %v/%d/%d", ErrIncompatible,
			c.mode, c.L, c.k, o.mode, o.L, o.k)
	}
	if c.salt != o.salt {
		return fmt.Errorf("%w: salts %#x vs %#x", ErrIncompatible, c.salt, o.salt)
	}
	for i := range c.layers {
		if c.layers[i].bits != o.layers[i].bits {
			return fmt.Errorf("%w: layer %d has %d bits vs %d", ErrIncompatible, i+1, c.layers[i].bits, o.layers[i].bits)
		}
	}
	return nil
}

// Filter is a multi-layer Bloom filter. It is not safe for concurrent use;
// see Concurrent.
type Filter struct {
	c *core
}

// New returns an empty filter for the options (copied; defaults applied).
func New(opts Options) (*Filter, error) {
	c, err := buildCore(opts)
	if err != nil {
		return nil, err
	}
	return &Filter{c: c}, nil
}

func buildCore(opts Options) (*core, error) {
	c, words, err := shapeFor(opts)
	if err != nil {
		return nil, err
	}
	c.words = alignedWords(words)
	return c, nil
}

// shapeFor returns the geometry of a filter for the options (copied,
// defaults applied, validated) without its bit array, and the number of
// words the array needs.
func shapeFor(opts Options) (*core, uint64, error) {
	o := opts
	o.LayerBits = append([]uint64(nil), opts.LayerBits...)
	if opts.LayerBits == nil {
		o.LayerBits = nil
	}
	o.ExpectedSegments = append([]uint64(nil), opts.ExpectedSegments...)
	if opts.ExpectedSegments == nil {
		o.ExpectedSegments = nil
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, 0, err
	}
	sizes, err := o.layerSizes()
	if err != nil {
		return nil, 0, err
	}
	c, words := newShape(o.Mode, o.Layers, o.Hashes, sizes)
	c.salt = o.Salt
	return c, words, nil
}

// Add inserts the key given as its segments.
func (f *Filter) Add(seg []string) {
	var kh keyHash
	f.c.hash(seg, &kh)
	f.c.testAndAdd(&kh)
}

// Test reports whether the key is (probably) present: false is certain.
func (f *Filter) Test(seg []string) bool {
	var kh keyHash
	f.c.hash(seg, &kh)
	return f.c.test(&kh)
}

// TestAndAdd inserts the key and reports whether it was (probably) present
// before the call.
func (f *Filter) TestAndAdd(seg []string) bool {
	var kh keyHash
	f.c.hash(seg, &kh)
	return f.c.testAndAdd(&kh)
}

// TestAndAddBatch is TestAndAdd for every key in keys, writing the results
// into present[:len(keys)] (it panics if present is shorter). It hashes a
// chunk of keys and touches all their blocks before testing and setting, so
// that the cache misses of different keys overlap. A key repeated within
// the batch is reported present from its second occurrence on.
func (f *Filter) TestAndAddBatch(keys [][]string, present []bool) {
	f.c.testAndAddBatch(keys, present, nil)
}

// TotalBits is the size of the filter in bits, all layers included.
func (f *Filter) TotalBits() uint64 { return f.c.totalBits() }

// Mode returns the filter's mode.
func (f *Filter) Mode() Mode { return f.c.mode }

// LayerBits returns the size in bits of each layer, the integrity layer
// last.
func (f *Filter) LayerBits() []uint64 { return f.c.layerBits() }

func (c *core) layerBits() []uint64 {
	out := make([]uint64, len(c.layers))
	for i, l := range c.layers {
		out[i] = l.bits
	}
	return out
}

// Merge ORs other into f, so that f holds the keys of both. It fails with an
// error wrapping ErrIncompatible unless both have identical parameters.
func (f *Filter) Merge(other *Filter) error {
	if err := f.c.sameShape(other.c); err != nil {
		return err
	}
	for i, w := range other.c.words {
		f.c.words[i] |= w
	}
	return nil
}

// Stats describes the filter's current fill.
func (f *Filter) Stats() Stats { return f.c.stats(f.c.words, false) }

// Salt returns the filter's Options.Salt.
func (f *Filter) Salt() uint64 { return f.c.salt }
