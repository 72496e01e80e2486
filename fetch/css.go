package fetch

import (
	"bytes"
	"errors"
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/css"
	"golang.org/x/net/html/charset"
)

// ErrNotCSS is returned by ExtractCSS for a Content-Type other than
// text/css.
var ErrNotCSS = errors.New("fetch: not a css stylesheet")

// IsCSS reports whether contentType is text/css, the type of the
// stylesheets ExtractCSS reads (browsers refuse stylesheets of other
// types outside quirks mode).
func IsCSS(contentType string) bool { return mediaType(contentType) == "text/css" }

// ExtractCSS returns the URLs a fetched stylesheet references, all
// HopEmbed with Tag "": the targets of @import ("css/@import"), url()
// values ("css/url()", except in @namespace, whose URL names a namespace)
// and the strings of image-set() ("css/image-set()"). Resolve them against
// the stylesheet's URL, base, which becomes Extraction.Base. contentType
// may be empty (the caller knows the body is a stylesheet); another type
// than text/css gives ErrNotCSS. The body is decoded as CSS Syntax Level 3
// section 3.2 says, except that without a BOM, charset or @charset it is
// taken as UTF-8 (the referring page's encoding is not known here).
// opts apply as in Extract; with NoEmbeds nothing is returned. The CSS is
// read by the tokenizer of github.com/tdewolff/parse/v2/css, which follows
// CSS Syntax Level 3, so URLs in comments and strings are not taken for
// url() tokens.
func ExtractCSS(body []byte, contentType string, base *url.URL, opts ExtractOptions) (*Extraction, error) {
	if strings.TrimSpace(contentType) != "" && !IsCSS(contentType) {
		return nil, ErrNotCSS
	}
	x := newExtractor(base, opts)
	if !opts.NoEmbeds {
		cssRefs(cssText(body, contentType), false, func(ref []byte, context string) {
			x.add(ref, HopEmbed, "", context, "", false)
		})
	}
	return x.finish(), nil
}

// cssText decodes a stylesheet to UTF-8: a BOM, else the Content-Type's
// charset, else an @charset rule at the very start (UTF-16 labels there
// mean UTF-8), else UTF-8. As in utf8Body, UTF-8 and all-ASCII bodies are
// not copied. NUL bytes become U+FFFD, as CSS preprocessing asks.
func cssText(body []byte, contentType string) []byte {
	label := ""
	switch {
	case bytes.HasPrefix(body, []byte("\xef\xbb\xbf")):
		body, label = body[3:], "utf-8"
	case bytes.HasPrefix(body, []byte("\xfe\xff")):
		label = "utf-16be"
	case bytes.HasPrefix(body, []byte("\xff\xfe")):
		label = "utf-16le"
	}
	if label == "" {
		if _, params, err := mime.ParseMediaType(contentType); err == nil {
			if e, _ := charset.Lookup(params["charset"]); e != nil {
				label = params["charset"]
			}
		}
	}
	if label == "" {
		label = atCharset(body)
	}
	e, name := charset.Lookup(label)
	if e != nil && name != "utf-8" && !(asciiCompatible(name) && isASCII(body)) {
		if out, err := e.NewDecoder().Bytes(body); err == nil {
			body = out
		}
	}
	if bytes.IndexByte(body, 0) >= 0 {
		body = bytes.ReplaceAll(body, nul, replacement)
	}
	return body
}

