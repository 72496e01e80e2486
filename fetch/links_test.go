package fetch

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func hrefs(links []Link) string {
	var b []string
	for _, l := range links {
		b = append(b, l.Tag+":"+l.Href)
	}
	return strings.Join(b, " ")
}

func TestExtractLinks(t *testing.T) {
	const doc = "http://example.com/dir/page.html"
	tests := []struct {
		name      string
		body      string
		ct        string
		wantBase  string
		wantLinks string
	}{
		{"elements", `<a href="a">x</a><area href="b"><link rel="stylesheet" href="c.css"><frame src="d"><iframe src="e"></iframe><img src="f.png"><script src="g.js"></script><form action="no"><blockquote cite="no">`,
			"text/html", doc, "a:a area:b link:c.css frame:d iframe:e img:f.png script:g.js"},
		{"base relative", `<head><base href="/other/"></head><a href="x">`, "text/html", "http://example.com/other/", "a:x"},
		{"base applies to earlier links", `<a href="x"><base href="http://cdn.example.org/">`, "text/html", "http://cdn.example.org/", "a:x"},
		{"first base wins", `<base href="/one/"><base href="/two/"><a href="x">`, "text/html", "http://example.com/one/", "a:x"},
		{"base without href skipped", `<base target="_top"><base href="/two/"><a href="x">`, "text/html", "http://example.com/two/", "a:x"},
		{"base non-http ignored", `<base href="javascript:alert(1)"><a href="x">`, "text/html", doc, "a:x"},
		{"whitespace trimmed", "<a href=\" \n\tx y \r\n\">", "text/html", doc, "a:x y"},
		{"unfetchable skipped", `<a href="">e</a><a href="#top">f</a><a href="javascript:void(0)">j</a><a href="JavaScript:x">J</a><a href="java` + "\n" + `script:x">n</a><a href="mailto:a@b">m</a><a href="data:text/html,x">d</a><a href="tel:1">t</a><a href="ftp://x/">f</a><a href="ok">`,
			"text/html", doc, "a:ok"},
		{"scheme-like relative kept", `<a href="./a:b">1</a><a href="/x:y">2</a><a href="?q=a:b">3</a><a href="HTTPS://x/">4</a>`, "text/html", doc, "a:./a:b a:/x:y a:?q=a:b a:HTTPS://x/"},
		{"duplicate attribute first wins", `<a href="first" href="second">`, "text/html", doc, "a:first"},
		{"nofollow skipped", `<a rel="nofollow" href="n"><a rel="Next NoFollow" href="n2"><a rel="next" href="y">`, "text/html", doc, "a:y"},
		{"meta robots nofollow", `<meta name="ROBOTS" content="noindex, nofollow"><a href="x">`, "text/html", doc, ""},
		{"meta robots none late", `<a href="x"><meta name="robots" content="none">`, "text/html", doc, ""},
		{"meta other name", `<meta name="googlebot" content="nofollow"><a href="x">`, "text/html", doc, "a:x"},
		{"xhtml", `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><a href="x"/></html>`, "application/xhtml+xml", doc, "a:x"},
		{"sniffed html", `<!DOCTYPE html><a href="x">`, "", doc, "a:x"},
		{"NUL and invalid UTF-8", "<a href=\"a\x00b\">\xff\xfe<a href=\"c\xffd\">\x00<a href=\"e\">", "text/html; charset=utf-8", doc, "a:a\uFFFDb a:c\uFFFDd a:e"},
		{"latin1 from header", "<a href=\"caf\xe9\">", "text/html; charset=iso-8859-1", doc, "a:café"},
		{"latin1 from meta", "<meta charset=\"iso-8859-1\"><a href=\"caf\xe9\">", "text/html", doc, "a:café"},
		{"shift_jis from meta", "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=shift_jis\"><a href=\"/\x83\x65\x83\x58\x83\x67\">", "text/html", doc, "a:/テスト"},
		{"header charset beats meta", "<meta charset=\"shift_jis\"><a href=\"caf\xe9\">", "text/html; charset=windows-1252", doc, "a:café"},
		{"meta refresh", `<meta http-equiv="Refresh" content="5; URL='/next?a=1'"><meta http-equiv="refresh" content="0;url=/two"><meta http-equiv="refresh" content="3"><meta http-equiv="refresh" content="1, other">`, "text/html", doc, "meta:/next?a=1 meta:/two meta:other"},
		{"meta refresh javascript skipped", `<meta http-equiv="refresh" content="0; url=javascript:x">`, "text/html", doc, ""},
		{"unterminated", `<a href="x">text<a href="y`, "text/html", doc, "a:x"},
		{"comment and script content ignored", `<!-- <a href="c"> --><script>document.write('<a href="s">')</script><a href="x">`, "text/html", doc, "a:x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, links, err := ExtractLinks([]byte(tt.body), tt.ct, mustURL(t, doc))
			if err != nil {
				t.Fatalf("ExtractLinks: %v", err)
			}
			if got := base.String(); got != tt.wantBase {
				t.Errorf("base = %q, want %q", got, tt.wantBase)
			}
			if got := hrefs(links); got != tt.wantLinks {
				t.Errorf("links = %q, want %q", got, tt.wantLinks)
			}
		})
	}
}

