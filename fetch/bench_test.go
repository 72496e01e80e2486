package fetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/temoto/robotstxt"
	"golang.org/x/net/html/charset"
)

// benchPage is a 30 KB page with 200 links, about a typical HTML page.
func benchPage() []byte {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><head><title>t</title><link rel=stylesheet href=/s.css></head><body>")
	for i := range 200 {
		fmt.Fprintf(&b, `<p class="x">Some text of paragraph %d, then <a href="/section/%d/page-%d.html" title="t">a link</a>.</p>`+"\n", i, i%7, i)
	}
	b.WriteString("</body></html>")
	return []byte(b.String())
}

// BenchmarkFetch compares Fetch (colly per fetch, RoundTripper recording,
// link extraction) with a bare http.Client GET through net/http's
// Transport with the same settings, against a local server: the cost of
// the engine and the bookkeeping per page.
func BenchmarkFetch(b *testing.B) {
	page := benchPage()
	srv := serve(b, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			w.Header().Set("Content-Type", "text/plain")
		} else {
			w.Header().Set("Content-Type", "text/html")
		}
		w.Write(page)
	})
	f := newTestFetcher(b, Options{})
	b.Run("baseline=http.Client", func(b *testing.B) {
		client := &http.Client{Transport: netHTTPTransport(b, f)}
		b.ReportAllocs()
		defer reportCPU(b, processCPU())
		for b.Loop() {
			resp, err := client.Get(srv.URL + "/plain")
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("Fetch/text", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU())
		for b.Loop() {
			if _, err := f.Fetch(context.Background(), srv.URL+"/plain"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Fetch/html+links", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU())
		for b.Loop() {
			res, err := f.Fetch(context.Background(), srv.URL+"/html")
			if err != nil || len(res.Links) != 201 {
				b.Fatal(err, len(res.Links))
			}
		}
	})
}

// BenchmarkExtractLinks compares the streaming tokenizer with colly's way
// of finding links: a goquery DOM and a selector.
func BenchmarkExtractLinks(b *testing.B) {
	page := benchPage()
	b.Run("baseline=goquery", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
			if err != nil {
				b.Fatal(err)
			}
			var n int
			doc.Find("a[href], area[href], link[href], frame[src], iframe[src]").Each(func(int, *goquery.Selection) { n++ })
			if n != 201 {
				b.Fatal(n)
			}
		}
	})
	b.Run("ExtractLinks", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			_, links, err := ExtractLinks(page, "text/html", nil)
			if err != nil || len(links) != 201 {
				b.Fatal(err, len(links))
			}
		}
	})
}

// BenchmarkRobotsAllowed compares Robots.Allowed with temoto/robotstxt (the
// library colly uses) on a 60-rule file.
func BenchmarkRobotsAllowed(b *testing.B) {
	var file strings.Builder
	file.WriteString("User-agent: otherbot\nDisallow: /\n\nUser-agent: *\n")
	for i := range 60 {
		fmt.Fprintf(&file, "Disallow: /dir%d/*.php$\nAllow: /dir%d/public/\n", i, i)
	}
	body := []byte(file.String())
	paths := []string{"/dir7/a/b.php", "/dir59/public/x.html", "/index.html", "/dir3/x.php?q=1"}
	b.Run("baseline=temoto", func(b *testing.B) {
		r, err := robotstxt.FromBytes(body)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range paths {
				r.TestAgent(p, "layercrawl")
			}
		}
	})
	b.Run("Robots", func(b *testing.B) {
		r, _ := ParseRobots(body)
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range paths {
				r.Allowed("layercrawl", p)
			}
		}
	})
}

// TestFetchBodyCopies checks that a fetch keeps one copy of the body: a
// 4 MiB page costs about 4 MiB of allocation for Body and as much for
// RawResponse, not the 2-3 copies colly's
// own body handling would make.
func TestFetchBodyCopies(t *testing.T) {
	page := bytes.Repeat([]byte("0123456789abcdef"), 4<<20/16)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1") // colly would re-encode this
		if r.URL.Path == "/length" {
			w.Header().Set("Content-Length", fmt.Sprint(len(page)))
		}
		w.Write(page)
	})
	f := newTestFetcher(t, Options{})
	tests := []struct {
		path     string
		maxAlloc uint64
	}{
		{"/length", 9 << 20},   // one allocation of the announced size, and one for the capture
		{"/chunked", 20 << 20}, // growing chunks, then one join; the same for the capture
	}
	for _, tt := range tests {
		if _, err := f.Fetch(context.Background(), srv.URL+tt.path); err != nil { // warm the connection
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := f.Fetch(context.Background(), srv.URL+tt.path)
		runtime.ReadMemStats(&after)
		if err != nil || !bytes.Equal(res.Body, page) {
			t.Fatalf("Fetch: %v, body equal %v", err, bytes.Equal(res.Body, page))
		}
		if cap(res.Body) != len(res.Body) && cap(res.Body) != len(res.Body)+1 {
			t.Errorf("%s: Body holds %d bytes of capacity for %d", tt.path, cap(res.Body), len(res.Body))
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %.1f MiB allocated for a 4 MiB body and its capture", tt.path, float64(alloc)/(1<<20))
		if alloc > tt.maxAlloc {
			t.Errorf("%s: a 4 MiB fetch allocated %.1f MiB, want under %d", tt.path, float64(alloc)/(1<<20), tt.maxAlloc>>20)
		}
	}
}

// errAfter yields data and then err.
type errAfter struct {
	data []byte
	err  error
}

func (e *errAfter) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data[:min(len(p), len(e.data), 1000)]) // short reads, as from a socket
	e.data = e.data[n:]
	return n, nil
}

