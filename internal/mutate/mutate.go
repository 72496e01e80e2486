// Package mutate makes near-duplicate copies of texts at controlled edit
// rates, for the tests and experiments of package neardup.
package mutate

import (
	"math/rand/v2"
	"strings"
)

// Words applies round(rate × len(words)) random edits to a copy of words:
// each inserts a word of vocab, deletes a word, or substitutes one, with
// equal probability.
func Words(rng *rand.Rand, words, vocab []string, rate float64) []string {
	out := append([]string(nil), words...)
	edits := int(rate*float64(len(words)) + 0.5)
	for range edits {
		switch op := rng.IntN(3); {
		case op == 0 || len(out) == 0:
			i := rng.IntN(len(out) + 1)
			out = append(out[:i], append([]string{vocab[rng.IntN(len(vocab))]}, out[i:]...)...)
		case op == 1:
			i := rng.IntN(len(out))
			out = append(out[:i], out[i+1:]...)
		default:
			out[rng.IntN(len(out))] = vocab[rng.IntN(len(vocab))]
		}
	}
	return out
}

// MoveParagraph moves one paragraph of paras to another place.
func MoveParagraph(rng *rand.Rand, paras []string) []string {
	out := append([]string(nil), paras...)
	if len(out) < 2 {
		return out
	}
	i := rng.IntN(len(out))
	p := out[i]
	out = append(out[:i], out[i+1:]...)
	j := rng.IntN(len(out) + 1)
	return append(out[:j], append([]string{p}, out[j:]...)...)
}

// Vocabulary returns n distinct pseudo-words.
func Vocabulary(rng *rand.Rand, n int) []string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 3 + rng.IntN(6) {
			b.WriteByte(letters[rng.IntN(len(letters))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// Text returns n words drawn from vocab with a Zipf-like skew, as in
// natural text.
func Text(rng *rand.Rand, vocab []string, n int) []string {
	z := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	out := make([]string, n)
	for i := range out {
		out[i] = vocab[z.Uint64()]
	}
	return out
}
