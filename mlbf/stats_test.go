package mlbf

import (
	"fmt"
	"math"
	"testing"
)

func TestStats(t *testing.T) {
	const n = 20000
	f, _ := New(Options{ExpectedURLs: n, ExpectedSegments: []uint64{100, 1000, n, n}})
	p, _ := New(Options{Mode: Paper, BitsPerLayer: 400000})
	c, _ := NewClassicFor(n, 0.01)
	for i := 0; i < n; i++ {
		seg := []string{fmt.Sprintf("h%d", i%100), fmt.Sprintf("s%d", i%1000), fmt.Sprint(i), "x"}
		f.Add(seg)
		p.Add(seg)
		c.AddString(fmt.Sprint(seg))
	}
	tests := []struct {
		name       string
		s          Stats
		wantLayers int
		wantItems  []float64 // per layer, the distinct entries inserted
	}{
		{"improved", f.Stats(), 5, []float64{100, 1000, n, 1, n}},
		{"paper", p.Stats(), 5, []float64{100, 1000, n, 1, n}},
		{"classic", c.Stats(), 1, []float64{n}},
	}
	for _, tt := range tests {
		if len(tt.s.Layers) != tt.wantLayers {
			t.Fatalf("%s: %d layers, want %d", tt.name, len(tt.s.Layers), tt.wantLayers)
		}
		for i, l := range tt.s.Layers {
			// Swamidass–Baldi is accurate to a few percent while the layer
			// is far from full (within sqrt(n) for the small, few-block layers).
			if got, want := l.EstimatedItems, tt.wantItems[i]; math.Abs(got-want) > max(0.05*want, math.Sqrt(want)) {
				t.Errorf("%s layer %d: estimated %.0f items, want %.0f ± 5%%", tt.name, i+1, got, want)
			}
			if l.FillRatio != float64(l.SetBits)/float64(l.Bits) {
				t.Errorf("%s layer %d: fill %v != %d/%d", tt.name, i+1, l.FillRatio, l.SetBits, l.Bits)
			}
		}
		last := tt.s.Layers[len(tt.s.Layers)-1]
		if got, want := tt.s.FalsePositiveRate, last.FalsePositiveRate; got != want {
			t.Errorf("%s: FalsePositiveRate %v, want the integrity layer's %v", tt.name, got, want)
		}
		k := map[string]int{"improved": f.c.k, "paper": p.c.k, "classic": c.k}[tt.name]
		// Blocks fill unevenly, so the mean of block fill^k is above the
		// layer's fill^k (Jensen); unblocked layers are fill^k exactly.
		if fk := math.Pow(last.FillRatio, float64(k)); tt.name == "improved" && !(last.FalsePositiveRate > fk) || tt.name != "improved" && last.FalsePositiveRate != fk {
			t.Errorf("%s: integrity rate %v against fill^k %v", tt.name, last.FalsePositiveRate, fk)
		}
		if tt.s.IndependentFalsePositiveRate > tt.s.FalsePositiveRate {
			t.Errorf("%s: independent rate %v above the integrity rate %v", tt.name, tt.s.IndependentFalsePositiveRate, tt.s.FalsePositiveRate)
		}
	}
	// The classic filter's estimate is formula (1)'s rate at its fill.
	if s := c.Stats(); math.Abs(s.FalsePositiveRate-0.01) > 0.002 {
		t.Errorf("classic at its design load: estimated rate %v, want about 0.01", s.FalsePositiveRate)
	}
}
