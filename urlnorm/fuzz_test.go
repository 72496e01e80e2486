package urlnorm

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// fuzzSeeds are inputs that reach every state of the parser.
var fuzzSeeds = []string{
	"http://h/", "HTTPS://User:Pw@Example.COM:0443/a/./b/../%7e%2f?q=%41+b#frag",
	"http:\\\\h\\a", "http:h", "http://0x7f.1/", "http://[::ffff:1.2.3.4]:8080/", "http://[1:0::]/",
	"http://xn--bcher-kva.example/", "http://Bücher.example/ü", "http://%62%c3%bc.example/",
	"http://h/%4%31", "http://h/%%41", "http://h/a?#!x", "http://h/#!a b", "  http://h/\t\n",
	"http://a@b@c/", "http://user@/", "http://h:65536/", "http://h/\xff", "http://1.2.3.09/",
	"http://h/a%2Fb/..", "http://h/.%2e/%2E./x", "mailto:x", "//h/x", "?q", "#!f", "../../x",
	"http://example.com./", "http://www.example.co.uk/index.html;jsessionid=1?utm_source=x&b&a=",
	"http://h/100%?q=a|b&r=%zz&s[]=%7c%7C#!x|y#z", "http://u%:p%4@h/%%41/%2%65/[x]^{`}?\\^{`}",
}

// allOptions turns on every optional normalization that changes Normalize.
var allOptions = Options{SortQuery: true, RemoveSessionParams: true, CollapseSlashes: true,
	TrailingSlash: RemoveTrailingSlash, RemoveDefaultPages: true, FoldWWW: true, DecodeNumericHosts: true}

// FuzzNormalize checks, for any input: no panic; errors are *Error with a
// sentinel; the result is idempotent and re-joins from its segments; and it
// equals the slow reference: the policy-free WHATWG parse followed by
// applyPolicy (the string rewrite the suite test uses).
func FuzzNormalize(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	n := mustNew(f, Options{})
	exact := newExact(f)
	opt := mustNew(f, allOptions)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := n.Normalize(in)
		ex, exErr := exact.Normalize(in)
		if (err == nil) != (exErr == nil) {
			t.Fatalf("Normalize(%q) = %q, %v but the policy-free parse gives %q, %v", in, got, err, ex, exErr)
		}
		if err != nil {
			checkError(t, err)
			return
		}
		if want := applyPolicy(ex); got != want {
			t.Fatalf("Normalize(%q) = %q; reference gives %q (from %q)", in, got, want, ex)
		}
		if again, err := n.Normalize(got); err != nil || again != got {
			t.Fatalf("Normalize(%q) = %q, then %q, %v: not idempotent", in, got, again, err)
		}
		if err := checkRFC3986Form(got); err != nil {
			t.Fatalf("Normalize(%q) = %q: %v", in, got, err)
		}
		if j := strings.Join(n.Segments(got), "/"); j != got {
			t.Fatalf("Segments(%q) re-join to %q", got, j)
		}
		o, err := opt.Normalize(in)
		if err != nil {
			t.Fatalf("with options: Normalize(%q): %v, but it succeeds without", in, err)
		}
		if again, err := opt.Normalize(o); err != nil || again != o {
			t.Fatalf("with options: Normalize(%q) = %q, then %q, %v: not idempotent", in, o, again, err)
		}
		if err := checkRFC3986Form(o); err != nil {
			t.Fatalf("with options: Normalize(%q) = %q: %v", in, o, err)
		}
	})
}

