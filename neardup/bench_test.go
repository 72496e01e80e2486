package neardup

import (
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/internal/mutate"
)

// benchPage is a synthetic HTML page of about 4,000 words.
func benchPage() []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	vocab := mutate.Vocabulary(rng, 20000)
	var b strings.Builder
	b.WriteString("<html><head><title>bench</title><script>var x=1;</script></head><body>")
	for range 40 {
		b.WriteString("<p>")
		b.WriteString(strings.Join(mutate.Text(rng, vocab, 100), " "))
		b.WriteString("</p>\n")
	}
	b.WriteString("</body></html>")
	return []byte(b.String())
}

// BenchmarkDigest measures the per-page work of each method (text
// extraction and shingling included) in MB/s of HTML, beside SHA-1 over
// the same bytes, as seed 003 compares sdhash with SHA-1.
func BenchmarkDigest(b *testing.B) {
	page := benchPage()
	b.Run("sha1", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			sha1.Sum(page)
		}
	})
	b.Run("text+shingles", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			NewDoc(page)
		}
	})
	for name := range methods(b) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			idx := methods(b)[name]
			var i uint64
			for b.Loop() {
				idx.Add(i, NewDoc(page))
				i++
				if idx.Len() >= 1000 { // keep the index small: this measures the digest
					idx = methods(b)[name]
				}
			}
		})
	}
}

// BenchmarkQuery measures one query against collections of 1,000 and
// 10,000 pages (the experiment goes to 100,000).
func BenchmarkQuery(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	vocab := mutate.Vocabulary(rng, 20000)
	docs := make([]*Doc, 10000)
	for i := range docs {
		docs[i] = docOf(mutate.Text(rng, vocab, 300+rng.IntN(300)))
	}
	for _, n := range []int{1000, 10000} {
		for name, idx := range methods(b) {
			for i, d := range docs[:n] {
				idx.Add(uint64(i), d)
			}
			q := docOf(mutate.Words(rng, strings.Fields(docs[n/2].Text), vocab, 0.05))
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				for b.Loop() {
					idx.Query(q, 0.5)
				}
			})
		}
	}
}
