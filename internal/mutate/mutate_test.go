package mutate

import (
	"math/rand/v2"
	"testing"
)

// Words makes about rate × n edits: the length changes by inserts minus
// deletes, and an unedited word keeps its order.
func TestWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	vocab := Vocabulary(rng, 1000)
	words := Text(rng, vocab, 2000)
	if got := Words(rng, words, vocab, 0); len(got) != len(words) {
		t.Fatalf("rate 0 changed the length to %d", len(got))
	}
	for _, rate := range []float64{0.01, 0.1, 0.4} {
		got := Words(rng, words, []string{"#edit"}, rate)
		// Longest common subsequence bound: at least n - edits words
		// survive in order.
		kept, j := 0, 0
		for _, w := range got {
			if w == "#edit" {
				continue
			}
			for j < len(words) && words[j] != w {
				j++
			}
			if j < len(words) {
				kept++
				j++
			}
		}
		edits := int(rate*float64(len(words)) + 0.5)
		if kept < len(words)-edits {
			t.Errorf("rate %g: %d words kept in order, want at least %d", rate, kept, len(words)-edits)
		}
		if d := len(got) - len(words); d > edits || -d > edits {
			t.Errorf("rate %g: length changed by %d with %d edits", rate, d, edits)
		}
	}
	if got := Words(rng, nil, vocab, 0.5); len(got) != 0 {
		t.Errorf("empty text: %v", got)
	}
}
