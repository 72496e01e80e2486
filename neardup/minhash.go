package neardup

import (
	"fmt"
	"math"
)

// MinHashOptions configure NewMinHash.
type MinHashOptions struct {
	// Hashes is the number K of min-hash values per document, 4 bytes
	// each; default 64.
	Hashes int
	// Bands is the number b of LSH bands, of K/b values each; it must
	// divide Hashes. Default 16 (4 values per band): a pair of
	// resemblance 0.8 shares a band with probability 1-(1-0.8^4)^16 ≈
	// 0.9998, one of 0.3 with 0.12.
	Bands int
}

// EnsureDefaults fills in the zero fields.
func (o *MinHashOptions) EnsureDefaults() {
	if o.Hashes == 0 {
		o.Hashes = 64
	}
	if o.Bands == 0 {
		o.Bands = 16
	}
}

// Validate reports options that cannot work.
func (o *MinHashOptions) Validate() error {
	switch {
	case o.Hashes < 1 || o.Hashes > 1024:
		return fmt.Errorf("%w: MinHash Hashes %d not in 1..1024", ErrInvalidOptions, o.Hashes)
	case o.Bands < 1 || o.Hashes%o.Bands != 0:
		return fmt.Errorf("%w: MinHash Bands %d must divide Hashes %d", ErrInvalidOptions, o.Bands, o.Hashes)
	}
	return nil
}

// MinHash is the MinHash baseline (Broder 1997) with LSH banding: K
// min-hash values per document, estimating resemblance as the share of
// equal values; candidates are the documents sharing all values of at
// least one of b bands, found through one hash table per band, so a query
// costs time independent of the collection (plus its candidates).
type MinHash struct {
	opts  MinHashOptions
	ids   []uint64
	sigs  []uint32              // K per document
	bands []map[uint64][]uint32 // band key -> document indexes
}

// NewMinHash returns an empty MinHash index.
func NewMinHash(opts MinHashOptions) (*MinHash, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &MinHash{opts: opts}
	m.reset()
	return m, nil
}

func (m *MinHash) reset() {
	m.ids, m.sigs = nil, nil
	m.bands = make([]map[uint64][]uint32, m.opts.Bands)
	for i := range m.bands {
		m.bands[i] = map[uint64][]uint32{}
	}
}

// minHashes returns the K min-hash values of a shingle set: for the i-th,
// the least of the high 32 bits of mix64(s ^ seed_i).
func minHashes(sh []uint64, k int) []uint32 {
	sig := make([]uint32, k)
	for i := range sig {
		sig[i] = math.MaxUint32
	}
	for _, s := range sh {
		for i := range sig {
			if v := uint32(mix64(s^seeds[i&(len(seeds)-1)]+uint64(i)) >> 32); v < sig[i] {
				sig[i] = v
			}
		}
	}
	return sig
}

// seeds decorrelate the hash functions.
var seeds = [...]uint64{
	0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9, 0xd6e8feb86659fd93,
	0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53, 0x2545f4914f6cdd1d, 0x6a09e667f3bcc909,
}

func (m *MinHash) bandKey(sig []uint32, b int) uint64 {
	r := m.opts.Hashes / m.opts.Bands
	h := uint64(b) * 0x9e3779b97f4a7c15
	for _, v := range sig[b*r : (b+1)*r] {
		h = mix64(h ^ uint64(v))
	}
	return h
}

// Add indexes d under id.
func (m *MinHash) Add(id uint64, d *Doc) {
	if len(d.Shingles) == 0 {
		return
	}
	m.insert(id, minHashes(d.Shingles, m.opts.Hashes))
}

func (m *MinHash) insert(id uint64, sig []uint32) {
	n := uint32(len(m.ids))
	m.ids = append(m.ids, id)
	m.sigs = append(m.sigs, sig...)
	for b := range m.bands {
		k := m.bandKey(sig, b)
		m.bands[b][k] = append(m.bands[b][k], n)
	}
}

// Query returns the documents with estimated resemblance at least min
// among those sharing a band with d.
func (m *MinHash) Query(d *Doc, min float64) []Match {
	if len(d.Shingles) == 0 {
		return nil
	}
	sig := minHashes(d.Shingles, m.opts.Hashes)
	var out []Match
	seen := map[uint32]bool{}
	for b := range m.bands {
		for _, n := range m.bands[b][m.bandKey(sig, b)] {
			if seen[n] {
				continue
			}
			seen[n] = true
			other := m.sigs[int(n)*m.opts.Hashes : int(n+1)*m.opts.Hashes]
			eq := 0
			for i, v := range sig {
				if other[i] == v {
					eq++
				}
			}
			if r := float64(eq) / float64(len(sig)); r >= min {
				out = append(out, Match{ID: m.ids[n], Resemblance: r})
			}
		}
	}
	return sortMatches(out)
}

// Len returns the number of documents added.
func (m *MinHash) Len() int { return len(m.ids) }

// SizeBytes counts the signatures, ids and the band tables' entries (a
// key and an index per band and document).
func (m *MinHash) SizeBytes() int { return len(m.ids)*(8+12*m.opts.Bands) + 4*len(m.sigs) }

// MarshalBinary encodes the options, ids and signatures; the band tables
// are rebuilt on decoding.
func (m *MinHash) MarshalBinary() ([]byte, error) {
	e := newEncoder(kindMinHash)
	e.uvarint(uint64(m.opts.Hashes))
	e.uvarint(uint64(m.opts.Bands))
	e.uvarint(uint64(len(m.ids)))
	for i, id := range m.ids {
		e.u64(id)
		for _, v := range m.sigs[i*m.opts.Hashes : (i+1)*m.opts.Hashes] {
			e.u32(v)
		}
	}
	return e.finish(), nil
}

// UnmarshalBinary replaces the index with an encoded one; on error the
// index is unchanged.
func (m *MinHash) UnmarshalBinary(data []byte) error {
	d, err := newDecoder(data, kindMinHash, "MinHash")
	if err != nil {
		return err
	}
	opts := MinHashOptions{Hashes: int(min(d.uvarint(), 1<<20)), Bands: int(min(d.uvarint(), 1<<20))}
	if d.err == nil {
		if err := opts.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrFormat, err)
		}
	}
	n := d.count(8 + 4*max(opts.Hashes, 1))
	ids := make([]uint64, n)
	sigs := make([]uint32, n*opts.Hashes)
	for i := range ids {
		ids[i] = d.u64()
		for j := range opts.Hashes {
			sigs[i*opts.Hashes+j] = d.u32()
		}
	}
	if err := d.end(); err != nil {
		return err
	}
	m.opts = opts
	m.reset()
	for i, id := range ids {
		m.insert(id, sigs[i*opts.Hashes:(i+1)*opts.Hashes])
	}
	return nil
}
