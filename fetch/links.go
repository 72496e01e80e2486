package fetch

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unsafe"
)

// ErrNotHTML is returned by Extract and ExtractLinks for a body whose
// Content-Type (or, without one, sniffed type) is not HTML: links are only
// extracted from text/html and application/xhtml+xml.
var ErrNotHTML = errors.New("fetch: not an html document")

// DefaultMaxHrefLength is the ExtractOptions.MaxHrefLength default.
const DefaultMaxHrefLength = 8192

// Hop says how a URL was reached from the resource it was found in, with
// the letters of Heritrix's hop paths (a crawl log writes "LLE" for an
// embed of a page two links from a seed).
type Hop byte

// Hop values. Extract and ExtractCSS produce HopLink, HopEmbed and (for
// <meta http-equiv="refresh">) HopRedirect; the frontier uses HopRedirect
// for HTTP redirects and HopSitemap for URLs listed in a sitemap.
const (
	HopLink     Hop = 'L' // a navigation link: a, area, link (other rels), frame, iframe
	HopEmbed    Hop = 'E' // a page requisite: image, script, stylesheet, media, CSS reference
	HopRedirect Hop = 'R' // an HTTP redirect, or a meta refresh (as Heritrix counts it)
	HopSitemap  Hop = 'S' // a URL listed in a sitemap
)

// String returns the hop's letter.
func (h Hop) String() string {
	switch h {
	case HopLink, HopEmbed, HopRedirect, HopSitemap:
		return string(rune(h))
	}
	return "Hop(" + strconv.Itoa(int(h)) + ")"
}

// Link is one URL found in an HTML page or a stylesheet.
type Link struct {
	// Href is the attribute value (or CSS URL) with leading and trailing
	// ASCII whitespace removed and character references (CSS escapes)
	// decoded, not resolved: resolve it against Result.Base (for a
	// stylesheet, the stylesheet's URL). The Hrefs of one extraction
	// share one backing string: strings.Clone one kept long on its own.
	Href string
	// Context names where the URL was written, in Heritrix's style: the
	// element and attribute ("a/@href", "img/@srcset", "link/@href",
	// "meta/@content") or, in CSS, the construct ("css/url()",
	// "css/@import", "css/image-set()").
	Context string
	// Tag is the element name: a, area, link, frame, iframe, img, ..., or
	// meta for a <meta http-equiv="refresh"> target (whose Rel is
	// "refresh"). For CSS it is "style" in a <style> element, the
	// element of a style attribute, and "" in a stylesheet.
	Tag string
	// Rel is the element's rel attribute, lower-cased ("" if absent).
	Rel string
	// Hop is HopLink, HopEmbed, or HopRedirect for a meta refresh.
	Hop Hop
	// NoFollow is true for a link (not an embed) when rel contains
	// "nofollow" or the page carries <meta name="robots"
	// content="nofollow">. Such links are only returned when
	// Options.FollowNofollow (or ExtractOptions.KeepNofollow) is set.
	NoFollow bool
}

// ExtractOptions configures Extract and ExtractCSS. The zero value gives
// the defaults.
type ExtractOptions struct {
	// MaxLinks caps the links and embeds returned; the rest are counted in
	// Extraction.Dropped. Default DefaultMaxOutlinks (5000); negative
	// means no cap.
	MaxLinks int
	// KeepNofollow returns links marked NoFollow too. Default false.
	KeepNofollow bool
	// MaxHrefLength skips longer href values (counted in Skipped).
	// Default DefaultMaxHrefLength; negative means no limit.
	MaxHrefLength int
	// NoEmbeds leaves out the page requisites (HopEmbed): images,
	// scripts, stylesheets, icons, media, objects and every URL of CSS.
	// Default false: they are extracted.
	NoEmbeds bool
	// Text, when set, receives the page's character data and tags from
	// the same pass that finds the links (HTML only; ExtractCSS ignores
	// it). Default nil: no text is looked at.
	Text TextSink
}

// A TextSink receives the character data and tags of an HTML document in
// document order, as Extract scans it, for a caller that wants the page's
// text without tokenizing it a second time (neardup.TextBuilder and
// neardup.Shingler are two).
// Tag names are lower-cased, nil when longer than 16 bytes; text is what
// golang.org/x/net/html's Tokenizer returns as Text, with character
// references decoded, except that NUL bytes are left as they are. The
// content of <noscript> is read as markup, as for the links.
type TextSink interface {
	StartTag(name []byte, selfClosing bool)
	EndTag(name []byte)
	Text(text []byte)
	// Hidden reports whether text now would be dropped, so that Extract
	// need not decode it.
	Hidden() bool
}

