// Package mutate makes near-duplicate copies of texts at controlled edit
// rates, for the tests and experiments of package neardup.
package mutate

import (
	"math/rand/v2"
	"strings"
)

// Words applies round(rate × len(words)) random edits to a copy of words:
// each inserts a word of vocab, deletes a word, or substitutes one, with
// equal probability, at a random position of the original. It takes one
// pass (an edit list sorted by position), not a slice copy per edit.
func Words(rng *rand.Rand, words, vocab []string, rate float64) []string {
	edits := int(rate*float64(len(words)) + 0.5)
	if len(words) == 0 {
		out := make([]string, 0, edits)
		for range edits {
			out = append(out, vocab[rng.IntN(len(vocab))])
		}
		return out
	}
	// op[i]: what happens at word i. 0 none, 1 delete, 2 substitute;
	// ins[i] words inserted before word i (ins[len] at the end).
	op := make([]uint8, len(words))
	ins := make([]int, len(words)+1)
	for range edits {
		switch rng.IntN(3) {
		case 0:
			ins[rng.IntN(len(words)+1)]++
		case 1:
			op[rng.IntN(len(words))] = 1
		default:
			if i := rng.IntN(len(words)); op[i] == 0 {
				op[i] = 2
			}
		}
	}
	out := make([]string, 0, len(words)+edits)
	for i := 0; i <= len(words); i++ {
		for range ins[i] {
			out = append(out, vocab[rng.IntN(len(vocab))])
		}
		if i == len(words) {
			break
		}
		switch op[i] {
		case 0:
			out = append(out, words[i])
		case 2:
			out = append(out, vocab[rng.IntN(len(vocab))])
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
