package urlnorm

import (
	"strconv"
	"strings"
)

// This file is a WHATWG URL Standard parser (https://url.spec.whatwg.org/,
// "basic URL parser") restricted to the two schemes a crawler fetches, http
// and https, and written for speed: it reads the input once and appends the
// serialized URL to a byte buffer, so a URL costs no allocation beyond the
// returned string (none at all when the input is already canonical).
//
// It follows the standard's states for special schemes: backslashes act as
// slashes, any number of slashes may follow "http:", a scheme equal to the
// base's makes "http:foo" relative, tabs and newlines are removed anywhere,
// and the path is built segment by segment with "." and ".." (also spelled
// "%2e") removed as it goes. Policy (the safe normalizations) is applied in
// the same pass by the encoder and at serialization; the exact field turns it
// off so the tests can compare with the standard's href byte for byte.

// Percent-encode sets (WHATWG URL, section 1.3), as bit flags per byte.
// Bytes >= 0x80 are always encoded: for valid UTF-8 this is exactly the
// standard's "UTF-8 percent-encode"; for invalid UTF-8 each byte is kept
// distinct (%FF) instead of being merged into U+FFFD, so two different
// invalid inputs never map to one key.
const (
	encFragment uint8 = 1 << iota
	encQuery
	encPath
	encUserinfo
)

var encodeSet = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		if c < 0x20 || c > 0x7e {
			t[c] = encFragment | encQuery | encPath | encUserinfo
		}
	}
	for _, c := range ` "<>` + "`" {
		t[c] |= encFragment
	}
	// The special-query set: the query set plus '\''.
	for _, c := range ` "#<>'` {
		t[c] |= encQuery
	}
	for _, c := range ` "#<>?^{}` + "`" {
		t[c] |= encPath | encUserinfo
	}
	for _, c := range `/:;=@[\]^|` {
		t[c] |= encUserinfo
	}
	return t
}()

// policySet is encodeSet under the policy: each component also encodes
// every byte RFC 3986 does not allow in it raw (section 2.2-2.4: a
// character outside the component's grammar can only appear
// percent-encoded, so both spellings are one URI). The grammar of each
// component (section 3):
//
//	userinfo = *( unreserved / pct-encoded / sub-delims / ":" )
//	segment  = *pchar   with pchar = unreserved / pct-encoded / sub-delims / ":" / "@"
//	query    = *( pchar / "/" / "?" )
//	fragment = *( pchar / "/" / "?" )
//
// So on top of WHATWG's sets, '[', ']' and '|' are encoded in the path;
// '[', '\', ']', '^', '`', '{', '|' and '}' in the query (where WHATWG
// leaves them as typed); those and '#' in a kept "#!" fragment. The
// reserved characters the grammar allows (gen-delims ":@/?" where the
// component allows them, sub-delims "!$&'()*+,;=") are never encoded nor
// decoded: "a=b&c" and "a%3Db%26c" may mean different things to a server
// (section 2.2). Only WHATWG's own sets go further, as browsers do: the
// query encodes the apostrophe and the userinfo ";=". A '%' is in every
// set: encode writes it as "%25" unless it starts an escape (section 2.4).
var policySet = func() (t [256]uint8) {
	const (
		unres     = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
		subDelims = "!$&'()*+,;="
		pchar     = unres + subDelims + ":@"
	)
	allowed := []struct {
		set   uint8
		chars string
	}{
		{encUserinfo, unres + subDelims + ":"},
		{encPath, pchar + "/"},
		{encQuery, pchar + "/?"},
		{encFragment, pchar + "/?"},
	}
	for c := 0; c < 256; c++ {
		t[c] = encodeSet[c]
		for _, a := range allowed {
			if strings.IndexByte(a.chars, byte(c)) < 0 {
				t[c] |= a.set
			}
		}
	}
	return t
}()

// unreserved reports RFC 3986 unreserved characters, whose escapes are
// decoded ("%7e" -> "~") because every server must treat both spellings as
// the same (RFC 3986 section 6.2.2.2).
var unreserved = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~'
	}
	return t
}()

const upperHex = "0123456789ABCDEF"

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isHex(c byte) bool { _, ok := unhex(c); return ok }

