package mlbf

import (
	"errors"
	"testing"
)

// probeStore is a filter kept as plain per-layer bit sets and driven only by
// Layout.Probes: the reference a remote store (Redis) implements.
type probeStore struct {
	lay  *Layout
	bits []map[uint64]bool
	buf  []Probe
}

func newProbeStore(lay *Layout) *probeStore {
	s := &probeStore{lay: lay, bits: make([]map[uint64]bool, lay.Layers()+1)}
	for i := range s.bits {
		s.bits[i] = map[uint64]bool{}
	}
	return s
}

func (s *probeStore) testAndAdd(seg []string) bool {
	s.buf, _ = s.lay.Probes(seg, s.buf[:0])
	present := true
	for _, p := range s.buf {
		if !s.bits[p.Layer][p.Bit] {
			present = false
			s.bits[p.Layer][p.Bit] = true
		}
	}
	return present
}

// TestLayoutAgreesWithFilter feeds the same random keys (with repeats, into
// filters small enough to give false positives) to an in-memory Filter and
// to a probe store: every TestAndAdd answer and, at the end, every bit of
// every layer must agree.
func TestLayoutAgreesWithFilter(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"improved explicit", Options{Layers: 4, Hashes: 3, LayerBits: []uint64{2048, 4096, 4096, 4096, 8192}}},
		{"improved derived", Options{ExpectedURLs: 500, ExpectedSegments: []uint64{40, 40, 40, 80}}},
		{"improved k=9 L=2", Options{Layers: 2, Hashes: 9, LayerBits: []uint64{1024, 1024, 4096}}},
		{"paper", Options{Mode: Paper, BitsPerLayer: 3001}},
		{"paper L=6 k=5", Options{Mode: Paper, Layers: 6, Hashes: 5, BitsPerLayer: 997}},
	}
	r, _ := seedRand(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			lay, err := NewLayout(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := lay.LayerBits(), f.LayerBits(); !equalU64(got, want) {
				t.Fatalf("LayerBits = %v, want %v", got, want)
			}
			s := newProbeStore(lay)
			var present int
			for n := 0; n < 3000; n++ {
				k := randomKey(r)
				got, want := s.testAndAdd(k), f.TestAndAdd(k)
				if got != want {
					t.Fatalf("key %q: probe store TestAndAdd = %v, filter = %v", k, got, want)
				}
				if want {
					present++
				}
			}
			if present == 0 || present == 3000 {
				t.Fatalf("degenerate run: %d of 3000 present", present)
			}
			for i := 0; i <= lay.Layers(); i++ {
				want := f.c.setBits(i)
				if len(want) != len(s.bits[i]) {
					t.Fatalf("layer %d: %d bits set by probes, filter has %d", i, len(s.bits[i]), len(want))
				}
				for _, b := range want {
					if !s.bits[i][b] {
						t.Fatalf("layer %d: filter bit %d not among the probes", i, b)
					}
				}
			}
		})
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestProbesShape checks the documented order and count of probes: layers
// 0..n-1 then L, k probes each, within the layer sizes.
func TestProbesShape(t *testing.T) {
	lay, err := NewLayout(Options{Layers: 3, Hashes: 2, LayerBits: []uint64{1024, 1024, 1024, 2048}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		seg        []string
		wantLayers []int
	}{
		{nil, []int{3, 3}},
		{[]string{"a.com"}, []int{0, 0, 3, 3}},
		{[]string{"a.com", "x"}, []int{0, 0, 1, 1, 3, 3}},
		{[]string{"a.com", "x", "y"}, []int{0, 0, 1, 1, 2, 2, 3, 3}},
		{[]string{"a.com", "x", "y", "z", "w"}, []int{0, 0, 1, 1, 2, 2, 3, 3}},
	}
	bits := lay.LayerBits()
	for _, tt := range tests {
		got, _ := lay.Probes(tt.seg, nil)
		if len(got) != len(tt.wantLayers) {
			t.Fatalf("Probes(%q): %d probes, want %d", tt.seg, len(got), len(tt.wantLayers))
		}
		for i, p := range got {
			if p.Layer != tt.wantLayers[i] {
				t.Errorf("Probes(%q)[%d].Layer = %d, want %d", tt.seg, i, p.Layer, tt.wantLayers[i])
			}
			if p.Bit >= bits[p.Layer] {
				t.Errorf("Probes(%q)[%d].Bit = %d, beyond layer size %d", tt.seg, i, p.Bit, bits[p.Layer])
			}
		}
	}
	if got, want := lay.MaxProbes(), 8; got != want {
		t.Errorf("MaxProbes = %d, want %d", got, want)
	}
}

func TestProbesNoAlloc(t *testing.T) {
	lay, err := NewLayout(Options{})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]Probe, 0, lay.MaxProbes())
	seg := []string{"example.com", "a", "b", "c", "d", "e"}
	allocs := testing.AllocsPerRun(100, func() {
		dst, _ = lay.Probes(seg, dst[:0])
	})
	if allocs != 0 {
		t.Errorf("Probes allocates %v times per call, want 0", allocs)
	}
}

// TestRouteSpread checks that routes spread keys evenly over shards and
// that, within one shard, integrity blocks still cover the whole layer (the
// route must not be correlated with the block choice).
func TestRouteSpread(t *testing.T) {
	const shards, keys = 8, 80_000
	lay, err := NewLayout(Options{Layers: 2, LayerBits: []uint64{512, 512, 512 * 16}})
	if err != nil {
		t.Fatal(err)
	}
	var perShard [shards]int
	var blocks [shards][16]int
	var buf []Probe
	r, _ := seedRand(t)
	for n := 0; n < keys; n++ {
		k := randomKey(r)
		k = append(k, string(rune('a'+n%26)), string(rune('a'+n/26%26)), string(rune('a'+n/676%26)))
		var route uint64
		buf, route = lay.Probes(k, buf[:0])
		s := fastrange(route, shards)
		perShard[s]++
		blocks[s][buf[len(buf)-1].Bit/512]++
	}
	for s, c := range perShard {
		if c < keys/shards*9/10 || c > keys/shards*11/10 {
			t.Errorf("shard %d has %d keys, want %d ± 10%%", s, c, keys/shards)
		}
		for b, bc := range blocks[s] {
			if bc < c/16/2 {
				t.Errorf("shard %d: integrity block %d has %d of %d keys: route correlated with the block", s, b, bc, c)
			}
		}
	}
}

func TestNewLayoutInvalid(t *testing.T) {
	_, err := NewLayout(Options{Layers: MaxLayers + 1})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("NewLayout(bad) error = %v, want ErrInvalidOptions", err)
	}
}
