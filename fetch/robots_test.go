package fetch

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// rfcExample is the robots.txt of RFC 9309 section 5.1.
const rfcExample = `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF`

func TestRobotsAllowed(t *testing.T) {
	tests := []struct {
		name  string // RFC 9309 section the case checks
		robot string
		agent string
		path  string
		want  bool
	}{
		// 5.1: the simple example, for each group.
		{"5.1 star gif$", rfcExample, "otherbot", "/a/b.gif", false},
		{"5.1 star gif$ not at end", rfcExample, "otherbot", "/a/b.gif?x", true},
		{"5.1 star example", rfcExample, "otherbot", "/example/x", false},
		{"5.1 star publications", rfcExample, "otherbot", "/publications/x", true},
		{"5.1 star other", rfcExample, "otherbot", "/other", true},
		{"5.1 foobot disallow all", rfcExample, "foobot", "/other", false},
		{"5.1 foobot allowed page", rfcExample, "foobot", "/example/page.html", true},
		{"5.1 foobot allowed gif", rfcExample, "foobot", "/example/allowed.gif", true},
		{"5.1 foobot gif not star group", rfcExample, "FooBot/1.2 (+http://x)", "/example/allowed.gif", true},
		{"5.1 barbot", rfcExample, "barbot", "/example/page.html", false},
		{"5.1 bazbot shares group", rfcExample, "bazbot", "/example/page.html", false},
		{"5.1 bazbot not star rules", rfcExample, "bazbot", "/example/other", true},
		{"5.1 quxbot empty group allows all", rfcExample, "quxbot", "/example/x", true},

		// 5.2: longest match.
		{"5.2 longest match", "User-agent: *\nallow: /example/page/\ndisallow: /example/page/disallowed.gif\n", "x", "/example/page/disallowed.gif", false},
		{"5.2 longest match allow", "User-agent: *\nallow: /example/page/\ndisallow: /example/page/disallowed.gif\n", "x", "/example/page/ok.gif", true},

		// 2.2.1: product token matched case-insensitively; merged groups; * fallback.
		{"2.2.1 case-insensitive", "User-agent: LayerCrawl\nDisallow: /x\n", "layercrawl/0.1", "/x", false},
		{"2.2.1 token not substring", "User-agent: layer\nDisallow: /x\n", "layercrawl", "/x", true},
		{"2.2.1 specific beats star", "User-agent: *\nDisallow: /\n\nUser-agent: layercrawl\nAllow: /\n", "layercrawl", "/x", true},
		{"2.2.1 star fallback", "User-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /x\n", "layercrawl", "/x", false},
		{"2.2.1 no group matches", "User-agent: other\nDisallow: /\n", "layercrawl", "/x", true},
		{"2.2.1 merged groups a", "User-agent: a\nDisallow: /one\n\nUser-agent: b\nDisallow: /two\n\nUser-agent: a\nDisallow: /three\n", "a", "/three", false},
		{"2.2.1 merged groups b", "User-agent: a\nDisallow: /one\n\nUser-agent: b\nDisallow: /two\n\nUser-agent: a\nDisallow: /three\n", "a", "/one", false},
		{"2.2.1 merged groups other", "User-agent: a\nDisallow: /one\n\nUser-agent: b\nDisallow: /two\n\nUser-agent: a\nDisallow: /three\n", "a", "/two", true},
		{"2.2.1 star merged", "User-agent: *\nDisallow: /one\n\nUser-agent: *\nDisallow: /two\n", "x", "/two", false},

		// 2.2.2: longest match, allow wins a tie, no match allows.
		{"2.2.2 tie allow wins", "User-agent: *\nDisallow: /page\nAllow: /page\n", "x", "/page", true},
		{"2.2.2 tie allow wins reversed", "User-agent: *\nAllow: /page\nDisallow: /page\n", "x", "/page", true},
		{"2.2.2 longer disallow", "User-agent: *\nAllow: /p\nDisallow: /page\n", "x", "/page", false},
		{"2.2.2 longer allow", "User-agent: *\nDisallow: /p\nAllow: /page\n", "x", "/page", true},
		{"2.2.2 empty disallow", "User-agent: *\nDisallow:\n", "x", "/anything", true},
		{"2.2.2 robots.txt implicitly allowed", "User-agent: *\nDisallow: /\n", "x", "/robots.txt", true},
		{"2.2.2 query is matched", "User-agent: *\nDisallow: /s?q=\n", "x", "/s?q=1", false},
		{"2.2.2 prefix match", "User-agent: *\nDisallow: /fish\n", "x", "/fish.html", false},
		{"2.2.2 case-sensitive path", "User-agent: *\nDisallow: /fish\n", "x", "/Fish", true},
		{"2.2.2 empty path is /", "User-agent: *\nDisallow: /$\n", "x", "", false},

		// 2.2.2: percent-encoding normalized on both sides (RFC table).
		{"2.2.2 utf8 rule vs encoded path", "User-agent: *\nDisallow: /foo/bar/ツ\n", "x", "/foo/bar/%E3%83%84", false},
		{"2.2.2 encoded rule vs encoded path", "User-agent: *\nDisallow: /foo/bar/%E3%83%84\n", "x", "/foo/bar/%E3%83%84", false},
		{"2.2.2 lower-case hex", "User-agent: *\nDisallow: /foo/bar/%e3%83%84\n", "x", "/foo/bar/%E3%83%84", false},
		{"2.2.2 encoded unreserved in rule", "User-agent: *\nDisallow: /foo/bar/%62%61%7A\n", "x", "/foo/bar/baz", false},
		{"2.2.2 encoded unreserved in path", "User-agent: *\nDisallow: /foo/bar/baz\n", "x", "/foo/bar/%62%61%7A", false},
		{"2.2.2 reserved stays encoded", "User-agent: *\nDisallow: /a%2Fb\n", "x", "/a/b", true},
		{"2.2.2 utf8 path vs encoded rule", "User-agent: *\nDisallow: /foo/bar/%E3%83%84\n", "x", "/foo/bar/ツ", false},

		// 2.2.3: special characters.
		{"2.2.3 $ end", "User-agent: *\nDisallow: /this/path/exactly$\n", "x", "/this/path/exactly", false},
		{"2.2.3 $ end longer", "User-agent: *\nDisallow: /this/path/exactly$\n", "x", "/this/path/exactly/more", true},
		{"2.2.3 * middle", "User-agent: *\nDisallow: /this/*/exactly\n", "x", "/this/a/b/exactly", false},
		{"2.2.3 * middle no match", "User-agent: *\nDisallow: /this/*/exactly\n", "x", "/this/exactly", true},
		{"2.2.3 * and $", "User-agent: *\nDisallow: /*.php$\n", "x", "/a/b.php", false},
		{"2.2.3 * and $ query", "User-agent: *\nDisallow: /*.php$\n", "x", "/a/b.php?x=1", true},
		{"2.2.3 comment", "User-agent: * # all\nDisallow: /x # no x\n# Disallow: /y\n", "x", "/y", true},
		{"2.2.3 comment rule", "User-agent: * # all\nDisallow: /x # no x\n", "x", "/x", false},
		{"2.2.3 $ in the middle is literal", "User-agent: *\nDisallow: /a$b\n", "x", "/a$bc", false},
		{"2.2.3 only * disallows all", "User-agent: *\nDisallow: *\n", "x", "/q", false},
		{"2.2.3 longest with wildcards", "User-agent: *\nDisallow: /*\nAllow: /ok\n", "x", "/ok/1", true},

		// 2.1 / 2.2: syntax tolerance.
		{"2.1 rules before any group ignored", "Disallow: /\nUser-agent: *\nDisallow: /x\n", "x", "/y", true},
		{"2.1 CRLF and CR", "User-agent: *\r\nDisallow: /a\rDisallow: /b\r\n", "x", "/b", false},
		{"2.1 BOM", "\xef\xbb\xbfUser-agent: *\nDisallow: /a\n", "x", "/a", false},
		{"2.1 keys case-insensitive", "USER-AGENT: *\nDISALLOW: /a\n", "x", "/a", false},
		{"2.1 whitespace around colon", "User-agent   :   *\nDisallow   :   /a\n", "x", "/a", false},
		{"2.1 line without colon ignored", "User-agent: *\nDisallow /a\n", "x", "/a", true},
		{"2.1 sitemap does not end agents", "User-agent: a\nSitemap: http://x/s.xml\nUser-agent: b\nDisallow: /x\n", "a", "/x", false},
		{"2.1 unknown key does not end agents", "User-agent: a\nFoo: bar\nUser-agent: b\nDisallow: /x\n", "a", "/x", false},
		{"2.1 agent after rule starts new group", "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\n", "a", "/y", true},
		{"2.1 garbage", "\x00\xff<html><body>not robots</body></html>", "x", "/", true},

		// 2.3.1: constructed answers.
		{"2.3.1 empty file", "", "x", "/", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRobots([]byte(tt.robot))
			if err != nil {
				t.Fatalf("ParseRobots: %v", err)
			}
			if got := r.Allowed(tt.agent, tt.path); got != tt.want {
				t.Errorf("Allowed(%q, %q) = %v, want %v\nrobots.txt:\n%s", tt.agent, tt.path, got, tt.want, tt.robot)
			}
		})
	}
}

