package mlbf

import (
	"fmt"
	"math"
	"testing"

	"github.com/bits-and-blooms/bloom/v3"
)

// With only ExpectedURLs and FalsePositiveRate set, a filter
// costs at most 1.3x the bits of bits-and-blooms' NewWithEstimates(N, p),
// its measured false-positive rate at N keys is at or below p and not far
// below it, and the sizing formula (BlockedFalsePositiveRate of the
// integrity layer, which alone answers: the default segment layers are one
// full block each) predicts the measured rate within 20%, from 0.01% to 5%.

var sizingTargets = []float64{0.05, 0.01, 0.001, 0.0001}

// defaultGeometry returns the layer sizes and k of the default sizing for
// n keys at rate p, and the rate the formula predicts at n keys.
func defaultGeometry(t *testing.T, n uint64, p float64) (sizes []uint64, k int, predicted float64) {
	t.Helper()
	lay, err := NewLayout(Options{ExpectedURLs: n, FalsePositiveRate: p})
	if err != nil {
		t.Fatal(err)
	}
	sizes, k = lay.LayerBits(), lay.Hashes()
	return sizes, k, BlockedFalsePositiveRate(k, sizes[len(sizes)-1], n)
}

// againstBitsAndBlooms returns the total of the sizes, the bits of
// bits-and-blooms' NewWithEstimates(n, p) and their ratio.
func againstBitsAndBlooms(sizes []uint64, n uint64, p float64) (total, bbBits uint64, ratio float64) {
	for _, b := range sizes {
		total += b
	}
	m, _ := bloom.EstimateParameters(uint(n), p)
	return total, uint64(m), float64(total) / float64(m)
}

// checkRate checks a measured rate (hits of q queries) against the
// prediction (within 20%) and the target (at or below it, allowing 4
// standard deviations of the count; at least 0.75 of it).
func checkRate(t *testing.T, what string, hits, q int, predicted, target float64) {
	t.Helper()
	got := float64(hits) / float64(q)
	sigma := math.Sqrt(float64(q)*predicted) / float64(q)
	t.Logf("%s: %d false positives in %d queries: %.4g; predicted %.4g (measured/predicted %.3f), target %g",
		what, hits, q, got, predicted, got/predicted, target)
	if math.Abs(got/predicted-1) > 0.2 {
		t.Errorf("%s: measured rate %.4g not within 20%% of the predicted %.4g", what, got, predicted)
	}
	if got > target+4*sigma {
		t.Errorf("%s: measured rate %.4g above the target %g (4 sigma %.2g)", what, got, target, 4*sigma)
	}
	if got < 0.75*target {
		t.Errorf("%s: measured rate %.4g far below the target %g: memory wasted", what, got, target)
	}
}

// TestDefaultSizingMemory checks the bits of the default sizing against
// bits-and-blooms' at 1M, 20M and 100M keys (sizes only: nothing is
// allocated), and that the formula's rate at N is the target, not far
// below it.
func TestDefaultSizingMemory(t *testing.T) {
	for _, n := range []uint64{1 << 20, 20_000_000, 100_000_000} {
		for _, p := range sizingTargets {
			sizes, k, predicted := defaultGeometry(t, n, p)
			total, bbBits, ratio := againstBitsAndBlooms(sizes, n, p)
			_, bbK := bloom.EstimateParameters(uint(n), p)
			t.Logf("n=%d p=%g: k=%d, %.2f bits/key, %.3fx bits-and-blooms (%.2f bits/key, k=%d); predicted rate %.4g",
				n, p, k, float64(total)/float64(n), ratio, float64(bbBits)/float64(n), bbK, predicted)
			if ratio > 1.3 {
				t.Errorf("n=%d p=%g: %d bits, %.3fx bits-and-blooms' %d (limit 1.3x)", n, p, total, ratio, bbBits)
			}
			if predicted > p || predicted < 0.95*p {
				t.Errorf("n=%d p=%g: the sizing gives a predicted rate %.4g, want in [0.95p, p]", n, p, predicted)
			}
		}
	}
}