// parsed is one URL being built: buf holds its serialization and the offsets
// delimit the components. Layout:
//
//	scheme "://" [userinfo "@"] host [":" port] path ["?" query] ["#" fragment]
//	      ^schemeEnd            ^hostStart  ^hostEnd   ^portEnd  ^pathEnd  ^queryEnd
type parsed struct {
	buf       []byte
	schemeEnd int // buf[:schemeEnd] is "http" or "https"
	hostStart int // userinfo (with its '@') is buf[schemeEnd+3:hostStart]
	hostEnd   int
	portEnd   int  // buf[hostEnd:portEnd] is "" or ":port"
	pathEnd   int  // the path is buf[portEnd:pathEnd], it starts with '/'
	queryEnd  int  // buf[pathEnd:queryEnd] is "" or "?query"
	hasQuery  bool // false: no '?' was seen (WHATWG null query)

	scratch []byte // reused by rewrite
}

func (p *parsed) reset() {
	p.buf = p.buf[:0]
	p.schemeEnd, p.hostStart, p.hostEnd, p.portEnd, p.pathEnd, p.queryEnd = 0, 0, 0, 0, 0, 0
	p.hasQuery = false
}

func (p *parsed) https() bool { return p.schemeEnd == 5 }

// parser holds what the parse needs besides the input; it is read-only.
type parser struct {
	exact      bool // serialize as the WHATWG standard does (tests only)
	mappedIPv4 bool // Options.DecodeNumericHosts
}

