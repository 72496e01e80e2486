package fetch

import (
	"bytes"

	"golang.org/x/net/html"
)

// The scanner below finds start tags, their attributes, end tags and the
// text of <style> elements exactly where golang.org/x/net/html's Tokenizer
// finds them, without producing the other tokens: it jumps from '<' to '<'
// with bytes.IndexByte, allocates nothing per tag, and leaves attribute
// values undecoded until the extractor asks for one (decodeAttr). The
// Tokenizer stays the reference: TestExtractMatchesTokenizer,
// FuzzExtractMatchesTokenizer and FuzzDetermineEncoding compare the two. Function and label names
// follow the Tokenizer's (readTag, readScript's states), which follow
// the HTML Standard's tokenization states.

// maxTagName is the longest tag name the extractor looks at ("blockquote"
// is 10 bytes); longer names only matter for their style attribute.
const maxTagName = 16

// tagHandler receives what a scanner finds.
type tagHandler interface {
	// startTag gets a start tag's name, lower-cased (nil when longer than
	// maxTagName), as written, and its attributes, undecoded; false stops
	// the scan.
	startTag(name, rawName []byte, attrs []attr) bool
	// endTag gets an end tag's lower-cased name (nil when long).
	endTag(name []byte)
	// styleText gets the text of a <style> element, as the Tokenizer's
	// Text returns it.
	styleText(text []byte)
}

// scanner holds the state of scan reused from tag to tag.
type scanner struct {
	attrs []attr // the current tag's attributes
	// noscriptRaw reads <noscript> content as raw text, as the Tokenizer
	// does (scripting on). The extractor reads it as markup (scripting
	// off), so that fallback links and images are found; the reference
	// tokenizer path is told so with NextIsNotRawText.
	noscriptRaw bool
	// text, when set, receives the document's character data and tags
	// (ExtractOptions.Text). Without it no text is looked at.
	text TextSink
}

// emit passes the character data b to s.text: as the Tokenizer's Text
// returns it, character references decoded unless raw (the content of
// script, style, xmp, iframe, noembed, noframes and plaintext; title and
// textarea are RCDATA, decoded). Hidden text is not decoded.
func (s *scanner) emit(b []byte, raw bool) {
	if s.text == nil || len(b) == 0 || s.text.Hidden() {
		return
	}
	if !raw && bytes.IndexByte(b, '&') >= 0 {
		b = []byte(html.UnescapeString(string(b)))
	}
	s.text.Text(b)
}

// selfClosing reports whether the start tag ending at b[end-1] ('>') is
// self-closing as Tokenizer.readStartTag decides: a '/' before the '>'
// that is not the last byte of the value of the tag's last attribute
// (the last one the Tokenizer keeps: duplicates are dropped), so that
// "<p a=/>" is not self-closing.
func (s *scanner) selfClosing(b []byte, end int) bool {
	if b[end-2] != '/' {
		return false
	}
	for i := len(s.attrs) - 1; i >= 0; i-- {
		if s.duplicateAttr(i) {
			continue
		}
		v := s.attrs[i].val // a subslice of b
		return end-2 != cap(b)-cap(v)+len(v)-1
	}
	return true
}

