package neardup

import (
	"fmt"
	"math/bits"
	"slices"
)

// SlicedOptions configure NewSliced.
type SlicedOptions struct {
	// SketchSize is K, the number of least shingle hashes kept per
	// document (bottom-K sketch, 4 bytes each); default 48.
	SketchSize int
	// ColumnBits is the size B of each document's Bloom-filter column,
	// holding its sketch; default 512.
	ColumnBits int
	// Hashes is the number of bits set per sketch value in a column;
	// default 2.
	Hashes int
}

// EnsureDefaults fills in the zero fields.
func (o *SlicedOptions) EnsureDefaults() {
	if o.SketchSize == 0 {
		o.SketchSize = 48
	}
	if o.ColumnBits == 0 {
		o.ColumnBits = 512
	}
	if o.Hashes == 0 {
		o.Hashes = 2
	}
}

// Validate reports options that cannot work.
func (o *SlicedOptions) Validate() error {
	switch {
	case o.SketchSize < 1 || o.SketchSize > 255:
		return fmt.Errorf("%w: Sliced SketchSize %d not in 1..255", ErrInvalidOptions, o.SketchSize)
	case o.ColumnBits < 64 || o.ColumnBits > 1<<16:
		return fmt.Errorf("%w: Sliced ColumnBits %d not in 64..65536", ErrInvalidOptions, o.ColumnBits)
	case o.Hashes < 1 || o.Hashes > 8:
		return fmt.Errorf("%w: Sliced Hashes %d not in 1..8", ErrInvalidOptions, o.Hashes)
	}
	return nil
}

// Sliced is the improved pseudo-matrix Bloom filter. Like the PMBF
// (Butakov), it is a matrix of equal-size Bloom filters with an index of
// the documents behind them, but it is stored bit-sliced as in BitFunnel
// (Goodwin et al., SIGIR 2017): one document per column, and row j holds
// bit j of every column, 64 documents to a machine word. A probe of one
// query value ANDs Hashes rows a word at a time, answering for 64
// documents at once, and only the query's bits are read: SketchSize ×
// Hashes rows of N/64 words for N documents, against the PMBF's test of
// every shingle in every row.
//
// To keep columns short (and memory per page equal to the baselines'),
// a column holds the document's bottom-K sketch, not all its shingles: the
// K least values of the shingles' hashes. A document whose column answers
// for at least a quarter of min×K of the query's sketch values is a
// candidate, verified on the sketches: the estimated resemblance is the
// share of the K least values of the two sketches' union that are in
// both (Broder 1997), so false positives of the Bloom columns cost time,
// not precision.
type Sliced struct {
	opts     SlicedOptions
	ids      []uint64
	sketches []uint32   // K per document, ascending; unused tails are 0xFFFFFFFF
	lens     []uint8    // values used of each sketch
	rows     [][]uint64 // ColumnBits rows of ceil(N/64) words

	counts []uint8 // query scratch, one per document
}

// NewSliced returns an empty Sliced index.
func NewSliced(opts SlicedOptions) (*Sliced, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Sliced{opts: opts}
	s.rows = make([][]uint64, opts.ColumnBits)
	return s, nil
}

// sketch returns the bottom-k sketch of a shingle set: the k least of the
// high 32 bits of the mixed shingle hashes, ascending, without repeats.
// sh may be unsorted and hold repeats. It keeps the k least in a sorted
// array: after the first values few reach it, so the cost is a compare
// per shingle.
func sketch(sh []uint64, k int) []uint32 {
	out := make([]uint32, 0, k)
	for _, s := range sh {
		v := uint32(mix64(s^0x5851f42d4c957f2d) >> 32)
		if len(out) == k && v >= out[k-1] {
			continue
		}
		i, found := slices.BinarySearch(out, v)
		if found {
			continue
		}
		if len(out) == k {
			out = out[:k-1]
		}
		out = slices.Insert(out, i, v)
	}
	return out
}

// sketchResemblance estimates the resemblance of two sets from their
// bottom-k sketches: among the k least values of the union, the share in
// both.
func sketchResemblance(a, b []uint32, k int) float64 {
	both, seen := 0, 0
	i, j := 0, 0
	for seen < k && (i < len(a) || j < len(b)) {
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			i++
		case i >= len(a) || b[j] < a[i]:
			j++
		default:
			both++
			i++
			j++
		}
		seen++
	}
	if seen == 0 {
		return 1
	}
	return float64(both) / float64(seen)
}

// probes returns the column bits of a sketch value.
func (s *Sliced) probe(v uint32, i int) int {
	h := mix64(uint64(v) | uint64(i+1)<<32)
	return int(h % uint64(s.opts.ColumnBits))
}

// Add indexes d under id. Sliced reads only the least hashes of
// d.Shingles, which may then be unsorted and hold repeats (ShingleHashes).
func (s *Sliced) Add(id uint64, d *Doc) {
	if len(d.Shingles) == 0 {
		return
	}
	s.insert(id, sketch(d.Shingles, s.opts.SketchSize))
}

