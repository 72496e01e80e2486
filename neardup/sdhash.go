package neardup

import (
	"crypto/sha1"
	"encoding/binary"
	"math"
	"math/bits"
)

// Parameters of sdhash (Roussev, "Scalable data correlation", seed 003,
// section 2): 64-byte features, a popularity window of W = 64 features,
// threshold t = 16, features of normalized entropy below 100 ignored,
// 256-byte Bloom filters of at most 160 features, 5 sub-hashes of SHA-1.
const (
	sdFeature     = 64
	sdWindow      = 64
	sdThreshold   = 16
	sdMinEntropy  = 100
	sdFilterBytes = 256
	sdFilterBits  = sdFilterBytes * 8
	sdMaxElems    = 160
	sdHashes      = 5
	sdMinCompare  = 6 // filters with fewer features are too weak to score
)

// SDHash is an sdhash-style similarity digest per document (seed 003): the
// statistically improbable 64-byte features of its visible text, each
// hashed with SHA-1 into a sequence of 256-byte Bloom filters (a new
// filter after 160 features). Two digests are compared filter by filter:
// each filter of the shorter is matched with its best in the other, by
// the share of common bits above what chance predicts, and the scores
// averaged (SD(F, G)).
//
// Deviations from sdhash, which works on arbitrary bytes: the precedence
// rank of a feature comes from its entropy alone (sdhash ranks entropy
// classes by an empirical distribution it ships as a table; here the
// higher the entropy, the rarer), and features are taken from the page's
// visible text rather than its bytes. sdhash has no index: Query compares
// with every digest, time linear in the collection. Its score is a
// similarity, not a resemblance estimate; Query filters on it directly.
type SDHash struct {
	ids     []uint64
	digests [][]sdFilter
}

type sdFilter struct {
	bits  [sdFilterBytes / 8]uint64
	elems uint16
	ones  uint16
}

// NewSDHash returns an empty SDHash index.
func NewSDHash() *SDHash { return &SDHash{} }

// entropyTable[c] is -p log2 p for a byte occurring c times in 64.
var entropyTable = func() (t [sdFeature + 1]float64) {
	for c := 1; c <= sdFeature; c++ {
		p := float64(c) / sdFeature
		t[c] = -p * math.Log2(p)
	}
	return t
}()

// sdDigest returns the similarity digest of data: its filters, each 256
// bytes.
func sdDigest(data []byte) []sdFilter {
	if len(data) < sdFeature {
		return nil
	}
	nf := len(data) - sdFeature + 1
	// Entropy of every 64-byte window, updated incrementally, scaled to
	// 0..1000 (log2 64 = 6 bits is the most a 64-byte window can hold).
	rank := make([]int32, nf)
	var counts [256]int
	h := 0.0
	for _, b := range data[:sdFeature] {
		counts[b]++
	}
	for c := range counts {
		h += entropyTable[counts[c]]
	}
	for i := range nf {
		if i > 0 {
			out, in := data[i-1], data[i+sdFeature-1]
			if out != in {
				h -= entropyTable[counts[out]] + entropyTable[counts[in]]
				counts[out]--
				counts[in]++
				h += entropyTable[counts[out]] + entropyTable[counts[in]]
			}
		}
		e := int32(math.Round(h / 6 * 1000))
		if e < sdMinEntropy {
			rank[i] = -1 // never selected
		} else {
			rank[i] = 1000 - e // the lowest rank is the rarest
		}
	}
	// Popularity: in every window of W features, the leftmost feature of
	// lowest rank scores one.
	pop := make([]uint16, nf)
	for w := 0; w <= max(0, nf-sdWindow); w++ {
		best := -1
		for i := w; i < min(w+sdWindow, nf); i++ {
			if rank[i] >= 0 && (best < 0 || rank[i] < rank[best]) {
				best = i
			}
		}
		if best >= 0 {
			pop[best]++
		}
	}
	var digest []sdFilter
	for i, p := range pop {
		if p < sdThreshold {
			continue
		}
		if len(digest) == 0 || digest[len(digest)-1].elems == sdMaxElems {
			digest = append(digest, sdFilter{})
		}
		f := &digest[len(digest)-1]
		sum := sha1.Sum(data[i : i+sdFeature])
		for k := range sdHashes {
			b := binary.LittleEndian.Uint32(sum[4*k:]) % sdFilterBits
			f.bits[b/64] |= 1 << (b % 64)
		}
		f.elems++
	}
	for i := range digest {
		digest[i].ones = uint16(popcount(digest[i].bits[:]))
	}
	return digest
}

