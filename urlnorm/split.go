package urlnorm

import (
	"net/netip"
	"strings"
)

// SplitCanonical returns the scheme, the host (with its port, what
// net/url.URL.Host holds) and the host name (without port or IPv6
// brackets, what URL.Hostname returns) of a canonical URL, a result of
// Normalize or Resolve. It reads them off the known layout of such a URL
// instead of parsing it again, and allocates nothing: the strings share
// canonical's memory.
//
// ok is false unless canonical is "http://" or "https://", an optional
// userinfo ending in '@', a non-empty host and an optional ':' and decimal
// port, followed by the end or '/', '?' or '#'. It is also false for a
// host that net/url, and so Go's HTTP client, rejects: WHATWG parsing
// (and so Normalize) accepts '`', '{' and '}' in a domain. For every result
// of Normalize, ok is true exactly when net/url.Parse accepts it, and the
// strings then equal its Scheme, Host and Hostname(). For other input, ok
// does not mean the rest of the URL is valid.
func SplitCanonical(canonical string) (scheme, host, hostname string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(canonical, "http://"):
		scheme, rest = canonical[:4], canonical[7:]
	case strings.HasPrefix(canonical, "https://"):
		scheme, rest = canonical[:5], canonical[8:]
	default:
		return "", "", "", false
	}
	start, end := 0, len(rest)
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c == '/' || c == '?' || c == '#' {
			end = i
			break
		} else if c == '@' {
			start = i + 1 // the last '@' ends the userinfo, as in net/url
		}
	}
	host = rest[start:end]
	if host != "" && host[0] == '[' {
		i := strings.IndexByte(host, ']')
		if i < 0 || !validPort(host[i+1:]) {
			return "", "", "", false
		}
		hostname = host[1:i]
		// Only for IPv6 hosts, which are rare: net/url accepts a valid
		// IPv6 address in brackets, no IPv4 and (canonical URLs have
		// none) no zone. ParseAddr allocates only for a zone.
		if a, err := netip.ParseAddr(hostname); err != nil || a.Is4() || a.Zone() != "" {
			return "", "", "", false
		}
		return scheme, host, hostname, true
	}
	hostname = host
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		if !validPort(host[i:]) {
			return "", "", "", false
		}
		hostname = host[:i]
	}
	if hostname == "" {
		return "", "", "", false
	}
	for i := 0; i < len(hostname); i++ {
		if !splitHostByte[hostname[i]] {
			return "", "", "", false
		}
	}
	return scheme, host, hostname, true
}

// validPort reports whether s is empty or ':' and one or more digits.
func validPort(s string) bool {
	if s == "" {
		return true
	}
	if len(s) < 2 || s[0] != ':' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// splitHostByte marks the bytes a domain or IPv4 host may hold in both a
// canonical URL (WHATWG: no forbidden domain code point, ASCII) and
// net/url (RFC 3986 reg-name: unreserved and sub-delims, plus '"'). The
// bytes only WHATWG allows ('`', '{', '}') are left out.
var splitHostByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = unreserved[c]
	}
	for _, c := range "!$&'()*+,;=\"" {
		t[c] = true
	}
	return t
}()
