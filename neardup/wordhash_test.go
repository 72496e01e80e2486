package neardup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/xxh3"
)

// feedReference is wordHasher.feed as it was before its in-place fast
// path: every byte of a word copied into buf, one at a time. The
// reference of FuzzWordHasherMatchesReference.
func (h *wordHasher) feedReference(text string) {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				h.buf = append(h.buf, c)
			case 'A' <= c && c <= 'Z':
				h.buf = append(h.buf, c+'a'-'A')
			default:
				h.flushReference()
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			h.buf = utf8.AppendRune(h.buf, unicode.ToLower(r))
		} else {
			h.flushReference()
		}
	}
}

func (h *wordHasher) flushReference() {
	if len(h.buf) > 0 {
		h.out = append(h.out, xxh3.Hash(h.buf))
		h.buf = h.buf[:0]
	}
}

// wordHashes feeds text to a wordHasher in pieces cut at cuts (offsets,
// taken modulo the length), by feed or by feedReference.
func wordHashes(text string, cuts []byte, reference bool) []uint64 {
	var h wordHasher
	at := 0
	for _, c := range cuts {
		if len(text) == 0 {
			break
		}
		end := min(len(text), at+int(c)%(len(text)+1))
		if reference {
			h.feedReference(text[at:end])
		} else {
			h.feed(text[at:end])
		}
		at = end
	}
	if reference {
		h.feedReference(text[at:])
		h.flushReference()
	} else {
		h.feed(text[at:])
		h.flush()
	}
	return h.out
}

var wordHasherCases = []struct {
	text string
	cuts []byte
}{
	{"", nil},
	{"one", nil},
	{"one two", []byte{2}},           // a word cut in two pieces
	{"One TWO thRee", []byte{1, 5}},  // upper case, cut inside
	{"abc", []byte{3}},               // a piece ending at the word's end: the word may run on
	{"abc def", []byte{3, 0, 1}},     // empty pieces
	{"café naïve 東京 ١٢٣", nil},       // a word running into non-ASCII letters
	{"caf\xc3", []byte{4}},           // a rune cut between pieces (two invalid pieces)
	{"a\xffb \u00a0c\u2003d", nil},   // invalid UTF-8 and non-ASCII spaces end words
	{"ÀB1c-Ünï_x9", []byte{2, 3, 4}}, // mixed
}

func TestWordHasherMatchesReference(t *testing.T) {
	for _, c := range wordHasherCases {
		got, want := wordHashes(c.text, c.cuts, false), wordHashes(c.text, c.cuts, true)
		if !slices.Equal(got, want) {
			t.Errorf("feed(%q, cuts %v) = %x, want %x", c.text, c.cuts, got, want)
		}
	}
}

// FuzzWordHasherMatchesReference checks feed, with its in-place fast
// path, against the byte-at-a-time feedReference, over text given in
// pieces.
func FuzzWordHasherMatchesReference(f *testing.F) {
	for _, c := range wordHasherCases {
		f.Add(c.text, c.cuts)
	}
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		if got, want := wordHashes(text, cuts, false), wordHashes(text, cuts, true); !slices.Equal(got, want) {
			t.Errorf("feed(%q, cuts %v) = %x, want %x", text, cuts, got, want)
		}
	})
}

// BenchmarkWordHasher measures word hashing, side by side with the
// byte-at-a-time reference, over the visible text of the documentation
// pages in ../fetch/testdata/pages, in MB/s of text.
func BenchmarkWordHasher(b *testing.B) {
	files, err := filepath.Glob("../fetch/testdata/pages/*.html")
	if err != nil || len(files) == 0 {
		b.Skip("no pages in ../fetch/testdata/pages")
	}
	var texts []string
	var n int64
	for _, name := range files {
		page, err := os.ReadFile(name)
		if err != nil {
			b.Fatal(err)
		}
		texts = append(texts, VisibleText(page))
		n += int64(len(texts[len(texts)-1]))
	}
	for _, v := range []struct {
		name      string
		reference bool
	}{{"baseline=reference", true}, {"feed", false}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(n)
			var h wordHasher
			for b.Loop() {
				for _, text := range texts {
					h.out = h.out[:0]
					if v.reference {
						h.feedReference(text)
						h.flushReference()
					} else {
						h.feed(text)
						h.flush()
					}
				}
			}
		})
	}
}
