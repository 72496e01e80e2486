package experiments

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestClopperPearson checks the exact binomial interval against values
// from tables (R's binom.test).
func TestClopperPearson(t *testing.T) {
	for _, tc := range []struct {
		x, n   int64
		lo, hi float64
	}{
		{0, 100, 0, 0.036217},
		{5, 100, 0.016432, 0.112835},
		{100, 100, 0.963783, 1},
		{1, 10, 0.002529, 0.445016},
		{0, 1_000_000, 0, 3.6888e-6},
		{0, 0, 0, 1},
	} {
		lo, hi := clopperPearson(tc.x, tc.n, 0.95)
		if math.Abs(lo-tc.lo) > 1e-3*tc.lo+1e-9 || math.Abs(hi-tc.hi) > 1e-3*tc.hi {
			t.Errorf("clopperPearson(%d, %d) = [%.6g, %.6g], want [%.6g, %.6g]", tc.x, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

// TestFPFigureDrawsZeros: a rate of zero is drawn as its interval's upper
// bound (it used to be left out, 17 points of the committed figures), and
// the title says so.
func TestFPFigureDrawsZeros(t *testing.T) {
	var rows []Row
	for i, n := range []int{1000, 2000, 3000} {
		rows = append(rows,
			Row{Workload: WorkloadURLID, Structure: StructBF, N: n, Queries: 10_000, FalsePositives: int64(10 * (i + 1)), FPRate: float64(10*(i+1)) / 10_000, TheoryFPRate: 0.002},
			Row{Workload: WorkloadURLID, Structure: StructMLBFPaper, N: n, Queries: 10_000, FalsePositives: int64(i), FPRate: float64(i) / 10_000, TheoryFPRate: 1e-5},
		)
	}
	figs, err := Figures(rows)
	if err != nil {
		t.Fatal(err)
	}
	f := figs[0]
	if f.Name != "fp_vs_n_url-id" || f.upperBounds != 1 || !strings.Contains(f.Title, "upper bound") {
		t.Fatalf("figure %s: %d upper bounds, title %q; want 1 (the rate of zero)", f.Name, f.upperBounds, f.Title)
	}
	var svg bytes.Buffer
	if err := f.WriteTo(&svg, "svg"); err != nil || !bytes.Contains(svg.Bytes(), []byte("0 observed")) {
		t.Errorf("SVG (%v) lacks the legend line of the upper bounds", err)
	}
}
