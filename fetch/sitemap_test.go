package fetch

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

func entryLines(sm *Sitemap) string {
	var b []string
	for _, e := range sm.Entries {
		line := e.Loc
		if !e.LastMod.IsZero() {
			line += " " + e.LastMod.UTC().Format(time.RFC3339Nano)
		}
		b = append(b, line)
	}
	return strings.Join(b, "\n")
}

func gzipString(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const urlsetDoc = `<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment before the root -->
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>
      http://example.com/a?x=1&amp;y=2
    </loc>
    <lastmod>2024-05-06T07:08:09+02:00</lastmod>
    <changefreq>daily</changefreq>
    <image:image><image:loc>http://cdn.example.com/not-a-page.png</image:loc></image:image>
  </url>
  <url><loc><![CDATA[https://example.com/b]]></loc><lastmod>2024</lastmod></url>
  <url><loc>https://example.com/c</loc><lastmod>2024-05</lastmod></url>
  <url><loc>https://example.com/d</loc><lastmod>2024-05-06</lastmod></url>
  <url><loc>https://example.com/e</loc><lastmod>2024-05-06T07:08Z</lastmod></url>
  <url><loc>https://example.com/f</loc><lastmod>2024-05-06T07:08:09.5-05:00</lastmod></url>
  <url><loc>https://example.com/g</loc><lastmod>yesterday</lastmod></url>
  <url><loc>/relative</loc></url>
  <url><loc>javascript:alert(1)</loc></url>
  <url><loc>ftp://example.com/x</loc></url>
  <url><loc></loc></url>
  <url><lastmod>2024</lastmod></url>
</urlset>`

func TestParseSitemap(t *testing.T) {
	tests := []struct {
		name, body, ct string
		kind           SitemapKind
		want           string
		skipped, bad   int
	}{
		{"urlset", urlsetDoc, "application/xml", SitemapURLSet,
			"http://example.com/a?x=1&y=2 2024-05-06T05:08:09Z\nhttps://example.com/b 2024-01-01T00:00:00Z\nhttps://example.com/c 2024-05-01T00:00:00Z\n" +
				"https://example.com/d 2024-05-06T00:00:00Z\nhttps://example.com/e 2024-05-06T07:08:00Z\nhttps://example.com/f 2024-05-06T12:08:09.5Z\nhttps://example.com/g",
			5, 1},
		{"index", `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>http://example.com/s1.xml.gz</loc><lastmod>2024-01-02</lastmod></sitemap><sitemap><loc>http://example.com/s2.xml</loc></sitemap></sitemapindex>`,
			"text/xml; charset=utf-8", SitemapIndex, "http://example.com/s1.xml.gz 2024-01-02T00:00:00Z\nhttp://example.com/s2.xml", 0, 0},
		{"no namespace, old Google namespace", `<urlset><url><loc>http://example.com/1</loc></url></urlset>`, "", SitemapURLSet, "http://example.com/1", 0, 0},
		{"text", "http://example.com/1\r\n\n  https://example.com/2  \nnot a url\n/relative\nhttp://example.com/3", "text/plain", SitemapText,
			"http://example.com/1\nhttps://example.com/2\nhttp://example.com/3", 2, 0},
		{"text with BOM", "\xef\xbb\xbfhttp://example.com/1\n", "", SitemapText, "http://example.com/1", 0, 0},
		{"xml with BOM", "\xef\xbb\xbf<urlset><url><loc>http://example.com/1</loc></url></urlset>", "", SitemapURLSet, "http://example.com/1", 0, 0},
		{"rss", `<?xml version="1.0"?><rss version="2.0"><channel><link>http://example.com/</link><item><link>http://example.com/p1</link><pubDate>Mon, 06 May 2024 07:08:09 +0000</pubDate></item><item><link>http://example.com/p2</link></item></channel></rss>`,
			"application/rss+xml", SitemapFeed, "http://example.com/p1 2024-05-06T07:08:09Z\nhttp://example.com/p2", 0, 0},
		{"atom", `<feed xmlns="http://www.w3.org/2005/Atom"><link href="http://example.com/"/><entry><link rel="self" href="http://example.com/self"/><link href="http://example.com/e1"/><updated>2024-05-06T07:08:09Z</updated></entry></feed>`,
			"application/atom+xml", SitemapFeed, "http://example.com/e1 2024-05-06T07:08:09Z", 0, 0},
		{"latin-1 declared", "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset><url><loc>http://example.com/caf\xe9</loc></url></urlset>", "", SitemapURLSet, "http://example.com/café", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, gz := range []bool{false, true} {
				body := []byte(tt.body)
				if gz {
					body = gzipString(t, tt.body)
				}
				sm, err := ParseSitemap(bytes.NewReader(body), tt.ct, SitemapOptions{})
				if err != nil {
					t.Fatalf("gzip %v: %v", gz, err)
				}
				if got := entryLines(sm); got != tt.want {
					t.Errorf("gzip %v: got\n%s\nwant\n%s", gz, got, tt.want)
				}
				if sm.Kind != tt.kind || sm.Skipped != tt.skipped || sm.BadLastMod != tt.bad || sm.Gzip != gz || sm.Truncated || sm.Dropped != 0 {
					t.Errorf("gzip %v: kind %v skipped %d badlastmod %d gzip %v truncated %v dropped %d; want %v %d %d %v false 0",
						gz, sm.Kind, sm.Skipped, sm.BadLastMod, sm.Gzip, sm.Truncated, sm.Dropped, tt.kind, tt.skipped, tt.bad, gz)
				}
			}
		})
	}
}

