package monitor

import "strings"

// redactURL removes the userinfo (user name and password) of an absolute
// URL, so that credentials never reach the status page or the JSON. A
// string without "://" is returned as is.
func redactURL(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return s
	}
	return s[:i+3] + rest[at+1:]
}

// hostOf returns the host[:port] of an absolute URL without userinfo, or
// "" when s has no "://".
func hostOf(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return ""
	}
	rest := s[i+3:]
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		rest = rest[at+1:]
	}
	return strings.ToLower(rest)
}
