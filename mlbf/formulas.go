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
	n, p = clampSizing(n, p)
	m = uint64(math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2)))
	if m < 1 {
		m = 1
	}
	return m, OptimalHashes(m, n)
}

// BlockedFalsePositiveRate is the false-positive rate of a blocked Bloom
// filter of m bits (whole 512-bit blocks) with k probes per key inside one
// block, holding n keys. The block loads are Poisson with mean λ = 512n/m;
// a block holding c keys has taken kc uniform probes, and answers a new key
// when its k probes (drawn with replacement) all fall on set bits:
//
//	P(c) = Σ_j P(the k probes cover j distinct bits) · P(j given bits all set)
//	     = Σ_j S(k,j)·512!/(512-j)!/512^k · Σ_i (-1)^i C(j,i) (1-i/512)^(kc)
//
// with S the Stirling numbers of the second kind. It is exact for uniform
// probes; the simpler (1-(1-1/512)^(kc))^k, the expected fill to the power
// k, understates it by a few percent (Jensen: the bits set in a block vary),
// 2.3% at k=9 and 0.1%. Above k = 16 (rates below about 1e-6) the
// alternating sum loses precision and the simpler form is used. The uneven
// block loads are what make a blocked
// filter need more bits than formula (1) for the same rate.
func BlockedFalsePositiveRate(k int, m, n uint64) float64 {
	var hit *blockHit
	if k > 0 && k <= maxExactHashes {
		hit = newBlockHit(k)
	}
	return blockedRate(hit, k, m, float64(n))
}

// blockedRate is BlockedFalsePositiveRate for a real n, with hit made for k
// (nil above maxExactHashes), so that an integral over n makes it once.
func blockedRate(hit *blockHit, k int, m uint64, n float64) float64 {
	blocks := m / blockBits
	if blocks == 0 || k <= 0 {
		return 1
	}
	q1 := math.Log1p(-1.0 / blockBits)
	lambda := n / float64(blocks)
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
		if hit != nil {
			sum += pc * hit.prob(c)
		} else {
			sum += pc * math.Pow(1-math.Exp(float64(k*c)*q1), float64(k))
		}
	}
	// The tail beyond hiC is negligible; count it as answering yes.
	if mass < 1 {
		sum += 1 - mass
	}
	return sum
}

// BlockedExpectedFalsePositives is the expected number of false positives
// met by n distinct keys inserted one after another into an empty blocked
// Bloom filter of m bits with k probes per key: the sum over the keys of
// the rate each met when it was tested, Σ_{i<n} BlockedFalsePositiveRate(k,
// m, i), taken as the integral from 0 to n. It is not n times the final
// rate: the early keys met an emptier filter. At low fill the rate grows
// as n^k, so the sum is about n·f(n)/(k+1); a filter of 200,000 keys at
// 0.1% (k=8) that took 258,000 expects 158 false positives, not the 1,004
// of 258,000 × its final rate 0.39%.
func BlockedExpectedFalsePositives(k int, m, n uint64) float64 {
	var hit *blockHit
	if k > 0 && k <= maxExactHashes {
		hit = newBlockHit(k)
	}
	return integrateRate(func(x float64) float64 { return blockedRate(hit, k, m, x) }, float64(n))
}

// ExpectedFalsePositives is BlockedExpectedFalsePositives for a classic
// Bloom filter: the integral of formula (1) from 0 to n keys.
func ExpectedFalsePositives(k int, m, n uint64) float64 {
	if m == 0 || k <= 0 {
		return float64(n)
	}
	l := math.Log1p(-1 / float64(m))
	return integrateRate(func(x float64) float64 {
		return math.Pow(-math.Expm1(float64(k)*x*l), float64(k))
	}, float64(n))
}

// rateIntervals is the number of Simpson intervals of integrateRate: the
// rates are smooth and increasing (about x^k near 0, saturating at 1), and
// 64 intervals keep the integral within 1e-4 of a 10,000-step sum for k
// from 1 to 16 and fills up to 100% (TestExpectedFalsePositivesIntegral).
const rateIntervals = 64

// integrateRate is ∫_0^n f by composite Simpson's rule.
func integrateRate(f func(float64) float64, n float64) float64 {
	if n <= 0 {
		return 0
	}
	h := n / rateIntervals
	sum := f(0) + f(n)
	for i := 1; i < rateIntervals; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(float64(i)*h)
	}
	return sum * h / 3
}