// urlsetOf returns a urlset of n URLs.
func urlsetOf(n int) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for i := range n {
		fmt.Fprintf(&b, "<url><loc>http://example.com/p%d</loc></url>\n", i)
	}
	b.WriteString("</urlset>")
	return b.String()
}

// TestParseSitemapLimits checks the 50,000-URL and size limits: what is
// beyond is cut and counted.
func TestParseSitemapLimits(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		var o SitemapOptions
		o.EnsureDefaults()
		if o.MaxURLs != 50_000 || o.MaxBytes != 52_428_800 || o.MaxURLLength != 2048 {
			t.Errorf("defaults %+v, want sitemaps.org's 50,000 URLs and 50 MiB", o)
		}
	})
	t.Run("URL cap", func(t *testing.T) {
		sm, err := ParseSitemap(strings.NewReader(urlsetOf(107)), "", SitemapOptions{MaxURLs: 100})
		if err != nil || len(sm.Entries) != 100 || sm.Dropped != 7 {
			t.Fatalf("%v: %d entries, %d dropped; want 100 and 7", err, len(sm.Entries), sm.Dropped)
		}
		if last := sm.Entries[len(sm.Entries)-1].Loc; last != "http://example.com/p99" {
			t.Errorf("last kept %q", last)
		}
	})
	t.Run("text cap", func(t *testing.T) {
		sm, err := ParseSitemap(strings.NewReader("http://a.example/1\nhttp://a.example/2\nhttp://a.example/3\n"), "", SitemapOptions{MaxURLs: 2})
		if err != nil || len(sm.Entries) != 2 || sm.Dropped != 1 {
			t.Errorf("%v: %d entries, %d dropped", err, len(sm.Entries), sm.Dropped)
		}
	})
	t.Run("no cap", func(t *testing.T) {
		sm, err := ParseSitemap(strings.NewReader(urlsetOf(60)), "", SitemapOptions{MaxURLs: -1})
		if err != nil || len(sm.Entries) != 60 {
			t.Errorf("%v: %d entries", err, len(sm.Entries))
		}
	})
	doc := urlsetOf(1000)
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("size gzip=%v", gz), func(t *testing.T) {
			body := []byte(doc)
			want := ErrSitemapTooLarge
			if gz {
				body, want = gzipString(t, doc), ErrSitemapGzipBomb
			}
			sm, err := ParseSitemap(bytes.NewReader(body), "", SitemapOptions{MaxBytes: 10_000})
			if !errors.Is(err, want) || sm == nil || !sm.Truncated || sm.Bytes != 10_000 {
				t.Fatalf("err %v, sitemap %+v; want %v, truncated at 10000 bytes", err, sm, want)
			}
			if n := len(sm.Entries); n < 100 || n > 300 {
				t.Errorf("%d entries before the cut", n)
			}
			// Exactly at the limit is not over it.
			if _, err := ParseSitemap(bytes.NewReader(body), "", SitemapOptions{MaxBytes: int64(len(doc))}); err != nil {
				t.Errorf("a file of exactly MaxBytes: %v", err)
			}
		})
	}
	t.Run("long lines and locs", func(t *testing.T) {
		long := "http://example.com/" + strings.Repeat("x", 5000)
		sm, err := ParseSitemap(strings.NewReader(long+"\nhttp://example.com/ok\n"), "", SitemapOptions{})
		if err != nil || entryLines(sm) != "http://example.com/ok" || sm.Skipped != 1 {
			t.Errorf("text: %v, %q, skipped %d", err, entryLines(sm), sm.Skipped)
		}
		sm, err = ParseSitemap(strings.NewReader("<urlset><url><loc>"+long+"</loc></url><url><loc>http://example.com/ok</loc></url></urlset>"), "", SitemapOptions{})
		if err != nil || entryLines(sm) != "http://example.com/ok" || sm.Skipped != 1 {
			t.Errorf("xml: %v, %q, skipped %d", err, entryLines(sm), sm.Skipped)
		}
	})
}

