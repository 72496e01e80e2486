package mlbf

import (
	"strings"
	"testing"
)

// TestZeroAllocs: no query or insert allocates, folded tails included.
func TestZeroAllocs(t *testing.T) {
	f, _ := New(Options{ExpectedURLs: 1000})
	p, _ := New(Options{Mode: Paper, BitsPerLayer: 1 << 16})
	c, _ := NewConcurrent(Options{ExpectedURLs: 1000})
	cl, _ := NewClassicFor(1000, 0.01)
	keys := [][]string{
		{"example.com"},
		{"example.com", "a", "b"},
		strings.Split("example.com/a/b/c/d/e/f/g", "/"),
		strings.Split("h/"+strings.Repeat("long/", 200), "/"),
		{},
	}
	present := make([]bool, len(keys))
	b := []byte("https://example.com/a")
	tests := []struct {
		name string
		fn   func()
	}{
		{"Filter", func() {
			for _, k := range keys {
				f.Add(k)
				f.Test(k)
				f.TestAndAdd(k)
			}
			f.TestAndAddBatch(keys, present)
		}},
		{"paper", func() {
			for _, k := range keys {
				p.TestAndAdd(k)
				p.Test(k)
			}
		}},
		{"Concurrent", func() {
			for _, k := range keys {
				c.Add(k)
				c.Test(k)
				c.TestAndAdd(k)
			}
			c.TestAndAddBatch(keys, present)
		}},
		{"Classic", func() {
			cl.TestAndAdd(b)
			cl.Test(b)
			cl.TestAndAddString("k")
		}},
	}
	for _, tt := range tests {
		if got := testing.AllocsPerRun(50, tt.fn); got != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tt.name, got)
		}
	}
}