func TestExtractNotHTML(t *testing.T) {
	tests := []struct{ ct, body string }{
		{"application/pdf", "%PDF-1.4 <a href=x>"},
		{"text/plain", "<a href=x>"},
		{"image/png", "\x89PNG\r\n\x1a\n"},
		{"", "\x89PNG\r\n\x1a\n"},
		{"application/json", `{"a":"<a href=x>"}`},
	}
	for _, tt := range tests {
		_, links, err := ExtractLinks([]byte(tt.body), tt.ct, nil)
		if !errors.Is(err, ErrNotHTML) || links != nil {
			t.Errorf("ExtractLinks(%q, %q) = %v, %v; want ErrNotHTML", tt.body, tt.ct, links, err)
		}
	}
}

func TestExtractCounters(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<a href="javascript:x"><a rel="nofollow" href="n">`)
	const n = 6000 // 50,000 links are fetched in TestFetchHostileHTML
	for i := range n {
		fmt.Fprintf(&b, `<a href="/p%d">`, i)
	}
	body := []byte(b.String())
	tests := []struct {
		name         string
		opts         ExtractOptions
		wantLinks    int
		wantDropped  int
		wantNofollow int
	}{
		{"default cap", ExtractOptions{}, DefaultMaxOutlinks, n - DefaultMaxOutlinks, 1},
		{"small cap keeps nofollow", ExtractOptions{MaxLinks: 10, KeepNofollow: true}, 10, n + 1 - 10, 0},
		{"no cap", ExtractOptions{MaxLinks: -1}, n, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := Extract(body, "text/html", nil, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(ex.Links) != tt.wantLinks || ex.Dropped != tt.wantDropped || ex.NofollowSkipped != tt.wantNofollow || ex.Skipped != 1 {
				t.Errorf("links %d dropped %d nofollow %d skipped %d; want %d %d %d 1",
					len(ex.Links), ex.Dropped, ex.NofollowSkipped, ex.Skipped, tt.wantLinks, tt.wantDropped, tt.wantNofollow)
			}
			if ex.Links[0].Href != "/p0" && ex.Links[0].Href != "n" {
				t.Errorf("first link %q, want document order", ex.Links[0].Href)
			}
		})
	}
}

func TestExtractLongHref(t *testing.T) {
	long := "/" + strings.Repeat("a", DefaultMaxHrefLength)
	ex, err := Extract([]byte(`<a href="`+long+`"><a href="/ok">`), "text/html", nil, ExtractOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := hrefs(ex.Links); got != "a:/ok" || ex.Skipped != 1 {
		t.Errorf("links %q skipped %d, want a:/ok and 1", got, ex.Skipped)
	}
}

// FuzzExtractLinks feeds arbitrary bytes and content types: no panic, the
// cap is honoured, and every link is trimmed, non-empty, valid UTF-8 and
// not one of the skipped kinds.
func FuzzExtractLinks(f *testing.F) {
	f.Add([]byte(`<base href="/b/"><a href=" x ">1</a><a rel=nofollow href=y><iframe src=z>`), "text/html")
	f.Add([]byte("<meta charset=shift_jis><a href=\"\x83\x65\">"), "")
	f.Add([]byte("<a href=\"\x00\xff\">\x00<area href=javascript:x><link href=#f>"), "text/html; charset=utf-8")
	f.Add([]byte(`<svg><a xlink:href="s" href="t"></a></svg><math><a href=m>`), "application/xhtml+xml")
	f.Add([]byte("<a href='a'<a href=b><!--<a href=c>--><base href=\"http://[::1/\">"), "text/html; charset=bogus")
	f.Add([]byte("\xef\xbb\xbf<a href=\"\xe9\">"), "text/html; charset=iso-8859-1")
	f.Add([]byte(`<meta http-equiv=refresh content="0; url='x"><meta http-equiv=refresh content=";url=">`), "text/html")
	base, _ := url.Parse("http://example.com/a/b")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		ex, err := Extract(body, ct, base, ExtractOptions{MaxLinks: 7})
		if err != nil {
			if !errors.Is(err, ErrNotHTML) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if ex.Base == nil {
			t.Fatalf("nil base")
		}
		if len(ex.Links) > 7 || (ex.Dropped > 0 && len(ex.Links) != 7) {
			t.Fatalf("%d links kept, %d dropped, cap 7", len(ex.Links), ex.Dropped)
		}
		for _, l := range ex.Links {
			if l.Href == "" || l.Href != trimHref(l.Href) || !followable(l.Href) || l.NoFollow {
				t.Errorf("bad link %+v", l)
			}
			if !utf8.ValidString(l.Href) {
				t.Errorf("invalid UTF-8 in %q", l.Href)
			}
		}
	})
}