// Extraction is what Extract found in a page.
type Extraction struct {
	// Base is the URL to resolve Links against: the first <base href>
	// resolved against the document URL when present and valid, otherwise
	// the document URL (nil if that was nil and there was no absolute
	// <base href>).
	Base *url.URL
	// Links are the kept links and embeds in document order.
	Links []Link
	// Dropped counts links and embeds beyond MaxLinks.
	Dropped int
	// NofollowSkipped counts links left out for being nofollow.
	NofollowSkipped int
	// Skipped counts values that can never be fetched: empty,
	// fragment-only, a scheme other than http(s) (javascript:, mailto:,
	// data: ...), or longer than MaxHrefLength.
	Skipped int
	// MetaNofollow reports <meta name="robots"> with nofollow or none.
	MetaNofollow bool
}

// ExtractLinks returns the effective base URL and the outlinks and embeds
// of an HTML document with the default ExtractOptions: nofollow links
// skipped, at most DefaultMaxOutlinks URLs. See Extract.
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
	mt := mediaType(contentType)
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// mediaType returns the lower-cased type/subtype of a Content-Type value,
// as mime.ParseMediaType would, without its allocations.
func mediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// Extract returns the links and embeds of an HTML document with counters.
//
// Links (HopLink) come from a and area (href; xlink:href on SVG a), link
// with other rels than those below (href), frame and iframe (src); a
// <meta http-equiv="refresh"> target is a HopRedirect. Embeds (HopEmbed)
// come from img (src, srcset), picture's source (srcset), source, video,
// audio, track and embed (src), video (poster), script (src), link rel
// stylesheet, icon, preload, modulepreload, manifest, apple-touch-icon or
// mask-icon (href, imagesrcset), object (data), input type=image (src),
// SVG image and use (href, xlink:href), body, table, td and th
// (background), and CSS: @import and url() in <style> elements, url() in
// style attributes. Nofollow (rel or <meta name="robots">) applies to
// links, not to embeds: a page's requisites are part of its capture, as
// for a search engine rendering it.
//
// The body is decoded by the first of a BOM, contentType's charset or a
// <meta charset> in the first 1024 bytes (as golang.org/x/net/html/charset
// does; windows-1252 without any); a UTF-8 or all-ASCII body is scanned
// in place, and only the values kept are checked for invalid UTF-8 (each
// ill-formed sequence becomes U+FFFD). Tags and attributes are found as
// the HTML5 tokenizer of golang.org/x/net/html finds them (comments, raw
// text of script, style, textarea, title and the like, unquoted and
// duplicate attributes, character references, NUL bytes), except that
// the content of <noscript> is read as markup, as with scripting off, so
// its fallback links and images are found. It returns ErrNotHTML for
// other content types and never panics on malformed input.
func Extract(body []byte, contentType string, base *url.URL, opts ExtractOptions) (*Extraction, error) {
	if !IsHTML(contentType, body) {
		return nil, ErrNotHTML
	}
	x := newExtractor(base, opts)
	x.sizeFor(len(body))
	s := scanner{text: opts.Text}
	s.scan(x, utf8Body(body, contentType))
	return x.finish(), nil
}

// extractor turns the tags of a document, as found by a scanner or (in
// tests) by the x/net/html tokenizer, into an Extraction. It is the
// tagHandler of the scanner.
type extractor struct {
	opts     ExtractOptions
	ex       Extraction
	doc      *url.URL // the document URL, before any <base href>
	baseSeen bool
	template int // depth of open <template> elements: base and meta in them are inert
	// hrefs holds the kept hrefs end to end, and ends[i] where that of
	// ex.Links[i] ends: finish makes them one string, so a page's links
	// cost one allocation, not one each.
	hrefs []byte
	ends  []int
}

// attr is one attribute of a start tag.
type attr struct {
	key, val []byte
	// raw is true when val is as written in the document, its NULs,
	// carriage returns and character references not yet decoded (quote
	// is then the quote it was written in, or 0); false when val came
	// decoded from the x/net/html tokenizer.
	raw   bool
	quote byte
}

func newExtractor(base *url.URL, opts ExtractOptions) *extractor {
	if opts.MaxLinks == 0 {
		opts.MaxLinks = DefaultMaxOutlinks
	}
	if opts.MaxHrefLength == 0 {
		opts.MaxHrefLength = DefaultMaxHrefLength
	}
	return &extractor{opts: opts, ex: Extraction{Base: base}, doc: base}
}