func TestRobotsSpecial(t *testing.T) {
	if got := AllowAllRobots().Allowed("x", "/a"); !got {
		t.Errorf("AllowAllRobots().Allowed = false, want true")
	}
	d := DisallowAllRobots()
	if got := d.Allowed("x", "/a"); got {
		t.Errorf("DisallowAllRobots().Allowed(/a) = true, want false")
	}
	if got := d.Allowed("x", "/robots.txt"); !got {
		t.Errorf("DisallowAllRobots().Allowed(/robots.txt) = false, want true (RFC 9309 2.2.2)")
	}
	if !d.DisallowsAll() {
		t.Errorf("DisallowsAll() = false")
	}
}

func TestRobotsCrawlDelay(t *testing.T) {
	const file = "User-agent: *\nCrawl-delay: 2\n\nUser-agent: slow\nCrawl-delay: 7.5\nDisallow: /x\n\nUser-agent: slow\nCrawl-delay: 3\n\nUser-agent: bad\nCrawl-delay: soon\n\nUser-agent: huge\nCrawl-delay: 1e300\n"
	r, _ := ParseRobots([]byte(file))
	tests := []struct {
		agent string
		want  time.Duration
	}{
		{"other", 2 * time.Second},
		{"slow", 7500 * time.Millisecond}, // merged groups: the larger delay
		{"bad", 0},
		{"huge", maxCrawlDelay},
	}
	for _, tt := range tests {
		if got := r.CrawlDelay(tt.agent); got != tt.want {
			t.Errorf("CrawlDelay(%q) = %v, want %v", tt.agent, got, tt.want)
		}
	}
}

