package neardup

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/zeebo/xxh3"
	"golang.org/x/net/html"
)

// VisibleText returns the text of an HTML document a reader sees: the
// character data outside script, style, template, noscript, svg and math
// elements, and outside comments, with every run of white space
// collapsed to one space and none at either end. Markup errors are
// tolerated as browsers tolerate them (the HTML5 tokenizer).
//
// A caller that tokenizes the page anyway (a crawler extracting its
// links) can build the same text in that pass with a TextBuilder.
func VisibleText(doc []byte) string {
	var t TextBuilder
	t.Grow(len(doc) / 4)
	tokenize(doc, &t)
	return t.String()
}

// tokenSink is what TextBuilder and Shingler take from a tokenizer.
type tokenSink interface {
	StartTag(name []byte, selfClosing bool)
	EndTag(name []byte)
	Text(text []byte)
	Hidden() bool
}

// tokenize feeds the tokens of doc, as x/net/html's Tokenizer reads them,
// to sink.
func tokenize(doc []byte, sink tokenSink) {
	z := html.NewTokenizer(bytes.NewReader(doc))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			sink.StartTag(name, false)
		case html.SelfClosingTagToken:
			name, _ := z.TagName()
			sink.StartTag(name, true)
		case html.EndTagToken:
			name, _ := z.TagName()
			sink.EndTag(name)
		case html.TextToken:
			if !sink.Hidden() {
				sink.Text(z.Text())
			}
		}
	}
}

// A TextBuilder assembles VisibleText from a document's tokens in
// document order, for callers that tokenize the HTML themselves: tag
// names lower-cased, text with its character references decoded (what
// x/net/html's Tokenizer returns). The zero value is ready to use.
type TextBuilder struct {
	visibility
	b     []byte
	space bool // b ends in a space, or is empty
}

// Grow reserves room for n more bytes of text.
func (t *TextBuilder) Grow(n int) { t.b = slices.Grow(t.b, n) }

// StartTag notes a start tag; selfClosing for "<name/>", which opens
// nothing.
func (t *TextBuilder) StartTag(name []byte, selfClosing bool) {
	if t.start(name, selfClosing) {
		t.sep()
	}
}

// EndTag notes an end tag.
func (t *TextBuilder) EndTag(name []byte) {
	if t.end(name) {
		t.sep()
	}
}

func (t *TextBuilder) sep() {
	if !t.space && len(t.b) > 0 {
		t.b = append(t.b, ' ')
		t.space = true
	}
}

// visibility follows which elements a document's text is in: those whose
// content is not shown (hidden), and those that separate words (block).
type visibility struct {
	skip int // depth inside elements whose content is not shown
}

// Hidden reports whether text now would not be shown: the caller may skip
// decoding it.
func (v *visibility) Hidden() bool { return v.skip > 0 }

// start notes a start tag and reports whether it separates words.
func (v *visibility) start(name []byte, selfClosing bool) bool {
	if !selfClosing && hidden(name) {
		v.skip++
		return false
	}
	return v.skip == 0 && block(name)
}

// end notes an end tag and reports whether it separates words.
func (v *visibility) end(name []byte) bool {
	if hidden(name) && v.skip > 0 {
		v.skip--
		return false
	}
	return v.skip == 0 && block(name)
}

// Text adds character data, unless it is inside a hidden element.
func (t *TextBuilder) Text(text []byte) {
	if t.skip > 0 {
		return
	}
	if len(t.b) == 0 {
		t.space = true
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
				if !t.space {
					t.b = append(t.b, ' ')
					t.space = true
				}
				continue
			}
			t.b = append(t.b, c)
			t.space = false
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		i += size
		if unicode.IsSpace(r) || r == utf8.RuneError {
			if !t.space {
				t.b = append(t.b, ' ')
				t.space = true
			}
			continue
		}
		t.b = append(t.b, text[i-size:i]...)
		t.space = false
	}
}

// String returns the text so far, without a trailing space.
func (t *TextBuilder) String() string {
	return string(bytes.TrimRight(t.b, " "))
}

