package fetch

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
)

// linkLines formats links as "hop context href" lines.
func linkLines(links []Link) string {
	var b []string
	for _, l := range links {
		b = append(b, fmt.Sprintf("%v %s %s", l.Hop, l.Context, l.Href))
	}
	return strings.Join(b, "\n")
}

// TestExtractEmbeds checks the hop type and context of each kind of link
// and embed.
func TestExtractEmbeds(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"img", `<img src=a.png srcset="b.png 2x, c,1.png 3x">`, "E img/@src a.png\nE img/@srcset b.png\nE img/@srcset c,1.png"},
		{"picture", `<picture><source srcset="a.webp 1x,b.webp 2x" type=image/webp><img src=c.jpg></picture>`, "E source/@srcset a.webp\nE source/@srcset b.webp\nE img/@src c.jpg"},
		{"script", `<script src=a.js></script><script>var x="<img src=no.png>"</script>`, "E script/@src a.js"},
		{"link rels", `<link rel=stylesheet href=a.css><link rel=icon href=b.ico><link rel=preload href=c.woff2><link rel=modulepreload href=d.js><link rel=manifest href=e.json><link rel=apple-touch-icon href=f.png><link rel=canonical href=g><link rel=alternate href=h.rss>`,
			"E link/@href a.css\nE link/@href b.ico\nE link/@href c.woff2\nE link/@href d.js\nE link/@href e.json\nE link/@href f.png\nL link/@href g\nL link/@href h.rss"},
		{"media", `<video src=a.mp4 poster=b.jpg><source src=c.webm><track src=d.vtt></video><audio src=e.ogg></audio>`,
			"E video/@src a.mp4\nE video/@poster b.jpg\nE source/@src c.webm\nE track/@src d.vtt\nE audio/@src e.ogg"},
		{"embed object input", `<embed src=a.swf><object data=b.svg></object><input type=image src=c.png><input type=submit src=no.png>`,
			"E embed/@src a.swf\nE object/@data b.svg\nE input/@src c.png"},
		{"svg", `<svg><image href=a.png /><image xlink:href=b.png /><use href="sprite.svg#i"/><use xlink:href=c.svg#j /></svg>`,
			"E image/@href a.png\nE image/@xlink:href b.png\nE use/@href sprite.svg#i\nE use/@xlink:href c.svg#j"},
		{"style element", `<style>@import "a.css"; @import url(b.css); p{background:url( 'c.png' )} q{x:image-set("d.png" 1x)}</style>`,
			"E css/@import a.css\nE css/@import b.css\nE css/url() c.png\nE css/image-set() d.png"},
		{"style attribute", `<p style="background: url(a.png); @import 'no.css'">x</p>`, "E css/url() a.png"},
		{"links", `<a href=a><area href=b><frame src=c><iframe src=d></iframe>`, "L a/@href a\nL area/@href b\nL frame/@src c\nL iframe/@src d"},
		{"meta refresh", `<meta http-equiv=refresh content="0; url=next">`, "R meta/@content next"},
		{"noscript", `<noscript><img src=pixel.gif><a href=nojs></noscript>`, "E img/@src pixel.gif\nL a/@href nojs"},
		{"nofollow is for links", `<meta name=robots content=nofollow><a href=a><img src=b.png><link rel=stylesheet href=c.css>`, "E img/@src b.png\nE link/@href c.css"},
		{"rel nofollow on a stylesheet", `<link rel="stylesheet nofollow" href=a.css><a rel=nofollow href=b>`, "E link/@href a.css"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := Extract([]byte(tt.body), "text/html", nil, ExtractOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := linkLines(ex.Links); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			ex, _ = Extract([]byte(tt.body), "text/html", nil, ExtractOptions{NoEmbeds: true})
			for _, l := range ex.Links {
				if l.Hop == HopEmbed {
					t.Errorf("NoEmbeds returned %+v", l)
				}
			}
		})
	}
}