func TestRobotsSitemaps(t *testing.T) {
	r, _ := ParseRobots([]byte("Sitemap: http://a/1.xml\nUser-agent: *\nSitemap: http://a/2.xml # c\nSitemap:\n"))
	got := strings.Join(r.Sitemaps(), " ")
	if want := "http://a/1.xml http://a/2.xml"; got != want {
		t.Errorf("Sitemaps() = %q, want %q", got, want)
	}
}

// TestParseRobotsSizeCap checks the 500 KiB cut of RFC 9309 section 2.5:
// rules before it apply, rules after it do not, and the line it cuts is
// dropped rather than read as a shorter, different rule.
func TestParseRobotsSizeCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /early\n")
	for b.Len() < DefaultMaxRobotsSize-10 {
		b.WriteString("# padding padding padding padding\n")
	}
	for b.Len() < DefaultMaxRobotsSize-3 {
		b.WriteString("#")
	}
	b.WriteString("\nDisallow: /p-the-cut-falls-inside-this-line\nDisallow: /late\n")
	r, _ := ParseRobots([]byte(b.String()))
	tests := []struct {
		path string
		want bool
	}{
		{"/early", false},
		{"/late", true},
		{"/p", true}, // would be disallowed had the cut line been kept as "Disallow: /p"
	}
	for _, tt := range tests {
		if got := r.Allowed("x", tt.path); got != tt.want {
			t.Errorf("Allowed(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestNormalizeRobotsPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/plain", "/plain"},
		{"/ツ", "/%E3%83%84"},
		{"/%e3%83%84", "/%E3%83%84"},
		{"/%62%61%7A", "/baz"},
		{"/%2f", "/%2F"},
		{"/a b", "/a%20b"},
		{"/%", "/%"},
		{"/%zz", "/%zz"},
		{"/%4", "/%4"},
		{"/%7e", "/~"},
		{"/*$", "/*$"},
	}
	for _, tt := range tests {
		if got := normalizeRobotsPath(tt.in); got != tt.want {
			t.Errorf("normalizeRobotsPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAgentToken(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Googlebot/2.1 (+http://www.google.com/bot.html)", "googlebot"},
		{"layercrawl", "layercrawl"},
		{" * ", "*"},
		{"foo_bar-baz9", "foo_bar-baz"},
		{"/1.0", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := agentToken(tt.in); got != tt.want {
			t.Errorf("agentToken(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// referenceMatch is a slow, obviously correct matcher: the pattern becomes
// an anchored regular expression.
func referenceMatch(pattern, path string) bool {
	var b strings.Builder
	b.WriteString(`^`)
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	for i, part := range strings.Split(pattern, "*") {
		if i > 0 {
			b.WriteString(`(?s:.*)`)
		}
		b.WriteString(regexp.QuoteMeta(part))
	}
	if anchored {
		b.WriteString(`$`)
	}
	return regexp.MustCompile(b.String()).MatchString(path)
}

func TestMatchRobotsPatternTable(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/", "/", true},
		{"/a", "/", false},
		{"*", "/x", true},
		{"/*a*b$", "/xaxb", true},
		{"/*a*b$", "/xaxbx", false},
		{"/*a*b$", "/xbxab", true},
		{"/a*a*a$", "/aa", false},
		{"/a*a*a$", "/aaa", true},
		{"/ab*b$", "/ab", false},
		{"/a*a*a$", "/aaaa", true},
		{"/**", "/", true},
		{"$", "/", false},
		{"/$", "/", true},
		{"/x*$", "/x", true},
	}
	for _, tt := range tests {
		if got := matchRobotsPattern(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matchRobotsPattern(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
		if ref := referenceMatch(tt.pattern, tt.path); ref != tt.want {
			t.Errorf("referenceMatch(%q, %q) = %v, want %v (bad test)", tt.pattern, tt.path, ref, tt.want)
		}
	}
}

// FuzzMatchRobotsPattern compares the fast matcher with the regexp one.
func FuzzMatchRobotsPattern(f *testing.F) {
	seeds := [][2]string{
		{"/*a*b$", "/xaxb"}, {"/a*a*a$", "/aaaa"}, {"/", "/"}, {"*", ""}, {"$", ""},
		{"/fish*.php", "/fish/salmon.php?x"}, {"/a$b", "/a$b"}, {"/**$", "/x"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > 64 || len(path) > 128 {
			return // keep the regexp reference cheap
		}
		// The matcher only ever sees normalized (ASCII) text.
		pattern, path = normalizeRobotsPath(pattern), normalizeRobotsPath(path)
		if got, want := matchRobotsPattern(pattern, path), referenceMatch(pattern, path); got != want {
			t.Errorf("matchRobotsPattern(%q, %q) = %v, reference says %v", pattern, path, got, want)
		}
	})
}

// referenceAllowed applies RFC 9309 section 2.2.2 the slow way over the
// groups the parser selected.
func referenceAllowed(r *Robots, agent, path string) bool {
	if path == "" {
		path = "/"
	}
	path = normalizeRobotsPath(path)
	if path == "/robots.txt" {
		return true
	}
	if r.disallowAll {
		return false
	}
	best, allowed := -1, true
	r.groupsFor(agent, func(g *robotsGroup) {
		for _, rule := range g.rules {
			if !referenceMatch(rule.pattern, path) {
				continue
			}
			if n := len(rule.pattern); n > best || (n == best && rule.allow) {
				best, allowed = n, rule.allow
			}
		}
	})
	return allowed
}

// FuzzParseRobots feeds arbitrary files: parsing must not panic, the
// decision must agree with the slow reference, and /robots.txt must stay
// allowed.
func FuzzParseRobots(f *testing.F) {
	f.Add([]byte(rfcExample), "foobot", "/example/page.html")
	f.Add([]byte("User-agent: *\nDisallow: /*.gif$\nAllow: /ok\nCrawl-delay: 1.5\nSitemap: http://x/s"), "x", "/a.gif")
	f.Add([]byte("\xef\xbb\xbfuser-agent:a\r\nuser-agent:b\rdisallow:/%E3%83%84\n"), "b", "/ツ")
	f.Add([]byte("Disallow: /\n\x00\xff\nUser-agent: *\nAllow:"), "*", "")
	f.Add([]byte("User-agent: *\nDisallow: /\nAllow: /$\n"), "layercrawl/1.0", "/")
	f.Fuzz(func(t *testing.T, body []byte, agent, path string) {
		if len(body) > 4096 || len(path) > 256 {
			return
		}
		r, err := ParseRobots(body)
		if err != nil {
			t.Fatalf("ParseRobots: %v", err)
		}
		got := r.Allowed(agent, path)
		if want := referenceAllowed(r, agent, path); got != want {
			t.Errorf("Allowed(%q, %q) = %v, reference says %v\n%q", agent, path, got, want, body)
		}
		if !r.Allowed(agent, "/robots.txt") {
			t.Errorf("/robots.txt disallowed by %q", body)
		}
		if d := r.CrawlDelay(agent); d < 0 || d > maxCrawlDelay {
			t.Errorf("CrawlDelay = %v out of range", d)
		}
	})
}