// TestParseSitemapGzipBomb feeds a 512 MiB gzip bomb that poses as a
// sitemap (an XML head, then the same <url> entry over and over, as
// concatenated gzip members): decompression stops at MaxBytes, and memory
// does not grow with the bomb.
func TestParseSitemapGzipBomb(t *testing.T) {
	head := gzipString(t, `<?xml version="1.0"?><urlset>`)
	member := gzipString(t, strings.Repeat("<url><loc>http://example.com/again</loc></url>\n", 1<<20/48))
	body := append(head, bytes.Repeat(member, 512)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sm, err := ParseSitemap(bytes.NewReader(body), "application/x-gzip", SitemapOptions{MaxBytes: 1 << 20, MaxURLs: 10})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrSitemapGzipBomb) || sm == nil || !sm.Gzip || sm.Bytes != 1<<20 || !sm.Truncated {
		t.Fatalf("err %v, %+v; want ErrSitemapGzipBomb after 1 MiB", err, sm)
	}
	if len(sm.Entries) != 10 || sm.Dropped < 20_000 {
		t.Errorf("%d entries, %d dropped; want 10 and the rest of 1 MiB counted", len(sm.Entries), sm.Dropped)
	}
	// encoding/xml allocates per token, so the total is in proportion to
	// MaxBytes; what matters is that it is not in proportion to 512 MiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("parsing 1 MiB of the bomb allocated %d MiB", alloc>>20)
	}
}

// TestParseSitemapLongToken checks that a text or comment too long to be
// part of a sitemap is refused before encoding/xml holds it all.
func TestParseSitemapLongToken(t *testing.T) {
	for name, filler := range map[string]string{"text": " ", "comment": "x"} {
		t.Run(name, func(t *testing.T) {
			doc := `<urlset><url><loc>http://example.com/first</loc></url><!--`
			if name == "text" {
				doc = `<urlset><url><loc>http://example.com/first</loc></url><url><loc>`
			}
			body := append(gzipString(t, doc), bytes.Repeat(gzipString(t, strings.Repeat(filler, maxSitemapToken)), 3)...)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			sm, err := ParseSitemap(bytes.NewReader(body), "", SitemapOptions{})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrSitemapMalformed) || sm == nil || entryLines(sm) != "http://example.com/first" {
				t.Fatalf("err %v, %+v; want ErrSitemapMalformed after one entry", err, sm)
			}
			if sm.Bytes > 2*maxSitemapToken {
				t.Errorf("read %d bytes", sm.Bytes)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
		})
	}
}

