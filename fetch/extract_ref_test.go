package fetch

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/neardup"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// extractReference is Extract as it was done before the scanner: the body
// decoded by charset.NewReader and tokenized by golang.org/x/net/html's
// Tokenizer, whose tags feed the same extractor. It is the reference the
// scanner is checked against, and (with NoEmbeds) the baseline of
// BenchmarkExtract.
func extractReference(body []byte, contentType string, base *url.URL, opts ExtractOptions) (*Extraction, error) {
	if !IsHTML(contentType, body) {
		return nil, ErrNotHTML
	}
	x := newExtractor(base, opts)
	var r io.Reader = bytes.NewReader(body)
	if cr, err := charset.NewReader(r, contentType); err == nil {
		r = cr
	}
	z := html.NewTokenizer(r)
	var attrs []attr
	inStyle := false
	for {
		tt := z.Next()
		wasStyle := inStyle
		inStyle = false
		switch tt {
		case html.ErrorToken:
			return x.finish(), nil
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			selfClosing := tt == html.SelfClosingTagToken
			attrs = attrs[:0]
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				attrs = append(attrs, attr{key: k, val: v})
			}
			short := name
			if len(name) > maxTagName {
				short = nil
			}
			x.startTag(short, name, attrs)
			if opts.Text != nil {
				opts.Text.StartTag(short, selfClosing)
			}
			switch string(name) {
			case "noscript":
				z.NextIsNotRawText() // see scanner.noscriptRaw
			case "style":
				inStyle = true
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(name) > maxTagName {
				name = nil
			}
			x.endTag(name)
			if opts.Text != nil {
				opts.Text.EndTag(name)
			}
		case html.TextToken:
			text := z.Text()
			if wasStyle {
				x.styleText(text)
			}
			if opts.Text != nil && !opts.Text.Hidden() {
				opts.Text.Text(text)
			}
		}
	}
}

// diffExtraction describes how two extractions differ, or returns "".
func diffExtraction(got, want *Extraction) string {
	var d []string
	if g, w := fmt.Sprint(got.Base), fmt.Sprint(want.Base); g != w {
		d = append(d, fmt.Sprintf("base %s, want %s", g, w))
	}
	if got.Dropped != want.Dropped || got.NofollowSkipped != want.NofollowSkipped || got.Skipped != want.Skipped || got.MetaNofollow != want.MetaNofollow {
		d = append(d, fmt.Sprintf("counters dropped/nofollow/skipped/meta %d/%d/%d/%v, want %d/%d/%d/%v",
			got.Dropped, got.NofollowSkipped, got.Skipped, got.MetaNofollow, want.Dropped, want.NofollowSkipped, want.Skipped, want.MetaNofollow))
	}
	n := max(len(got.Links), len(want.Links))
	for i := 0; i < n && len(d) < 10; i++ {
		var g, w Link
		if i < len(got.Links) {
			g = got.Links[i]
		}
		if i < len(want.Links) {
			w = want.Links[i]
		}
		if g != w {
			d = append(d, fmt.Sprintf("link %d: %+v, want %+v", i, g, w))
		}
	}
	return strings.Join(d, "\n")
}