// sizeFor preallocates for a document of n bytes: the real pages of
// testdata have one link or embed per 150-400 bytes. Erring low costs a
// few appends; erring high costs clearing and scanning unused memory.
func (x *extractor) sizeFor(n int) {
	c := min(max(n/512, 16), 512)
	if x.opts.MaxLinks > 0 {
		c = min(c, x.opts.MaxLinks)
	}
	x.ex.Links = make([]Link, 0, c)
	x.ends = make([]int, 0, c)
	x.hrefs = make([]byte, 0, 32*c)
}

// find returns the decoded value of the first attribute named name (a
// lower-case ASCII name): the tokenizer keeps the first of duplicate
// attributes (HTML Standard, "attribute name" state).
func (x *extractor) find(attrs []attr, name string) ([]byte, bool) {
	for i := range attrs {
		a := &attrs[i]
		if len(a.key) == len(name) && equalFoldASCII(a.key, name) {
			if a.raw {
				return decodeAttr(a.val, a.quote), true
			}
			return a.val, true
		}
	}
	return nil, false
}

// startTag handles one start tag. name is its lower-cased name when at
// most maxTagName bytes long, otherwise nil; rawName is the name as
// written.
func (x *extractor) startTag(name, rawName []byte, attrs []attr) bool {
	if len(attrs) == 0 {
		if string(name) == "template" {
			x.template++
		}
		return true
	}
	tag := ""
	switch string(name) {
	case "a", "area":
		tag, context := "a", "a/@href"
		if len(name) > 1 {
			tag, context = "area", "area/@href"
		}
		rel := x.rel(attrs)
		if v, ok := x.find(attrs, "href"); ok {
			x.add(v, HopLink, tag, context, rel, hasToken(rel, "nofollow"))
		} else if v, ok := x.find(attrs, "xlink:href"); ok && tag == "a" { // SVG
			x.add(v, HopLink, tag, "a/@xlink:href", rel, hasToken(rel, "nofollow"))
		}
	case "link":
		rel := x.rel(attrs)
		hop := HopLink
		if embedRel(rel) {
			hop = HopEmbed
		}
		if v, ok := x.find(attrs, "href"); ok {
			x.add(v, hop, "link", "link/@href", rel, hop == HopLink && hasToken(rel, "nofollow"))
		}
		if v, ok := x.find(attrs, "imagesrcset"); ok && hop == HopEmbed {
			x.srcset(v, "link", "link/@imagesrcset", rel)
		}
		tag = "link"
	case "frame", "iframe", "img", "source", "video", "audio", "track", "embed", "object", "body", "table", "td", "th":
		for _, u := range urlAttrs[string(name)] {
			tag = u.context[:strings.IndexByte(u.context, '/')]
			v, ok := x.find(attrs, u.attr)
			if ok && strings.HasSuffix(u.attr, "srcset") {
				x.srcset(v, tag, u.context, "")
			} else if ok {
				x.add(v, u.hop, tag, u.context, "", false)
			}
		}
	case "image":
		// An HTML <image> is parsed as <img>; an SVG one links by href.
		x.one(attrs, "src", HopEmbed, "image", "image/@src")
		x.svgHref(attrs, "image", "image/@href", "image/@xlink:href")
		tag = "image"
	case "use":
		x.svgHref(attrs, "use", "use/@href", "use/@xlink:href")
		tag = "use"
	case "script":
		if !x.one(attrs, "src", HopEmbed, "script", "script/@src") {
			x.svgHref(attrs, "script", "script/@href", "script/@xlink:href")
		}
		tag = "script"
	case "input":
		if t, ok := x.find(attrs, "type"); ok && equalFoldASCII(t, "image") {
			x.one(attrs, "src", HopEmbed, "input", "input/@src")
		}
		tag = "input"
	case "base":
		// Only the first base element with an href counts (HTML Standard,
		// "frozen base URL"), and not one in a template's inert content.
		if v, ok := x.find(attrs, "href"); ok && !x.baseSeen && x.template == 0 {
			x.baseSeen = true
			if b := resolveBase(x.doc, string(trimHref(v))); b != nil {
				x.ex.Base = b
			}
		}
		tag = "base"
	case "meta":
		if x.template == 0 {
			x.meta(attrs)
		}
		tag = "meta"
	case "template":
		x.template++
		tag = "template"
	}
	if x.opts.NoEmbeds {
		return true
	}
	if v, ok := x.find(attrs, "style"); ok {
		if tag == "" {
			tag = tagString(rawName)
		}
		cssRefs(v, true, func(ref []byte, context string) {
			x.add(ref, HopEmbed, tag, context, "", false)
		})
	}
	return true
}

