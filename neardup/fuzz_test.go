package neardup

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/internal/mutate"
)

// fuzzSeeds returns small valid encodings of every method.
func fuzzSeeds(f *testing.F, idx Index) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := mutate.Vocabulary(rng, 500)
	for _, n := range []int{0, 1, 3} {
		for i := range n {
			words := mutate.Text(rng, vocab, 80+40*i)
			text := strings.Join(words, " ")
			idx.Add(uint64(i), &Doc{Text: text, Shingles: Shingles(text, 0)})
		}
		b, err := idx.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// fuzzDecode checks that any input either fails with ErrFormat, leaving
// the index as it was, or decodes to an index that encodes back to the
// same bytes and answers queries.
func fuzzDecode(t *testing.T, fresh func() Index, data []byte) {
	fuzzDecodeWith(t, func(data []byte) (Index, error) {
		idx := fresh()
		return idx, idx.UnmarshalBinary(data)
	}, data)
}

// fuzzDecodeWith is fuzzDecode for any decoding: on error, the index it
// returns (if any) must be empty.
func fuzzDecodeWith(t *testing.T, decode func([]byte) (Index, error), data []byte) {
	idx, err := decode(data)
	if err != nil {
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("error %v does not wrap ErrFormat", err)
		}
		if idx != nil && idx.Len() != 0 {
			t.Fatalf("failed decode left %d documents", idx.Len())
		}
		return
	}
	again, err := idx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, data) {
		t.Fatalf("decoded index encodes to %d other bytes", len(again))
	}
	text := "a query text of a few words to look for in the decoded index and more words"
	idx.Query(&Doc{Text: text, Shingles: Shingles(text, 0)}, 0.1)
	idx.Add(1<<40, &Doc{Text: text, Shingles: Shingles(text, 0)})
	_ = idx.SizeBytes()
}

func FuzzPMBFUnmarshal(f *testing.F) {
	fresh := func() Index { p, _ := NewPMBF(PMBFOptions{RowBits: 256, Removable: true}); return p }
	fuzzSeeds(f, fresh())
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, fresh, data) })
}

func FuzzSlicedUnmarshal(f *testing.F) {
	fresh := func() Index { s, _ := NewSliced(SlicedOptions{SketchSize: 8, ColumnBits: 64}); return s }
	fuzzSeeds(f, fresh())
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, fresh, data) })
}

func FuzzSDHashUnmarshal(f *testing.F) {
	fresh := func() Index { return NewSDHash() }
	fuzzSeeds(f, fresh())
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, fresh, data) })
}

func FuzzSimHashUnmarshal(f *testing.F) {
	fresh := func() Index { return NewSimHash() }
	fuzzSeeds(f, fresh())
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, fresh, data) })
}

func FuzzMinHashUnmarshal(f *testing.F) {
	fresh := func() Index { m, _ := NewMinHash(MinHashOptions{Hashes: 8, Bands: 4}); return m }
	fuzzSeeds(f, fresh())
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, fresh, data) })
}

// FuzzDecode: any input is either refused with ErrFormat or decodes to an
// index, of its kind, that encodes back to the same bytes and answers. Its
// seeds are snapshots of every kind (MinHash by one permutation hashing
// among them, which has no target of its own).
func FuzzDecode(f *testing.F) {
	for _, idx := range methods(f) {
		fuzzSeeds(f, idx)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecodeWith(t, Decode, data) })
}

// FuzzVisibleText checks that extraction never panics, collapses white
// space, and leaves no markup of hidden elements' bodies behind.
func FuzzVisibleText(f *testing.F) {
	for _, s := range []string{"<p>a  b</p>", "<script>x</script>y", "<template><b>t</b></template>", "<<>>&&", "<svg/>x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		text := VisibleText(page)
		if strings.Contains(text, "  ") || strings.HasPrefix(text, " ") || strings.HasSuffix(text, " ") {
			t.Fatalf("white space not collapsed: %q", text)
		}
		sh := Shingles(text, 0)
		if Resemblance(sh, sh) != 1 {
			t.Fatal("a text does not resemble itself")
		}
	})
}
