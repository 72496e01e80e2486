package fetch

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
)

// Robots is a parsed robots.txt file (RFC 9309). It is immutable and safe
// for concurrent use.
//
// This is an own parser rather than github.com/temoto/robotstxt v1.1.2
// (colly's dependency) because, checked against the RFC cases of this
// package's tests, that library lets the rule order decide an allow /
// disallow tie (section 2.2.2: allow wins), does not normalize percent-
// encoding ("/%62%61%7A" vs "/baz", "/ツ" vs "/%E3%83%84"), matches the
// group "layer" for the crawler "layercrawl" (section 2.2.1 matches the
// product token, not a prefix), and lets "Disallow: /" block /robots.txt.
type Robots struct {
	groups   []robotsGroup
	sitemaps []string
	// disallowAll is set for a site whose robots.txt was unreachable
	// (RFC 9309 section 2.3.1.4): everything but /robots.txt is disallowed.
	disallowAll bool
}

type robotsGroup struct {
	agents     []string // lower-cased product tokens, or "*"
	rules      []robotsRule
	crawlDelay time.Duration
	hasDelay   bool
}

type robotsRule struct {
	allow   bool
	pattern string // normalized by normalizeRobotsPath
}

// maxCrawlDelay bounds a parsed Crawl-delay so that absurd values cannot
// overflow time.Duration; the frontier applies its own, smaller cap.
const maxCrawlDelay = 24 * time.Hour

// AllowAllRobots returns a Robots that allows every path: what a 4xx
// robots.txt means (RFC 9309 section 2.3.1.3).
func AllowAllRobots() *Robots { return &Robots{} }

// DisallowAllRobots returns a Robots that disallows every path but
// /robots.txt: what an unreachable robots.txt means (RFC 9309 section
// 2.3.1.4).
func DisallowAllRobots() *Robots { return &Robots{disallowAll: true} }

// ParseRobots parses a robots.txt body. It never fails: RFC 9309 section
// 2.2 has crawlers ignore lines they cannot parse, so the error is always
// nil and exists for the contract's sake. Only the first
// DefaultMaxRobotsSize bytes (500 KiB, RFC 9309 section 2.5) are parsed; a
// line cut by that limit is dropped.
func ParseRobots(body []byte) (*Robots, error) {
	return parseRobots(body, DefaultMaxRobotsSize), nil
}

func parseRobots(body []byte, limit int64) *Robots {
	if int64(len(body)) > limit {
		body = body[:limit]
		if i := bytes.LastIndexAny(body, "\r\n"); i >= 0 {
			body = body[:i]
		} else {
			body = nil
		}
	}
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	r := &Robots{}
	var cur *robotsGroup
	inRules := false // a rule has been seen since the last user-agent line
	for len(body) > 0 {
		var line []byte
		if i := bytes.IndexAny(body, "\r\n"); i >= 0 {
			line = body[:i]
			body = body[i+1:]
		} else {
			line, body = body, nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(string(k)))
		value := strings.TrimSpace(string(v))
		switch key {
		case "user-agent", "useragent", "user agent":
			// Consecutive user-agent lines form one group's start; one
			// after a rule starts a new group (RFC 9309 section 2.1).
			if cur == nil || inRules {
				r.groups = append(r.groups, robotsGroup{})
				cur = &r.groups[len(r.groups)-1]
				inRules = false
			}
			if tok := agentToken(value); tok != "" {
				cur.agents = append(cur.agents, tok)
			}
		case "allow", "disallow", "dissallow", "dissalow", "disalow", "disallaw":
			if cur == nil {
				continue // a rule outside any group (RFC 9309 section 2.1)
			}
			inRules = true
			if value == "" {
				// An empty path matches nothing (RFC 9309 section 2.2.2).
				continue
			}
			cur.rules = append(cur.rules, robotsRule{allow: key == "allow", pattern: normalizeRobotsPath(value)})
		case "crawl-delay", "crawldelay":
			if cur == nil {
				continue
			}
			inRules = true
			if d, ok := parseCrawlDelay(value); ok && (!cur.hasDelay || d > cur.crawlDelay) {
				cur.crawlDelay, cur.hasDelay = d, true
			}
		case "sitemap", "site-map":
			// Not a group member: does not end a run of user-agent lines
			// (RFC 9309 section 2.2.4).
			if value != "" {
				r.sitemaps = append(r.sitemaps, value)
			}
		}
	}
	return r
}

func parseCrawlDelay(s string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f > maxCrawlDelay.Seconds() {
		return maxCrawlDelay, true
	}
	return time.Duration(f * float64(time.Second)), true
}

// agentToken returns the product token a user-agent value or a crawler's
// User-Agent string starts with, lower-cased (RFC 9309 section 2.2.1:
// product tokens are [a-zA-Z_-]+ and are matched case-insensitively), or
// "*" for the wildcard group.
func agentToken(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "*") {
		return "*"
	}
	end := 0
	for end < len(s) {
		c := s[end]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' {
			end++
			continue
		}
		break
	}
	return strings.ToLower(s[:end])
}

