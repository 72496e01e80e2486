package mlbf

import (
	"fmt"

	"github.com/zeebo/xxh3"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// bitSet reports whether bit pos of layer i is set.
func (c *core) bitSet(i int, pos uint64) bool {
	l := c.layers[i]
	return c.words[l.off+pos>>6]&(1<<(pos&63)) != 0
}

// setBits lists the set bits of layer i.
func (c *core) setBits(i int) []uint64 {
	var out []uint64
	for p := uint64(0); p < c.layers[i].bits; p++ {
		if c.bitSet(i, p) {
			out = append(out, p)
		}
	}
	return out
}

// TestPaperHandWorked checks Algorithms 1 and 2 on MLBF(L=2, k=2, m=13)
// against positions worked out by hand (with a calculator for the 64-bit
// sums) from the golden xxh3-128 hashes of TestGoldenHashes:
//
//	Hash_j(s) = (lo(s) + j·hi(s) mod 2^64) mod 13
//	"x": j=0 -> 10, j=1 -> 5      "y": j=0 -> 1, j=1 -> 0
//	"a.com": 9, 8                 "x/y" (folded tail): 7, 11
//
// Key x/y:        layer 1 {10,5}, layer 2 {1,0}, LAddr = {10^1, 5^0} = {11, 5}.
// Key a.com/x/y:  layer 1 {9,8}, layer 2 = fold "x/y" {7,11},
// LAddr = {9^7, 8^11} = {14, 3}: 14 >= m, reduced mod 13 to 1.
func TestPaperHandWorked(t *testing.T) {
	tests := []struct {
		key                    string
		layer1, layer2, integr []uint64
	}{
		{"x/y", []uint64{5, 10}, []uint64{0, 1}, []uint64{5, 11}},
		{"a.com/x/y", []uint64{8, 9}, []uint64{7, 11}, []uint64{1, 3}},
	}
	for _, tt := range tests {
		f, err := New(Options{Mode: Paper, Layers: 2, Hashes: 2, BitsPerLayer: 13})
		if err != nil {
			t.Fatal(err)
		}
		seg := strings.Split(tt.key, "/")
		if f.Test(seg) {
			t.Errorf("%s: empty filter reports present", tt.key)
		}
		if f.TestAndAdd(seg) {
			t.Errorf("%s: first TestAndAdd reports present", tt.key)
		}
		for i, want := range [][]uint64{tt.layer1, tt.layer2, tt.integr} {
			if got := f.c.setBits(i); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: layer %d bits = %v, want %v", tt.key, i+1, got, want)
			}
		}
		if !f.Test(seg) || !f.TestAndAdd(seg) {
			t.Errorf("%s: not present after insert", tt.key)
		}
	}
	// Algorithm 2 on y/x: layer 1 needs {1,0}, missing in a filter holding
	// only x/y, so it is rejected at the first layer.
	f, _ := New(Options{Mode: Paper, Layers: 2, Hashes: 2, BitsPerLayer: 13})
	f.Add([]string{"x", "y"})
	if f.Test([]string{"y", "x"}) {
		t.Error("y/x reported present in a filter holding x/y")
	}
}

