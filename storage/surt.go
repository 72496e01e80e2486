package storage

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// SURT returns the sort key of a URL in a CDX(J) index, as pywb computes it
// (pywb.utils.canonicalize calls surt.surt with its defaults; the Python
// package internetarchive/surt, a port of the Wayback Machine's
// WaybackURLKeyMaker): the URL canonicalized by GoogleURLCanonicalizer then
// IAURLCanonicalizer, written without its scheme, with the host's labels
// reversed and joined by commas and closed by ")":
//
//	http://www.Archive.org:80/Goo/?b&a#x  ->  org,archive)/goo?a&b
//
// The canonicalization: the fragment is dropped; the host is unescaped,
// IDNA-encoded when not ASCII, lowercased, a leading "www", "www2"... label
// dropped, and a numeric IPv4 form (3279880203, 017.0.0.1) written dotted;
// user and password and the scheme's default port are dropped; the path is
// unescaped, its dot segments and repeated slashes removed, lowercased,
// escaped once again (bytes outside printable ASCII, "#" and "%"), ASP.NET
// session segments and a trailing slash removed; the query is unescaped
// and escaped once, its jsessionid, phpsessid, sid, ASPSESSIONID and
// CFID/CFTOKEN parameters removed, lowercased and its parameters sorted; an
// empty query is dropped. The scheme is not in the key: http:// and
// https:// captures of a URL share it. A URL without a host ("mailto:x",
// "dns:archive.org") is kept as scheme:path; "" gives "-", and a
// "filedesc" URL is returned as it is. The result never holds a space or a
// line break, so it can start a CDXJ line.
//
// The cases of surt's tests/test_surt.py (from WaybackURLKeyMakerTest.java)
// are in TestSURT. One deliberate difference: surt resolves a dotted
// decimal or octal host with fewer than four parts (10.0.258) through the
// system's resolver, gethostbyname; SURT parses it as inet_aton does,
// which is what that call does for such a string, without the resolver.
func SURT(rawURL string) string {
	if rawURL == "" {
		return "-"
	}
	if strings.HasPrefix(rawURL, "filedesc") {
		return rawURL
	}
	u := parseHandyURL(rawURL)
	if u.scheme == "dns" {
		// surt's tests keep dns: records as they are.
		return "dns:" + u.host
	}
	u.canonicalizeGoogle()
	u.canonicalizeIA()
	return u.surtKey()
}

// handyURL is surt's handyurl: a URL split into the parts canonicalization
// works on. A nil-able part of the Python original is a string with a has-
// flag beside it here.
type handyURL struct {
	scheme   string
	host     string // "" when none
	port     string // "" when none (digits otherwise)
	path     string
	query    string
	hasQuery bool
}

