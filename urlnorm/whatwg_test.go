package urlnorm

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// wptCase is one object of web-platform-tests' urltestdata.json.
type wptCase struct {
	Input    string  `json:"input"`
	Base     *string `json:"base"`
	Href     string  `json:"href"`
	Protocol string  `json:"protocol"`
	Failure  bool    `json:"failure"`
}

func loadWPT(t *testing.T) []wptCase {
	t.Helper()
	data, err := os.ReadFile(sharedPath(t, "suites/whatwg-url/urltestdata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("urltestdata.json: %v", err)
	}
	var cases []wptCase
	for _, r := range raw {
		if len(r) > 0 && r[0] == '"' {
			continue // a comment
		}
		var c wptCase
		if err := json.Unmarshal(r, &c); err != nil {
			t.Fatalf("urltestdata.json case %s: %v", r, err)
		}
		cases = append(cases, c)
	}
	return cases
}

// inputScheme is the scheme the standard's parser would see in input (after
// its whitespace clean-up), lowercased, or "" for a relative reference.
func inputScheme(input string) string {
	s, _, ok := splitScheme(cleanInput(input))
	if !ok {
		return ""
	}
	return strings.ToLower(s)
}

func isHTTP(scheme string) bool { return scheme == "http" || scheme == "https" }

// inScope reports whether a case is an http(s) case: an http(s) input, or a
// relative input with an http(s) base.
func (c wptCase) inScope() bool {
	s := inputScheme(c.Input)
	if isHTTP(s) {
		return true
	}
	return s == "" && c.Base != nil && isHTTP(inputScheme(*c.Base))
}

func (n *Normalizer) run(c wptCase) (string, error) {
	if c.Base == nil {
		return n.Normalize(c.Input)
	}
	return n.Resolve(*c.Base, c.Input)
}

// TestWHATWGExact checks the parser without the policy: for every http(s)
// case the serialization must equal the standard's href byte for byte, and
// every failure must be an error.
func TestWHATWGExact(t *testing.T) {
	cases := loadWPT(t)
	n := newExact(t)
	pass, total := 0, 0
	for _, c := range cases {
		if !c.inScope() {
			continue
		}
		total++
		got, err := n.run(c)
		switch {
		case c.Failure && err == nil:
			t.Errorf("input %q base %v: got %q, want failure", c.Input, deref(c.Base), got)
		case c.Failure:
			pass++
		case err != nil && !isHTTP(strings.TrimSuffix(c.Protocol, ":")):
			// e.g. "javascript:x" against an http base: not crawled.
			if !errors.Is(err, ErrUnsupportedScheme) {
				t.Errorf("input %q base %v: got %v, want ErrUnsupportedScheme", c.Input, deref(c.Base), err)
			} else {
				pass++
			}
		case err != nil:
			t.Errorf("input %q base %v: got error %v, want %q", c.Input, deref(c.Base), err, c.Href)
		case got != c.Href:
			t.Errorf("input %q base %v: got %q, want %q", c.Input, deref(c.Base), got, c.Href)
		default:
			pass++
		}
	}
	t.Logf("WHATWG urltestdata.json, parser without policy: %d of %d http(s) cases pass", pass, total)
	if total < 300 {
		t.Errorf("only %d http(s) cases found; the suite file looks truncated", total)
	}
}

// applyPolicy turns the standard's href into what Normalize must return,
// one deliberate difference at a time. It is a slow, separate rewrite of the
// policy (string operations on the finished href), not the package's code.
func applyPolicy(href string) string {
	// 1. The fragment names a part of one page, not another page: drop it,
	//    except a hash-bang ("#!"), which AJAX-crawlable sites use for pages.
	if i := strings.IndexByte(href, '#'); i >= 0 && !strings.HasPrefix(href[i:], "#!") {
		href = href[:i]
	}
	frag := ""
	if i := strings.IndexByte(href, '#'); i >= 0 {
		href, frag = href[:i], href[i:]
	}
	// 2. An empty query "?" asks for the same resource as no query.
	//    (Only an empty query: "??" is the query "?" and stays.)
	if i := strings.IndexByte(href, '?'); i == len(href)-1 {
		href = href[:i]
	}
	// 3. Escapes are case-insensitive and escaped unreserved characters
	//    equal the characters (RFC 3986 6.2.2.1, 6.2.2.2). A stray '%' next
	//    to the escape is left alone, as the package documents.
	fix := fixEscapes
	scheme, rest, _ := strings.Cut(href, "://")
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	// 4. "example.com." and "example.com" are the same host (the root
	//    label); the package removes one trailing dot.
	userinfo, host := "", authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, host = fix(authority[:i+1]), authority[i+1:]
	}
	port := ""
	if !strings.HasSuffix(host, "]") {
		if i := strings.LastIndexByte(host, ':'); i >= 0 {
			host, port = host[:i], host[i:]
		}
	}
	if strings.HasSuffix(host, ".") && !strings.HasSuffix(host, "..") && len(host) > 1 {
		host = host[:len(host)-1]
	}
	return scheme + "://" + userinfo + host + port + fix(path) + fix(frag)
}

// fixEscapes uppercases escapes and decodes unreserved ones, except that
// an escaped hex digit right after a stray '%' (or '%' and one hex digit)
// stays encoded, so that no new escape appears.
func fixEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			v := unhexPair(s[i+1], s[i+2])
			out := b.String()
			stray := strings.HasSuffix(out, "%") || len(out) >= 2 && out[len(out)-2] == '%' && isHex(out[len(out)-1])
			if unreserved[v] && !(isHex(v) && stray) {
				b.WriteByte(v)
			} else {
				b.WriteString(strings.ToUpper(s[i : i+3]))
			}
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unhexPair(a, b byte) byte {
	x, _ := unhex(a)
	y, _ := unhex(b)
	return x<<4 | y
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// TestWHATWGPolicy checks Normalize/Resolve against the standard's href
// after applyPolicy's deliberate differences.
func TestWHATWGPolicy(t *testing.T) {
	cases := loadWPT(t)
	n, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	pass, total := 0, 0
	for _, c := range cases {
		if !c.inScope() || c.Failure || !isHTTP(strings.TrimSuffix(c.Protocol, ":")) {
			continue
		}
		total++
		want := applyPolicy(c.Href)
		got, err := n.run(c)
		if err != nil || got != want {
			t.Errorf("input %q base %v: got %q, %v; want %q (href %q)", c.Input, deref(c.Base), got, err, want, c.Href)
			continue
		}
		// Normalize must be idempotent on its own output.
		if again, err := n.Normalize(got); err != nil || again != got {
			t.Errorf("Normalize(%q) = %q, %v; want it unchanged", got, again, err)
			continue
		}
		pass++
	}
	t.Logf("WHATWG urltestdata.json, with the safe policy: %d of %d http(s) cases pass", pass, total)
}