func TestExtractEmbedsCap(t *testing.T) {
	body := []byte(strings.Repeat(`<img src=i.png><a href=a>`, 10))
	ex, err := Extract(body, "text/html", nil, ExtractOptions{MaxLinks: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Links) != 5 || ex.Dropped != 15 {
		t.Errorf("%d kept, %d dropped; want 5 and 15 (links and embeds share the cap)", len(ex.Links), ex.Dropped)
	}
}

func TestHopString(t *testing.T) {
	got := fmt.Sprint(HopLink, HopEmbed, HopRedirect, HopSitemap, Hop('x'))
	if want := "L E R S Hop(120)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseSrcset(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a.png", "a.png"},
		{"a.png 1x, b.png 2x", "a.png b.png"},
		{" , a.png,b.png ,, c.png 100w", "a.png,b.png c.png"},
		{"data:image/png;base64,AAA= 1x, b.png 2x", "data:image/png;base64,AAA= b.png"},
		{"a,b.png 1x", "a,b.png"},
		{"a.png,, b.png", "a.png b.png"},
		{"a.png 1x 2x, b.png 1q, c.png 0w, d.png -2x, e.png 10h, f.png 10w 20h, g.png 1.x", "f.png"},
		{"a.png (foo, bar) 1x, b.png", "b.png"},
		{"a.png 1e2x, b.png .5x, c.png 1.5e-1x, d.png 1.x", "a.png b.png c.png"},
		{"", ""},
	}
	for _, tt := range tests {
		var got []string
		parseSrcset([]byte(tt.in), func(u []byte) { got = append(got, string(u)) })
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("parseSrcset(%q) = %q, want %q", tt.in, g, tt.want)
		}
	}
}

func TestExtractCSS(t *testing.T) {
	tests := []struct {
		name, css, ct, want string
	}{
		{"imports and urls", `@charset "utf-8"; @import "a.css" screen; @IMPORT url(b.css); .x { background: url(c.png) no-repeat; } @font-face { src: url("d.woff2") format("woff2"), local("x"); }`,
			"text/css", "E css/@import a.css\nE css/@import b.css\nE css/url() c.png\nE css/url() d.woff2"},
		{"comments and strings are not urls", `/* url(no.png) */ .x::after { content: "url(no2.png)"; } .y { b: url(yes.png) }`, "text/css", "E css/url() yes.png"},
		{"escapes", `.a{b:url(\61 .png)} .c{d:url("e\"f.png")} .g{h:url(i\).png)} .j{k:url('l\
m.png')}`, "text/css", "E css/url() a.png\nE css/url() e\"f.png\nE css/url() i).png\nE css/url() lm.png"},
		{"namespace is not fetched", `@namespace svg url(http://www.w3.org/2000/svg); .a { b: url(c.png) }`, "", "E css/url() c.png"},
		{"image-set", `.a{b:image-set("1.png" 1x, url(2.png) 2x, '3.png' type("image/png")); c:-webkit-image-set("4.png" 1x)} .d{e:format("no")}`, "text/css",
			"E css/image-set() 1.png\nE css/url() 2.png\nE css/image-set() 3.png\nE css/image-set() 4.png"},
		{"unfetchable skipped", `.a{b:url(data:image/png;base64,AA==);c:url(#f);d:url();e:url(javascript:x)}`, "text/css", ""},
		{"bad url dropped", `.a{b:url(a b.png)} .c{d:url(ok.png)}`, "text/css", "E css/url() ok.png"},
		{"cut at end", `.a{b:url(cut.png`, "text/css", "E css/url() cut.png"},
		{"latin1 from header", ".a{b:url(caf\xe9.png)}", "text/css; charset=iso-8859-1", "E css/url() café.png"},
		{"latin1 from @charset", "@charset \"iso-8859-1\";.a{b:url(caf\xe9.png)}", "text/css", "E css/url() café.png"},
		{"BOM beats header", "\xef\xbb\xbf.a{b:url(caf\xc3\xa9.png)}", "text/css; charset=iso-8859-1", "E css/url() café.png"},
		{"invalid UTF-8 replaced", ".a{b:url(a\xffb.png)}", "text/css", "E css/url() a\uFFFDb.png"},
	}
	base := mustURL(t, "http://example.com/css/site.css")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := ExtractCSS([]byte(tt.css), tt.ct, base, ExtractOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := linkLines(ex.Links); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if ex.Base != base {
				t.Errorf("base %v, want %v", ex.Base, base)
			}
		})
	}
	if _, err := ExtractCSS([]byte("a{}"), "text/html", base, ExtractOptions{}); !errors.Is(err, ErrNotCSS) {
		t.Errorf("text/html: err %v, want ErrNotCSS", err)
	}
	if ex, _ := ExtractCSS([]byte(".a{b:url(c.png)}"), "text/css", base, ExtractOptions{NoEmbeds: true}); len(ex.Links) != 0 {
		t.Errorf("NoEmbeds: %v", ex.Links)
	}
}