var schemePrefix = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+\-.]*:`)

// parseHandyURL is handyurl.parse over Python's urlsplit.
func parseHandyURL(s string) handyURL {
	s = strings.TrimSpace(s)
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, s)
	if !schemePrefix.MatchString(s) {
		s = "http://" + s
	}
	// "http://https://host" is https://host (a broken link seen in crawls).
	for {
		first := httpPrefix(s)
		if first == 0 || httpPrefix(s[first:]) == 0 {
			break
		}
		s = s[first:]
	}
	var u handyURL
	colon := strings.IndexByte(s, ':')
	u.scheme, s = strings.ToLower(s[:colon]), s[colon+1:]
	var netloc string
	hasNetloc := strings.HasPrefix(s, "//")
	if hasNetloc {
		s = s[2:]
		end := strings.IndexAny(s, "/?#")
		if end < 0 {
			end = len(s)
		}
		netloc, s = s[:end], s[end:]
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s, u.query = s[:i], s[i+1:]
		u.hasQuery = u.query != ""
	}
	u.path = s
	netloc = strings.TrimSuffix(netloc, ":")
	if i := strings.LastIndexByte(netloc, '@'); i >= 0 {
		netloc = netloc[i+1:]
	}
	host := netloc
	if strings.HasPrefix(host, "[") {
		if end := strings.IndexByte(host, ']'); end > 0 {
			host, u.port = host[1:end], strings.TrimPrefix(host[end+1:], ":")
		}
	} else if i := strings.IndexByte(host, ':'); i >= 0 {
		host, u.port = host[:i], host[i+1:]
	}
	if n, err := strconv.ParseUint(u.port, 10, 16); err == nil {
		u.port = strconv.FormatUint(n, 10)
	} else {
		u.port = "" // urlsplit raises on a port that is not a number
	}
	u.host = strings.ToLower(host)
	if u.scheme == "dns" {
		u.host, u.path = u.path, ""
	}
	if strings.HasPrefix(u.scheme, "http") && u.host == "" && u.path != "" {
		// "http:////host/x"
		h, p, _ := strings.Cut(strings.TrimLeft(u.path, "/"), "/")
		u.host, u.path = h, "/"+p
	}
	return u
}

// httpPrefix is the length of a leading "http://" or "https://", or 0.
func httpPrefix(s string) int {
	for _, p := range []string{"http://", "https://"} {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return len(p)
		}
	}
	return 0
}

// canonicalizeGoogle is surt's GoogleURLCanonicalizer (the fragment is
// already gone).
func (u *handyURL) canonicalizeGoogle() {
	if u.hasQuery {
		u.query = escapeOnce(unescapeRepeatedly(u.query))
	}
	if u.host != "" {
		host := unescapeRepeatedly(u.host)
		if !isASCII(host) {
			if a, err := idna.Lookup.ToASCII(strings.ToValidUTF8(host, "")); err == nil {
				host = a
			}
		}
		host = strings.Trim(strings.ReplaceAll(host, "..", "."), ".")
		if ip, ok := ipv4Forms(host); ok {
			host = ip
		} else {
			host = escapeOnce(strings.ToLower(host))
		}
		u.host = host
	}
	path := unescapeRepeatedly(u.path)
	if u.host != "" {
		path = normalizePath(path)
	}
	u.path = escapeOnce(path)
}

var (
	wwwLabel     = regexp.MustCompile(`^www\d*\.`)
	pathSession1 = regexp.MustCompile(`(?i)^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^\?]+\.aspx.*)$`)
	pathSession2 = regexp.MustCompile(`(?i)^(.*/)(\([0-9a-z]{24}\)/)([^\?]+\.aspx.*)$`)
	// The query's session parameters; each removed once, in this order.
	querySessions = []*regexp.Regexp{
		regexp.MustCompile(`(?i)^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
		regexp.MustCompile(`(?i)^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
		regexp.MustCompile(`(?i)^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
		regexp.MustCompile(`(?i)^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$`),
		regexp.MustCompile(`(?i)^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$`),
	}
)

// canonicalizeIA is surt's IAURLCanonicalizer with its default options.
func (u *handyURL) canonicalizeIA() {
	u.host = strings.ToLower(u.host)
	if m := wwwLabel.FindString(u.host); m != "" {
		u.host = u.host[len(m):]
	}
	if (u.scheme == "http" && u.port == "80") || (u.scheme == "https" && u.port == "443") {
		u.port = ""
	}
	path := strings.ToLower(u.path)
	for _, re := range []*regexp.Regexp{pathSession1, pathSession2} {
		if m := re.FindStringSubmatch(path); m != nil {
			path = m[1] + m[3]
		}
	}
	if len(path) > 1 && strings.HasSuffix(path, "/") {
		path = path[:len(path)-1]
	}
	u.path = path
	if u.hasQuery {
		q := u.query
		for _, re := range querySessions {
			if m := re.FindStringSubmatch(q); m != nil {
				q = m[1] + m[2]
			}
		}
		u.query = alphaReorderQuery(strings.ToLower(q))
		u.hasQuery = u.query != ""
	}
}

// alphaReorderQuery sorts a query's parameters as Python sorts the tuples
// of their split at the first "=": by name, a name alone before the same
// name with a value, then by value.
func alphaReorderQuery(q string) string {
	if len(q) <= 1 {
		return q
	}
	args := strings.Split(q, "&")
	slices.SortStableFunc(args, func(a, b string) int {
		an, av, aok := strings.Cut(a, "=")
		bn, bv, bok := strings.Cut(b, "=")
		if c := strings.Compare(an, bn); c != 0 {
			return c
		}
		switch {
		case aok != bok && !aok:
			return -1
		case aok != bok:
			return 1
		}
		return strings.Compare(av, bv)
	})
	return strings.Join(args, "&")
}