// maxExactHashes is the largest k for which BlockedFalsePositiveRate sums
// the exact per-block probability (binomials up to C(16, 8) = 12,870 keep
// the alternating sum's rounding error below 1e-11).
const maxExactHashes = 16

// blockHit computes P(c) of BlockedFalsePositiveRate for one k.
type blockHit struct {
	k        int
	distinct []float64   // distinct[j]: P(k probes cover exactly j bits)
	binom    [][]float64 // binom[j][i] = (-1)^i C(j, i)
	q        []float64   // scratch: q[i] = (1-i/512)^(kc)
}

func newBlockHit(k int) *blockHit {
	h := &blockHit{k: k, distinct: make([]float64, k+1), binom: make([][]float64, k+1), q: make([]float64, k+1)}
	// S(k, j)·512·511···(512-j+1)/512^k, built row by row over the probes:
	// after t probes, d[j] = P(j distinct); a new probe hits one of the j
	// with probability j/512.
	d := make([]float64, k+1)
	d[0] = 1
	for t := 0; t < k; t++ {
		for j := t + 1; j >= 1; j-- {
			d[j] = d[j]*float64(j)/blockBits + d[j-1]*float64(blockBits-j+1)/blockBits
		}
		d[0] = 0
	}
	copy(h.distinct, d)
	for j := 0; j <= k; j++ {
		h.binom[j] = make([]float64, j+1)
		c := 1.0
		for i := 0; i <= j; i++ {
			if i > 0 {
				c = c * float64(j-i+1) / float64(i)
			}
			h.binom[j][i] = c
			if i%2 == 1 {
				h.binom[j][i] = -c
			}
		}
	}
	return h
}

// prob is the probability that a new key's k probes all fall on set bits
// of a block that has taken the probes of c keys.
func (h *blockHit) prob(c int) float64 {
	if c == 0 {
		return 0
	}
	for i := range h.q {
		h.q[i] = math.Exp(float64(h.k*c) * math.Log1p(-float64(i)/blockBits))
	}
	var p float64
	for j := 1; j <= h.k; j++ {
		var all float64
		for i, b := range h.binom[j] {
			all += b * h.q[i]
		}
		p += h.distinct[j] * all
	}
	return max(p, 0)
}

// clampSizing treats n = 0 as 1 and clamps p into (0, 1), as
// EstimateParameters and BlockedParameters document.
func clampSizing(n uint64, p float64) (uint64, float64) {
	if n == 0 {
		n = 1
	}
	if !(p > 0) {
		p = math.SmallestNonzeroFloat64
	}
	if p >= 1 {
		p = 0.5
	}
	return n, p
}

// BlockedParameters returns the size m (whole 512-bit blocks) and probe
// count k of a blocked Bloom filter that holds n keys at false-positive
// rate at most p by BlockedFalsePositiveRate: for each k near formula
// (2)'s it finds the fewest blocks, and keeps the smallest k whose size is
// within 1% of the fewest bits (each probe costs time; k=8 instead of 9 at
// 0.1% costs 0.7% more bits). It is how improved mode sizes its integrity
// layer and derives k from the target when Options.Hashes is 0. A blocked
// filter needs more bits than formula (1)'s classic one
// (EstimateParameters), and more so at low rates: 1.01x at 5%, 1.04x at
// 1%, 1.09x at 0.1%, 1.16x at 0.01%. n = 0 is treated as 1; p is clamped
// into (0, 1).
func BlockedParameters(n uint64, p float64) (m uint64, k int) {
	n, p = clampSizing(n, p)
	_, kc := EstimateParameters(n, p)
	lo, hi := max(1, kc-4), min(MaxHashes, kc+2)
	sizes := make([]uint64, hi+1)
	best := uint64(0)
	for j := lo; j <= hi; j++ {
		sizes[j] = blockedBitsFor(j, n, p)
		if best == 0 || sizes[j] < best {
			best = sizes[j]
		}
	}
	for j := lo; j <= hi; j++ {
		if float64(sizes[j]) <= 1.01*float64(best) {
			return sizes[j], j
		}
	}
	return best, hi // not reached
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
		hashKey(seg, layers, false, 0, &kh)
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