func TestReadUpTo(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 100_000)
	tests := []struct {
		name     string
		n        int   // bytes available
		err      error // error after them
		limit    int64
		hint     int64
		wantLen  int
		wantErr  error
		exactCap bool
	}{
		{"eof unknown length", 100_000, io.EOF, 1 << 20, 0, 100_000, nil, true},
		{"eof exact hint", 100_000, io.EOF, 1 << 20, 100_000, 100_000, nil, false},
		{"hint too small", 100_000, io.EOF, 1 << 20, 10, 100_000, nil, true},
		{"hint too large", 1000, io.EOF, 1 << 20, 100_000, 1000, nil, false},
		{"limit reached", 100_000, io.EOF, 5000, 0, 5000, nil, true},
		{"limit with hint", 100_000, io.EOF, 5000, 100_000, 5000, nil, true},
		{"unexpected eof kept", 50_000, io.ErrUnexpectedEOF, 1 << 20, 100_000, 50_000, io.ErrUnexpectedEOF, false},
		{"empty", 0, io.EOF, 1 << 20, 0, 0, nil, false},
	}
	for _, tt := range tests {
		got, err := readUpTo(&errAfter{data: data[:tt.n], err: tt.err}, tt.limit, tt.hint)
		if len(got) != tt.wantLen || err != tt.wantErr {
			t.Errorf("%s: %d bytes, err %v; want %d, %v", tt.name, len(got), err, tt.wantLen, tt.wantErr)
		}
		if tt.exactCap && cap(got) != len(got) {
			t.Errorf("%s: cap %d for %d bytes", tt.name, cap(got), len(got))
		}
	}
}

// BenchmarkExtract measures extraction throughput, in MB/s of HTML (and
// per CPU-second), over the real documentation pages of testdata/pages,
// side by side: the former extractor (extractV0: x/net/html
// Tokenizer, every body through charset.NewReader, links only), the same
// Tokenizer feeding the new extractor (extractReference, links and
// embeds), and the scanner, links only and with embeds.
// docs/BENCHMARKS.md has the figures.
func BenchmarkExtract(b *testing.B) {
	pages := testPages(b)
	names := slices.Sorted(maps.Keys(pages))
	list := make([][]byte, len(names))
	for i, name := range names {
		list[i] = pages[name]
	}
	benchExtract(b, list)
}

// BenchmarkExtractDocs is BenchmarkExtract over every page under
// $FETCH_DOCS_DIR (see docsPages).
func BenchmarkExtractDocs(b *testing.B) {
	var list [][]byte
	docsPages(b, func(_ string, page []byte) { list = append(list, page) })
	if len(list) == 0 {
		b.Fatal("no pages under $FETCH_DOCS_DIR")
	}
	benchExtract(b, list)
}

func benchExtract(b *testing.B, pages [][]byte) {
	var total int64
	for _, p := range pages {
		total += int64(len(p))
	}
	type extractFunc func([]byte, string, *url.URL, ExtractOptions) (*Extraction, error)
	for _, bm := range []struct {
		name    string
		extract extractFunc
		opts    ExtractOptions
	}{
		{"baseline=v0/links", extractV0, ExtractOptions{}},
		{"tokenizer/links+embeds", extractReference, ExtractOptions{}},
		{"scanner/links", Extract, ExtractOptions{NoEmbeds: true}},
		{"scanner/links+embeds", Extract, ExtractOptions{}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(total)
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				for _, p := range pages {
					if _, err := bm.extract(p, "text/html", nil, bm.opts); err != nil {
						b.Fatal(err)
					}
				}
			}
			// Throughput per CPU-second: wall time on the shared machine
			// counts the other engineers' processes too.
			if cpu1 := processCPU(); cpu0 >= 0 && cpu1 > cpu0 {
				b.ReportMetric(float64(total)*float64(b.N)/1e6/(float64(cpu1-cpu0)/1e9), "MB/cpu-s")
			}
		})
	}
}

// BenchmarkCharset isolates the charset step of extraction over the
// testdata pages (all UTF-8, declared in a <meta>): charset.NewReader
// read to the end, as the tokenizer path consumed it, against utf8Body,
// which finds the encoding and leaves a UTF-8 body in place.
func BenchmarkCharset(b *testing.B) {
	pages := testPages(b)
	var total int64
	for _, p := range pages {
		total += int64(len(p))
	}
	b.Run("baseline=charset.NewReader", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pages {
				r, err := charset.NewReader(bytes.NewReader(p), "text/html")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("utf8Body", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pages {
				if len(utf8Body(p, "text/html")) != len(p) {
					b.Fatal("transcoded")
				}
			}
		}
	})
}

// netHTTPTransport is a bare net/http Transport with the Fetcher's pool
// and timeout settings but no capture, no policy and no decoding: the
// floor under Fetch's cost.
func netHTTPTransport(tb testing.TB, f *Fetcher) *http.Transport {
	o := f.Options()
	t := &http.Transport{
		DialContext:            (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: -1}).DialContext,
		ResponseHeaderTimeout:  o.ResponseHeaderTimeout,
		MaxResponseHeaderBytes: o.MaxHeaderBytes,
		MaxConnsPerHost:        o.MaxConnsPerHost,
		MaxIdleConnsPerHost:    maxIdleConnsPerHost,
		IdleConnTimeout:        idleConnTimeout,
		DisableCompression:     true,
	}
	tb.Cleanup(t.CloseIdleConnections)
	return t
}

// reportCPU reports the process's CPU time per operation since cpu0 (a
// processCPU reading), server included: wall time on the shared machine
// counts the other engineers' processes too.
func reportCPU(b *testing.B, cpu0 int64) {
	if cpu1 := processCPU(); cpu0 >= 0 && cpu1 > cpu0 && b.N > 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
