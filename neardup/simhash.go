package neardup

import (
	"math"
	"math/bits"
)

// SimHash is the simhash baseline (Charikar 2002) as Manku, Jain and Das
// Sarma used it in Google's crawler (WWW 2007): a 64-bit fingerprint per
// document, each bit the sign of the sum of ±1 over the shingles' hash
// bits. The angle between two shingle vectors is about π·h/64 for a
// Hamming distance h, so the cosine is cos(π·h/64) and, for sets of equal
// size, the resemblance c/(2-c). Manku et al. call pages near-duplicates
// at h <= 3, an estimated resemblance of 0.979.
//
// Query scans every fingerprint (one XOR and popcount each); Manku et
// al.'s permuted tables make it sublinear at h <= 3 only, which the
// thresholds of a resemblance query do not fit.
type SimHash struct {
	ids []uint64
	fps []uint64
}

// NewSimHash returns an empty SimHash index.
func NewSimHash() *SimHash { return &SimHash{} }

// Fingerprint returns the 64-bit simhash of a shingle set.
func Fingerprint(sh []uint64) uint64 {
	var v [64]int32
	for _, s := range sh {
		s = mix64(s) // the shingle hashes' bits are already uniform; mixing guards against a weak caller hash
		for i := range v {
			v[i] += int32(s>>i&1)*2 - 1
		}
	}
	var fp uint64
	for i, c := range v {
		if c > 0 {
			fp |= 1 << i
		}
	}
	return fp
}

// SimHashResemblance converts a Hamming distance of two fingerprints into
// an estimated resemblance.
func SimHashResemblance(distance int) float64 {
	c := math.Cos(math.Pi * float64(distance) / 64)
	if c <= 0 {
		return 0
	}
	return c / (2 - c)
}

// Add indexes d under id.
func (s *SimHash) Add(id uint64, d *Doc) {
	if len(d.Shingles) == 0 {
		return
	}
	s.ids = append(s.ids, id)
	s.fps = append(s.fps, Fingerprint(d.Shingles))
}

// Query returns the documents with estimated resemblance at least min.
func (s *SimHash) Query(d *Doc, min float64) []Match {
	if len(d.Shingles) == 0 {
		return nil
	}
	q := Fingerprint(d.Shingles)
	maxDist := 64
	for maxDist >= 0 && SimHashResemblance(maxDist) < min {
		maxDist--
	}
	var out []Match
	for i, fp := range s.fps {
		if h := bits.OnesCount64(fp ^ q); h <= maxDist {
			out = append(out, Match{ID: s.ids[i], Resemblance: SimHashResemblance(h)})
		}
	}
	return sortMatches(out)
}

// Len returns the number of documents added.
func (s *SimHash) Len() int { return len(s.ids) }

// SizeBytes counts ids and fingerprints.
func (s *SimHash) SizeBytes() int { return 16 * len(s.ids) }

// MarshalBinary encodes the ids and fingerprints.
func (s *SimHash) MarshalBinary() ([]byte, error) {
	e := newEncoder(kindSimHash)
	e.uvarint(uint64(len(s.ids)))
	for i, id := range s.ids {
		e.u64(id)
		e.u64(s.fps[i])
	}
	return e.finish(), nil
}

// UnmarshalBinary replaces the index with an encoded one; on error the
// index is unchanged.
func (s *SimHash) UnmarshalBinary(data []byte) error {
	d, err := newDecoder(data, kindSimHash, "SimHash")
	if err != nil {
		return err
	}
	n := d.count(16)
	ids, fps := make([]uint64, n), make([]uint64, n)
	for i := range ids {
		ids[i], fps[i] = d.u64(), d.u64()
	}
	if err := d.end(); err != nil {
		return err
	}
	s.ids, s.fps = ids, fps
	return nil
}
