package storage

import (
	"strings"
	"testing"
)

// TestSURT checks SURT against the cases of surt's tests/test_surt.py
// (test_surt, from WaybackURLKeyMakerTest.java, default options) and cases
// derived from its canonicalizer tests, run through surt.surt by hand.
func TestSURT(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// test_surt
		{"", "-"},
		{"filedesc:foo.arc.gz", "filedesc:foo.arc.gz"},
		{"filedesc:/foo.arc.gz", "filedesc:/foo.arc.gz"},
		{"filedesc://foo.arc.gz", "filedesc://foo.arc.gz"},
		{"warcinfo:foo.warc.gz", "warcinfo:foo.warc.gz"},
		{"dns:alexa.com", "dns:alexa.com"},
		{"dns:archive.org", "dns:archive.org"},
		{"http://www.archive.org/", "org,archive)/"},
		{"http://archive.org/", "org,archive)/"},
		{"http://archive.org/goo/", "org,archive)/goo"},
		{"http://archive.org/goo/?", "org,archive)/goo"},
		{"http://archive.org/goo/?b&a", "org,archive)/goo?a&b"},
		{"http://archive.org/goo/?a=2&b&a=1", "org,archive)/goo?a=1&a=2&b"},
		{"http://archive.org/index.php?PHPSESSID=0123456789abcdefghijklemopqrstuv&action=profile;u=4221", "org,archive)/index.php?action=profile;u=4221"},
		{"whois://whois.isoc.org.il/shaveh.co.il", "il,org,isoc,whois)/shaveh.co.il"},
		{"http://visit.webhosting.yahoo.com/visit.gif?&r=http%3A//web.archive.org/web/20090517140029/http%3A//anthonystewarthead.electric-chi.com/&b=Netscape%205.0%20%28Windows%3B%20en-US%29&s=1366x768&o=Win32&c=24&j=true&v=1.2",
			"com,yahoo,webhosting,visit)/visit.gif?&b=netscape%205.0%20(windows;%20en-us)&c=24&j=true&o=win32&r=http://web.archive.org/web/20090517140029/http://anthonystewarthead.electric-chi.com/&s=1366x768&v=1.2"},
		{"mailto:foo@example.com", "mailto:foo@example.com"},
		{"http://www.example.com/", "com,example)/"},
		{"ftp://www.example.com/", "com,example)/"},
		// IAURLCanonicalizerTest through surt
		{"http://ARCHIVE.ORG/", "org,archive)/"},
		{"http://www.archive.org:80/", "org,archive)/"},
		{"https://www.archive.org:80/", "org,archive:80)/"},
		{"http://www.archive.org:443/", "org,archive:443)/"},
		{"https://www.archive.org:443/", "org,archive)/"},
		{"http://www.archive.org/big/", "org,archive)/big"},
		{"http://www34.archive.org/index.html?b=a&b=b&a=b", "org,archive)/index.html?a=b&b=a&b=b"},
		{"http://www2.www2foo.com/", "com,www2foo)/"},
		// GoogleURLCanonicalizerTest through surt
		{"http://host/%25%32%35", "host)/%25"},
		{"http://host/%2525252525252525", "host)/%25"},
		{"http://host/%%%25%32%35asd%%", "host)/%25%25%25asd%25%25"},
		{"http://%31%36%38%2e%31%38%38%2e%39%39%2e%32%36/%2E%73%65%63%75%72%65/%77%77%77%2E%65%62%61%79%2E%63%6F%6D/", "26,99,188,168)/.secure/www.ebay.com"},
		{"http://3279880203/blah", "11,0,127,195)/blah"},
		{"http://017.0.0.1/", "1,0,0,15)/"},
		{"http://10.0.258/", "2,1,0,10)/"},
		{"http://39024579298/", "226,210,11,22)/"},
		{"http://www.google.com/blah/..", "com,google)/"},
		{"www.google.com", "com,google)/"},
		{"http://www.evil.com/blah#frag", "com,evil)/blah"},
		{"http://www.GOOgle.com.../", "com,google)/"},
		{"http://www.google.com/foo\tbar\rbaz\n2", "com,google)/foobarbaz2"},
		{"http://www.google.com/q?r?s", "com,google)/q?r?s"},
		{"http://evil.com/foo#bar#baz", "com,evil)/foo"},
		{"http://evil.com/foo;", "com,evil)/foo;"},
		{"http://\u0001\u0080.com/", "com,%01%c2%80)/"},
		{"http://B\u00fccher.ch:8080/", "ch,xn--bcher-kva:8080)/"},
		{"http://host.com//twoslashes?more//slashes", "com,host)/twoslashes?more//slashes"},
		{"http://host.com/ab%23cd", "com,host)/ab%23cd"},
		{"http:////////////////www.vikings.com", "com,vikings)/"},
		{"http://https://order.1and1.com", "com,1and1,order)/"},
		{"http://mineral.galleries.com:/minerals/silicate/chabazit/chabazit.htm", "com,galleries,mineral)/minerals/silicate/chabazit/chabazit.htm"},
		{"http://user:pw@example.com:8080/a b", "com,example:8080)/a%20b"},
		// the crawler's own loopback servers
		{"http://127.0.36.1:16001/style.css", "1,36,0,127:16001)/style.css"},
		{"http://example.com/page?jsessionid=0123456789abcdefghijklemopqrstuv&x=y", "com,example)/page?x=y"},
	} {
		if got := SURT(c.in); got != c.want {
			t.Errorf("SURT(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzSURT checks that SURT never panics, that its key can start a CDXJ
// line (no space, no line break), and that a key does not change when the
// URL it came from is given again with a "#fragment".
func FuzzSURT(f *testing.F) {
	for _, s := range []string{"http://www.archive.org/goo/?b&a", "http://%31%36%38%2e%31/", "mailto:x", "http://[::1]:80/", "http://a..b/%", "10.0.258", "http://x/%2525"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := SURT(s)
		if strings.ContainsAny(k, " \r\n") && !strings.HasPrefix(s, "filedesc") {
			t.Fatalf("SURT(%q) = %q: holds a space or line break", s, k)
		}
		if s != "" && strings.TrimSpace(s) == s && !strings.ContainsAny(s, "#") && !strings.HasPrefix(s, "filedesc") {
			if k2 := SURT(s + "#frag"); k2 != k {
				t.Fatalf("SURT(%q) = %q but SURT(%q) = %q", s, k, s+"#frag", k2)
			}
		}
	})
}
