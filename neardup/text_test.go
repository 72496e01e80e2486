package neardup

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/xxh3"
)

func TestVisibleText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<html><head><title>T</title><style>p{}</style></head><body><p>Hello,\n\n  world</p></body></html>", "T Hello, world"},
		{"<script>var x = '<p>no</p>';</script>a<template><p>hidden</p></template>b", "ab"},
		{"one<br>two<b>three</b>four", "one twothreefour"},
		{"<noscript>enable js</noscript><svg><text>x</text></svg>shown", "shown"},
		{"<!-- comment -->&amp; &lt;tag&gt;", "& <tag>"},
		{"<p>unclosed <div>nested", "unclosed nested"},
		{"", ""},
		{"   \t\n ", ""},
		{"<br/>a<br/>", "a"},
	} {
		if got := VisibleText([]byte(tc.in)); got != tc.want {
			t.Errorf("VisibleText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// resemblanceRef is the slowest obvious Jaccard: maps of the shingle
// strings themselves, not their hashes.
func resemblanceRef(a, b string, w int) float64 {
	set := func(s string) map[string]bool {
		words := Words(s)
		m := map[string]bool{}
		if len(words) > 0 && len(words) < w {
			m[strings.Join(words, " ")] = true
		}
		for i := 0; i+w <= len(words); i++ {
			m[strings.Join(words[i:i+w], " ")] = true
		}
		return m
	}
	sa, sb := set(a), set(b)
	if len(sa) == 0 && len(sb) == 0 {
		return 1
	}
	inter := 0
	for k := range sa {
		if sb[k] {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

func TestResemblanceMatchesReference(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	vocab := []string{"a", "b", "c", "d", "e", "f"}
	for range 500 {
		gen := func() string {
			words := make([]string, rng.IntN(30))
			for i := range words {
				words[i] = vocab[rng.IntN(len(vocab))]
			}
			return strings.Join(words, " ")
		}
		a, b := gen(), gen()
		w := 1 + rng.IntN(4)
		sa, sb := Shingles(a, w), Shingles(b, w)
		if !slices.IsSorted(sa) || len(slices.Compact(slices.Clone(sa))) != len(sa) {
			t.Fatalf("Shingles(%q) not a sorted set", a)
		}
		got, want := Resemblance(sa, sb), resemblanceRef(a, b, w)
		if got != want {
			t.Fatalf("Resemblance(%q, %q, w=%d) = %v, want %v", a, b, w, got, want)
		}
		if Resemblance(sb, sa) != got || Resemblance(sa, sa) != 1 {
			t.Fatalf("Resemblance not symmetric or not 1 on itself: %q %q", a, b)
		}
	}
}

func TestShinglesCase(t *testing.T) {
	if !slices.Equal(Shingles("The Quick, brown fox!", 2), Shingles("the quick brown   FOX", 2)) {
		t.Error("shingles depend on case or punctuation")
	}
	if got := len(Shingles("one two", 4)); got != 1 {
		t.Errorf("a text shorter than w has %d shingles, want 1", got)
	}
	if Shingles("", 4) != nil {
		t.Error("empty text has shingles")
	}
}

// shinglerCases are documents for the Shingler's differential tests: words
// that run across inline tags, block tags that separate them, hidden
// elements, self-closing hidden elements, references and non-ASCII text.
var shinglerCases = []string{
	"",
	"one",
	"Hello, World! a<b>b</b>c d<br>e f<p>g</p>h",
	"<script>x y z</script>visible <svg/>after <svg><text>hidden</text></svg> shown",
	"<title>Title &amp; More</title><style>.a{}</style><template>no</template><noscript>no</noscript>yes",
	"Ünïcödé WÖRDS café naïve 東京 ١٢٣ \xff\xfe broken \u00a0nbsp\u2003em",
	"<div>one two three four five six seven eight nine ten</div><div>one two three four</div>",
}

func TestShinglerMatchesVisibleText(t *testing.T) {
	for _, doc := range shinglerCases {
		for _, w := range []int{0, 1, 3} {
			var s Shingler
			tokenize([]byte(doc), &s)
			got, want := s.Shingles(w), ShingleHashes(VisibleText([]byte(doc)), w)
			if !slices.Equal(got, want) {
				t.Errorf("Shingler on %q (w=%d): %d shingles %x, want %d %x", doc, w, len(got), got, len(want), want)
			}
		}
	}
}

// A Shingler Reset after each document gives what a new one gives, even
// after a document that ends inside a hidden element or a word.
func TestShinglerReset(t *testing.T) {
	var s Shingler
	docs := append(slices.Clone(shinglerCases), "<script>open <b>word", "<svg><svg>deep", "trailing WORD")
	for round := range 2 {
		for _, doc := range docs {
			tokenize([]byte(doc), &s)
			got := slices.Clone(s.Shingles(0))
			s.Reset()
			var fresh Shingler
			tokenize([]byte(doc), &fresh)
			if want := fresh.Shingles(0); !slices.Equal(got, want) {
				t.Errorf("round %d: reset Shingler on %q: %x, want %x", round, doc, got, want)
			}
		}
	}
}

// FuzzShinglerMatchesVisibleText checks the one-pass Shingler, Reset after
// a document left unfinished, against ShingleHashes of VisibleText, the
// two-pass reference.
func FuzzShinglerMatchesVisibleText(f *testing.F) {
	for _, doc := range shinglerCases {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var s Shingler
		tokenize([]byte("<script>open <b>Word"), &s)
		s.Shingles(0)
		s.Reset()
		tokenize(doc, &s)
		if got, want := s.Shingles(0), ShingleHashes(VisibleText(doc), 0); !slices.Equal(got, want) {
			t.Errorf("Shingler on %q: %x, want %x", doc, got, want)
		}
	})
}

// feedV0 is wordHasher.feed before it hashed ASCII words in place: one
// byte or rune at a time through buf. It is the reference feed is
// checked against.
func feedV0(h *wordHasher, text string) {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				h.buf = append(h.buf, c)
			case 'A' <= c && c <= 'Z':
				h.buf = append(h.buf, c+'a'-'A')
			default:
				if len(h.buf) > 0 {
					h.out = append(h.out, xxh3.Hash(h.buf))
					h.buf = h.buf[:0]
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			h.buf = utf8.AppendRune(h.buf, unicode.ToLower(r))
		} else if len(h.buf) > 0 {
			h.out = append(h.out, xxh3.Hash(h.buf))
			h.buf = h.buf[:0]
		}
	}
}

// checkFeed compares feed with feedV0 on text given in pieces of n bytes
// (n <= 0: whole).
func checkFeed(t *testing.T, text string, n int) {
	t.Helper()
	var got, want wordHasher
	for rest := text; len(rest) > 0; {
		k := len(rest)
		if n > 0 {
			k = min(k, n)
		}
		got.feed(rest[:k])
		feedV0(&want, rest[:k])
		rest = rest[k:]
	}
	got.flush()
	want.flush()
	if !slices.Equal(got.out, want.out) {
		t.Errorf("feed of %q in pieces of %d: %x, want %x", text, n, got.out, want.out)
	}
}

// Words that start, end or change case at a piece's edge, or run on into
// non-ASCII letters, hash as they did one byte at a time.
func TestWordHasherPieces(t *testing.T) {
	texts := append(slices.Clone(shinglerCases),
		"lower UPPER Mixed digits123 a1B2 café caféS Straße ΣΊΣΥΦΟΣ x",
		"word", "word ", " word", "wordÉ", "Éword", "a-b_c.d", "ab\xc3\xa9cd \xc3 x\xa9y",
		strings.Repeat("segment ", 50)+"END",
		// Runs across the eight-byte steps of feed: capitals, a digit,
		// a non-ASCII byte and an end at every offset of a word.
		"abcdefgh abcdefghi abcdefghijklmnopq ABCDEFGHIJKLMNOPQ abcdefghijklmnoP Pabcdefghijklmno",
		"a0123456789z abcdefg@ abcdefgh[ abcdefgh` abcdefgh{ abcdefg\x7f abcdefgé abcdefghé abcdefghijklmnoé",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	for _, text := range texts {
		for _, n := range []int{0, 1, 2, 3, 5, 7, 64} {
			checkFeed(t, text, n)
		}
	}
}

// FuzzWordHasher checks feed against feedV0 on text cut into pieces.
func FuzzWordHasher(f *testing.F) {
	for _, doc := range shinglerCases {
		f.Add(doc, uint8(0))
		f.Add(doc, uint8(3))
	}
	f.Fuzz(func(t *testing.T, text string, n uint8) {
		checkFeed(t, text, int(n))
	})
}

// wordRune agrees with unicode on every rune.
func TestWordRune(t *testing.T) {
	for r := range rune(unicode.MaxRune + 2) {
		lower, ok := wordRune(r)
		if want, wantOK := unicode.ToLower(r), unicode.IsLetter(r) || unicode.IsNumber(r); lower != want || ok != wantOK {
			t.Fatalf("wordRune(%U) = %U, %v; want %U, %v", r, lower, ok, want, wantOK)
		}
	}
}