// TestParseSitemapErrors checks the sentinel of each way a file can fail
// to be a sitemap.
func TestParseSitemapErrors(t *testing.T) {
	corrupt := gzipString(t, urlsetOf(50))
	corrupt[len(corrupt)-5] ^= 0xff // the CRC
	tests := []struct {
		name, ct string
		body     []byte
		want     error
		partial  int // entries still returned
	}{
		{"html content type", "text/html; charset=utf-8", []byte(urlsetOf(2)), ErrSitemapContentType, -1},
		{"html page served as xml", "application/xml", []byte(`<!DOCTYPE html><html lang=en><head><title>Not found</title></head><body><a href=/>home</a></body></html>`), ErrSitemapContentType, -1},
		{"well-formed xhtml served as xml", "text/xml", []byte(`<html xmlns="http://www.w3.org/1999/xhtml"><body/></html>`), ErrSitemapContentType, -1},
		{"html page with no type", "", []byte("\n<!doctype html>\n<title>x</title>"), ErrSitemapContentType, -1},
		{"image", "image/png", []byte("\x89PNG\r\n\x1a\n"), ErrSitemapContentType, -1},
		{"json", "application/json", []byte(`{"urls":[]}`), ErrSitemapContentType, -1},
		{"binary as octet-stream", "application/octet-stream", []byte("\x00\x01\x02\x03binary"), ErrSitemapContentType, -1},
		{"unknown root", "application/xml", []byte(`<?xml version="1.0"?><catalog><url><loc>http://example.com/</loc></url></catalog>`), ErrSitemapRoot, -1},
		{"unclosed element", "application/xml", []byte(`<urlset><url><loc>http://example.com/1</loc></url><url><loc>http://example.com/2</loc></urlset>`), ErrSitemapMalformed, 1},
		{"cut short", "", []byte(`<urlset><url><loc>http://example.com/1</loc></url><url><loc>http://exa`), ErrSitemapMalformed, 1},
		{"unknown entity", "", []byte(`<urlset><url><loc>http://example.com/&nbsp;</loc></url></urlset>`), ErrSitemapMalformed, 0},
		{"no root", "", []byte(`<?xml version="1.0"?>`), ErrSitemapMalformed, 0},
		{"deep nesting", "", []byte("<urlset>" + strings.Repeat("<a>", 100)), ErrSitemapMalformed, 0},
		{"corrupt gzip", "application/gzip", corrupt, ErrSitemapMalformed, 50},
		{"gzip header only", "", []byte{0x1f, 0x8b, 8}, ErrSitemapMalformed, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sm, err := ParseSitemap(bytes.NewReader(tt.body), tt.ct, SitemapOptions{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "fetch: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			switch {
			case tt.partial < 0 && sm != nil && len(sm.Entries) > 0:
				t.Errorf("entries returned with %v: %v", err, sm.Entries)
			case tt.partial >= 0 && (sm == nil || len(sm.Entries) != tt.partial):
				t.Errorf("want %d entries read before the fault, got %+v", tt.partial, sm)
			}
		})
	}
}

// TestParseSitemapReadError passes a reader's failure on, unwrapped by a
// sitemap sentinel: the file may be fine.
func TestParseSitemapReadError(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := ParseSitemap(&errAfter{data: []byte(urlsetOf(3))[:100], err: boom}, "", SitemapOptions{})
	if !errors.Is(err, boom) || errors.Is(err, ErrSitemapMalformed) {
		t.Errorf("err %v, want the read error", err)
	}
}

