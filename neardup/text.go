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
			text := z.Text()
			for i := 0; i < len(text); {
				c := text[i]
				if c < utf8.RuneSelf {
					i++
					if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
						if !space {
							b.WriteByte(' ')
							space = true
						}
						continue
					}
					b.WriteByte(c)
					space = false
					continue
				}
				r, size := utf8.DecodeRune(text[i:])
				i += size
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
	if w <= 0 {
		w = DefaultShingleWords
	}
	hashes := wordHashes(text)
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

// wordHashes returns the XXH3 of every word of text, as Words splits and
// lower-cases it, without building the words.
func wordHashes(text string) []uint64 {
	out := make([]uint64, 0, len(text)/6)
	var buf []byte
	flush := func() {
		if len(buf) > 0 {
			out = append(out, xxh3.Hash(buf))
			buf = buf[:0]
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				buf = append(buf, c)
			case 'A' <= c && c <= 'Z':
				buf = append(buf, c+'a'-'A')
			default:
				flush()
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		} else {
			flush()
		}
	}
	flush()
	return out
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