// TestUTF8Body checks that UTF-8 and ASCII bodies are scanned in place,
// and that other encodings are still decoded.
func TestUTF8Body(t *testing.T) {
	tests := []struct {
		name, body, ct string
		inPlace        bool
		want           string // the href of the page's link
	}{
		{"utf-8 declared", "<a href=\"caf\xc3\xa9\">", "text/html; charset=utf-8", true, "café"},
		{"utf-8 meta", "<meta charset=utf-8><a href=\"caf\xc3\xa9\">", "text/html", true, "café"},
		{"utf-8 sniffed", "<a href=\"caf\xc3\xa9\">", "text/html", true, "café"},
		{"ascii, windows-1252 by default", "<a href=\"cafe\">", "text/html", true, "cafe"},
		{"ascii, shift_jis declared", "<a href=\"cafe\">", "text/html; charset=shift_jis", true, "cafe"},
		{"windows-1252", "<a href=\"caf\xe9\x80\">", "text/html; charset=windows-1252", false, "café€"},
		{"windows-1252 by default", "<a href=\"caf\xe9\">", "text/html", false, "café"},
		{"shift_jis meta", "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=shift_jis\"><a href=\"/\x83\x65\x83\x58\x83\x67\">", "text/html", false, "/テスト"},
		{"euc-jp declared", "<a href=\"\xa4\xa2\">", "text/html; charset=euc-jp", false, "あ"},
		{"utf-16le BOM", "\xff\xfe<\x00a\x00 \x00h\x00r\x00e\x00f\x00=\x00x\x00>\x00", "text/html", false, "x"},
		{"iso-2022-jp is never in place", "<a href=\"\x1b$B$\"\x1b(B\">", "text/html; charset=iso-2022-jp", false, "あ"},
		{"invalid utf-8 kept in place, replaced in values", "<a href=\"a\xe2\x82b\xffc\">", "text/html; charset=utf-8", true, "a\uFFFDb\uFFFDc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			got := utf8Body(body, tt.ct)
			if inPlace := len(got) > 0 && &got[0] == &body[0]; inPlace != tt.inPlace {
				t.Errorf("scanned in place: %v, want %v", inPlace, tt.inPlace)
			}
			ex, err := Extract(body, tt.ct, nil, ExtractOptions{})
			if err != nil || len(ex.Links) != 1 || ex.Links[0].Href != tt.want {
				t.Fatalf("Extract: %v, %+v; want one link %q", err, ex, tt.want)
			}
			extractBoth(t, tt.name, body, tt.ct, nil, ExtractOptions{})
		})
	}
}