// duplicateAttr reports whether an attribute before s.attrs[i] has the
// same name, ASCII case folded as the Tokenizer folds it.
func (s *scanner) duplicateAttr(i int) bool {
	k := s.attrs[i].key
	for _, a := range s.attrs[:i] {
		if len(a.key) != len(k) {
			continue
		}
		same := true
		for j := range k {
			x, y := a.key[j], k[j]
			if 'A' <= x && x <= 'Z' {
				x += 'a' - 'A'
			}
			if 'A' <= y && y <= 'Z' {
				y += 'a' - 'A'
			}
			if x != y {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// scan reports the tags of the UTF-8 (or ASCII-compatible) document b to
// h.
func (s *scanner) scan(h tagHandler, b []byte) {
	var lower [maxTagName]byte
	n := len(b)
	i := 0
	ts := 0 // where the character data not yet passed to s.text starts
	for {
		j := bytes.IndexByte(b[i:], '<')
		if j < 0 {
			s.emit(b[ts:], false)
			return
		}
		lt := i + j
		i = lt + 1
		if i >= n {
			s.emit(b[ts:], false) // a '<' at the end is text
			return
		}
		c := b[i]
		if isLetter(c) || c == '/' || c == '!' || c == '?' {
			// A token starts: the text before it is one text token.
			s.emit(b[ts:lt], false)
			ts = lt
		}
		switch {
		case isLetter(c):
			nameEnd, end, ok := s.readTag(b, i, true)
			if !ok {
				return // the Tokenizer drops a tag cut by the end of input, and stops
			}
			rawName := b[i:nameEnd]
			name := lowerName(&lower, rawName)
			if !h.startTag(name, rawName, s.attrs) {
				return
			}
			if s.text != nil {
				s.text.StartTag(name, s.selfClosing(b, end))
			}
			i, ts = end, end
			raw := rawTextTag(name)
			if raw == "noscript" && !s.noscriptRaw {
				raw = ""
			}
			switch raw {
			case "":
			case "plaintext":
				s.emit(b[i:], true)
				return
			case "script":
				k := scriptEnd(b, i)
				if k < 0 {
					s.emit(b[i:], true)
					return
				}
				s.emit(b[i:k], true)
				i, ts = k, k
			default:
				k := rawTextEnd(b, i, raw)
				text := b[i:]
				if k >= 0 {
					text = b[i:k]
				}
				if raw == "style" && len(text) > 0 {
					h.styleText(rawText(text))
				}
				s.emit(text, raw != "title" && raw != "textarea")
				if k < 0 {
					return
				}
				i, ts = k, k
			}
		case c == '/':
			i++
			if i >= n {
				s.emit(b[ts:], false) // "</" at the end is text
				return
			}
			switch c = b[i]; {
			case c == '>': // "</>" is no token at all
				i++
			case isLetter(c):
				nameEnd, end, ok := s.readTag(b, i, false)
				if !ok {
					return
				}
				name := lowerName(&lower, b[i:nameEnd])
				h.endTag(name)
				if s.text != nil {
					s.text.EndTag(name)
				}
				i = end
			default: // a bogus comment, up to the next '>'
				k := bytes.IndexByte(b[i:], '>')
				if k < 0 {
					return
				}
				i += k + 1
			}
			ts = i
		case c == '!':
			i++
			if i+1 < n && b[i] == '-' && b[i+1] == '-' {
				if i = commentEnd(b, i+2); i < 0 {
					return
				}
				ts = i
				continue
			}
			// A doctype, or a bogus comment (CDATA sections too, outside
			// foreign content): up to the next '>'.
			k := bytes.IndexByte(b[i:], '>')
			if k < 0 {
				return
			}
			i += k + 1
			ts = i
		case c == '?':
			k := bytes.IndexByte(b[i:], '>')
			if k < 0 {
				return
			}
			i += k + 1
			ts = i
		}
		// Otherwise the '<' was text; c is read again.
	}
}

// readTag reads a tag whose name starts at b[i] (a letter, after "<" or
// "</") as Tokenizer.readTag does, and returns the end of its name and the
// index after its '>'. ok is false if the input ends first. With save,
// s.attrs holds its attributes with a non-empty name, undecoded.
func (s *scanner) readTag(b []byte, i int, save bool) (nameEnd, end int, ok bool) {
	n := len(b)
	s.attrs = s.attrs[:0]
	for i++; ; i++ { // readTagName
		if i >= n {
			return 0, 0, false
		}
		c := b[i]
		if isSpace(c) {
			nameEnd = i
			i++
			break
		}
		if c == '/' || c == '>' {
			nameEnd = i
			break
		}
	}
	for {
		for i < n && isSpace(b[i]) {
			i++
		}
		if i >= n {
			return 0, 0, false
		}
		if b[i] == '>' {
			return nameEnd, i + 1, true
		}
		// readTagAttrKey: up to whitespace, '/', '>' or a '=' that is
		// not the first character.
		ks := i
		for ; ; i++ {
			if i >= n {
				return 0, 0, false
			}
			c := b[i]
			if isSpace(c) || c == '/' || c == '>' || (c == '=' && i != ks) {
				break
			}
		}
		ke := i
		// readTagAttrVal
		vs, ve, quote := i, i, byte(0)
		for i < n && isSpace(b[i]) {
			i++
		}
		if i >= n {
			return 0, 0, false
		}
		switch b[i] {
		case '/': // consumed: the self-closing flag, not part of a value
			i++
		case '=':
			i++
			for i < n && isSpace(b[i]) {
				i++
			}
			if i >= n {
				return 0, 0, false
			}
			switch q := b[i]; q {
			case '>':
			case '"', '\'':
				k := bytes.IndexByte(b[i+1:], q)
				if k < 0 {
					return 0, 0, false
				}
				vs, ve, quote = i+1, i+1+k, q
				i += k + 2
			default:
				vs = i
				for i++; ; i++ {
					if i >= n {
						return 0, 0, false
					}
					c := b[i]
					if isSpace(c) {
						ve = i
						i++
						break
					}
					if c == '>' {
						ve = i
						break
					}
				}
			}
		}
		if save && ke > ks {
			s.attrs = append(s.attrs, attr{key: b[ks:ke], val: b[vs:ve], raw: true, quote: quote})
		}
	}
}

// commentEnd returns the index after the end of a comment whose text
// starts at b[s] (after "<!--"), or -1 if it runs to the end of input.
// As in Tokenizer.readComment, a comment ends at "-->", at "--!>", or at
// a '>' preceded only by dashes ("<!-->", "<!--->").
func commentEnd(b []byte, s int) int {
	for p := s; ; p++ {
		k := bytes.IndexByte(b[p:], '>')
		if k < 0 {
			return -1
		}
		p += k
		if (p-2 >= s && b[p-1] == '-' && b[p-2] == '-') ||
			(p-3 >= s && b[p-1] == '!' && b[p-2] == '-' && b[p-3] == '-') ||
			onlyDashes(b[s:p]) {
			return p + 1
		}
	}
}

func onlyDashes(b []byte) bool {
	for _, c := range b {
		if c != '-' {
			return false
		}
	}
	return true
}

// rawTextTag returns the lower-cased name of a start tag after which the
// Tokenizer reads raw text up to the matching end tag, or "".
func rawTextTag(name []byte) string {
	switch string(name) {
	case "iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp":
		return string(name) // one of the constants: no allocation
	}
	return ""
}

// endTagAt matches "name" (lower case) case-insensitively at b[i], just
// after "</", followed by whitespace, '/' or '>', as
// Tokenizer.readRawEndTag does. eof reports that the input ended before
// the match could be decided.
func endTagAt(b []byte, i int, name string) (match, eof bool) {
	if i+len(name) >= len(b) {
		// Too short to decide: a match needs the delimiter too.
		for k := 0; i+k < len(b) && k < len(name); k++ {
			if c := b[i+k]; c != name[k] && c != name[k]-('a'-'A') {
				return false, false
			}
		}
		return false, true
	}
	for k := 0; k < len(name); k++ {
		if c := b[i+k]; c != name[k] && c != name[k]-('a'-'A') {
			return false, false
		}
	}
	switch b[i+len(name)] {
	case ' ', '\n', '\r', '\t', '\f', '/', '>':
		return true, false
	}
	return false, false
}

// rawTextEnd returns the index of the "</name" that ends the raw text or
// RCDATA starting at b[i], or -1 if the text runs to the end of input
// (Tokenizer.readRawOrRCDATA).
func rawTextEnd(b []byte, i int, name string) int {
	for {
		k := bytes.IndexByte(b[i:], '<')
		if k < 0 {
			return -1
		}
		i += k + 1
		if i >= len(b) {
			return -1
		}
		if b[i] != '/' {
			continue
		}
		i++
		match, eof := endTagAt(b, i, name)
		if match {
			return i - 2
		}
		if eof {
			return -1
		}
	}
}

// The states of script data (HTML Standard 13.2.5.4-13.2.5.31), as
// Tokenizer.readScript implements them.
const (
	scriptData = iota
	scriptEscaped
	scriptEscapedDash
	scriptEscapedDashDash
	scriptDoubleEscaped
	scriptDoubleEscapedDash
	scriptDoubleEscapedDashDash
)

// scriptEnd returns the index of the "</script" that ends the script data
// starting at b[i], or -1 if the data runs to the end of input. It follows
// Tokenizer.readScript: "<!--" in a script escapes it, and a "<script"
// inside such an escape hides the next "</script>". The Tokenizer's one
// departure from the HTML Standard is kept: in the escaped states, '<'
// followed by anything but '/' or a letter returns to script data.
func scriptEnd(b []byte, i int) int {
	state := scriptData
	for {
		if state == scriptData {
			k := bytes.IndexByte(b[i:], '<')
			if k < 0 || i+k+1 >= len(b) {
				return -1
			}
			i += k + 2
			switch b[i-1] {
			case '/':
				if match, eof := endTagAt(b, i, "script"); match {
					return i - 2
				} else if eof {
					return -1
				}
			case '!':
				if i+1 >= len(b) {
					return -1
				}
				if b[i] == '-' && b[i+1] == '-' {
					i += 2
					state = scriptEscapedDashDash
				}
			default:
				i-- // read again
			}
			continue
		}
		if i >= len(b) {
			return -1
		}
		c := b[i]
		i++
		double := state >= scriptDoubleEscaped
		base := scriptEscaped
		if double {
			base = scriptDoubleEscaped
		}
		switch c {
		case '-':
			if state < base+2 {
				state++ // escaped, dash, dash dash
			}
		case '>':
			if state == base+2 {
				state = scriptData // "-->" ends the escape
			} else {
				state = base
			}
		case '<':
			if i >= len(b) {
				return -1
			}
			c = b[i]
			switch {
			case c == '/':
				match, eof := endTagAt(b, i+1, "script")
				switch {
				case eof:
					return -1
				case match && !double:
					return i - 1
				case match: // "</script>" ends the double escape
					i += 1 + len("script") + 1
					state = scriptEscaped
				default:
					i++
					state = base
				}
			case isLetter(c) && !double:
				// "<script" followed by a delimiter starts a double
				// escape.
				match, eof := endTagAt(b, i, "script")
				switch {
				case eof:
					return -1
				case match:
					i += len("script") + 1
					state = scriptDoubleEscaped
				default:
					state = scriptEscaped
				}
			case double:
				state = scriptDoubleEscaped
			default:
				state = scriptData
			}
		default:
			state = base
		}
	}
}

func isLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// lowerName lower-cases an ASCII tag name into buf, or returns nil when it
// is longer than buf (no tag the extractor looks at is that long).
func lowerName(buf *[maxTagName]byte, name []byte) []byte {
	if len(name) > len(buf) {
		return nil
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(name)]
}
