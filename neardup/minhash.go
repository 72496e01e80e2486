package neardup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
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
	// OnePermutation computes a signature with one hash per shingle
	// instead of Hashes (one permutation hashing: Li, Owen and Zhang,
	// NIPS 2012): the hash range is cut into Hashes bins, each keeping
	// the least value that falls in it, and an empty bin takes the value
	// of a non-empty bin chosen by a fixed pseudo-random sequence
	// (optimal densification: Shrivastava, ICML 2017). Resemblance is
	// still the share of equal values. Its snapshots are of their own
	// kind.
	OnePermutation bool
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
// costs time independent of the collection (plus its candidates: at most
// maxChain per band, the newest).
//
// Memory per document: 8 bytes of id, 4K of signature, and per band 4-5
// bytes of chain plus 4-8 of table (a table of 4-byte heads with one to
// two buckets per document): 200-240 bytes at K=32 and 8 bands, 328-408
// at the default 64 and 16.
type MinHash struct {
	opts  MinHashOptions
	ids   []uint64
	sigs  []uint32    // K per document
	bands []bandTable // one per band
}

// bandTable finds the documents of a band key: chained hashing whose
// chains live in one slice, 8-13 bytes per document instead of a Go map's
// 50 or more. Keys that share a bucket share its chain; the candidates
// are verified on their signatures.
type bandTable struct {
	head []uint32 // a power of two of buckets: 1 + the newest document there, 0 if none
	next []uint32 // per document: 1 + the previous document of its bucket, 0 if none
}

// maxChain bounds the documents a query compares per band: a band shared
// by very many pages (a site's template) would make a query linear.
const maxChain = 256

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
	m.bands = make([]bandTable, m.opts.Bands)
}

// signature returns the K values of a shingle set.
func (m *MinHash) signature(sh []uint64) []uint32 {
	if m.opts.OnePermutation {
		return onePermutation(sh, m.opts.Hashes)
	}
	return minHashes(sh, m.opts.Hashes)
}