// hidden reports whether an element's content is not shown as text.
func hidden(name []byte) bool {
	switch string(name) {
	case "script", "style", "template", "noscript", "svg", "math", "iframe", "object":
		return true
	}
	return false
}

// block reports whether an element separates words (so "a<br>b" is two
// words, "a<b>b</b>" one).
func block(name []byte) bool {
	switch string(name) {
	case "br", "p", "div", "li", "ul", "ol", "td", "th", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6",
		"section", "article", "header", "footer", "nav", "aside", "main", "pre", "blockquote", "hr", "dd", "dt", "dl", "title", "option":
		return true
	}
	return false
}

// DefaultShingleWords is the shingle width w of Shingles when 0 is given.
const DefaultShingleWords = 4

// Words splits text into lower-cased words: maximal runs of letters and
// digits.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
}

// Shingles returns the set of hashed w-word shingles of text (w
// consecutive words; each word hashed with XXH3, the w word hashes
// chained through a 64-bit mixer), sorted and without repeats. A text of
// fewer than w words (but at least one) is one shingle. w <= 0 means
// DefaultShingleWords.
func Shingles(text string, w int) []uint64 {
	out := ShingleHashes(text, w)
	slices.Sort(out)
	return slices.Compact(out)
}

// ShingleHashes returns the hashes of Shingles in text order, repeats
// included: what Sliced and MinHash need, without the sort.
func ShingleHashes(text string, w int) []uint64 {
	var h wordHasher
	h.out = make([]uint64, 0, len(text)/6)
	h.feed(text)
	h.flush()
	return shingle(h.out, w)
}

// shingle turns word hashes into w-word shingle hashes, in place.
func shingle(hashes []uint64, w int) []uint64 {
	if w <= 0 {
		w = DefaultShingleWords
	}
	if len(hashes) == 0 {
		return nil
	}
	n := max(1, len(hashes)-w+1)
	for i := range n {
		h := uint64(0x9e3779b97f4a7c15)
		for _, wh := range hashes[i:min(i+w, len(hashes))] {
			h = mix64(h ^ wh)
		}
		hashes[i] = h // hashes[i] is not read again: later shingles start after it
	}
	return hashes[:n]
}

// wordHasher hashes the words of a text given in pieces: a word may run
// on from one piece into the next, as "a<b>b</b>" is one word.
type wordHasher struct {
	buf   []byte   // the current word, lower-cased
	out   []uint64 // the XXH3 of each word ended so far
	lower [32]byte // a whole ASCII word with capitals, lower-cased
}

// flush ends the current word.
func (h *wordHasher) flush() {
	if len(h.buf) > 0 {
		h.out = append(h.out, xxh3.Hash(h.buf))
		h.buf = h.buf[:0]
	}
}

// byteWord classifies bytes for feed: 0 is an ASCII byte that ends a
// word, 1 a lower-case ASCII letter or digit, 2 an upper-case ASCII
// letter, 4 a byte of a multi-byte UTF-8 sequence (or an invalid one).
// For every byte of class 1 or 2, b|0x20 is its lower case.
var byteWord = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			t[c] = 1
		case 'A' <= c && c <= 'Z':
			t[c] = 2
		case c >= utf8.RuneSelf:
			t[c] = 4
		}
	}
	return t
}()

// bmpWords holds, for each rune of the Basic Multilingual Plane, its
// lower case, with bmpWord set when it is a letter or a number: one load
// in place of unicode's table searches, which made word hashing 2.2x
// slower on text in several scripts (BenchmarkWordHasher). 256 KiB,
// built on the first non-ASCII word.
var bmpWords = sync.OnceValue(func() *[0x10000]uint32 {
	t := new([0x10000]uint32)
	for r := range rune(len(t)) {
		t[r] = uint32(unicode.ToLower(r))
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			t[r] |= bmpWord
		}
	}
	return t
})

const bmpWord = 1 << 31

