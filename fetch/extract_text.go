package fetch

import (
	"bytes"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// utf8Body returns body as the UTF-8 text to scan, decoded from the
// encoding charset.DetermineEncoding finds (determineEncoding) (BOM, contentType's charset, a
// <meta> in the first 1024 bytes, else UTF-8 if those bytes are valid
// UTF-8 with some non-ASCII, else windows-1252), as charset.NewReader
// would decode it, but without copying a body that decoding leaves as it
// is: UTF-8 (declared or sniffed), or only ASCII bytes in an encoding that
// maps them to themselves. Such a body may still hold invalid UTF-8; the
// extractor checks the values it keeps (validUTF8String), so the result
// is the same as transcoding everything first (transcoding
// bodies that were already UTF-8 cost 4% of a crawl's CPU).
func utf8Body(body []byte, contentType string) []byte {
	e, name, _ := determineEncoding(body, contentType)
	if e == encoding.Nop || name == "utf-8" || (asciiCompatible(name) && isASCII(body)) {
		return body
	}
	out, err := e.NewDecoder().Bytes(body)
	if err != nil {
		// Keep what decodes, as the tokenizer keeps the tokens read
		// before its reader fails.
		out, _ = io.ReadAll(transform.NewReader(bytes.NewReader(body), e.NewDecoder()))
	}
	return out
}

// determineEncoding is charset.DetermineEncoding with its <meta> prescan
// done by the scanner instead of a Tokenizer, which allocated 5 KB per
// page; FuzzDetermineEncoding checks that the two agree.
func determineEncoding(content []byte, contentType string) (e encoding.Encoding, name string, certain bool) {
	if len(content) > 1024 {
		content = content[:1024]
	}
	for _, b := range [...]struct{ bom, enc string }{
		{"\xfe\xff", "utf-16be"}, {"\xff\xfe", "utf-16le"}, {"\xef\xbb\xbf", "utf-8"},
	} {
		if bytes.HasPrefix(content, []byte(b.bom)) {
			e, name = charset.Lookup(b.enc)
			return e, name, true
		}
	}
	if strings.IndexByte(contentType, ';') >= 0 { // no parameters, no charset
		if _, params, err := mime.ParseMediaType(contentType); err == nil {
			if cs, ok := params["charset"]; ok {
				if e, name = charset.Lookup(cs); e != nil {
					return e, name, true
				}
			}
		}
	}
	if len(content) > 0 {
		p := charsetPrescan{}
		s := scanner{noscriptRaw: true}
		s.scan(&p, content)
		if p.e != nil {
			return p.e, p.name, false
		}
	}
	// Valid UTF-8 with some non-ASCII, once a rune cut at the end is
	// left out.
	for i := len(content) - 1; i >= 0 && i > len(content)-4; i-- {
		if b := content[i]; b < 0x80 {
			break
		} else if utf8.RuneStart(b) {
			content = content[:i]
			break
		}
	}
	if !isASCII(content) && utf8.Valid(content) {
		return encoding.Nop, "utf-8", false
	}
	return charmap.Windows1252, "windows-1252", false
}

// charsetPrescan finds the encoding a <meta> declares, as the prescan of
// golang.org/x/net/html/charset does (a loose version of the HTML
// Standard's "prescan a byte stream to determine its encoding").
type charsetPrescan struct {
	e    encoding.Encoding
	name string
}

func (p *charsetPrescan) startTag(tag, _ []byte, attrs []attr) bool {
	if string(tag) != "meta" {
		return true
	}
	const (
		dontKnow = iota
		doNeedPragma
		doNotNeedPragma
	)
	needPragma, gotPragma := dontKnow, false
	var e encoding.Encoding
	name := ""
	var seen [3]bool // http-equiv, content, charset: the first of each counts
	for i := range attrs {
		a := &attrs[i]
		k := -1
		switch {
		case equalFoldASCII(a.key, "http-equiv"):
			k = 0
		case equalFoldASCII(a.key, "content"):
			k = 1
		case equalFoldASCII(a.key, "charset"):
			k = 2
		}
		if k < 0 || seen[k] {
			continue
		}
		seen[k] = true
		val := lowerASCII(decodeAttr(a.val, a.quote))
		switch k {
		case 0:
			gotPragma = string(val) == "content-type"
		case 1:
			if e == nil {
				if name = metaCharset(string(val)); name != "" {
					if e, name = charset.Lookup(name); e != nil {
						needPragma = doNeedPragma
					}
				}
			}
		case 2:
			e, name = charset.Lookup(string(val))
			needPragma = doNotNeedPragma
		}
	}
	if needPragma == dontKnow || needPragma == doNeedPragma && !gotPragma {
		return true
	}
	if strings.HasPrefix(name, "utf-16") {
		name, e = "utf-8", encoding.Nop
	}
	if e == nil {
		return true
	}
	p.e, p.name = e, name
	return false
}

// lowerASCII returns b with ASCII letters lower-cased, as a copy.
func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

func (p *charsetPrescan) endTag([]byte)    {}
func (p *charsetPrescan) styleText([]byte) {}

// metaCharset returns the charset of a <meta content> value, as
// x/net/html/charset's fromMetaElement does.
func metaCharset(s string) string {
	for s != "" {
		i := strings.Index(s, "charset")
		if i < 0 {
			return ""
		}
		s = strings.TrimLeft(s[i+len("charset"):], " \t\n\f\r")
		if !strings.HasPrefix(s, "=") {
			continue
		}
		s = strings.TrimLeft(s[1:], " \t\n\f\r")
		if s == "" {
			return ""
		}
		if q := s[0]; q == '"' || q == '\'' {
			s = s[1:]
			end := strings.IndexByte(s, q)
			if end < 0 {
				return ""
			}
			return s[:end]
		}
		end := strings.IndexAny(s, "; \t\n\f\r")
		if end < 0 {
			end = len(s)
		}
		return s[:end]
	}
	return ""
}

// asciiCompatible reports whether the WHATWG encoding name decodes each
// byte below 0x80 to itself, so that an all-ASCII body needs no decoding.
// UTF-16 pairs bytes, ISO-2022-JP switches state on ESC sequences, and the
// replacement encoding turns the whole body into one U+FFFD.
func asciiCompatible(name string) bool {
	switch name {
	case "utf-16be", "utf-16le", "iso-2022-jp", "replacement":
		return false
	}
	return true
}

// isASCII reports whether b holds only bytes below 0x80, eight at a time.
func isASCII(b []byte) bool {
	const high = 0x8080808080808080
	for len(b) >= 8 {
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		if w&high != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// validUTF8String returns b as a string, each ill-formed UTF-8 sequence
// replaced by U+FFFD the way x/text's UTF-8 decoder (the WHATWG decoder)
// replaces it: one U+FFFD per maximal subpart, not per byte.
func validUTF8String(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(validUTF8(b))
}

// validUTF8 is validUTF8String for bytes; it returns b itself when valid.
func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out, err := unicode.UTF8.NewDecoder().Bytes(b)
	if err != nil { // the UTF-8 decoder replaces, it does not fail
		return bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	return out
}

var (
	nul         = []byte{0}
	replacement = []byte("\uFFFD")
)

// rawText returns the text of a raw text element as the tokenizer's Text
// returns it: "\r\n" and "\r" become "\n", NUL becomes U+FFFD. It copies
// only when something changes.
func rawText(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 && bytes.IndexByte(b, 0) < 0 {
		return b
	}
	b = convertNewlines(bytes.Clone(b))
	return bytes.ReplaceAll(b, nul, replacement)
}

// decodeAttr returns an attribute value as written (raw, between quote
// characters, or unquoted when quote is 0) as the tokenizer's TagAttr
// returns it: NUL bytes replaced, newlines normalized, character
// references decoded with the rules for attributes. It returns v itself
// when none of those occur, and never modifies v.
func decodeAttr(v []byte, quote byte) []byte {
	clean := true
	for _, c := range v {
		if c == 0 || c == '\r' || c == '&' {
			clean = false
			break
		}
	}
	if clean {
		return v
	}
	w := v
	if bytes.IndexByte(w, 0) >= 0 {
		w = bytes.ReplaceAll(w, nul, replacement) // a copy
	}
	if bytes.IndexByte(w, '\r') >= 0 {
		if &w[0] == &v[0] {
			w = bytes.Clone(w)
		}
		w = convertNewlines(w)
	}
	if bytes.IndexByte(w, '&') >= 0 {
		u, ok := unescapeAttr(w)
		if !ok {
			return tokenizerAttr(v, quote)
		}
		w = u
	}
	return w
}

// convertNewlines converts "\r\n" and "\r" in s to "\n", in place.
func convertNewlines(s []byte) []byte {
	i := bytes.IndexByte(s, '\r')
	if i < 0 {
		return s
	}
	dst := i
	for src := i; src < len(s); src++ {
		c := s[src]
		if c == '\r' {
			c = '\n'
			if src+1 < len(s) && s[src+1] == '\n' {
				src++
			}
		}
		s[dst] = c
		dst++
	}
	return s[:dst]
}

// unescapeAttr decodes the character references of an attribute value,
// following the HTML Standard's character reference state as x/net/html
// implements it in attribute values: numeric references (with the
// windows-1252 remapping of 0x80-0x9F, and U+FFFD for NUL, surrogates and
// out-of-range values); named references only when complete, and never a
// legacy one without ';' that is followed by '='. It decodes the common
// named references itself and returns false when it meets another, which
// the caller then leaves to the tokenizer (tokenizerAttr): the table of
// 2,231 names lives unexported in x/net/html.
func unescapeAttr(s []byte) ([]byte, bool) {
	i := bytes.IndexByte(s, '&')
	if i < 0 {
		return s, true
	}
	out := make([]byte, i, len(s))
	copy(out, s[:i])
	for i < len(s) {
		if s[i] != '&' {
			out = append(out, s[i])
			i++
			continue
		}
		r := s[i:]
		n := 0 // bytes of r consumed by a reference; 0 for none
		switch {
		case len(r) <= 1:
		case r[1] == '#':
			var x rune
			x, n = numericRef(r)
			if n > 0 {
				out = utf8.AppendRune(out, x)
			}
		default:
			j := 1
			for j < len(r) && isAlnum(r[j]) {
				j++
			}
			if j < len(r) && r[j] == ';' {
				j++
			}
			name := r[1:j]
			if len(name) == 0 || (name[len(name)-1] != ';' && j < len(r) && r[j] == '=') {
				break // not a reference: "&", "&=", "&a=b"
			}
			v, ok := commonEntity(name)
			if !ok {
				return nil, false
			}
			out = append(out, v...)
			n = j
		}
		if n == 0 {
			out = append(out, '&')
			n = 1
		}
		i += n
	}
	return out, true
}

// numericRef decodes the numeric character reference at the start of r
// ("&#...") and returns it with the bytes it spans, or 0 bytes when r does
// not start one. As in x/net/html, the digits need not end with ';', and
// values past U+10FFFF saturate (they become U+FFFD).
func numericRef(r []byte) (rune, int) {
	if len(r) <= 2 {
		return 0, 0
	}
	i := 2
	hex := r[i] == 'x' || r[i] == 'X'
	if hex {
		i++
	}
	i0 := i
	var x rune
	for ; i < len(r); i++ {
		c := r[i]
		var d, mult rune = 0, 10
		switch {
		case '0' <= c && c <= '9':
			d = rune(c - '0')
		case hex && 'a' <= c && c <= 'f':
			d = rune(c-'a') + 10
		case hex && 'A' <= c && c <= 'F':
			d = rune(c-'A') + 10
		}
		if hex {
			mult = 16
		}
		if d == 0 && c != '0' {
			break
		}
		if x <= 0x10FFFF {
			x = mult*x + d
		}
	}
	if i == i0 {
		return 0, 0
	}
	if i < len(r) && r[i] == ';' {
		i++
	}
	switch {
	case 0x80 <= x && x <= 0x9F:
		// The HTML Standard maps numeric references to C1 controls
		// through windows-1252, leaving its five holes as they are.
		if w := charmap.Windows1252.DecodeByte(byte(x)); w != utf8.RuneError {
			x = w
		}
	case x == 0 || (0xD800 <= x && x <= 0xDFFF) || x > 0x10FFFF:
		x = utf8.RuneError
	}
	return x, i
}

// commonEntity decodes the named references most URLs and attribute
// values use; name includes its ';' when it has one. Legacy names (amp,
// lt, gt, quot, nbsp) also count without ';', as in the HTML Standard's
// table.
func commonEntity(name []byte) (string, bool) {
	switch string(name) {
	case "amp;", "amp", "AMP;", "AMP":
		return "&", true
	case "lt;", "lt", "LT;", "LT":
		return "<", true
	case "gt;", "gt", "GT;", "GT":
		return ">", true
	case "quot;", "quot", "QUOT;", "QUOT":
		return `"`, true
	case "apos;":
		return "'", true
	case "nbsp;", "nbsp":
		return "\u00a0", true
	}
	return "", false
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// tokenizerAttr decodes a raw attribute value with the x/net/html
// tokenizer itself, for the named references unescapeAttr does not know:
// it tokenizes <a v="value"> with the value written as it was (quoted the
// same way, so it cannot end early).
func tokenizerAttr(v []byte, quote byte) []byte {
	doc := make([]byte, 0, len(v)+8)
	doc = append(doc, "<a v="...)
	if quote != 0 {
		doc = append(doc, quote)
	}
	doc = append(doc, v...)
	if quote != 0 {
		doc = append(doc, quote)
	}
	doc = append(doc, '>')
	z := html.NewTokenizer(bytes.NewReader(doc))
	if z.Next() != html.StartTagToken {
		return v
	}
	if _, hasAttr := z.TagName(); !hasAttr {
		return v
	}
	_, val, _ := z.TagAttr()
	return bytes.Clone(val)
}