// TestASCIICompatible checks asciiCompatible against every WHATWG encoding:
// those it calls compatible decode each ASCII byte to itself.
func TestASCIICompatible(t *testing.T) {
	names := []string{"utf-8", "ibm866", "iso-8859-2", "iso-8859-3", "iso-8859-4", "iso-8859-5", "iso-8859-6",
		"iso-8859-7", "iso-8859-8", "iso-8859-8-i", "iso-8859-10", "iso-8859-13", "iso-8859-14", "iso-8859-15",
		"iso-8859-16", "koi8-r", "koi8-u", "macintosh", "windows-874", "windows-1250", "windows-1251",
		"windows-1252", "windows-1253", "windows-1254", "windows-1255", "windows-1256", "windows-1257",
		"windows-1258", "x-mac-cyrillic", "gbk", "gb18030", "big5", "euc-jp", "iso-2022-jp", "shift_jis",
		"euc-kr", "replacement", "utf-16be", "utf-16le", "x-user-defined"}
	ascii := make([]byte, 0x80)
	for i := range ascii {
		ascii[i] = byte(i)
	}
	ascii = append(ascii, "\x1b$B\x1b(B<a href=x>"...) // an ISO-2022-JP escape
	for _, name := range names {
		e, err := htmlindex.Get(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := e.NewDecoder().Bytes(ascii)
		identity := err == nil && bytes.Equal(out, ascii)
		if asciiCompatible(name) && !identity {
			t.Errorf("%s: called ASCII-compatible, but decodes ASCII to %q", name, out)
		}
	}
}

// TestNumericRefs checks numericRef and commonEntity against the
// tokenizer for every C1 control and the remapped and invalid ranges.
func TestNumericRefs(t *testing.T) {
	var refs []string
	for c := 0x7e; c <= 0xa0; c++ {
		refs = append(refs, fmt.Sprintf("&#%d;", c), fmt.Sprintf("&#x%X", c))
	}
	refs = append(refs, "&#xD800;", "&#xDFFF;", "&#x10FFFF;", "&#x110000;", "&#0;", "&#4294967361;", "&#9;x", "&#x;", "&#;", "&#",
		"&amp", "&AMP;", "&lt", "&GT", "&quot", "&apos", "&apos;", "&nbsp", "&nbsp;x", "&amp=", "&amp;=")
	for _, ref := range refs {
		v := []byte(ref + "tail")
		z := html.NewTokenizer(strings.NewReader(`<a v="` + string(v) + `">`))
		z.Next()
		z.TagName()
		_, want, _ := z.TagAttr()
		if got := decodeAttr(v, '"'); !bytes.Equal(got, want) {
			t.Errorf("decodeAttr(%q) = %q, want %q", v, got, want)
		}
	}
}

// TestExtractLeavesBodyAlone checks that extraction never writes to the
// body, which a WARC writer may be reading at the same time.
func TestExtractLeavesBodyAlone(t *testing.T) {
	for name, page := range testPages(t) {
		body := append(bytes.Clone(page), 'x')[:len(page)] // spare capacity the CSS lexer could write to
		before := bytes.Clone(body[:cap(body)])
		if _, err := Extract(body, "text/html", nil, ExtractOptions{}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, body[:cap(body)]) {
			t.Errorf("%s: Extract modified the body", name)
		}
	}
	css := []byte(".a{b:url(c\r\n.png)}\x00 .d{e:url(f.png)}xx")[:34]
	before := bytes.Clone(css[:cap(css)])
	if _, err := ExtractCSS(css, "text/css", nil, ExtractOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, css[:cap(css)]) {
		t.Errorf("ExtractCSS modified the body")
	}
}

// FuzzExtractCSS feeds arbitrary stylesheets: no panic, the body is left
// alone, every URL is valid UTF-8 with a known context.
func FuzzExtractCSS(f *testing.F) {
	f.Add([]byte(`@import "a.css"; .b{c:url(d.png) image-set("e.png" 1x)} @namespace url(x);`), "text/css")
	f.Add([]byte(`.a{b:url("c\"d\
e") url(f\61 g) url(h i) u\rl(j)}/* url(k) */`), "")
	f.Add([]byte("@charset \"shift_jis\";.a{b:url(\x83\x65)}\x00\xff"), "text/css")
	f.Add([]byte("\xfe\xff\x00.\x00a"), "text/css; charset=utf-16")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		before := bytes.Clone(body)
		ex, err := ExtractCSS(body, ct, nil, ExtractOptions{MaxLinks: -1})
		if !bytes.Equal(before, body) {
			t.Fatalf("body modified")
		}
		if err != nil {
			if !errors.Is(err, ErrNotCSS) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		for _, l := range ex.Links {
			if !utf8.ValidString(l.Href) || l.Href == "" || !followable(l.Href) || l.Hop != HopEmbed {
				t.Errorf("bad link %+v", l)
			}
			switch l.Context {
			case "css/url()", "css/@import", "css/image-set()":
			default:
				t.Errorf("unknown context %+v", l)
			}
		}
	})
}