// wordRune reports whether r is part of a word (a letter or a number)
// and returns it lower-cased.
func wordRune(r rune) (rune, bool) {
	if r < 0x10000 {
		v := bmpWords()[r]
		return rune(v &^ bmpWord), v&bmpWord != 0
	}
	return unicode.ToLower(r), unicode.IsLetter(r) || unicode.IsNumber(r)
}

// feed adds text, the next piece of the document's text, to the words.
// A run of ASCII letters and digits that lies whole in text is hashed in
// place, or lower-cased on the stack when it has capitals; anything else
// goes through buf.
func (h *wordHasher) feed(text string) {
	for i := 0; i < len(text); {
		c := byteWord[text[i]]
		if c == 0 {
			if len(h.buf) > 0 {
				h.flush()
			}
			i++
			continue
		}
		if c == 4 {
			r, size := utf8.DecodeRuneInString(text[i:])
			i += size
			if lower, ok := wordRune(r); ok {
				h.buf = utf8.AppendRune(h.buf, lower)
			} else {
				h.flush()
			}
			continue
		}
		// A run of ASCII letters and digits: text[i:j]; kinds&2 is set
		// when it holds a capital (class 2).
		j, kinds := i+1, c
		for ; j < len(text); j++ {
			k := byteWord[text[j]]
			if k&3 == 0 {
				break
			}
			kinds |= k
		}
		if len(h.buf) == 0 && j < len(text) && byteWord[text[j]] == 0 {
			// The word starts and ends here.
			if kinds&2 == 0 {
				h.out = append(h.out, xxh3.HashString(text[i:j]))
				i = j
				continue
			}
			if j-i <= len(h.lower) {
				w := h.lower[:j-i]
				for x := range w {
					w[x] = text[i+x] | 0x20
				}
				h.out = append(h.out, xxh3.Hash(w))
				i = j
				continue
			}
		}
		for ; i < j; i++ {
			h.buf = append(h.buf, text[i]|0x20)
		}
	}
}

// A Shingler computes ShingleHashes(VisibleText(doc), w) from a
// document's tokens as they come, in one pass, without building the text
// (VisibleText and a second pass over it cost the crawler more than the
// index query). Its methods are those of TextBuilder, so a
// link extractor can feed it (fetch.ExtractOptions.Text). The zero value
// is ready to use.
type Shingler struct {
	visibility
	words wordHasher
}

// Grow reserves room for the words of n more bytes of text.
func (s *Shingler) Grow(n int) { s.words.out = slices.Grow(s.words.out, n/6) }

// StartTag notes a start tag; selfClosing for "<name/>", which opens
// nothing.
func (s *Shingler) StartTag(name []byte, selfClosing bool) {
	if s.start(name, selfClosing) {
		s.words.flush()
	}
}

// EndTag notes an end tag.
func (s *Shingler) EndTag(name []byte) {
	if s.end(name) {
		s.words.flush()
	}
}

// Text adds character data, unless it is inside a hidden element.
func (s *Shingler) Text(text []byte) {
	if s.skip == 0 {
		// feed only reads text, and only during the call.
		s.words.feed(unsafe.String(unsafe.SliceData(text), len(text)))
	}
}

// Shingles ends the text and returns ShingleHashes of it: the w-word
// shingle hashes in text order, repeats included. w <= 0 means
// DefaultShingleWords. The Shingler is not used again until Reset.
func (s *Shingler) Shingles(w int) []uint64 {
	s.words.flush()
	return shingle(s.words.out, w)
}

// Reset empties the Shingler for another document and keeps the memory
// it grew for the last one (the crawler pools its Shinglers: the growing
// word hashes were 18% of the bytes a crawl allocated). The slice
// Shingles returned before is overwritten by the next document's hashes.
func (s *Shingler) Reset() {
	s.visibility = visibility{}
	s.words.buf = s.words.buf[:0]
	s.words.out = s.words.out[:0]
}

// Resemblance is the exact Jaccard resemblance |A ∩ B| / |A ∪ B| of two
// shingle sets, sorted and without repeats as Shingles returns them
// (Broder 1997); two empty sets resemble each other fully. It is the
// reference every Index's estimate is tested against.
func Resemblance(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