// extractBoth runs Extract and extractReference and fails t if they
// differ.
func extractBoth(t testing.TB, name string, body []byte, ct string, base *url.URL, opts ExtractOptions) *Extraction {
	t.Helper()
	got, err := Extract(body, ct, base, opts)
	want, werr := extractReference(body, ct, base, opts)
	if err != werr {
		t.Fatalf("%s: Extract error %v, reference %v", name, err, werr)
	}
	if err != nil {
		return nil
	}
	if d := diffExtraction(got, want); d != "" {
		t.Errorf("%s (ct %q, opts %+v): Extract differs from the x/net/html tokenizer path:\n%s", name, ct, opts, d)
	}
	// The same with the page's text taken in the pass: the links must not
	// change, and the text must have the tokenizer path's words.
	var gotText, wantText neardup.TextBuilder
	opts.Text = &gotText
	gotT, _ := Extract(body, ct, base, opts)
	opts.Text = &wantText
	extractReference(body, ct, base, opts)
	if d := diffExtraction(gotT, got); d != "" {
		t.Errorf("%s: Extract with Text set differs from Extract without:\n%s", name, d)
	}
	if g, w := gotText.String(), wantText.String(); !slices.Equal(neardup.Words(g), neardup.Words(w)) {
		t.Errorf("%s (ct %q): text differs from the x/net/html tokenizer path's:\n got %q\nwant %q", name, ct, clip(g), clip(w))
	}
	// And the one-pass shingles the crawler takes from the same pass.
	var sh neardup.Shingler
	opts.Text = &sh
	Extract(body, ct, base, opts)
	if g, w := sh.Shingles(0), neardup.ShingleHashes(wantText.String(), 0); !slices.Equal(g, w) {
		t.Errorf("%s (ct %q): %d shingles from the scan, want %d from the tokenizer path's text", name, ct, len(g), len(w))
	}
	return got
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// testPages returns the real documentation pages in testdata/pages.
func testPages(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/pages/*.html")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata pages: %v", err)
	}
	pages := make(map[string][]byte)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(f)] = b
	}
	return pages
}

// extractOptionSets are the options the differential tests try.
var extractOptionSets = []ExtractOptions{
	{},
	{MaxLinks: -1, KeepNofollow: true},
	{NoEmbeds: true},
	{MaxLinks: 7, MaxHrefLength: 30},
}

// TestExtractMatchesTokenizer checks the scanner against the x/net/html
// tokenizer path on the real pages in testdata/pages, under each option
// set and under several declared charsets.
func TestExtractMatchesTokenizer(t *testing.T) {
	base := mustURL(t, "http://docs.example/dir/page.html")
	for name, page := range testPages(t) {
		for _, opts := range extractOptionSets {
			extractBoth(t, name, page, "text/html", base, opts)
		}
		for _, ct := range []string{"text/html; charset=utf-8", "text/html; charset=windows-1252", ""} {
			extractBoth(t, name, page, ct, base, ExtractOptions{})
		}
		ex := extractBoth(t, name, page, "text/html", base, ExtractOptions{MaxLinks: -1})
		if len(ex.Links) < 10 {
			t.Errorf("%s: only %d links and embeds", name, len(ex.Links))
		}
	}
}

// docsPages calls fn with each HTML file under the directories listed in
// $FETCH_DOCS_DIR (a path list, for example /usr/share/doc, where the
// Debian documentation packages install their manuals), or skips tb when
// it is not set.
func docsPages(tb testing.TB, fn func(path string, page []byte)) {
	tb.Helper()
	dirs := os.Getenv("FETCH_DOCS_DIR")
	if dirs == "" {
		tb.Skip("FETCH_DOCS_DIR not set")
	}
	for _, dir := range filepath.SplitList(dirs) {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
				return nil
			}
			if page, err := os.ReadFile(path); err == nil { // dangling symlinks are skipped
				fn(path, page)
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// TestExtractMatchesTokenizerDocs runs the differential test over every
// page docsPages finds. It takes minutes, so it only runs when
// $FETCH_DOCS_DIR is set.
func TestExtractMatchesTokenizerDocs(t *testing.T) {
	base := mustURL(t, "http://docs.example/dir/page.html")
	var files, bytesRead, links, embeds int
	docsPages(t, func(path string, page []byte) {
		files++
		bytesRead += len(page)
		for _, opts := range []ExtractOptions{{MaxLinks: -1}, {}} {
			ex := extractBoth(t, path, page, "text/html", base, opts)
			if opts.MaxLinks == -1 && ex != nil {
				for _, l := range ex.Links {
					if l.Hop == HopEmbed {
						embeds++
					} else {
						links++
					}
				}
			}
		}
	})
	t.Logf("%d files, %.1f MB of HTML, %d links and %d embeds: the scanner and the tokenizer agree", files, float64(bytesRead)/1e6, links, embeds)
}

// FuzzExtractMatchesTokenizer checks that the scanner finds what the
// x/net/html tokenizer path finds, on any bytes and content type.
func FuzzExtractMatchesTokenizer(f *testing.F) {
	for _, seed := range extractSeeds {
		f.Add([]byte(seed), "text/html")
	}
	f.Add([]byte("<meta charset=shift_jis><a href=\"\x83\x65\">"), "")
	f.Add([]byte("\xef\xbb\xbf<a href=\"\xe9\">"), "text/html; charset=iso-8859-1")
	f.Add([]byte("\xff\xfe<\x00a\x00 \x00h\x00r\x00e\x00f\x00=\x00x\x00>\x00"), "text/html")
	f.Add([]byte("<a href=\"caf\xe9\">"), "text/html; charset=windows-1252")
	base, _ := url.Parse("http://example.com/a/b")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		for _, opts := range extractOptionSets {
			extractBoth(t, "fuzz", body, ct, base, opts)
		}
	})
}

// extractSeeds are hand-written documents for the tokenizer's corner
// cases; TestExtractMatchesTokenizerSeeds and the fuzz corpus use them.
var extractSeeds = []string{
	// Text (ExtractOptions.Text): references decoded in data and RCDATA
	// but not in raw text; hidden elements; self-closing tags; text at the
	// end of input.
	`a&amp;b &lt;c&gt; caf&eacute;&nbsp;x<title>T&amp;t</title><xmp>X&amp;x</xmp><textarea>A&lt;a</textarea>tail &notit; &#65;`,
	`one<svg/>two<svg a=/>three</svg>four<svg a="b"/>five<svg a=b a=c/>six</svg>seven<math><mi>x</mi></math>eight`,
	`<script>no</script>yes<style>no</style>yes<template>no</template>yes<noscript>no<svg>no</noscript>yes`,
	"a\x00b<p>c\rd\te</p><br>f<b>g</b>h<!-- no -->i<!doctype x>j<?pi no?>k</>l</ x>m<",
	"text at the end</",
	"<iframe>no</iframe>yes<noembed>raw &amp; shown</noembed><plaintext>all &amp; <b>raw",
	`<base href="/b/"><a href=" x ">1</a><a rel=nofollow href=y><iframe src=z></iframe>`,
	`<a href='a'<a href=b><!--<a href=c>--><base href="http://[::1/">`,
	`<!-- a -- ><a href=x> --><a href=y><!--><a href=z><!---><a href=w><!-- --!><a href=v>`,
	`<!-- x --!-><a href=no> --!><a href=yes><!DOCTYPE html><!doctype><a href=d><![CDATA[<a href=c>]]><a href=e>`,
	`<?xml version="1.0"?><a href=p></><a href=q></ a href=r><a href=s></a foo=">"><a href=t>`,
	`<script>var a = "<a href=s>"; </script ><a href=x><script>x</scripty><a href=in></script><a href=out>`,
	`<script><!--<script></script><a href=hidden></script>--></script><a href=after>`,
	`<script><!-- a </script><a href=after1><script><!--<script>-></script>--></script><a href=after2>`,
	`<script><!--<script>--></script><a href=x></script><a href=y>`,
	`<script><!--<scriptx></script><a href=x>`,
	`<script><!<a href=q></script><script><!-<a href=r></script><a href=s>`,
	`<style>a{background:url(s.png)} @import "i.css"; @import url(j.css) screen;</style><a href=x>`,
	`<style>/* url(no.png) */ .a{b:"url(no2.png)";c:url( "q q.png" )}@namespace svg url(http://www.w3.org/2000/svg);</style>`,
	`<div style="background:url('bg.png')" STYLE="x:url(no)"></div><p style=color:red>`,
	`<textarea><a href=t></textarea><title><a href=u></title ><xmp><a href=v></xmp><noembed><a href=w></noembed>`,
	`<noframes><a href=nf></noframes><noscript><a href=ns><img src=ns.png></noscript><iframe><a href=if></iframe>`,
	`<plaintext><a href=p>`,
	`<a href=x&amp;y&lt;z&gt&quot;&apos;&#65;&#x42;&#0;&#x110000;&#128;&#55296;&copy;&notit;&notin;&b=c&amp=d&ampx;&#;&#x;&#12>&#34`,
	`<a href="&#12"><a href="&#x4g"><a href="&#X4a;b"><img src="&#1234567890123;"><img src=&#99999999999x>`,
	`<a href="&NotEqualTilde;&fjlig;&semi;&Aacute&aacute;&AElig;&nbsp&zwj;">`,
	"<a href=\"a\x00b\r\nc\rd\">\x00<a hr\x00ef=x><IMG SRC=\"up.png\" SrcSet=\"a.png 1x, b,c.png 2x,,d.png 100w 50h, e.png 2y, f.png\">",
	`<img srcset="  a.png  ,b.png 1.5x,c.png -1x, d.png 0w, e.png 10h, f.png 10w 10w, g.png (x) 1x, h.png 1e1x,i.png">`,
	`<picture><source srcset="p.webp" type=image/webp><source src=s.mp4><img src=p.jpg></picture>`,
	`<video src=v.mp4 poster=p.jpg><track src=t.vtt></video><audio src=a.mp3></audio><embed src=e.swf><object data=o.svg></object>`,
	`<input type=IMAGE src=i.png><input type=text src=no.png><input src=no2.png>`,
	`<svg><image href=h.png xlink:href=x.png /><image xlink:href=x2.png /><use xlink:href="s.svg#i"/><use href="#local"/><a xlink:href=sa></a></svg>`,
	`<link rel=stylesheet href=s.css><link rel="SHORTCUT ICON" href=f.ico><link rel=preload as=image imagesrcset="p1.png 1x, p2.png 2x" href=p.png><link rel="next nofollow" href=n><link rel="stylesheet nofollow" href=sn.css><link rel=modulepreload href=m.js><link rel=manifest href=m.json>`,
	`<script src=a.js></script><script href=no.js></script><body background=bg.gif><table background=t.gif><td background=td.gif>`,
	`<template><base href="http://t.example/"><meta name=robots content=nofollow><a href=in-template></template><a href=x>`,
	`<template><template></template><base href="/in/"></template><base href="/out/"><a href=x>`,
	`<meta name=robots content="noindex,nofollow"><a href=x><img src=i.png><meta http-equiv=refresh content="0;url=r">`,
	`<a href=x><meta name=" Robots " content=NONE><img src=y>`,
	`<meta http-equiv="Refresh" content="5; URL='/next?a=1'"><meta http-equiv=refresh content=3><meta http-equiv=refresh>`,
	"<a\thref\n=\r\"x\"\f><a href = y ><a href= ><a href=>z<a =x href=w><a/href=v><a href=u/><a href=t/ >",
	`<a href="javascript:x"><a href="#f"><a href=""><a href=mailto:x><a href="java` + "\n" + `script:y"><a href="HTTP://ok/">`,
	`<A HREF=caps><DIV STYLE="BACKGROUND:URL(caps.png)"><Style>b{c:URL(up.png)}</STYLE>`,
	`<blockquote style="background:url(long-name.png)"><customelementwithalongname style="x:url(custom.png)">`,
	`<style>@import'unquoted-quote.css';.x{background:image-set("a.png" 1x, url(b.png) 2x);y:-webkit-image-set('c.png' 1x)}`,
	`<style>.a{b:url(esc\61 pe.png);c:url("q\"uote.png");d:url(bad url.png);e:u\rl(r.png)}</style>`,
	"<style>.a{b:url(\x00.png)} \r\n.c{d:url(\"x\\\r\ny.png\")}</style>",
	`<a href="a`,
	`<a href=b`,
	`<a href=c `,
	`<img src=x><style>.s{b:url(s.png)`,
	`<script>`,
	`<!--`,
	`<!`,
	`</`,
	`<`,
	`<a href=x>`,
}

// TestExtractMatchesTokenizerSeeds runs the differential test on the
// seeds without fuzzing, so that every test run covers them.
func TestExtractMatchesTokenizerSeeds(t *testing.T) {
	base := mustURL(t, "http://example.com/a/b")
	for i, seed := range extractSeeds {
		for _, opts := range extractOptionSets {
			extractBoth(t, fmt.Sprintf("seed %d %q", i, seed), []byte(seed), "text/html", base, opts)
		}
	}
}