// wantFalsePositives is how many false positives a rate measurement
// collects at least: a relative standard deviation of 5%, so that the 20%
// bound is 4 standard deviations.
const wantFalsePositives = 400

// TestSizingPredictsRateGenerated inserts 2^20 generated URL-like keys
// into a filter per target, sized for them by the default sizing, then
// queries fresh keys of the same generator (at least 2^20, and enough for
// wantFalsePositives at the target).
func TestSizingPredictsRateGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical: about 25 s on 2 cores; skipped with -short")
	}
	if raceEnabled {
		t.Skip("millions of queries: too slow under the race detector; .ci/run reruns it without")
	}
	const n = 1 << 20
	filters := make([]*Filter, len(sizingTargets))
	predicted := make([]float64, len(sizingTargets))
	need := make([]int, len(sizingTargets))
	hits := make([]int, len(sizingTargets))
	most := 0
	for i, p := range sizingTargets {
		f, err := New(Options{ExpectedURLs: n, FalsePositiveRate: p})
		if err != nil {
			t.Fatal(err)
		}
		filters[i] = f
		_, _, predicted[i] = defaultGeometry(t, n, p)
		need[i] = max(1<<20, int(wantFalsePositives/p))
		most = max(most, need[i])
	}
	g := newURLGen(n, 16)
	var k keyChunk
	k.fill(g, n)
	for _, s := range k.segs {
		for _, f := range filters {
			f.Add(s)
		}
	}
	for i, f := range filters {
		if st := f.Stats(); math.Abs(st.FalsePositiveRate/predicted[i]-1) > 0.1 {
			t.Errorf("p=%g: Stats estimates %.4g at n keys, the formula %.4g", sizingTargets[i], st.FalsePositiveRate, predicted[i])
		}
	}
	for done := 0; done < most; done += chunkKeys {
		k.fill(g, min(chunkKeys, most-done))
		for i, f := range filters {
			if done >= need[i] {
				continue
			}
			for _, s := range k.segs[:min(len(k.segs), need[i]-done)] {
				if f.Test(s) {
					hits[i]++
				}
			}
		}
	}
	for i, p := range sizingTargets {
		checkRate(t, fmt.Sprintf("generated n=%d p=%g", n, p), hits[i], need[i], predicted[i], p)
	}
}

// TestSizingPredictsRateDatasets does the same on the shared datasets'
// distinct keys: half inserted, the other half queried. Below 0.1% one
// split gives too few false positives to measure within 20%, so it
// repeats with other random splits (each a fresh filter) and pools them.
func TestSizingPredictsRateDatasets(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical: over a minute on 2 cores; skipped with -short")
	}
	if raceEnabled {
		t.Skip("millions of queries: too slow under the race detector; .ci/run reruns it without")
	}
	keys := distinctKeys(loadDatasets(t))
	n := uint64(len(keys) / 2)
	for _, p := range sizingTargets {
		sizes, _, predicted := defaultGeometry(t, n, p)
		if _, _, ratio := againstBitsAndBlooms(sizes, n, p); ratio > 1.3 {
			t.Errorf("datasets n=%d p=%g: %.3fx the bits of bits-and-blooms (limit 1.3x)", n, p, ratio)
		}
		hits, q := 0, 0
		for seed := uint64(1); seed == 1 || float64(q)*p < wantFalsePositives; seed++ {
			ins, query := splitKeys(keys, seed)
			f, err := New(Options{ExpectedURLs: n, FalsePositiveRate: p})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ins {
				f.Add(s)
			}
			for _, s := range query {
				if f.Test(s) {
					hits++
				}
			}
			q += len(query)
		}
		checkRate(t, fmt.Sprintf("datasets n=%d p=%g", n, p), hits, q, predicted, p)
	}
}
