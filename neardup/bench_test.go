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

// BenchmarkQuery measures one query against collections of 1,000, 10,000
// and 100,000 pages of 300-600 words (pmbf and sdhash, which compare a
// query with every page, up to 10,000). The pages are generated, added and
// dropped: the index keeps only its digests.
func BenchmarkQuery(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	vocab := mutate.Vocabulary(rng, 20000)
	gen := func() *Doc { return docOf(mutate.Text(rng, vocab, 300+rng.IntN(300))) }
	idxs := methods(b)
	var added int
	var middle *Doc
	for _, n := range []int{1000, 10000, 100000} {
		for ; added < n; added++ {
			d := gen()
			if added == n/2 {
				middle = d
			}
			for name, idx := range idxs {
				if n <= 10000 || (name != "pmbf" && name != "sdhash") {
					idx.Add(uint64(added), d)
				}
			}
		}
		q := docOf(mutate.Words(rng, strings.Fields(middle.Text), vocab, 0.05))
		for name, idx := range idxs {
			if idx.Len() != n {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				for b.Loop() {
					if len(idx.Query(q, 0.5)) == 0 {
						b.Fatal("the 5% edit of an indexed page found nothing")
					}
				}
			})
		}
	}
}

// BenchmarkShingler is the crawler's one-pass shingling of a page, with a
// new Shingler per page (grown as the crawler grows it, to a quarter of
// the HTML's bytes over 6) and with one Shingler Reset between pages, as
// the crawler pools them.
func BenchmarkShingler(b *testing.B) {
	page := benchPage()
	b.Run("new", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			s := new(Shingler)
			s.Grow(len(page) / 4)
			tokenize(page, s)
			s.Shingles(0)
		}
	})
	b.Run("reset", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		s := new(Shingler)
		for b.Loop() {
			s.Grow(len(page) / 4)
			tokenize(page, s)
			s.Shingles(0)
			s.Reset()
		}
	})
}

// BenchmarkWordHasher measures the word hashing of a page's visible text
// alone, for English text (benchPage's) and for text in several scripts
// with capitals, as the Debian Handbook's translations have; v0 is the
// byte-at-a-time reference (feedV0).
func BenchmarkWordHasher(b *testing.B) {
	english := VisibleText(benchPage())
	var mixed strings.Builder
	for mixed.Len() < len(english) {
		mixed.WriteString("Le Manuel de l'Administrateur Debian: Ελληνικά κείμενα, Русский текст, 日本語のテキスト, العربية 2026. APT and dpkg install packages. ")
	}
	for _, c := range []struct{ name, text string }{{"english", english}, {"mixed", mixed.String()}} {
		for _, v := range []struct {
			name string
			feed func(*wordHasher, string)
		}{{"v0", feedV0}, {"feed", (*wordHasher).feed}} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.text)))
				var h wordHasher
				for b.Loop() {
					h.out = h.out[:0]
					v.feed(&h, c.text)
					h.flush()
				}
			})
		}
	}
}