func TestParseW3CDatetime(t *testing.T) {
	tests := []struct {
		in, want string // want "" for invalid
	}{
		{"1997", "1997-01-01T00:00:00Z"},
		{"1997-07", "1997-07-01T00:00:00Z"},
		{"1997-07-16", "1997-07-16T00:00:00Z"},
		{"1997-07-16T19:20+01:00", "1997-07-16T18:20:00Z"},
		{"1997-07-16T19:20:30+01:00", "1997-07-16T18:20:30Z"},
		{"1997-07-16T19:20:30.45+01:00", "1997-07-16T18:20:30.45Z"},
		{"1997-07-16T19:20:30Z", "1997-07-16T19:20:30Z"},
		{"1997-13-01", ""},
		{"1997-02-30", ""},
		{"97-07-16", ""},
		{"1997-07-16T19:20:30", ""}, // a time needs a zone
		{"1997-07-16 19:20:30Z", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := parseW3CDatetime(tt.in)
		if s := got.UTC().Format(time.RFC3339Nano); ok != (tt.want != "") || (ok && s != tt.want) {
			t.Errorf("parseW3CDatetime(%q) = %s, %v; want %q", tt.in, s, ok, tt.want)
		}
	}
}

// FuzzParseSitemap feeds arbitrary bodies and content types: no panic,
// every error wraps a sentinel, the limits hold, and every entry is an
// absolute http(s) URL.
func FuzzParseSitemap(f *testing.F) {
	f.Add([]byte(urlsetDoc), "application/xml")
	f.Add([]byte(urlsetOf(3)), "")
	f.Add(gzipString(f, urlsetOf(5)), "application/x-gzip")
	f.Add([]byte("http://example.com/1\nhttp://example.com/2\n\xff\n"), "text/plain")
	f.Add([]byte(`<sitemapindex><sitemap><loc>http://example.com/s.xml</loc><lastmod>2024-01</lastmod></sitemap></sitemapindex>`), "text/xml")
	f.Add([]byte(`<rss><channel><item><link>http://example.com/p</link></item></channel></rss>`), "")
	f.Add([]byte(`<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="http://example.com/e"/></entry></feed>`), "")
	f.Add([]byte(`<!DOCTYPE html><html><body>`), "")
	f.Add([]byte("<urlset><url><loc>http://example.com/&amp;</loc><lastmod>2024-05-06T07:08:09.123Z</lastmod></url>"), "")
	opts := SitemapOptions{MaxURLs: 4, MaxBytes: 4096, MaxURLLength: 100}
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		sm, err := ParseSitemap(bytes.NewReader(body), ct, opts)
		if err != nil {
			known := false
			for _, s := range []error{ErrSitemapMalformed, ErrSitemapContentType, ErrSitemapRoot, ErrSitemapTooLarge, ErrSitemapGzipBomb} {
				known = known || errors.Is(err, s)
			}
			if !known {
				t.Fatalf("error %v wraps no sentinel", err)
			}
		}
		if sm == nil {
			if err == nil {
				t.Fatalf("nil sitemap without an error")
			}
			return
		}
		if len(sm.Entries) > opts.MaxURLs || (sm.Dropped > 0 && len(sm.Entries) != opts.MaxURLs) || sm.Bytes > opts.MaxBytes {
			t.Fatalf("limits: %d entries, %d dropped, %d bytes", len(sm.Entries), sm.Dropped, sm.Bytes)
		}
		for _, e := range sm.Entries {
			if !sitemapURL(e.Loc, opts.MaxURLLength) || e.Loc != strings.TrimSpace(e.Loc) {
				t.Errorf("bad entry %q", e.Loc)
			}
		}
	})
}

// BenchmarkParseSitemap parses a sitemap at the protocol's 50,000-URL
// limit (3.2 MB), plain and gzip-compressed.
func BenchmarkParseSitemap(b *testing.B) {
	doc := urlsetOf(DefaultSitemapMaxURLs)
	for _, gz := range []bool{false, true} {
		body := []byte(doc)
		if gz {
			body = gzipString(b, doc)
		}
		b.Run(fmt.Sprintf("gzip=%v", gz), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				sm, err := ParseSitemap(bytes.NewReader(body), "", SitemapOptions{})
				if err != nil || len(sm.Entries) != DefaultSitemapMaxURLs {
					b.Fatal(err)
				}
			}
		})
	}
}
