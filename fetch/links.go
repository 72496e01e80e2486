package fetch

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// ErrNotHTML is returned by Extract and ExtractLinks for a body whose
// Content-Type (or, without one, sniffed type) is not HTML: links are only
// extracted from text/html and application/xhtml+xml.
var ErrNotHTML = errors.New("fetch: not an html document")

// DefaultMaxHrefLength is the ExtractOptions.MaxHrefLength default.
const DefaultMaxHrefLength = 8192

// ExtractOptions configures Extract. The zero value gives the defaults.
type ExtractOptions struct {
	// MaxLinks caps the links returned; the rest are counted in
	// Extraction.Dropped. Default DefaultMaxOutlinks (5000); negative
	// means no cap.
	MaxLinks int
	// KeepNofollow returns links marked NoFollow too. Default false.
	KeepNofollow bool
	// MaxHrefLength skips longer href values (counted in Skipped).
	// Default DefaultMaxHrefLength; negative means no limit.
	MaxHrefLength int
}

// Extraction is what Extract found in a page.
type Extraction struct {
	// Base is the URL to resolve Links against: the first <base href>
	// resolved against the document URL when present and valid, otherwise
	// the document URL (nil if that was nil and there was no absolute
	// <base href>).
	Base *url.URL
	// Links are the kept links in document order.
	Links []Link
	// Dropped counts links beyond MaxLinks.
	Dropped int
	// NofollowSkipped counts links left out for being nofollow.
	NofollowSkipped int
	// Skipped counts href values that can never be fetched: empty,
	// fragment-only, a scheme other than http(s) (javascript:, mailto:,
	// data: ...), or longer than MaxHrefLength.
	Skipped int
	// MetaNofollow reports <meta name="robots"> with nofollow or none.
	MetaNofollow bool
}

// ExtractLinks returns the effective base URL and the outlinks (a, area,
// link, frame, iframe, meta refresh) of an HTML document, decoded by the
// first of a BOM, contentType's charset or a <meta charset> in the first
// 1024 bytes (as golang.org/x/net/html/charset does; windows-1252 without
// any), with the default ExtractOptions:
// nofollow links skipped, at most DefaultMaxOutlinks links. It returns
// ErrNotHTML for other content types. It never panics on malformed input:
// HTML is parsed by the HTML5 tokenizer, which accepts any byte sequence.
func ExtractLinks(body []byte, contentType string, base *url.URL) (effectiveBase *url.URL, links []Link, err error) {
	ex, err := Extract(body, contentType, base, ExtractOptions{})
	if err != nil {
		return base, nil, err
	}
	return ex.Base, ex.Links, nil
}

