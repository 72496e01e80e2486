package mlbf

import (
	"math"
	"strings"
)

// FalsePositiveRate is formula (1) of the paper: the false-positive rate of
// a classic Bloom filter of m bits with k hash functions holding n keys,
// f = (1 - (1 - 1/m)^(kn))^k, computed without the e^(-kn/m) approximation.
func FalsePositiveRate(k int, m, n uint64) float64 {
	if m == 0 || k <= 0 {
		return 1
	}
	zero := math.Exp(float64(k) * float64(n) * math.Log1p(-1/float64(m)))
	return math.Pow(1-zero, float64(k))
}

// OptimalHashes is formula (2): the k minimising formula (1), ln2·m/n,
// rounded to the nearest integer and at least 1.
func OptimalHashes(m, n uint64) int {
	if n == 0 {
		return 1
	}
	k := int(math.Round(math.Ln2 * float64(m) / float64(n)))
	if k < 1 {
		k = 1
	}
	return k
}

// PaperFalsePositiveRate is formula (4) as the paper states it: f^L, with
// f from formula (1) for each layer of m bits holding n keys. The paper's
// independence assumption does not hold for real URLs (segments repeat
// across URLs, so the layers are neither equally full nor independent), and
// its integrity layer is ignored; this function exists to compare the claim
// with measurements.
func PaperFalsePositiveRate(layers, k int, m, n uint64) float64 {
	return math.Pow(FalsePositiveRate(k, m, n), float64(layers))
}

// EstimateParameters returns the classic Bloom filter size m and hash count
// k for n keys at false-positive rate p: m = ceil(-n·ln p / (ln 2)^2), k from
// formula (2). n = 0 is treated as 1; p is clamped into (0, 1).
func EstimateParameters(n uint64, p float64) (m uint64, k int) {
	if n == 0 {
		n = 1
	}
	if !(p > 0) {
		p = math.SmallestNonzeroFloat64
	}
	if p >= 1 {
		p = 0.5
	}
	m = uint64(math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2)))
	if m < 1 {
		m = 1
	}
	return m, OptimalHashes(m, n)
}

// BlockedFalsePositiveRate is the false-positive rate of a blocked Bloom
// filter of m bits (whole 512-bit blocks) with k probes per key inside one
// block, holding n keys: the block loads are Poisson with mean λ = 512n/m and
// a block holding c keys answers a new key with probability
// (1-(1-1/512)^(kc))^k. The uneven load is what makes a blocked filter need
// more bits than formula (1) for the same rate.
func BlockedFalsePositiveRate(k int, m, n uint64) float64 {
	blocks := m / blockBits
	if blocks == 0 || k <= 0 {
		return 1
	}
	lambda := float64(n) / float64(blocks)
	q := math.Log1p(-1.0 / blockBits)
	// Sum the Poisson terms around the mean out to where they vanish.
	hiC := int(lambda + 12*math.Sqrt(lambda) + 30)
	sum, mass := 0.0, 0.0
	logLambda := math.Log(lambda)
	for c := 0; c <= hiC; c++ {
		var logP float64
		if lambda == 0 {
			if c > 0 {
				break
			}
		} else {
			lg, _ := math.Lgamma(float64(c + 1))
			logP = float64(c)*logLambda - lambda - lg
		}
		pc := math.Exp(logP)
		mass += pc
		sum += pc * math.Pow(1-math.Exp(float64(k*c)*q), float64(k))
	}
	// The tail beyond hiC is negligible; count it as answering yes.
	if mass < 1 {
		sum += 1 - mass
	}
	return sum
}

// SplitURL splits a raw URL the paper's way: drop a leading "scheme://",
// then split on '/'. A trailing slash yields an empty last segment, so
// "a.com/" and "a.com" stay distinct. It does not normalize; crawlers should
// use urlnorm's Segments.
func SplitURL(raw string) []string {
	if i := strings.Index(raw, "://"); i > 0 && isScheme(raw[:i]) {
		raw = raw[i+3:]
	}
	return strings.Split(raw, "/")
}

func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// EstimateSegments counts the distinct segments at each depth of a sample of
// keys, folding segments beyond depth layers into the last layer exactly as
// the filters do. The counts are of the sample: a caller sizing a filter for
// N URLs from a sample of S scales them (by N/S for the deep layers, where
// most segments are new; less for the host layer, which saturates). The
// counts are of 64-bit segment hashes, so two distinct segments collide with
// negligible probability.
func EstimateSegments(sample [][]string, layers int) []uint64 {
	if layers < 1 {
		return nil
	}
	if layers > MaxLayers {
		layers = MaxLayers
	}
	seen := make([]map[uint64]struct{}, layers)
	for i := range seen {
		seen[i] = make(map[uint64]struct{})
	}
	var kh keyHash
	for _, seg := range sample {
		hashKey(seg, layers, false, &kh)
		for i := 0; i < kh.n; i++ {
			seen[i][kh.lo[i]^mix64(kh.hi[i])] = struct{}{}
		}
	}
	out := make([]uint64, layers)
	for i := range seen {
		out[i] = uint64(len(seen[i]))
	}
	return out
}