// tagString returns a tag name as the tokenizer's TagName gives it:
// ASCII letters lower-cased, NUL bytes replaced, valid UTF-8.
func tagString(rawName []byte) string {
	return validUTF8String(bytes.ReplaceAll(lowerASCII(rawName), nul, replacement))
}

// urlAttr is an attribute holding a URL, or a srcset list of them.
type urlAttr struct {
	attr, context string
	hop           Hop
}

// urlAttrs lists the URL attributes of the elements whose URLs need no
// other attribute to be understood, in the order they are reported. The
// element name is the context's prefix.
var urlAttrs = map[string][]urlAttr{
	"frame":  {{"src", "frame/@src", HopLink}},
	"iframe": {{"src", "iframe/@src", HopLink}},
	"img":    {{"src", "img/@src", HopEmbed}, {"srcset", "img/@srcset", HopEmbed}},
	"source": {{"src", "source/@src", HopEmbed}, {"srcset", "source/@srcset", HopEmbed}},
	"video":  {{"src", "video/@src", HopEmbed}, {"poster", "video/@poster", HopEmbed}},
	"audio":  {{"src", "audio/@src", HopEmbed}},
	"track":  {{"src", "track/@src", HopEmbed}},
	"embed":  {{"src", "embed/@src", HopEmbed}},
	"object": {{"data", "object/@data", HopEmbed}},
	"body":   {{"background", "body/@background", HopEmbed}},
	"table":  {{"background", "table/@background", HopEmbed}},
	"td":     {{"background", "td/@background", HopEmbed}},
	"th":     {{"background", "th/@background", HopEmbed}},
}

// endTag handles an end tag; name is as for startTag.
func (x *extractor) endTag(name []byte) {
	if string(name) == "template" && x.template > 0 {
		x.template--
	}
}

// styleText handles the text of a <style> element, as the tokenizer's
// Text returns it (newlines normalized, NUL bytes replaced).
func (x *extractor) styleText(css []byte) {
	if x.opts.NoEmbeds {
		return
	}
	cssRefs(css, false, func(ref []byte, context string) {
		x.add(ref, HopEmbed, "style", context, "", false)
	})
}

// one adds the value of attribute name, if present, and reports whether
// it was.
func (x *extractor) one(attrs []attr, name string, hop Hop, tag, context string) bool {
	v, ok := x.find(attrs, name)
	if ok {
		x.add(v, hop, tag, context, "", false)
	}
	return ok
}

// svgHref adds an SVG element's href, or without one its xlink:href (SVG 2
// gives href precedence).
func (x *extractor) svgHref(attrs []attr, tag, hrefContext, xlinkContext string) {
	if !x.one(attrs, "href", HopEmbed, tag, hrefContext) {
		x.one(attrs, "xlink:href", HopEmbed, tag, xlinkContext)
	}
}

func (x *extractor) srcset(v []byte, tag, context, rel string) {
	parseSrcset(v, func(u []byte) { x.add(u, HopEmbed, tag, context, rel, false) })
}

// rel returns the lower-cased rel attribute.
func (x *extractor) rel(attrs []attr) string {
	v, ok := x.find(attrs, "rel")
	if !ok {
		return ""
	}
	return relString(v)
}

func (x *extractor) meta(attrs []attr) {
	name, _ := x.find(attrs, "name")
	content, haveContent := x.find(attrs, "content")
	if equalFoldASCII(trimHref(name), "robots") && metaNofollow(content) {
		x.ex.MetaNofollow = true
	}
	if equiv, _ := x.find(attrs, "http-equiv"); !haveContent || !equalFoldASCII(trimHref(equiv), "refresh") {
		return
	}
	// <meta http-equiv="refresh" content="5; url=next.html"> is a redirect
	// that only HTML knows about.
	if target, ok := refreshURL(string(content)); ok {
		x.add([]byte(target), HopRedirect, "meta", "meta/@content", "refresh", false)
	}
}

// add keeps one URL value, or counts why it is left out.
func (x *extractor) add(v []byte, hop Hop, tag, context, rel string, nofollow bool) {
	if hop == HopEmbed {
		if x.opts.NoEmbeds {
			return
		}
		nofollow = false
	}
	href := trimHref(v)
	if !followable(href) || (x.opts.MaxHrefLength > 0 && len(href) > x.opts.MaxHrefLength) {
		x.ex.Skipped++
		return
	}
	if hop != HopEmbed {
		nofollow = nofollow || x.ex.MetaNofollow
		if nofollow && !x.opts.KeepNofollow {
			x.ex.NofollowSkipped++
			return
		}
	}
	if x.opts.MaxLinks > 0 && len(x.ex.Links) >= x.opts.MaxLinks {
		x.ex.Dropped++
		return
	}
	x.hrefs = append(x.hrefs, validUTF8(href)...)
	x.ends = append(x.ends, len(x.hrefs))
	x.ex.Links = append(x.ex.Links, Link{Hop: hop, Context: context, Tag: tag, Rel: rel, NoFollow: nofollow})
}

