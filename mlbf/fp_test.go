package mlbf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// The false-positive tests insert n random keys and query q fresh random
// keys. The number of false positives is binomial(q, f); the tests accept a
// count within 5 standard deviations (plus 3, for tiny f) of q·f, where f is
// formula (1) (classic filter and paper-mode layers, whose probes are spread
// over the whole layer) or BlockedFalsePositiveRate (improved-mode layers).
// At 5 sigma a correct filter fails about once in 1.7 million runs; the seed
// is printed for reproduction.
func withinBounds(t *testing.T, what string, hits, q int, f float64) {
	t.Helper()
	mean := float64(q) * f
	sigma := math.Sqrt(mean * (1 - f))
	if math.Abs(float64(hits)-mean) > 5*sigma+3 {
		t.Errorf("%s: %d false positives in %d queries, want %.1f ± %.1f (5 sigma, f=%.5f)", what, hits, q, mean, 5*sigma+3, f)
	} else {
		t.Logf("%s: %d false positives in %d queries, formula %.1f (5 sigma ±%.1f)", what, hits, q, mean, 5*sigma+3)
	}
}

func randomString(r *rand.Rand) string {
	var b [32]byte
	return string(strconv.AppendUint(strconv.AppendUint(b[:0], r.Uint64(), 36), r.Uint64(), 36))
}

// scaled shrinks a test size under the race detector.
func scaled(n int) int {
	if raceEnabled {
		return n / 5
	}
	return n
}

func TestClassicFalsePositiveRate(t *testing.T) {
	r, _ := seedRand(t)
	n, q := 20000, scaled(100000)
	tests := []struct {
		m uint64
		k int
	}{{200000, 3}, {191701, 7}, {100003, 1}, {60000, 4}}
	for _, tt := range tests {
		c, err := NewClassic(tt.m, tt.k)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			c.AddString(randomString(r))
		}
		hits := 0
		for i := 0; i < q; i++ {
			if c.TestString(randomString(r)) {
				hits++
			}
		}
		withinBounds(t, fmt.Sprintf("classic m=%d k=%d n=%d", tt.m, tt.k, n), hits, q, FalsePositiveRate(tt.k, tt.m, uint64(n)))
	}
}

// layerHit reports whether the probes of hash (lo, hi) are all set in layer
// i, the way the filter probes that layer for a segment.
func (c *core) layerHit(i int, lo, hi uint64) bool {
	l := c.layers[i]
	for j := 0; j < c.k; j++ {
		var pos uint64
		if c.mode == Paper {
			pos = paperPos(lo, hi, j, l.bits)
		} else {
			pos = (c.blockWord(i, lo)-l.off)*64 + blockBit(hi, j)
		}
		if !c.bitSet(i, pos) {
			return false
		}
	}
	return true
}

// TestLayerFalsePositiveRate checks every layer, the integrity layer
// included, against its formula on keys of L random segments.
func TestLayerFalsePositiveRate(t *testing.T) {
	r, _ := seedRand(t)
	const L = 3
	n, q := 15000, scaled(60000)
	tests := []struct {
		name string
		o    Options
	}{
		// m a power of two, so that the XOR of positions stays uniform.
		{"paper", Options{Mode: Paper, Layers: L, Hashes: 3, BitsPerLayer: 1 << 17}},
		{"improved", Options{Layers: L, Hashes: 4, LayerBits: []uint64{100 * 512, 200 * 512, 300 * 512, 250 * 512}}},
	}
	for _, tt := range tests {
		f, err := New(tt.o)
		if err != nil {
			t.Fatal(err)
		}
		seg := make([]string, L)
		for i := 0; i < n; i++ {
			for j := range seg {
				seg[j] = randomString(r)
			}
			f.Add(seg)
		}
		c := f.c
		hits := make([]int, L+1)
		var kh keyHash
		for i := 0; i < q; i++ {
			for j := range seg {
				seg[j] = randomString(r)
			}
			c.hash(seg, &kh)
			for li := 0; li < L; li++ {
				if c.layerHit(li, kh.lo[li], kh.hi[li]) {
					hits[li]++
				}
			}
			var ilo, ihi uint64
			if c.mode == Paper {
				// The integrity probes are LAddr[j] mod m; check them directly.
				all := true
				for j := 0; j < c.k; j++ {
					var a uint64
					for li := 0; li < L; li++ {
						a ^= paperPos(kh.lo[li], kh.hi[li], j, c.layers[li].bits)
					}
					if !c.bitSet(L, a%c.layers[L].bits) {
						all = false
					}
				}
				if all {
					hits[L]++
				}
				continue
			}
			ilo, ihi = kh.ilo, kh.ihi
			if c.layerHit(L, ilo, ihi) {
				hits[L]++
			}
		}
		for li, h := range hits {
			m := c.layers[li].bits
			want := FalsePositiveRate(c.k, m, uint64(n))
			if tt.o.Mode == Improved {
				want = BlockedFalsePositiveRate(c.k, m, uint64(n))
			}
			withinBounds(t, fmt.Sprintf("%s layer %d (m=%d, k=%d, n=%d)", tt.name, li+1, m, c.k, n), h, q, want)
		}
	}
}

// TestOver32BitIndexes builds an improved filter whose integrity layer has
// more than 2^32 bits (about 520 MiB), inserts only keys whose integrity
// block lies beyond bit 2^32, and checks that they are found and that the
// bits a 32-bit index would have used instead stay clear. Skipped with
// -short.
func TestOver32BitIndexes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 520 MiB; skipped with -short")
	}
	const big = 1<<32 + 1<<26
	f, err := New(Options{Layers: 1, Hashes: 3, LayerBits: []uint64{512, big}})
	if err != nil {
		t.Fatal(err)
	}
	c := f.c
	var kh keyHash
	var high [][]string
	for i := 0; len(high) < 20; i++ {
		seg := []string{fmt.Sprintf("key%d", i)}
		c.hash(seg, &kh)
		if (c.blockWord(1, kh.ilo)-c.layers[1].off)*64 >= 1<<32 {
			high = append(high, seg)
		}
	}
	for _, seg := range high {
		if f.TestAndAdd(seg) {
			t.Fatalf("%q present before insert", seg)
		}
	}
	for _, seg := range high {
		if !f.Test(seg) {
			t.Fatalf("%q not found beyond 2^32 bits", seg)
		}
		c.hash(seg, &kh)
		base := (c.blockWord(1, kh.ilo) - c.layers[1].off) * 64
		for j := 0; j < c.k; j++ {
			pos := base + blockBit(kh.ihi, j)
			if !c.bitSet(1, pos) {
				t.Fatalf("%q: bit %d not set", seg, pos)
			}
			if c.bitSet(1, pos&(1<<32-1)) {
				t.Fatalf("%q: bit %d, its position truncated to 32 bits, is set", seg, pos&(1<<32-1))
			}
		}
	}
	if got := f.TotalBits(); got != 512+big {
		t.Errorf("TotalBits = %d, want %d", got, 512+big)
	}
}