// surtKey is surt's SURT formatter with its defaults (no scheme, no
// trailing comma, IPv4 addresses reversed too).
func (u *handyURL) surtKey() string {
	var b strings.Builder
	if u.host == "" {
		b.WriteString(u.scheme)
		b.WriteByte(':')
	} else {
		labels := strings.Split(u.host, ".")
		slices.Reverse(labels)
		b.WriteString(strings.Join(labels, ","))
		if u.port != "" {
			b.WriteByte(':')
			b.WriteString(u.port)
		}
		b.WriteByte(')')
	}
	switch {
	case u.path != "":
		b.WriteString(u.path)
	case u.hasQuery:
		b.WriteByte('/')
	}
	if u.hasQuery {
		b.WriteByte('?')
		b.WriteString(u.query)
	}
	return b.String()
}

// normalizePath removes a path's "." and ".." segments and empty ones, as
// surt's normalizePath: a ".." above the root is kept.
func normalizePath(path string) string {
	if path == "" {
		return "/"
	}
	segs := strings.Split(path, "/")[1:]
	var kept []string
	for _, s := range segs {
		switch s {
		case ".":
		case "..":
			if len(kept) > 0 {
				kept = kept[:len(kept)-1]
			} else {
				kept = append(kept, s)
			}
		default:
			kept = append(kept, s)
		}
	}
	var b strings.Builder
	b.WriteByte('/')
	for i, s := range kept {
		if i == len(kept)-1 {
			b.WriteString(s)
		} else if s != "" {
			b.WriteString(s)
			b.WriteByte('/')
		}
	}
	return b.String()
}

// unescapeRepeatedly decodes %XX escapes until none is left to decode.
func unescapeRepeatedly(s string) string {
	for {
		un := unescapeOnce(s)
		if un == s {
			return s
		}
		s = un
	}
}

// unescapeOnce is Python's unquote_to_bytes: every "%" followed by two hex
// digits is the byte they spell; any other "%" stays.
func unescapeOnce(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// escapeOnce is Python's quote_from_bytes with surt's safe set: every byte
// but ASCII letters, digits and the printable punctuation other than "#"
// and "%" is written %XX (upper-case hex).
func escapeOnce(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if mustEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexDigits = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if mustEscape(c) {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func mustEscape(c byte) bool { return c <= ' ' || c >= 0x7f || c == '#' || c == '%' }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

var (
	decimalIP = regexp.MustCompile(`^[1-9][0-9]*(\.[0-9]+)?(\.[0-9]+)?(\.[0-9]+)?$`)
	octalIP   = regexp.MustCompile(`^0[0-7]*(\.[0-7]+)?(\.[0-7]+)?(\.[0-7]+)?$`)
)

// ipv4Forms is surt's attemptIPFormats: a host of digits alone is a 32-bit
// address (its lower 32 bits), and a dotted decimal or octal one is read
// as inet_aton reads it (a part with a leading 0 is octal; the last part
// fills the bytes the others leave). ok is false for anything else and for
// a number out of range.
func ipv4Forms(host string) (string, bool) {
	if host != "" && strings.Trim(host, "0123456789") == "" {
		var n uint32
		for i := 0; i < len(host); i++ {
			n = n*10 + uint32(host[i]-'0') // wraps: the lower 32 bits
		}
		return dotted(n), true
	}
	if !decimalIP.MatchString(host) && !octalIP.MatchString(host) {
		return "", false
	}
	parts := strings.Split(host, ".")
	var vals []uint64
	for _, p := range parts {
		base := 10
		if len(p) > 1 && p[0] == '0' {
			base = 8
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return "", false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return "", false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(32-8*(len(vals)-1)) {
		return "", false
	}
	return dotted(uint32(n | last)), true
}

func dotted(n uint32) string {
	var b bytes.Buffer
	for i := 3; i >= 0; i-- {
		b.WriteString(strconv.Itoa(int(n >> (8 * i) & 255)))
		if i > 0 {
			b.WriteByte('.')
		}
	}
	return b.String()
}