// IsHTML reports whether contentType (sniffed from body when empty) is an
// HTML type links are extracted from.
func IsHTML(contentType string, body []byte) bool {
	if strings.TrimSpace(contentType) == "" {
		contentType = http.DetectContentType(body)
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// Extract is ExtractLinks with options and counters.
func Extract(body []byte, contentType string, base *url.URL, opts ExtractOptions) (*Extraction, error) {
	if !IsHTML(contentType, body) {
		return nil, ErrNotHTML
	}
	if opts.MaxLinks == 0 {
		opts.MaxLinks = DefaultMaxOutlinks
	}
	if opts.MaxHrefLength == 0 {
		opts.MaxHrefLength = DefaultMaxHrefLength
	}
	ex := &Extraction{Base: base}
	var r io.Reader = bytes.NewReader(body)
	if cr, err := charset.NewReader(r, contentType); err == nil {
		r = cr
	}
	// The tokenizer, not the tree builder: it keeps memory proportional to
	// the largest token, not the document, and never allocates a DOM.
	z := html.NewTokenizer(r)
	baseSeen := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF, or a read error from the charset decoder: keep what we have
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if !hasAttr {
			continue
		}
		var tag, urlAttr string
		switch string(name) {
		case "a", "area", "link":
			tag, urlAttr = string(name), "href"
		case "frame", "iframe":
			tag, urlAttr = string(name), "src"
		case "base":
			tag, urlAttr = "base", "href"
		case "meta":
			tag = "meta"
		default:
			continue
		}
		var val, rel, metaName, metaContent, metaEquiv string
		var haveVal, haveRel, haveName, haveContent, haveEquiv bool
		for hasAttr {
			var k, v []byte
			k, v, hasAttr = z.TagAttr()
			// The first of duplicate attributes wins (HTML Standard,
			// "attribute name" state).
			switch string(k) {
			case urlAttr:
				if !haveVal {
					val, haveVal = string(v), true
				}
			case "rel":
				if !haveRel {
					rel, haveRel = strings.ToLower(string(v)), true
				}
			case "name":
				if tag == "meta" && !haveName {
					metaName, haveName = string(v), true
				}
			case "content":
				if tag == "meta" && !haveContent {
					metaContent, haveContent = string(v), true
				}
			case "http-equiv":
				if tag == "meta" && !haveEquiv {
					metaEquiv, haveEquiv = string(v), true
				}
			}
		}
		switch tag {
		case "meta":
			if strings.EqualFold(strings.TrimSpace(metaName), "robots") && metaNofollow(metaContent) {
				ex.MetaNofollow = true
			}
			if !strings.EqualFold(strings.TrimSpace(metaEquiv), "refresh") {
				continue
			}
			// <meta http-equiv="refresh" content="5; url=next.html"> is a
			// redirect that only HTML knows about.
			var ok bool
			if val, ok = refreshURL(metaContent); !ok {
				continue
			}
			rel = "refresh"
		case "base":
			// Only the first base element with an href counts (HTML
			// Standard, "frozen base URL").
			if haveVal && !baseSeen {
				baseSeen = true
				if b := resolveBase(base, trimHref(val)); b != nil {
					ex.Base = b
				}
			}
			continue
		}
		if !haveVal && tag != "meta" {
			continue
		}
		href := trimHref(val)
		if !followable(href) || (opts.MaxHrefLength > 0 && len(href) > opts.MaxHrefLength) {
			ex.Skipped++
			continue
		}
		nofollow := hasToken(rel, "nofollow")
		if nofollow && !opts.KeepNofollow {
			ex.NofollowSkipped++
			continue
		}
		if opts.MaxLinks > 0 && len(ex.Links) >= opts.MaxLinks {
			ex.Dropped++
			continue
		}
		ex.Links = append(ex.Links, Link{Href: href, Tag: tag, Rel: rel, NoFollow: nofollow})
	}
	if ex.MetaNofollow {
		// The meta element usually comes first, but may follow links.
		kept := ex.Links[:0]
		for _, l := range ex.Links {
			l.NoFollow = true
			if opts.KeepNofollow {
				kept = append(kept, l)
			} else {
				ex.NofollowSkipped++
			}
		}
		ex.Links = kept
	}
	if len(ex.Links) == 0 {
		ex.Links = nil
	}
	return ex, nil
}

// refreshURL returns the URL of a meta refresh content value, following
// the HTML Standard's "shared declarative refresh steps" loosely: a delay,
// then ";" or ",", then optionally "url=", then the URL, possibly quoted.
func refreshURL(content string) (string, bool) {
	s := strings.TrimLeft(content, " \t\n\f\r")
	s = strings.TrimLeft(s, "0123456789.")
	s = strings.TrimLeft(s, " \t\n\f\r")
	if s == "" || (s[0] != ';' && s[0] != ',') {
		return "", false
	}
	s = strings.TrimLeft(s[1:], " \t\n\f\r")
	if len(s) >= 3 && strings.EqualFold(s[:3], "url") {
		rest := strings.TrimLeft(s[3:], " \t\n\f\r")
		if strings.HasPrefix(rest, "=") {
			s = strings.TrimLeft(rest[1:], " \t\n\f\r")
		}
	}
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		if i := strings.IndexByte(s[1:], s[0]); i >= 0 {
			s = s[1 : i+1]
		} else {
			s = s[1:]
		}
	}
	s = trimHref(s)
	return s, s != ""
}

func metaNofollow(content string) bool {
	for _, f := range strings.FieldsFunc(strings.ToLower(content), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if f == "nofollow" || f == "none" {
			return true
		}
	}
	return false
}

// hasToken reports whether the space-separated list s contains tok.
func hasToken(s, tok string) bool {
	for _, f := range strings.Fields(s) {
		if f == tok {
			return true
		}
	}
	return false
}

// trimHref strips leading and trailing ASCII whitespace, as the HTML
// Standard does before parsing a URL attribute.
func trimHref(s string) string {
	return strings.Trim(s, " \t\n\f\r")
}

// followable reports whether href can name a fetchable resource: not empty,
// not a fragment of the same document, no scheme other than http(s).
func followable(href string) bool {
	if href == "" || href[0] == '#' {
		return false
	}
	// The WHATWG URL parser removes tabs and newlines anywhere, so
	// "java\nscript:" is a javascript: URL.
	clean := href
	if strings.ContainsAny(clean, "\t\n\r") {
		clean = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, clean)
	}
	for i := 0; i < len(clean); i++ {
		c := clean[i]
		switch {
		case c == ':':
			if i == 0 {
				return true // not a scheme: a relative path starting with ':'
			}
			scheme := strings.ToLower(clean[:i])
			return scheme == "http" || scheme == "https"
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return true
			}
		default:
			return true // '/', '?', '#' or another character before any ':'
		}
	}
	return true
}

// resolveBase resolves a <base href> value against the document URL.
func resolveBase(doc *url.URL, href string) *url.URL {
	if href == "" {
		return nil
	}
	ref, err := url.Parse(href)
	if err != nil {
		return nil
	}
	if doc != nil {
		ref = doc.ResolveReference(ref)
	}
	if !ref.IsAbs() || (ref.Scheme != "http" && ref.Scheme != "https") || ref.Host == "" {
		return nil
	}
	return ref
}