// checkRFC3986Form is the slow check of the policy's percent-encoding
// (RFC 3986): outside the host, canon is in RFC 3986's grammar (section
// 3) and its escapes are in canonical form (section 6.2.2). Every '%'
// starts an escape of two uppercase hex digits that is not of an
// unreserved character, and every other byte is one the component allows
// raw.
func checkRFC3986Form(canon string) error {
	const (
		unres = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
		sub   = "!$&'()*+,;="
		pchar = unres + sub + ":@"
	)
	rest, ok := strings.CutPrefix(canon, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(canon, "https://"); !ok {
			return errors.New("no http:// or https:// prefix")
		}
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		return errors.New("no path")
	}
	auth, rest := rest[:end], rest[end:]
	userinfo := ""
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		userinfo = auth[:i]
	}
	frag := ""
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, frag = rest[:i], rest[i+1:]
	}
	path, query := rest, ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		path, query = rest[:i], rest[i+1:]
	}
	for _, part := range []struct{ name, s, allowed string }{
		{"userinfo", userinfo, unres + sub + ":"},
		{"path", path, pchar + "/"},
		{"query", query, pchar + "/?"},
		{"fragment", frag, pchar + "/?"},
	} {
		s := part.s
		for i := 0; i < len(s); i++ {
			if s[i] == '%' {
				if i+2 >= len(s) || !strings.ContainsRune("0123456789ABCDEF", rune(s[i+1])) || !strings.ContainsRune("0123456789ABCDEF", rune(s[i+2])) {
					return fmt.Errorf("%s %q: invalid or lowercase escape at byte %d", part.name, s, i)
				}
				if v := unhexPair(s[i+1], s[i+2]); strings.IndexByte(unres, v) >= 0 {
					return fmt.Errorf("%s %q: escape %s of an unreserved character", part.name, s, s[i:i+3])
				}
				i += 2
				continue
			}
			if strings.IndexByte(part.allowed, s[i]) < 0 {
				return fmt.Errorf("%s %q: byte %q is not allowed raw (RFC 3986 section 3)", part.name, s, s[i])
			}
		}
	}
	return nil
}

// FuzzResolve checks resolution: no panic, Base.Resolve agrees with
// Resolve, and the result is canonical.
func FuzzResolve(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add("http://a/b/c/d;p?q", s)
	}
	f.Add("https://u:p@h:8443/x/y?z", "..\\..\\w?#!f")
	n := mustNew(f, Options{})
	f.Fuzz(func(t *testing.T, base, ref string) {
		got, err := n.Resolve(base, ref)
		if err != nil {
			checkError(t, err)
		}
		if b, berr := n.ParseBase(base); berr == nil {
			got2, err2 := b.Resolve(ref)
			if got2 != got || (err2 == nil) != (err == nil) {
				t.Fatalf("Resolve(%q, %q) = %q, %v but Base.Resolve gives %q, %v", base, ref, got, err, got2, err2)
			}
		} else if err == nil {
			t.Fatalf("Resolve(%q, %q) = %q but ParseBase fails: %v", base, ref, got, berr)
		}
		if err != nil {
			return
		}
		if again, err := n.Normalize(got); err != nil || again != got {
			t.Fatalf("Resolve(%q, %q) = %q, but Normalize of it gives %q, %v", base, ref, got, again, err)
		}
		if err := checkRFC3986Form(got); err != nil {
			t.Fatalf("Resolve(%q, %q) = %q: %v", base, ref, got, err)
		}
	})
}

var sentinels = []error{ErrEmpty, ErrMissingScheme, ErrUnsupportedScheme, ErrMissingHost,
	ErrInvalidHost, ErrInvalidIDN, ErrInvalidIPv4, ErrInvalidIPv6, ErrInvalidPort}

// checkError requires an *Error wrapping a sentinel, with a detail that
// says what is wrong (beyond the sentinel's name), on one line.
func checkError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	var c *causeError
	if !errors.As(err, &c) {
		t.Fatalf("error %q carries no cause", err)
	}
	known := false
	for _, s := range sentinels {
		known = known || errors.Is(err, s)
	}
	if !known {
		t.Fatalf("error %q wraps no sentinel", err)
	}
	if c.detail == "" && c.sentinel != ErrEmpty {
		t.Fatalf("error %q has no detail a person could act on", err)
	}
	if msg := err.Error(); strings.ContainsAny(msg, "\n\t") || len(msg) > 1000 {
		t.Fatalf("error message %q: want one short line", msg)
	}
}