// TestExtractFindsTheOldLinks checks that the new extractor finds every
// link the former extractor (extractV0) found on the real pages,
// with the same tag; what it adds must be embeds, or links inside
// <noscript> (which extractV0 read as raw text).
func TestExtractFindsTheOldLinks(t *testing.T) {
	for name, page := range testPages(t) {
		old, err := extractV0(page, "text/html", nil, ExtractOptions{MaxLinks: -1})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := Extract(page, "text/html", nil, ExtractOptions{MaxLinks: -1})
		if err != nil {
			t.Fatal(err)
		}
		found := make(map[string]int)
		for _, l := range ex.Links {
			found[l.Tag+" "+l.Href]++
		}
		for _, l := range old.Links {
			key := l.Tag + " " + l.Href
			if found[key] == 0 {
				t.Errorf("%s: %q no longer found", name, key)
			}
			found[key]--
		}
		var embeds int
		for _, l := range ex.Links {
			if key := l.Tag + " " + l.Href; found[key] > 0 {
				found[key]--
				if l.Hop != HopEmbed && !bytes.Contains(page, []byte("<noscript")) {
					t.Errorf("%s: new %+v is not an embed", name, l)
				}
				embeds++
			}
		}
		if len(old.Links) < 10 {
			t.Errorf("%s: only %d old links", name, len(old.Links))
		}
		t.Logf("%s: the %d old links, and %d new embeds", name, len(old.Links), embeds)
	}
}

// FuzzDetermineEncoding checks determineEncoding, whose <meta> prescan is
// done by the scanner, against charset.DetermineEncoding.
func FuzzDetermineEncoding(f *testing.F) {
	f.Add([]byte(`<meta charset="iso-8859-2">`), "text/html")
	f.Add([]byte(`<meta http-equiv=Content-Type content="text/html; charset='shift_jis'">`), "")
	f.Add([]byte(`<meta content="text/html; charset=utf-16" http-equiv="content-type"><meta charset=koi8-r>`), "text/html")
	f.Add([]byte(`<meta charset=bogus><meta CHARSET=gbk charset=big5>`), "text/html; charset=bogus")
	f.Add([]byte(`<noscript><meta charset=euc-kr></noscript><script><meta charset=euc-jp></script><meta charset=&#x6b;oi8-u>`), "")
	f.Add([]byte("caf\xc3\xa9 <meta charset=x>"), "text/html;charset=\"windows-1251\"")
	f.Add([]byte("\xef\xbb\xbf\xfe\xff"), "")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		e, name, certain := determineEncoding(body, ct)
		we, wname, wcertain := charset.DetermineEncoding(body, ct)
		if name != wname || certain != wcertain || (e == encoding.Nop) != (we == encoding.Nop) {
			t.Fatalf("determineEncoding = %q %v (nop %v), charset.DetermineEncoding = %q %v (nop %v)",
				name, certain, e == encoding.Nop, wname, wcertain, we == encoding.Nop)
		}
	})
}