// TestGoldenHashes pins the segment hash so that saved filters stay
// readable: if it fails, HashID must change.
func TestGoldenHashes(t *testing.T) {
	tests := []struct {
		in     string
		lo, hi uint64
	}{
		{"a.com", 16108476399348190412, 14362798705005045466},
		{"x", 16929150178197425425, 6661951676894867182},
		{"y", 2822446240451570149, 15609225916334715443},
		{"x/y", 14022628052965763615, 17470220487744598659},
	}
	for _, tt := range tests {
		lo, hi := segmentHash(tt.in)
		if lo != tt.lo || hi != tt.hi {
			t.Errorf("segmentHash(%q) = %d, %d, want %d, %d", tt.in, lo, hi, tt.lo, tt.hi)
		}
	}
	// The fold hashes incrementally and must equal the joined string's hash.
	lo, hi := tailHash([]string{"x", "y"})
	if lo != tests[3].lo || hi != tests[3].hi {
		t.Errorf("tailHash(x, y) = %d, %d, want the hash of \"x/y\"", lo, hi)
	}
	long := []string{strings.Repeat("p", 300), "q", strings.Repeat("r", 2000)}
	lo, hi = tailHash(long)
	wlo, whi := segmentHash(strings.Join(long, "/"))
	if lo != wlo || hi != whi {
		t.Errorf("tailHash of long segments differs from the joined hash")
	}
	// Improved mode hashes segments with 64-bit xxh3.
	h64 := []struct {
		in   string
		want uint64
	}{{"a.com", xxh3Golden64aCom}, {"x/y", xxh3Golden64xy}}
	for _, tt := range h64 {
		if got := xxh3.HashString(tt.in); got != tt.want {
			t.Errorf("xxh3.HashString(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
	if got := tailHash64([]string{"x", "y"}); got != xxh3Golden64xy {
		t.Errorf("tailHash64(x, y) = %d, want the hash of \"x/y\"", got)
	}
	if got, want := tailHash64(long), xxh3.HashString(strings.Join(long, "/")); got != want {
		t.Errorf("tailHash64 of long segments = %d, want %d", got, want)
	}
}

// TestTailHashBuffer checks the folded-tail hashes on both sides of the
// stack-buffer limit (joined length tailBuf-1, tailBuf, tailBuf+1) and with
// empty segments: the buffered and the streaming paths must both equal the
// hash of the joined string.
func TestTailHashBuffer(t *testing.T) {
	tests := []struct {
		name string
		seg  []string
	}{
		{"under", []string{strings.Repeat("a", tailBuf-3), "b"}},
		{"at", []string{strings.Repeat("a", tailBuf-2), "b"}},
		{"over", []string{strings.Repeat("a", tailBuf-1), "b"}},
		{"empty segments", []string{"", "", ""}},
		{"one segment", []string{"only"}},
		{"many", strings.Split(strings.Repeat("ab/", 100), "/")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			joined := strings.Join(tt.seg, "/")
			if got, want := tailHash64(tt.seg), xxh3.HashString(joined); got != want {
				t.Errorf("tailHash64 = %d, want %d (joined length %d)", got, want, len(joined))
			}
			lo, hi := tailHash(tt.seg)
			want := xxh3.HashString128(joined)
			if lo != want.Lo || hi != want.Hi {
				t.Errorf("tailHash = %d, %d, want %d, %d (joined length %d)", lo, hi, want.Lo, want.Hi, len(joined))
			}
		})
	}
}

// TestGoldenPositions pins the improved-mode bit positions (block and bits
// of every layer) for fixed keys: a saved filter stays readable only while
// these hold. If this fails, HashID must change.
func TestGoldenPositions(t *testing.T) {
	f, err := New(Options{LayerBits: []uint64{4096, 8192, 8192, 8192, 16384}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  []string
		want string // per layer: set bit positions
	}{
		{[]string{"example.com", "a", "b"}, goldenExample},
		{[]string{"h", "1", "2", "3", "4", "5"}, goldenFolded},
		{[]string{}, goldenEmpty},
	}
	for _, tt := range tests {
		g, _ := New(Options{LayerBits: f.LayerBits()})
		g.Add(tt.key)
		var sb strings.Builder
		for i := range g.c.layers {
			fmt.Fprintf(&sb, "%v", g.c.setBits(i))
		}
		if got := sb.String(); got != tt.want {
			t.Errorf("positions of %q = %s, want %s", tt.key, got, tt.want)
		}
	}
}

const (
	xxh3Golden64aCom = 12425147520337328057
	xxh3Golden64xy   = 14022628052965763615
	goldenExample    = "[2134 2157 2395][7798 7997 8175][627 688 963][][7246 7473 7587]"
	goldenFolded     = "[7 54 170][11 229 475][5805 5912 6078][6178 6569 6590][100 229 339]"
	goldenEmpty      = "[][][][][7699 7713 7757]"
)

// TestOrderBlindAndSelfCancel shows the paper's XOR integrity key flaws as
// deterministic false positives in paper mode, and their absence in improved
// mode. The filters are large and nearly empty, so in improved mode a
// false positive would need a hash collision (probability below 1e-9 per
// key here).
func TestOrderBlindAndSelfCancel(t *testing.T) {
	tests := []struct {
		name   string
		insert []string // each '/'-separated
		query  string
	}{
		// b/a/z puts b in layer 1 and a in layer 2; a/b/c supplies c in
		// layer 3 and the integrity bits of h(a)^h(b)^h(c).
		{"order-blind", []string{"a/b/c", "b/a/z"}, "b/a/c"},
		// x^x = y^y = 0: the integrity bits of p/x/x/q serve p/y/y/q.
		{"self-cancel", []string{"p/x/x/q", "p/y/z/q", "p/z/y/q"}, "p/y/y/q"},
	}
	for _, tt := range tests {
		for _, mode := range []Mode{Paper, Improved} {
			f, err := New(Options{Mode: mode, BitsPerLayer: 1 << 20, LayerBits: []uint64{1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20}})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.insert {
				f.Add(strings.Split(k, "/"))
			}
			got := f.Test(strings.Split(tt.query, "/"))
			want := mode == Paper
			if got != want {
				t.Errorf("%s, %v mode: Test(%s) = %v, want %v", tt.name, mode, tt.query, got, want)
			}
		}
	}
}

// randomKey returns a key of 0..7 segments drawn from a small alphabet so
// that segments repeat across keys and depths (as real URLs do).
func randomKey(r *rand.Rand) []string {
	n := r.IntN(8)
	seg := make([]string, n)
	for i := range seg {
		seg[i] = fmt.Sprintf("s%d", r.IntN(40))
	}
	return seg
}

func seedRand(t testing.TB) (*rand.Rand, uint64) {
	seed := rand.Uint64()
	if s := os.Getenv("MLBF_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (rerun with MLBF_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed
}

type setFilter interface {
	Test([]string) bool
	TestAndAdd([]string) bool
}

// TestNoFalseNegatives compares every filter with a Go map on random keys:
// a key the map holds must always be reported present, and TestAndAdd must
// report false for a key the filter reports absent.
func TestNoFalseNegatives(t *testing.T) {
	r, _ := seedRand(t)
	mk := func(o Options) func() setFilter {
		return func() setFilter {
			f, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	mkc := func(o Options) func() setFilter {
		return func() setFilter {
			f, err := NewConcurrent(o)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	tests := []struct {
		name string
		new  func() setFilter
	}{
		{"paper", mk(Options{Mode: Paper, BitsPerLayer: 5000})},
		{"paper-odd-m", mk(Options{Mode: Paper, Layers: 3, Hashes: 5, BitsPerLayer: 1001})},
		{"improved", mk(Options{ExpectedURLs: 2000, FalsePositiveRate: 0.05})},
		{"improved-k9", mk(Options{Hashes: 9, Layers: 2, LayerBits: []uint64{512, 1024, 2048}})},
		{"concurrent-paper", mkc(Options{Mode: Paper, BitsPerLayer: 5000})},
		{"concurrent-improved", mkc(Options{ExpectedURLs: 2000})},
	}
	for _, tt := range tests {
		f := tt.new()
		seen := map[string]bool{}
		for i := 0; i < 3000/(1+4*btoi(raceEnabled)); i++ {
			seg := randomKey(r)
			key := strings.Join(seg, "/") + fmt.Sprint(len(seg))
			if seen[key] && !f.Test(seg) {
				t.Fatalf("%s: false negative for %q", tt.name, seg)
			}
			before := f.Test(seg)
			got := f.TestAndAdd(seg)
			if got != before {
				t.Fatalf("%s: TestAndAdd(%q) = %v, Test said %v", tt.name, seg, got, before)
			}
			if seen[key] && !got {
				t.Fatalf("%s: TestAndAdd(%q) = false for a present key", tt.name, seg)
			}
			seen[key] = true
		}
	}
	c, _ := NewClassic(20000, 4)
	seen := map[string]bool{}
	for i := 0; i < 3000; i++ {
		key := fmt.Sprint(r.IntN(2000))
		if got := c.TestAndAddString(key); seen[key] && !got {
			t.Fatalf("classic: false negative for %q", key)
		}
		if !c.Test([]byte(key)) || !c.TestString(key) {
			t.Fatalf("classic: %q absent after insert", key)
		}
		seen[key] = true
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFilterBatch: TestAndAddBatch answers exactly as TestAndAdd one key
// at a time would, duplicates within a batch included.
func TestFilterBatch(t *testing.T) {
	r, _ := seedRand(t)
	for _, mode := range []Mode{Improved, Paper} {
		one, _ := New(Options{Mode: mode, ExpectedURLs: 500, BitsPerLayer: 3000})
		batch, _ := New(Options{Mode: mode, ExpectedURLs: 500, BitsPerLayer: 3000})
		keys := make([][]string, 1000)
		for i := range keys {
			keys[i] = randomKey(r)
		}
		present := make([]bool, 37)
		for start := 0; start < len(keys); start += len(present) {
			chunk := keys[start:min(start+len(present), len(keys))]
			batch.TestAndAddBatch(chunk, present)
			for i, k := range chunk {
				if got, want := present[i], one.TestAndAdd(k); got != want {
					t.Fatalf("%v: batch says %v for %q, TestAndAdd %v", mode, got, k, want)
				}
			}
		}
	}
}
