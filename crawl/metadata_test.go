package crawl

import (
	"bytes"
	"crypto/tls"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// checkPageRefs resolves ref against base through pageRefs (appending to
// bytes already there) and through url.URL.Parse, and fails on any
// difference.
func checkPageRefs(t *testing.T, base, ref string) {
	t.Helper()
	b, err := url.Parse(base)
	if err != nil {
		return
	}
	want, wantOK := ref, true
	if u, err := b.Parse(ref); err != nil {
		want, wantOK = "", false
	} else {
		want = u.String()
	}
	r := newPageRefs(b)
	got, ok := r.appendResolved([]byte("prefix "), ref)
	if string(got) != "prefix "+want || ok != wantOK {
		t.Fatalf("base %q, ref %q: pageRefs %q %v, url.Parse %q %v", base, ref, got, ok, want, wantOK)
	}
}

var pageRefBases = []string{
	"http://a.test/dir/page.html?q=1#top",
	"http://a.test/dir/sub/",
	"http://a.test/dir",
	"http://a.test",
	"http://a.test/",
	"http://u:p@a.test:8080/dir/page.html",
	"http://a.test/d%2Fir/p%20q/page.html",
	"http://a.test/a/../b/./c/page.html",
	"http://a.test//x//y/page.html",
	"http://a.test/dir/page.html?x=/y/z",
	"https://[::1]:8443/dir/page.html",
	"mailto:x@a.test",
	"file:///usr/share/doc/index.html",
}

var pageRefRefs = []string{
	"", "?", "?a=b", "#", "#f", "#f/g", "#f%20g", "#a#b", "x.html", "x.html#f", "x.html#", "./x.html",
	"././x", "../x.html", "../../x.html", "../../../../../x", "./../x", ".././x", "sub/", "sub/x.html",
	"a//b", "a/./b", "a/../b", "a/..", ".", "..", "./", "../", "...", ".x", "x.", "/abs", "//c.test/x",
	"https://d.test/x?y#z", "x.html?q#f", "%zz", ":bad", "x y", "%2e%2e/x", "x:y", "ÄÖ.html", "x~y_z-w.html",
}

// pageRefs agrees with url.URL.Parse on every pair, and takes its string
// path for the plain references (so that the comparison covers it).
func TestPageRefs(t *testing.T) {
	for _, base := range pageRefBases {
		for _, ref := range pageRefRefs {
			checkPageRefs(t, base, ref)
		}
	}
	b, _ := url.Parse("http://a.test/dir/sub/page.html")
	r := newPageRefs(b)
	for ref, want := range map[string]string{
		"x.html":          "http://a.test/dir/sub/x.html",
		"a/b.html#c":      "http://a.test/dir/sub/a/b.html#c",
		"../x.html":       "http://a.test/dir/x.html",
		"./../../../x.js": "http://a.test/x.js",
		"#top":            "http://a.test/dir/sub/page.html#top",
	} {
		if got, ok := r.join(nil, ref); !ok || string(got) != want {
			t.Errorf("join(%q) = %q, %v; want %q by joining", ref, got, ok, want)
		}
	}
	var none pageRefs
	if got, ok := none.appendResolved(nil, "x y"); string(got) != "x y" || !ok {
		t.Errorf("without a base: %q %v, want the reference as it is", got, ok)
	}
}

// FuzzPageRefs: pageRefs gives what url.URL.Parse gives.
func FuzzPageRefs(f *testing.F) {
	for _, b := range pageRefBases {
		for _, r := range []string{"x.html", "../x#f", "#f", "./a/../b"} {
			f.Add(b, r)
		}
	}
	f.Fuzz(func(t *testing.T, base, ref string) {
		checkPageRefs(t, base, ref)
	})
}

// pageMetadataV0 is pageMetadata as it was before pageRefs: url.URL.Parse
// for every reference.
func pageMetadataV0(ent frontier.Entry, res *fetch.Result) []byte {
	b := metadataHead(ent, res)
	if b == nil {
		return nil
	}
	var line []byte
	for _, l := range res.Links {
		target := l.Href
		if res.Base != nil {
			u, err := res.Base.Parse(l.Href)
			if err != nil {
				continue
			}
			target = u.String()
		}
		hop := l.Hop
		if hop == 0 {
			hop = fetch.HopLink
		}
		line = append(append(append(append(append(line[:0], target...), ' '), byte(hop)), ' '), l.Context...)
		b = storage.AppendWARCField(b, "outlink", string(line))
	}
	return b
}

// docPages are the documentation pages of fetch/testdata/pages with their
// links extracted, each under a base URL two directories deep.
func docPages(t testing.TB) []*fetch.Result {
	dir := filepath.Join("..", "fetch", "testdata", "pages")
	names, err := filepath.Glob(filepath.Join(dir, "*.html"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no pages in %s: %v", dir, err)
	}
	var pages []*fetch.Result
	for _, name := range names {
		body, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		base, _ := url.Parse("http://docs.test/a/b/" + filepath.Base(name))
		ex, err := fetch.Extract(body, "text/html", base, fetch.ExtractOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, &fetch.Result{Status: 200, ContentType: "text/html", Body: body, Base: ex.Base, Links: ex.Links})
	}
	return pages
}

// The metadata records of real pages are byte for byte what they were.
func TestPageMetadataUnchanged(t *testing.T) {
	ent := frontier.Entry{Via: "http://docs.test/", Hops: "L"}
	for _, res := range docPages(t) {
		got, want := pageMetadata(ent, res), pageMetadataV0(ent, res)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: metadata record differs:\n%s\nwant\n%s", res.Base, got, want)
		}
	}
}

// BenchmarkPageMetadata builds the metadata records of the documentation
// pages of fetch/testdata/pages, as before (url.URL.Parse for every
// reference) and now (pageRefs).
func BenchmarkPageMetadata(b *testing.B) {
	pages := docPages(b)
	for _, bm := range []struct {
		name string
		fn   func(frontier.Entry, *fetch.Result) []byte
	}{{"url.Parse", pageMetadataV0}, {"pageRefs", pageMetadata}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, res := range pages {
					bm.fn(frontier.Entry{}, res)
				}
			}
		})
	}
}

// TestMetadataTLS checks that an https page's metadata record names the
// TLS version and cipher suite of its connection.
func TestMetadataTLS(t *testing.T) {
	base, _ := url.Parse("https://a.test/")
	res := &fetch.Result{URL: "https://a.test/", Status: 200, ContentType: "text/html", Body: []byte("<p>x"), Base: base,
		TLS: &tls.ConnectionState{Version: tls.VersionTLS13, CipherSuite: tls.TLS_AES_128_GCM_SHA256}}
	got := string(pageMetadata(frontier.Entry{URL: res.URL}, res))
	for _, want := range []string{"tlsVersion: TLS 1.3\r\n", "tlsCipherSuite: TLS_AES_128_GCM_SHA256\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("metadata %q lacks %q", got, want)
		}
	}
	res.TLS = nil
	if got := string(pageMetadata(frontier.Entry{URL: res.URL}, res)); strings.Contains(got, "tls") {
		t.Errorf("plain http metadata %q names TLS", got)
	}
}