// FuzzIPv6 compares the IPv6 parser and serializer with net/netip, a slow
// independent reference, on the inputs both define the same way (no zone,
// and netip's stricter embedded IPv4 rules).
func FuzzIPv6(f *testing.F) {
	for _, s := range []string{"::1", "1:0:0:2:0:0:0:3", "::ffff:1.2.3.4", "2001:db8::", "1:2:3:4:5:6:7:8", "::", "1::2::3", "::1.2.3", "0:0::0:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var a [8]uint16
		err := parseIPv6(&a, s)
		ref, rerr := netip.ParseAddr(s)
		if strings.ContainsAny(s, "%") || rerr == nil && !ref.Is6() {
			return
		}
		if rerr == nil && err != nil {
			t.Fatalf("parseIPv6(%q): %v, but netip parses %v", s, err, ref)
		}
		if err != nil || rerr != nil {
			return
		}
		if got := ref.As16(); [8]uint16{
			uint16(got[0])<<8 | uint16(got[1]), uint16(got[2])<<8 | uint16(got[3]),
			uint16(got[4])<<8 | uint16(got[5]), uint16(got[6])<<8 | uint16(got[7]),
			uint16(got[8])<<8 | uint16(got[9]), uint16(got[10])<<8 | uint16(got[11]),
			uint16(got[12])<<8 | uint16(got[13]), uint16(got[14])<<8 | uint16(got[15]),
		} != a {
			t.Fatalf("parseIPv6(%q) = %v; netip gives %v", s, a, ref)
		}
		// netip writes IPv4-mapped addresses with a dotted tail; WHATWG
		// always uses hex pieces.
		if !ref.Is4In6() {
			if got := string(appendIPv6(nil, &a)); got != ref.String() {
				t.Fatalf("appendIPv6(%q) = %q; netip gives %q", s, got, ref.String())
			}
		}
	})
}

// FuzzSplitCanonical compares SplitCanonical with net/url.Parse, the slow
// reference, on Normalize's outputs: ok exactly when net/url accepts the
// URL, and then the same scheme, host and host name. It also checks the
// package's claim that Go's HTTP client sends a canonical URL as it is: the
// request URI net/url derives is the canonical path and query, unchanged.
// On any other input SplitCanonical must not panic and, when ok, return
// pieces of its input.
func FuzzSplitCanonical(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	for _, s := range []string{"http://[2001:DB8::1]:8080/a", "http://u:p@[::1]/", "http://a{b}/", "http://h:8080?q", "http://[1.2.3.4]/"} {
		f.Add(s)
	}
	n := mustNew(f, Options{})
	opt := mustNew(f, allOptions)
	f.Fuzz(func(t *testing.T, in string) {
		if scheme, host, hostname, ok := SplitCanonical(in); ok &&
			(!strings.HasPrefix(in, scheme+"://") || !strings.Contains(in, host) || !strings.Contains(host, hostname)) {
			t.Fatalf("SplitCanonical(%q) = %q, %q, %q: not pieces of the input", in, scheme, host, hostname)
		}
		for _, nz := range []*Normalizer{n, opt} {
			c, err := nz.Normalize(in)
			if err != nil {
				continue
			}
			scheme, host, hostname, ok := SplitCanonical(c)
			u, perr := url.Parse(c)
			if want := perr == nil && u.Host != ""; ok != want {
				t.Fatalf("SplitCanonical(%q) ok = %v, but net/url.Parse gives %+v, %v", c, ok, u, perr)
			}
			if !ok {
				continue
			}
			if scheme != u.Scheme || host != u.Host || hostname != u.Hostname() {
				t.Fatalf("SplitCanonical(%q) = %q, %q, %q; net/url gives %q, %q, %q", c, scheme, host, hostname, u.Scheme, u.Host, u.Hostname())
			}
			rest := c[strings.Index(c, "://")+3:]
			rest = rest[strings.IndexAny(rest, "/?#"):]
			if i := strings.IndexByte(rest, '#'); i >= 0 {
				rest = rest[:i]
			}
			if rest == "" || rest[0] == '?' {
				rest = "/" + rest
			}
			if got := u.RequestURI(); got != rest {
				t.Fatalf("net/url would request %q for %q; want the canonical %q", got, c, rest)
			}
		}
	})
}