// onePermutation returns the densified one-permutation signature of a
// non-empty shingle set: bin i of k keeps the least low half of the
// mixed hashes whose high half falls in it; an empty bin copies the
// value of the first non-empty bin in its own pseudo-random sequence of
// bins, the same for every document.
func onePermutation(sh []uint64, k int) []uint32 {
	sig := make([]uint32, k)
	var set [1024 / 64]uint64 // k <= 1024 (Validate)
	for _, s := range sh {
		h := mix64(s ^ 0x243f6a8885a308d3)
		bin, v := int((h>>32)*uint64(k)>>32), uint32(h)
		if set[bin/64]&(1<<(bin%64)) == 0 || v < sig[bin] {
			sig[bin] = v
			set[bin/64] |= 1 << (bin % 64)
		}
	}
	if len(sh) == 0 {
		return sig
	}
	for i := range sig {
		if set[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		for a := uint64(1); ; a++ {
			j := int((mix64(uint64(i)<<32|a) >> 32) * uint64(k) >> 32)
			if set[j/64]&(1<<(j%64)) != 0 {
				sig[i] = sig[j]
				break
			}
		}
	}
	return sig
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

// Signature returns the K values of a shingle set (nil for an empty
// one), for an index kept elsewhere on m's options: two pages resemble
// each other as the share of their equal values.
func (m *MinHash) Signature(shingles []uint64) []uint32 {
	if len(shingles) == 0 {
		return nil
	}
	return m.signature(shingles)
}

// BandKeys returns the LSH band keys of a signature, one per band: pages
// that share a key are the candidates of an index kept elsewhere.
func (m *MinHash) BandKeys(sig []uint32) []uint64 {
	keys := make([]uint64, m.opts.Bands)
	for b := range keys {
		keys[b] = m.bandKey(sig, b)
	}
	return keys
}

// Options returns m's options, defaults filled in.
func (m *MinHash) Options() MinHashOptions { return m.opts }

// Add indexes d under id.
func (m *MinHash) Add(id uint64, d *Doc) {
	if len(d.Shingles) == 0 {
		return
	}
	m.insert(id, m.signature(d.Shingles))
}

func (m *MinHash) insert(id uint64, sig []uint32) {
	n := uint32(len(m.ids))
	m.ids = append(m.ids, id)
	m.sigs = append(m.sigs, sig...)
	if len(m.ids) > len(m.bands[0].head) {
		m.rehash()
		return
	}
	for b := range m.bands {
		m.bands[b].add(m.bandKey(sig, b), n)
	}
}

func (t *bandTable) add(key uint64, n uint32) {
	i := key & uint64(len(t.head)-1)
	t.next = append(t.next, t.head[i])
	t.head[i] = n + 1
}

// rehash rebuilds the band tables with two buckets per document (the
// next rehash comes at one), from the signatures.
func (m *MinHash) rehash() {
	size := 64
	for size < 2*len(m.ids) {
		size *= 2
	}
	for b := range m.bands {
		t := &m.bands[b]
		t.head = make([]uint32, size)
		t.next = make([]uint32, 0, len(m.ids)+len(m.ids)/4)
		for n := range m.ids {
			t.add(m.bandKey(m.sigs[n*m.opts.Hashes:(n+1)*m.opts.Hashes], b), uint32(n))
		}
	}
}

// Query returns the documents with estimated resemblance at least min
// among those sharing a band with d.
func (m *MinHash) Query(d *Doc, min float64) []Match {
	if len(d.Shingles) == 0 {
		return nil
	}
	return m.query(m.signature(d.Shingles), min)
}

func (m *MinHash) query(sig []uint32, min float64) []Match {
	if len(m.ids) == 0 {
		return nil
	}
	var out []Match
	var seen map[uint32]bool
	var few []uint32 // the candidates compared, while few
	k, r := m.opts.Hashes, m.opts.Hashes/m.opts.Bands
	for b := range m.bands {
		t := &m.bands[b]
		band := sig[b*r : (b+1)*r]
		chain := 0
		for n := t.head[m.bandKey(sig, b)&uint64(len(t.head)-1)]; n != 0 && chain < maxChain; n = t.next[n-1] {
			chain++
			doc := n - 1
			// A bucket holds other keys too: only the documents whose
			// band equals the query's are candidates, so that answers
			// do not depend on the table's size.
			if !slices.Equal(m.sigs[int(doc)*k+b*r:int(doc)*k+(b+1)*r], band) {
				continue
			}
			if seen != nil {
				if seen[doc] {
					continue
				}
				seen[doc] = true
			} else if slices.Contains(few, doc) {
				continue
			} else if few = append(few, doc); len(few) == 64 {
				seen = make(map[uint32]bool, 256)
				for _, f := range few {
					seen[f] = true
				}
			}
			other := m.sigs[int(doc)*k : int(doc+1)*k]
			eq := 0
			for i, v := range sig {
				if other[i] == v {
					eq++
				}
			}
			if r := float64(eq) / float64(len(sig)); r >= min {
				out = append(out, Match{ID: m.ids[doc], Resemblance: r})
			}
		}
	}
	return sortMatches(out)
}

// prepare computes d's signature, the costly part of a check, outside
// Set's lock.
func (m *MinHash) prepare(d *Doc) any {
	if len(d.Shingles) == 0 {
		return []uint32(nil)
	}
	return m.signature(d.Shingles)
}

func (m *MinHash) testAndAddPrepared(id uint64, p any, min float64) []Match {
	sig := p.([]uint32)
	if len(sig) == 0 {
		return nil
	}
	out := m.query(sig, min)
	m.insert(id, sig)
	return out
}

func (m *MinHash) queryPrepared(p any, min float64) []Match {
	sig := p.([]uint32)
	if len(sig) == 0 {
		return nil
	}
	return m.query(sig, min)
}

// Len returns the number of documents added.
func (m *MinHash) Len() int { return len(m.ids) }

// SizeBytes counts the ids, signatures and band tables.
func (m *MinHash) SizeBytes() int {
	n := 8*len(m.ids) + 4*len(m.sigs)
	for _, t := range m.bands {
		n += 4 * (len(t.head) + len(t.next))
	}
	return n
}

func (m *MinHash) kind() byte {
	if m.opts.OnePermutation {
		return kindMinHashOPH
	}
	return kindMinHash
}

// MarshalBinary encodes the options, ids and signatures; the band tables
// are rebuilt on decoding.
func (m *MinHash) MarshalBinary() ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(16 + len(m.ids)*(8+4*m.opts.Hashes))
	if _, err := m.view().WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// minHashView is a MinHash's first documents: insert only appends to ids
// and sigs, so their first n entries never change and may be read while
// later ones are added (into the same arrays or new ones).
type minHashView struct {
	opts MinHashOptions
	kind byte
	ids  []uint64
	sigs []uint32
}

func (m *MinHash) view() minHashView {
	return minHashView{opts: m.opts, kind: m.kind(), ids: m.ids[:len(m.ids):len(m.ids)], sigs: m.sigs[:len(m.sigs):len(m.sigs)]}
}

// WriteTo writes the view in the format of MarshalBinary.
func (v minHashView) WriteTo(w io.Writer) (int64, error) {
	e := newStreamEncoder(w, v.kind)
	e.uvarint(uint64(v.opts.Hashes))
	e.uvarint(uint64(v.opts.Bands))
	e.uvarint(uint64(len(v.ids)))
	doc := make([]byte, 0, 8+4*v.opts.Hashes) // one write per document
	for i, id := range v.ids {
		doc = binary.LittleEndian.AppendUint64(doc[:0], id)
		for _, x := range v.sigs[i*v.opts.Hashes : (i+1)*v.opts.Hashes] {
			doc = binary.LittleEndian.AppendUint32(doc, x)
		}
		e.write(doc)
	}
	return e.finish()
}

// UnmarshalBinary replaces the index with an encoded one, of its own
// kind (with or without OnePermutation); on error the index is unchanged.
func (m *MinHash) UnmarshalBinary(data []byte) error {
	kind := m.kind() // a MinHash reads only snapshots of its own kind
	d, err := newDecoder(data, kind, "MinHash")
	if err != nil {
		return err
	}
	opts := MinHashOptions{Hashes: int(min(d.uvarint(), 1<<20)), Bands: int(min(d.uvarint(), 1<<20)), OnePermutation: kind == kindMinHashOPH}
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
	m.ids, m.sigs = ids, sigs
	m.rehash()
	return nil
}
