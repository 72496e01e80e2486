package mlbf

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

func TestFormulas(t *testing.T) {
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-3*math.Abs(want) }
	// The paper's experiment: k=3, m=16,829,152; n=3.5M gives
	// f = (1-e^(-3·3.5/16.83))^3.
	approx := math.Pow(1-math.Exp(-3*3.5e6/16829152), 3)
	tests := []struct {
		name      string
		got, want float64
	}{
		{"formula (1) paper sizes", FalsePositiveRate(3, 16829152, 3500000), approx},
		{"formula (1) empty", FalsePositiveRate(3, 1000, 0), 0},
		{"formula (1) m=1", FalsePositiveRate(2, 1, 1), 1},
		{"formula (1) exact small", FalsePositiveRate(1, 2, 1), 0.5},
		{"formula (4) = f^L", PaperFalsePositiveRate(4, 3, 16829152, 3500000), math.Pow(approx, 4)},
		// At optimal k, f = 0.6185^(m/n) (formula (2)).
		{"formula (2) rate", FalsePositiveRate(OptimalHashes(9600, 1000), 9600, 1000), math.Pow(0.6185, 9.6)},
	}
	for _, tt := range tests {
		if !near(tt.got, tt.want) && !(tt.want < 0.02 && math.Abs(tt.got-tt.want) < 2e-4) {
			t.Errorf("%s: got %.6g, want %.6g", tt.name, tt.got, tt.want)
		}
	}
	ks := []struct {
		m, n uint64
		want int
	}{{9600, 1000, 7}, {1000, 1000, 1}, {10, 1000, 1}, {1000, 0, 1}, {16829152, 3500000, 3}}
	for _, tt := range ks {
		if got := OptimalHashes(tt.m, tt.n); got != tt.want {
			t.Errorf("OptimalHashes(%d, %d) = %d, want %d", tt.m, tt.n, got, tt.want)
		}
	}
	m, k := EstimateParameters(1_000_000, 0.01)
	if m != 9585059 || k != 7 {
		t.Errorf("EstimateParameters(1e6, 0.01) = %d, %d, want 9585059, 7", m, k)
	}
	if f := FalsePositiveRate(k, m, 1_000_000); f > 0.0101 {
		t.Errorf("EstimateParameters gives rate %v > 0.01", f)
	}
}

func TestBlockedFalsePositiveRate(t *testing.T) {
	// A blocked filter is worse than the classic one at equal size, and
	// converges to it as the load per block grows.
	for _, bitsPerKey := range []uint64{4, 8, 12, 16} {
		n := uint64(100000)
		b := BlockedFalsePositiveRate(3, n*bitsPerKey, n)
		c := FalsePositiveRate(3, n*bitsPerKey, n)
		if !(b >= c && b < 2.5*c) {
			t.Errorf("%d bits/key: blocked %v vs classic %v", bitsPerKey, b, c)
		}
	}
	for _, p := range []float64{0.5, 0.1, 0.01, 0.001} {
		m := blockedBitsFor(3, 50000, p)
		if m%blockBits != 0 || BlockedFalsePositiveRate(3, m, 50000) > p || BlockedFalsePositiveRate(3, m-blockBits, 50000) <= p {
			t.Errorf("blockedBitsFor(3, 5e4, %v) = %d is not the smallest whole-block size", p, m)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		o    Options
		want bool // valid
	}{
		{Options{}, true},
		{Options{Mode: Paper}, true},
		{Options{Mode: 7}, false},
		{Options{Layers: MaxLayers + 1}, false},
		{Options{Layers: -1}, false},
		{Options{Hashes: MaxHashes + 1}, false},
		{Options{Mode: Paper, BitsPerLayer: MaxBits + 1}, false},
		{Options{LayerBits: []uint64{1, 2}}, false},
		{Options{LayerBits: []uint64{1, 2, 3, 4, 0}}, false},
		{Options{LayerBits: []uint64{1, 2, 3, 4, 5}}, true},
		{Options{FalsePositiveRate: 1.5}, false},
		{Options{FalsePositiveRate: math.NaN()}, false},
		{Options{ExpectedSegments: []uint64{1, 2}}, false},
		{Options{ExpectedSegments: []uint64{1, 2, 3, 4}}, true},
	}
	for _, tt := range tests {
		o := tt.o
		o.EnsureDefaults()
		err := o.Validate()
		if got := err == nil; got != tt.want {
			t.Errorf("Validate(%+v) = %v, want valid=%v", tt.o, err, tt.want)
		}
		if err != nil && !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Validate error %v does not wrap ErrInvalidOptions", err)
		}
		if _, err := New(tt.o); (err == nil) != tt.want {
			t.Errorf("New(%+v) error = %v, want valid=%v", tt.o, err, tt.want)
		}
	}
	if _, err := NewClassic(0, 3); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NewClassic(0, 3) error = %v", err)
	}
	if _, err := NewClassicFor(10, 0); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NewClassicFor(10, 0) error = %v", err)
	}
}

func TestDerivedSizing(t *testing.T) {
	f, err := New(Options{ExpectedURLs: 100000, FalsePositiveRate: 0.01, ExpectedSegments: []uint64{1000, 20000, 50000, 90000}})
	if err != nil {
		t.Fatal(err)
	}
	got := f.LayerBits()
	for i, b := range got {
		if b%blockBits != 0 {
			t.Errorf("layer %d: %d bits, not whole blocks", i+1, b)
		}
	}
	if !(got[0] < got[1] && got[1] < got[2] && got[2] < got[3]) {
		t.Errorf("layer sizes %v do not follow the segment counts", got)
	}
	if p := BlockedFalsePositiveRate(f.c.k, got[4], 100000); p > 0.01 {
		t.Errorf("integrity layer %d bits: rate %v > 0.01", got[4], p)
	}
}

func TestSplitURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://a.com/b/c", "[a.com b c]"},
		{"https://a.com/", "[a.com ]"},
		{"a.com", "[a.com]"},
		{"ftp+x://h/p", "[h p]"},
		{"/x://y", "[ x:  y]"},
		{"", "[]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(SplitURL(tt.in)); got != tt.want {
			t.Errorf("SplitURL(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestEstimateSegments(t *testing.T) {
	sample := [][]string{
		{"a.com", "x", "1"},
		{"a.com", "y", "1"},
		{"b.com", "x", "2", "3"},
		{"b.com", "x", "2/3"}, // the fold makes "2/3" equal to 2,3 at depth 3: {1, 2/3}
		{"c.com"},
	}
	got := fmt.Sprint(EstimateSegments(sample, 3))
	if want := "[3 2 2]"; got != want {
		t.Errorf("EstimateSegments = %s, want %s", got, want)
	}
	if got := EstimateSegments(sample, 0); got != nil {
		t.Errorf("EstimateSegments(_, 0) = %v, want nil", got)
	}
}