// Sitemaps returns the Sitemap URLs the file lists, in file order.
func (r *Robots) Sitemaps() []string { return append([]string(nil), r.sitemaps...) }

// groupsFor calls fn for each group that applies to the crawler whose
// User-Agent (or product token) is userAgent: every group naming its
// product token, merged (RFC 9309 section 2.2.1), or else every "*" group.
// It allocates nothing: Allowed runs once per discovered URL.
func (r *Robots) groupsFor(userAgent string, fn func(g *robotsGroup)) {
	tok := agentToken(userAgent)
	exact := false
	if tok != "" && tok != "*" {
		for i := range r.groups {
			if r.groups[i].names(tok) {
				exact = true
				fn(&r.groups[i])
			}
		}
	}
	if exact {
		return
	}
	for i := range r.groups {
		if r.groups[i].names("*") {
			fn(&r.groups[i])
		}
	}
}

// names reports whether the group lists the agent token tok.
func (g *robotsGroup) names(tok string) bool {
	for _, a := range g.agents {
		if a == tok {
			return true
		}
	}
	return false
}

// Allowed reports whether the crawler identified by userAgent (its
// User-Agent header, or just the product token) may fetch pathAndQuery
// (the URL's escaped path plus "?" and query, e.g. u.RequestURI()).
//
// Per RFC 9309 section 2.2.2: the longest matching rule wins, counted in
// octets of the pattern; an allow rule wins a tie; no match means allowed;
// "*" matches any sequence and a final "$" anchors the end; rule and path
// are both percent-encoding-normalized before matching; /robots.txt is
// always allowed.
func (r *Robots) Allowed(userAgent, pathAndQuery string) bool {
	if pathAndQuery == "" {
		pathAndQuery = "/"
	}
	path := normalizeRobotsPath(pathAndQuery)
	if path == "/robots.txt" {
		return true
	}
	if r.disallowAll {
		return false
	}
	bestLen, allowed := -1, true
	r.groupsFor(userAgent, func(g *robotsGroup) {
		for _, rule := range g.rules {
			n := len(rule.pattern)
			if n < bestLen || (n == bestLen && allowed) {
				continue // cannot beat the current best
			}
			if matchRobotsPattern(rule.pattern, path) {
				bestLen, allowed = n, rule.allow
			}
		}
	})
	return allowed
}

// CrawlDelay returns the Crawl-delay (a widely used extension outside RFC
// 9309) of the groups that apply to userAgent, the largest if merged groups
// give several; 0 if none.
func (r *Robots) CrawlDelay(userAgent string) time.Duration {
	var d time.Duration
	r.groupsFor(userAgent, func(g *robotsGroup) {
		if g.hasDelay && g.crawlDelay > d {
			d = g.crawlDelay
		}
	})
	return d
}

// DisallowsAll reports whether r is the disallow-everything Robots of an
// unreachable robots.txt.
func (r *Robots) DisallowsAll() bool { return r.disallowAll }

// matchRobotsPattern reports whether pattern matches a prefix of path (or
// all of it, with a final "$"), "*" matching any sequence. Placing every
// literal segment at its leftmost possible position is optimal for this
// glob language, so the match is linear in practice and never backtracks.
func matchRobotsPattern(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	first, rest, hasStar := strings.Cut(pattern, "*")
	if !strings.HasPrefix(path, first) {
		return false
	}
	if !hasStar {
		return !anchored || len(path) == len(first)
	}
	pos := len(first)
	for {
		seg, more, isMiddle := strings.Cut(rest, "*")
		if !isMiddle {
			if anchored {
				return len(path)-pos >= len(seg) && strings.HasSuffix(path, seg)
			}
			return strings.Contains(path[pos:], seg)
		}
		i := strings.Index(path[pos:], seg)
		if i < 0 {
			return false
		}
		pos += i + len(seg)
		rest = more
	}
}

// normalizeRobotsPath brings a rule pattern or a path to the form RFC 9309
// section 2.2.2 compares: percent-encoded unreserved characters
// (ALPHA / DIGIT / "-" / "." / "_" / "~", RFC 3986 section 2.3) decoded,
// other escapes kept with upper-case hex digits, and octets outside
// printable US-ASCII (UTF-8 bytes, controls, space) percent-encoded.
func normalizeRobotsPath(s string) string {
	if isNormalRobotsPath(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(hex[v>>4])
				b.WriteByte(hex[v&15])
			}
			i += 2
		case c <= 0x20 || c >= 0x7f:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// isNormalRobotsPath reports whether normalizeRobotsPath(s) == s, without
// allocating: no '%' and no octet needing an escape.
func isNormalRobotsPath(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '%' || c <= 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func isUnreserved(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