// cleanInput strips leading and trailing C0 controls and spaces and removes
// every tab, LF and CR, as the standard's first steps do. It allocates only
// when a tab or newline is inside.
func cleanInput(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= 0x20 {
		i++
	}
	for j > i && s[j-1] <= 0x20 {
		j--
	}
	s = s[i:j]
	if strings.IndexByte(s, '\t') < 0 && strings.IndexByte(s, '\n') < 0 && strings.IndexByte(s, '\r') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for k := 0; k < len(s); k++ {
		if c := s[k]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

// scheme returns the scheme of s (as written) and the rest after ':', or
// ok=false when s does not start with a scheme.
func splitScheme(s string) (scheme, rest string, ok bool) {
	if len(s) == 0 || !isAlpha(s[0]) {
		return "", s, false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlpha(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.':
		case c == ':':
			return s[:i], s[i+1:], true
		default:
			return "", s, false
		}
	}
	return "", s, false
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// parse parses input (already cleaned) against base (nil for none) into out.
func (ps *parser) parse(out *parsed, input string, base *parsed) error {
	out.reset()
	if input == "" && base == nil {
		return cause(ErrEmpty, "the line holds no URL (only whitespace or nothing)")
	}
	scheme, rest, hasScheme := splitScheme(input)
	if !hasScheme {
		if base == nil {
			return cause(ErrMissingScheme, "a relative reference needs a base URL; add a scheme such as http://")
		}
		out.buf = append(out.buf, base.buf[:base.schemeEnd]...)
		out.schemeEnd = base.schemeEnd
		return ps.relative(out, rest, base)
	}
	switch {
	case strings.EqualFold(scheme, "http"):
		out.buf = append(out.buf, "http"...)
	case strings.EqualFold(scheme, "https"):
		out.buf = append(out.buf, "https"...)
	default:
		s := scheme
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return cause(ErrUnsupportedScheme, strconv.Quote(strings.ToLower(s)+":")+" (only http and https are crawled)")
	}
	out.schemeEnd = len(out.buf)
	if base != nil && base.schemeEnd == out.schemeEnd {
		// "special relative or authority state": "http:foo" with an
		// http base is relative; "http://foo" is not.
		if strings.HasPrefix(rest, "//") {
			return ps.authority(out, rest[2:])
		}
		return ps.relative(out, rest, base)
	}
	// "special authority slashes state" then "ignore slashes": any run of
	// '/' and '\' (even none) may precede the authority.
	return ps.authority(out, rest)
}

func isSlash(c byte) bool { return c == '/' || c == '\\' }

// relative is the standard's "relative state" for a special base.
func (ps *parser) relative(out *parsed, s string, base *parsed) error {
	if len(s) > 0 && isSlash(s[0]) {
		if len(s) > 1 && isSlash(s[1]) {
			return ps.authority(out, s[2:])
		}
		copyAuthority(out, base)
		return ps.pathAndRest(out, s[1:])
	}
	copyAuthority(out, base)
	if s == "" {
		out.buf = append(out.buf, base.buf[base.portEnd:base.queryEnd]...)
		out.pathEnd = out.portEnd + base.pathEnd - base.portEnd
		out.queryEnd = len(out.buf)
		out.hasQuery = base.hasQuery
		return ps.finish(out, "", false)
	}
	switch s[0] {
	case '?':
		out.buf = append(out.buf, base.buf[base.portEnd:base.pathEnd]...)
		out.pathEnd = len(out.buf)
		return ps.query(out, s[1:])
	case '#':
		out.buf = append(out.buf, base.buf[base.portEnd:base.queryEnd]...)
		out.pathEnd = out.portEnd + base.pathEnd - base.portEnd
		out.queryEnd = len(out.buf)
		out.hasQuery = base.hasQuery
		return ps.finish(out, s[1:], true)
	}
	out.buf = append(out.buf, base.buf[base.portEnd:base.pathEnd]...)
	shorten(out)
	return ps.path(out, s)
}

// copyAuthority copies "://", userinfo, host and port from base.
func copyAuthority(out *parsed, base *parsed) {
	d := len(out.buf) - base.schemeEnd
	out.buf = append(out.buf, base.buf[base.schemeEnd:base.portEnd]...)
	out.hostStart = base.hostStart + d
	out.hostEnd = base.hostEnd + d
	out.portEnd = base.portEnd + d
}

// shorten removes the last path segment ("shorten a URL's path").
func shorten(out *parsed) {
	b := out.buf
	for i := len(b) - 1; i >= out.portEnd; i-- {
		if b[i] == '/' {
			out.buf = b[:i]
			return
		}
	}
}

// authority parses "[userinfo@]host[:port]" and what follows; leading
// slashes and backslashes are skipped first.
func (ps *parser) authority(out *parsed, s string) error {
	for len(s) > 0 && isSlash(s[0]) {
		s = s[1:]
	}
	end := len(s)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '/' || c == '\\' || c == '?' || c == '#' {
			end = i
			break
		}
	}
	auth, rest := s[:end], s[end:]
	out.buf = append(out.buf, "://"...)
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		userinfo := auth[:at]
		auth = auth[at+1:]
		if auth == "" {
			return cause(ErrMissingHost, "nothing after the '@' of the credentials")
		}
		user, pass := userinfo, ""
		if c := strings.IndexByte(userinfo, ':'); c >= 0 {
			user, pass = userinfo[:c], userinfo[c+1:]
		}
		if user != "" || pass != "" {
			ps.encode(out, user, encUserinfo)
			if pass != "" {
				out.buf = append(out.buf, ':')
				ps.encode(out, pass, encUserinfo)
			}
			out.buf = append(out.buf, '@')
		}
	}
	out.hostStart = len(out.buf)
	// The port starts at the first ':' outside brackets.
	host, port, hasPort := auth, "", false
	inBrackets := false
	for i := 0; i < len(auth); i++ {
		switch auth[i] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				host, port, hasPort = auth[:i], auth[i+1:], true
				i = len(auth)
			}
		}
	}
	if host == "" {
		return cause(ErrMissingHost, "no host after \"//\"")
	}
	if err := ps.host(out, host); err != nil {
		return err
	}
	out.hostEnd = len(out.buf)
	if hasPort && port != "" {
		n := 0
		for i := 0; i < len(port); i++ {
			c := port[i]
			if c < '0' || c > '9' {
				return cause(ErrInvalidPort, "port "+quoteShort(port)+" has the non-digit "+describeByte(c))
			}
			if n = n*10 + int(c-'0'); n > 65535 {
				return cause(ErrInvalidPort, "port "+quoteShort(port)+" is above 65535")
			}
		}
		if !(n == 80 && !out.https() || n == 443 && out.https()) {
			out.buf = append(out.buf, ':')
			out.buf = appendInt(out.buf, n)
		}
	}
	out.portEnd = len(out.buf)
	if rest != "" && isSlash(rest[0]) {
		rest = rest[1:]
	}
	return ps.pathAndRest(out, rest)
}

