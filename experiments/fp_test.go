package experiments

import (
	"math"
	"testing"

	"github.com/layercrawl/layercrawl/mlbf"
)

func TestBitsForDataset(t *testing.T) {
	for _, tc := range []struct{ n, k int }{
		{1_000, 3}, {3_000, 3}, {100_000, 3}, {1_500_000, 3}, {50_000, 1}, {50_000, 7},
	} {
		m := BitsForDataset(tc.n, tc.k)
		if got := mlbf.FalsePositiveRate(tc.k, m, uint64(tc.n)); math.Abs(got-DatasetFPRate)/DatasetFPRate > 0.001 {
			t.Errorf("n %d, k %d: m = %d gives rate %v, want %v", tc.n, tc.k, m, got, DatasetFPRate)
		}
		// One bit fewer must not reach the rate: m is the least that does.
		if got := mlbf.FalsePositiveRate(tc.k, m-1, uint64(tc.n)); got < DatasetFPRate && m > mlbf.BlockBits {
			t.Errorf("n %d, k %d: m-1 = %d already gives %v", tc.n, tc.k, m-1, got)
		}
	}
	if got := BitsForDataset(1, 3); got != mlbf.BlockBits {
		t.Errorf("one URL: m = %d, want the floor of one block (%d)", got, mlbf.BlockBits)
	}
	// The paper's m is the size for about 1.36 million URLs at its k.
	if n := float64(mlbf.DefaultBitsPerLayer) / float64(BitsForDataset(1_000_000, mlbf.DefaultHashes)) * 1e6; n < 1.35e6 || n > 1.37e6 {
		t.Errorf("the paper's m corresponds to %.0f URLs, not about 1.36 million as the --bits help says", n)
	}
}