// atCharset returns the label of an @charset rule written exactly as CSS
// Syntax section 3.2 requires (`@charset "label";` at byte 0), or "".
func atCharset(body []byte) string {
	const prefix = `@charset "`
	if !bytes.HasPrefix(body, []byte(prefix)) {
		return ""
	}
	rest := body[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || end+1 >= len(rest) || rest[end+1] != ';' {
		return ""
	}
	label := string(rest[:end])
	if _, name := charset.Lookup(label); name == "utf-16be" || name == "utf-16le" {
		return "utf-8"
	}
	return label
}

// cssRefs calls fn with each URL referenced by the CSS text s, and the
// context it was found in: "css/@import", "css/url()" or
// "css/image-set()". inline is for a style attribute, a declaration list
// where @import means nothing.
func cssRefs(s []byte, inline bool, fn func(ref []byte, context string)) {
	// Every reference but @import "x" needs a '(': most style attributes
	// have none and need no tokenizing.
	if bytes.IndexByte(s, '(') < 0 && (inline || bytes.IndexByte(s, '@') < 0) {
		return
	}
	// Make ill-formed UTF-8 well-formed first, as decoding the document
	// would have: a CSS escape could otherwise join two stray bytes.
	s = validUTF8(s)
	// The lexer appends a NUL sentinel to its input, or writes one past
	// its end when there is capacity: cap the slice so that it copies,
	// and the body (which a WARC writer may be reading) is never written.
	l := css.NewLexer(parse.NewInputBytes(s[:len(s):len(s)]))
	depth := 0          // open parentheses and functions
	imageSet := 0       // the depth inside an image-set(), 0 outside
	importRule := false // the previous significant token was @import
	namespace := false  // in the prelude of an @namespace rule
	for {
		tt, data := l.Next()
		switch tt {
		case css.ErrorToken:
			return
		case css.WhitespaceToken, css.CommentToken:
			continue
		case css.AtKeywordToken:
			importRule = !inline && equalFoldASCII(data, "@import")
			namespace = equalFoldASCII(data, "@namespace")
			continue
		case css.URLToken:
			if u, ok := cssURL(data); ok && !namespace {
				if importRule {
					fn(u, "css/@import")
				} else {
					fn(u, "css/url()")
				}
			}
		case css.StringToken:
			if importRule {
				fn(cssString(data), "css/@import")
			} else if imageSet > 0 && depth == imageSet {
				fn(cssString(data), "css/image-set()")
			}
		case css.FunctionToken:
			depth++
			if imageSet == 0 && (equalFoldASCII(data, "image-set(") || equalFoldASCII(data, "-webkit-image-set(")) {
				imageSet = depth
			}
		case css.LeftParenthesisToken:
			depth++
		case css.RightParenthesisToken:
			if depth == imageSet {
				imageSet = 0
			}
			if depth > 0 {
				depth--
			}
		case css.SemicolonToken, css.LeftBraceToken, css.RightBraceToken:
			namespace = false
		}
		importRule = false
	}
}

// cssURL returns the URL of a url() token as the lexer returns it
// ("url(  x  )", "url('x')", "URL(x" at the end of input), unescaped.
func cssURL(tok []byte) ([]byte, bool) {
	i := bytes.IndexByte(tok, '(')
	if i < 0 {
		return nil, false
	}
	s := trimHref(tok[i+1:])
	if len(s) > 0 && (s[0] == '"' || s[0] == '\'') {
		return cssString(s), true
	}
	s = bytes.TrimSuffix(s, []byte(")"))
	return cssUnescape(trimHref(s), false), true
}

// cssString returns the value of a string token, which starts with its
// quote and may lack the closing one at the end of input, unescaped.
func cssString(tok []byte) []byte {
	if len(tok) == 0 {
		return nil
	}
	q := tok[0]
	end := len(tok)
	for i := 1; i < len(tok); i++ {
		if tok[i] == '\\' {
			i++
			continue
		}
		if tok[i] == q {
			end = i
			break
		}
	}
	return cssUnescape(tok[1:end], true)
}

// cssUnescape decodes the escapes of a CSS string (inString) or unquoted
// URL, per CSS Syntax Level 3 "consume an escaped code point": up to six
// hex digits and one optional whitespace (U+FFFD for zero, surrogates and
// values past U+10FFFF), or the next code point itself. In a string an
// escaped newline is a line continuation and is dropped; a backslash at
// the end of input gives nothing in a string and U+FFFD in a URL.
func cssUnescape(s []byte, inString bool) []byte {
	if bytes.IndexByte(s, '\\') < 0 {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		i++
		if i >= len(s) {
			if !inString {
				out = utf8.AppendRune(out, utf8.RuneError)
			}
			break
		}
		switch c = s[i]; {
		case c == '\n' || c == '\f' || c == '\r':
			i++
			if c == '\r' && i < len(s) && s[i] == '\n' {
				i++
			}
		case isHexDigit(c):
			var r rune
			j := i
			for ; j < len(s) && j-i < 6 && isHexDigit(s[j]); j++ {
				r = r<<4 | rune(hexValue(s[j]))
			}
			if j < len(s) && isSpace(s[j]) {
				if s[j] == '\r' && j+1 < len(s) && s[j+1] == '\n' {
					j++
				}
				j++
			}
			if r == 0 || (0xD800 <= r && r <= 0xDFFF) || r > utf8.MaxRune {
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			i = j
		default:
			_, size := utf8.DecodeRune(s[i:])
			out = append(out, s[i:i+size]...)
			i += size
		}
	}
	return out
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexValue(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
