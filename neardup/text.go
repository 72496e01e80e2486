package neardup

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/xxh3"
	"golang.org/x/net/html"
)

// VisibleText returns the text of an HTML document a reader sees: the
// character data outside script, style, template, noscript, svg and math
// elements, and outside comments, with every run of white space
// collapsed to one space and none at either end. Markup errors are
// tolerated as browsers tolerate them (the HTML5 tokenizer).
func VisibleText(doc []byte) string {
	z := html.NewTokenizer(bytes.NewReader(doc))
	var b strings.Builder
	b.Grow(len(doc) / 4)
	skip := 0 // depth inside elements whose content is not shown
	space := true
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.TrimRight(b.String(), " ")
		case html.StartTagToken:
			name, _ := z.TagName()
			if hidden(name) {
				skip++
			} else if skip == 0 && block(name) && !space {
				b.WriteByte(' ')
				space = true
			}
		case html.SelfClosingTagToken:
			if name, _ := z.TagName(); skip == 0 && block(name) && !space {
				b.WriteByte(' ')
				space = true
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if hidden(name) && skip > 0 {
				skip--
			} else if skip == 0 && block(name) && !space {
				b.WriteByte(' ')
				space = true
			}
		case html.TextToken:
			if skip > 0 {
				continue
			}
			for _, r := range string(z.Text()) {
				if unicode.IsSpace(r) || r == utf8.RuneError {
					if !space {
						b.WriteByte(' ')
						space = true
					}
					continue
				}
				b.WriteRune(r)
				space = false
			}
		}
	}
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
// consecutive words, joined by a space, hashed with XXH3), sorted and
// without repeats. A text of fewer than w words (but at least one) is one
// shingle. w <= 0 means DefaultShingleWords.
func Shingles(text string, w int) []uint64 {
	if w <= 0 {
		w = DefaultShingleWords
	}
	words := Words(text)
	if len(words) == 0 {
		return nil
	}
	n := max(1, len(words)-w+1)
	out := make([]uint64, 0, n)
	var buf []byte
	for i := range n {
		buf = buf[:0]
		for j := i; j < min(i+w, len(words)); j++ {
			if j > i {
				buf = append(buf, ' ')
			}
			buf = append(buf, words[j]...)
		}
		out = append(out, xxh3.Hash(buf))
	}
	slices.Sort(out)
	return slices.Compact(out)
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
