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

// redactArgs returns args with the userinfo of every URL in them removed
// (redactURL), as "--redis=redis://user:pw@host" or a seed with
// credentials.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = redactAll(a)
	}
	return out
}

// redactAll applies redactURL to every "://" of s: an argument may hold
// more than one URL.
func redactAll(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		// The URL's scheme is before i; redactURL handles the rest up
		// to the next URL, which starts after the authority.
		j := strings.Index(s[i+3:], "://")
		if j < 0 {
			b.WriteString(redactURL(s))
			return b.String()
		}
		// Cut before the next URL's scheme: after the last byte that
		// cannot be part of a scheme.
		cut := i + 3 + j
		for cut > i+3 && isSchemeByte(s[cut-1]) {
			cut--
		}
		b.WriteString(redactURL(s[:cut]))
		s = s[cut:]
	}
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}