// sdScore is D(f, g): the common bits of two filters above the count
// chance predicts for their numbers of features, as a share of the most
// they could have in common, in [0, 1].
func sdScore(f, g *sdFilter) float64 {
	if f.elems < sdMinCompare || g.elems < sdMinCompare {
		return 0
	}
	common := 0
	for i := range f.bits {
		common += bits.OnesCount64(f.bits[i] & g.bits[i])
	}
	m := float64(sdFilterBits)
	p1 := 1 - math.Pow(1-1/m, float64(sdHashes)*float64(f.elems))
	p2 := 1 - math.Pow(1-1/m, float64(sdHashes)*float64(g.elems))
	chance := m * p1 * p2
	most := float64(min(f.ones, g.ones))
	if most-chance < 1 {
		return 0
	}
	return math.Max(0, math.Min(1, (float64(common)-chance)/(most-chance)))
}

// sdSimilarity is SD(F, G): for each filter of the shorter digest, its
// best score against the other's filters, averaged.
func sdSimilarity(a, b []sdFilter) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	sum := 0.0
	for i := range a {
		best := 0.0
		for j := range b {
			best = math.Max(best, sdScore(&a[i], &b[j]))
		}
		sum += best
	}
	return sum / float64(len(a))
}

// Add indexes d under id. A text too short for any feature adds nothing.
func (s *SDHash) Add(id uint64, d *Doc) {
	dg := sdDigest([]byte(d.Text))
	if len(dg) == 0 {
		return
	}
	s.ids = append(s.ids, id)
	s.digests = append(s.digests, dg)
}

// Query returns the documents whose similarity to d is at least min.
func (s *SDHash) Query(d *Doc, min float64) []Match {
	q := sdDigest([]byte(d.Text))
	if len(q) == 0 {
		return nil
	}
	var out []Match
	for i, dg := range s.digests {
		if r := sdSimilarity(q, dg); r >= min && r > 0 {
			out = append(out, Match{ID: s.ids[i], Resemblance: r})
		}
	}
	return sortMatches(out)
}

// Len returns the number of documents added.
func (s *SDHash) Len() int { return len(s.ids) }

// SizeBytes counts ids and filters (256 bytes and an element count each).
func (s *SDHash) SizeBytes() int {
	n := 8 * len(s.ids)
	for _, dg := range s.digests {
		n += len(dg) * (sdFilterBytes + 2)
	}
	return n
}

// MarshalBinary encodes ids and digests.
func (s *SDHash) MarshalBinary() ([]byte, error) {
	e := newEncoder(kindSDHash)
	e.uvarint(uint64(len(s.ids)))
	for i, id := range s.ids {
		e.u64(id)
		e.uvarint(uint64(len(s.digests[i])))
		for _, f := range s.digests[i] {
			e.uvarint(uint64(f.elems))
			for _, w := range f.bits {
				e.u64(w)
			}
		}
	}
	return e.finish(), nil
}

// UnmarshalBinary replaces the index with an encoded one; on error the
// index is unchanged.
func (s *SDHash) UnmarshalBinary(data []byte) error {
	d, err := newDecoder(data, kindSDHash, "SDHash")
	if err != nil {
		return err
	}
	n := d.count(8 + 1)
	ids := make([]uint64, n)
	digests := make([][]sdFilter, n)
	for i := range ids {
		ids[i] = d.u64()
		dg := make([]sdFilter, d.count(sdFilterBytes+1))
		if d.err == nil && len(dg) == 0 {
			d.fail("document %d has no filters", ids[i])
		}
		for j := range dg {
			e := d.uvarint()
			if e == 0 || e > sdMaxElems {
				d.fail("filter with %d features", e)
			}
			dg[j].elems = uint16(min(e, sdMaxElems))
			for w := range dg[j].bits {
				dg[j].bits[w] = d.u64()
			}
			dg[j].ones = uint16(popcount(dg[j].bits[:]))
		}
		digests[i] = dg
	}
	if err := d.end(); err != nil {
		return err
	}
	s.ids, s.digests = ids, digests
	return nil
}