func (s *Sliced) insert(id uint64, sk []uint32) {
	n := len(s.ids)
	s.ids = append(s.ids, id)
	s.lens = append(s.lens, uint8(len(sk)))
	s.sketches = append(s.sketches, sk...)
	for range s.opts.SketchSize - len(sk) {
		s.sketches = append(s.sketches, ^uint32(0))
	}
	if n%64 == 0 {
		for r := range s.rows {
			s.rows[r] = append(s.rows[r], 0)
		}
	}
	word, bit := n/64, uint64(1)<<(n%64)
	for _, v := range sk {
		for i := range s.opts.Hashes {
			s.rows[s.probe(v, i)][word] |= bit
		}
	}
}

// Query returns the documents with estimated resemblance at least min;
// d.Shingles may be as for Add.
func (s *Sliced) Query(d *Doc, min float64) []Match {
	if len(d.Shingles) == 0 || len(s.ids) == 0 {
		return nil
	}
	q := sketch(d.Shingles, s.opts.SketchSize)
	if cap(s.counts) < len(s.ids) {
		s.counts = make([]uint8, len(s.ids), 2*len(s.ids))
	}
	counts := s.counts[:len(s.ids)]
	clear(counts)
	words := len(s.rows[0])
	var probe [8][]uint64
	for _, v := range q {
		for i := range s.opts.Hashes {
			probe[i] = s.rows[s.probe(v, i)]
		}
		for w := range words {
			x := probe[0][w]
			for i := 1; i < s.opts.Hashes; i++ {
				x &= probe[i][w]
			}
			for x != 0 {
				counts[w*64+bits.TrailingZeros64(x)]++
				x &= x - 1
			}
		}
	}
	// A document of resemblance r shares about 2r/(1+r) >= r of the
	// query's sketch values; a quarter of min×K keeps recall while
	// cutting most of the Bloom columns' chance hits.
	need := uint8(max(1, int(min*float64(len(q))/4)))
	var out []Match
	k := s.opts.SketchSize
	for n, c := range counts {
		if c < need {
			continue
		}
		other := s.sketches[n*k : n*k+int(s.lens[n])]
		if r := sketchResemblance(q, other, k); r >= min {
			out = append(out, Match{ID: s.ids[n], Resemblance: r})
		}
	}
	return sortMatches(out)
}

// Len returns the number of documents added.
func (s *Sliced) Len() int { return len(s.ids) }

// SizeBytes counts ids, sketches, their lengths and the bit-sliced
// columns.
func (s *Sliced) SizeBytes() int {
	n := len(s.ids)
	return n*(8+1) + 4*len(s.sketches) + len(s.rows)*8*((n+63)/64)
}

// MarshalBinary encodes the options, ids and sketches; the columns are
// rebuilt on decoding.
func (s *Sliced) MarshalBinary() ([]byte, error) {
	e := newEncoder(kindSliced)
	e.uvarint(uint64(s.opts.SketchSize))
	e.uvarint(uint64(s.opts.ColumnBits))
	e.uvarint(uint64(s.opts.Hashes))
	e.uvarint(uint64(len(s.ids)))
	k := s.opts.SketchSize
	for n, id := range s.ids {
		e.u64(id)
		e.uvarint(uint64(s.lens[n]))
		for _, v := range s.sketches[n*k : n*k+int(s.lens[n])] {
			e.u32(v)
		}
	}
	return e.finish(), nil
}

// UnmarshalBinary replaces the index with an encoded one; on error the
// index is unchanged.
func (s *Sliced) UnmarshalBinary(data []byte) error {
	d, err := newDecoder(data, kindSliced, "Sliced")
	if err != nil {
		return err
	}
	opts := SlicedOptions{SketchSize: int(min(d.uvarint(), 1<<20)), ColumnBits: int(min(d.uvarint(), 1<<20)), Hashes: int(min(d.uvarint(), 1<<20))}
	if d.err == nil {
		if err := opts.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrFormat, err)
		}
	}
	n := d.count(9)
	ids := make([]uint64, n)
	sks := make([][]uint32, n)
	for i := range ids {
		ids[i] = d.u64()
		l := d.uvarint()
		if l > uint64(opts.SketchSize) {
			d.fail("sketch of %d values, SketchSize %d", l, opts.SketchSize)
			break
		}
		sk := make([]uint32, l)
		for j := range sk {
			sk[j] = d.u32()
			if j > 0 && sk[j] <= sk[j-1] {
				d.fail("sketch not ascending")
			}
		}
		sks[i] = sk
	}
	if err := d.end(); err != nil {
		return err
	}
	*s = Sliced{opts: opts, rows: make([][]uint64, opts.ColumnBits)}
	for i, id := range ids {
		s.insert(id, sks[i])
	}
	return nil
}