// finish applies a <meta name="robots" content="nofollow"> found after
// some links to those links, and returns the Extraction.
func (x *extractor) finish() *Extraction {
	ex := &x.ex
	// x.hrefs is never written again: the string can share its memory.
	var all string
	if len(x.hrefs) > 0 {
		all = unsafe.String(&x.hrefs[0], len(x.hrefs))
	}
	start := 0
	for i, end := range x.ends {
		ex.Links[i].Href = all[start:end]
		start = end
	}
	if ex.MetaNofollow {
		kept := ex.Links[:0]
		for _, l := range ex.Links {
			if l.Hop != HopEmbed && !l.NoFollow {
				l.NoFollow = true
				if !x.opts.KeepNofollow {
					ex.NofollowSkipped++
					continue
				}
			}
			kept = append(kept, l)
		}
		ex.Links = kept
	}
	if len(ex.Links) == 0 {
		ex.Links = nil
	}
	return ex
}

// embedRel reports whether a link element's rel makes its href a page
// requisite rather than a link.
func embedRel(rel string) bool {
	embed := false
	forEachToken(rel, func(tok string) bool {
		switch tok {
		case "stylesheet", "icon", "preload", "modulepreload", "manifest",
			"apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon":
			embed = true
			return false
		}
		return true
	})
	return embed
}

// commonRels are rel values returned without allocating.
var commonRels = [...]string{
	"stylesheet", "icon", "shortcut icon", "preload", "modulepreload",
	"manifest", "apple-touch-icon", "canonical", "alternate", "next",
	"prev", "home", "up", "index", "search", "nofollow", "noopener",
	"noreferrer", "noopener noreferrer", "author", "license", "help",
	"prefetch", "preconnect", "dns-prefetch", "top", "external",
}

// relString returns the lower-cased rel value.
func relString(v []byte) string {
	for _, r := range commonRels {
		if string(v) == r {
			return r
		}
	}
	return strings.ToLower(string(v))
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

// metaNofollow reports whether a robots meta content value contains
// nofollow or none (comma- or space-separated, any case).
func metaNofollow(content []byte) bool {
	for len(content) > 0 {
		i := bytes.IndexAny(content, ", \t")
		f := content
		if i >= 0 {
			f, content = content[:i], content[i+1:]
		} else {
			content = nil
		}
		if equalFoldASCII(f, "nofollow") || equalFoldASCII(f, "none") {
			return true
		}
	}
	return false
}

// hasToken reports whether the space-separated list s contains tok.
func hasToken(s, tok string) bool {
	found := false
	forEachToken(s, func(f string) bool {
		found = f == tok
		return !found
	})
	return found
}

// forEachToken calls fn for each field of s separated by ASCII whitespace,
// until fn returns false.
func forEachToken(s string, fn func(string) bool) {
	for s != "" {
		i := 0
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		if i < j && !fn(s[i:j]) {
			return
		}
		s = s[j:]
	}
}

// isSpace reports whether c is ASCII whitespace as HTML defines it.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// trimHref strips leading and trailing ASCII whitespace, as the HTML
// Standard does before parsing a URL attribute.
func trimHref[S ~string | ~[]byte](s S) S {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// equalFoldASCII reports whether b equals the lower-case ASCII string s,
// ignoring ASCII case.
func equalFoldASCII[S ~string | ~[]byte](b S, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// followable reports whether href can name a fetchable resource: not empty,
// not a fragment of the same document, no scheme other than http(s).
func followable[S ~string | ~[]byte](href S) bool {
	if len(href) == 0 || href[0] == '#' {
		return false
	}
	// The WHATWG URL parser removes tabs and newlines anywhere, so
	// "java\nscript:" is a javascript: URL: skip them while reading the
	// scheme.
	var scheme [5]byte
	n := 0
	for i := 0; i < len(href); i++ {
		c := href[i]
		switch {
		case c == '\t' || c == '\n' || c == '\r':
		case c == ':':
			if n == 0 {
				return true // not a scheme: a relative path starting with ':'
			}
			s := string(scheme[:min(n, len(scheme))])
			return (n == 4 && s == "http") || (n == 5 && s == "https")
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			if n < len(scheme) {
				scheme[n] = c | 0x20
			}
			n++
		case (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.':
			if n == 0 {
				return true
			}
			if n < len(scheme) {
				scheme[n] = c
			}
			n++
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