func appendInt(b []byte, n int) []byte {
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// pathAndRest runs the path state on an empty path list.
func (ps *parser) pathAndRest(out *parsed, s string) error {
	out.buf = out.buf[:out.portEnd]
	return ps.path(out, s)
}

// path is the standard's "path state" for special URLs: s is what follows
// the '/' that opened the path (or the relative reference).
func (ps *parser) path(out *parsed, s string) error {
	pos := 0
	for {
		end := pos
		for end < len(s) {
			c := s[end]
			if c == '/' || c == '\\' || c == '?' || c == '#' {
				break
			}
			end++
		}
		seg := s[pos:end]
		atSlash := end < len(s) && isSlash(s[end])
		switch {
		case isDoubleDot(seg):
			shorten(out)
			if !atSlash {
				out.buf = append(out.buf, '/')
			}
		case isSingleDot(seg):
			if !atSlash {
				out.buf = append(out.buf, '/')
			}
		default:
			out.buf = append(out.buf, '/')
			ps.encode(out, seg, encPath)
		}
		if !atSlash {
			out.pathEnd = len(out.buf)
			rest := s[end:]
			if rest == "" {
				out.queryEnd = out.pathEnd
				return ps.finish(out, "", false)
			}
			if rest[0] == '?' {
				return ps.query(out, rest[1:])
			}
			out.queryEnd = out.pathEnd
			return ps.finish(out, rest[1:], true)
		}
		pos = end + 1
	}
}

func isSingleDot(s string) bool {
	return s == "." || len(s) == 3 && s[0] == '%' && s[1] == '2' && s[2]|0x20 == 'e'
}

func isDoubleDot(s string) bool {
	switch len(s) {
	case 2:
		return s == ".."
	case 4:
		return s[0] == '.' && isSingleDot(s[1:]) || s[3] == '.' && isSingleDot(s[:3])
	case 6:
		return isSingleDot(s[:3]) && isSingleDot(s[3:])
	}
	return false
}

// query is the "query state": s is what follows '?'.
func (ps *parser) query(out *parsed, s string) error {
	q, frag, hasFrag := s, "", false
	if i := strings.IndexByte(s, '#'); i >= 0 {
		q, frag, hasFrag = s[:i], s[i+1:], true
	}
	out.hasQuery = true
	if q != "" || ps.exact {
		out.buf = append(out.buf, '?')
		ps.encode(out, q, encQuery)
	}
	out.queryEnd = len(out.buf)
	return ps.finish(out, frag, hasFrag)
}

// finish writes the fragment: the standard keeps it; the policy drops it
// unless it is a hash-bang ("#!"), which AJAX-crawlable sites use to name
// distinct pages.
func (ps *parser) finish(out *parsed, frag string, hasFrag bool) error {
	if !hasFrag {
		return nil
	}
	if ps.exact || strings.HasPrefix(frag, "!") {
		out.buf = append(out.buf, '#')
		ps.encode(out, frag, encFragment)
	}
	return nil
}

// encode appends s percent-encoded with the given set. Under the policy
// (policySet) it also writes escapes in one canonical form (RFC 3986
// section 6.2.2): hex digits uppercased ("%2f" -> "%2F", 6.2.2.1),
// escapes of unreserved characters decoded ("%7e" -> "~", 6.2.2.2), every
// other escape kept as an escape ("%2F" is not '/'), and a '%' that does
// not start an escape written "%25". So the output holds no '%' but the
// first byte of an escape, and decoding an escape can never form a new one
// with what precedes it: Normalize decodes each escape once, never twice.
func (ps *parser) encode(out *parsed, s string, set uint8) {
	b := out.buf
	if ps.exact {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if encodeSet[c]&set != 0 {
				b = append(b, '%', upperHex[c>>4], upperHex[c&15])
			} else {
				b = append(b, c)
			}
		}
		out.buf = b
		return
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			hi, _ := unhex(s[i+1])
			lo, _ := unhex(s[i+2])
			if v := hi<<4 | lo; unreserved[v] {
				b = append(b, v)
			} else {
				b = append(b, '%', upperHex[hi], upperHex[lo])
			}
			i += 2
		case policySet[c]&set != 0:
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		default:
			b = append(b, c)
		}
	}
	out.buf = b
}

// quoteShort quotes s for an error message, escaping controls and
// invalid UTF-8 and shortening it to 40 bytes.
func quoteShort(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "..."
	}
	return strconv.Quote(s)
}
