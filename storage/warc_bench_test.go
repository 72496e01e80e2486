package storage

import (
	"compress/gzip"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkWARCWrite measures WARC output for a typical HTML page (about
// 20 KB of markup) at the default gzip level and at level 1, from parallel
// goroutines as the crawler's workers call it; "default" and "level1"
// write an exchange in the ResponseHead and Body form, "raw-" the same page
// as the bytes a server sent (Response), with Content-Length or chunked:
//
//	go test -run '^$' -bench 'BenchmarkWARCWrite|BenchmarkCrawlLogWrite' ./storage/
func BenchmarkWARCWrite(b *testing.B) {
	var page strings.Builder
	for i := 0; page.Len() < 20<<10; i++ {
		fmt.Fprintf(&page, "<p><a href=\"/section/%d/page-%d.html\">Article %d about crawling</a> with some text.</p>\n", i%37, i, i)
	}
	body := []byte(page.String())
	ex := &Exchange{
		TargetURI:    "http://bench.example/section/1/page-1.html",
		IP:           "127.0.0.1",
		Date:         time.Now(),
		RequestHead:  []byte("GET /section/1/page-1.html HTTP/1.1\r\nHost: bench.example\r\nUser-Agent: layercrawl\r\n"),
		ResponseHead: ResponseHead("", 200, http.Header{"Content-Type": {"text/html; charset=utf-8"}}, len(body)),
		Body:         body,
	}
	rawHead := "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sat, 28 Nov 2026 06:00:00 GMT\r\nContent-Type: text/html; charset=utf-8\r\n"
	raw := *ex
	raw.Response = []byte(rawHead + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
	chunked := *ex
	chunked.Response = []byte(rawHead + "Transfer-Encoding: chunked\r\n\r\n" + chunkedBody(string(body), 8192))
	for _, c := range []struct {
		name  string
		level int
		ex    *Exchange
	}{
		{"default", gzip.DefaultCompression, ex}, {"level1", gzip.BestSpeed, ex},
		{"raw-default", gzip.DefaultCompression, &raw}, {"raw-level1", gzip.BestSpeed, &raw},
		{"raw-chunked-level1", gzip.BestSpeed, &chunked},
	} {
		ex := c.ex
		b.Run(c.name, func(b *testing.B) {
			w, err := NewWARCWriter(b.TempDir(), WARCOptions{GzipLevel: c.level})
			if err != nil {
				b.Fatal(err)
			}
			var out int64
			b.SetBytes(int64(len(body)))
			cpu0 := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := w.Write(ex); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			reportCPU(b, cpu0)
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(w.dir, "*.warc.gz"))
			for _, f := range files {
				n, err := dirSize(f)
				if err != nil {
					b.Fatal(err)
				}
				out += n
			}
			b.ReportMetric(float64(out)/float64(b.N), "file-B/page")
		})
	}
}

func BenchmarkCrawlLogWrite(b *testing.B) {
	l, err := OpenCrawlLog(filepath.Join(b.TempDir(), "crawl.log.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	e := Entry{URL: "http://bench.example/section/1/page-1.html", Status: 200, ContentType: "text/html; charset=utf-8",
		Bytes: 20480, Depth: 3, Via: "http://bench.example/section/1/", FetchedAt: time.Now(), DurationMS: 12.5, IP: "127.0.0.1",
		WARCFile: "layercrawl-20261121170000000-00001.warc.gz", WARCRecordID: "<urn:uuid:6f2c1a8e-1b7e-4c1e-9a57-0d5f0c1d2e3f>"}
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Write(e); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportCPU(b, cpu0)
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// reportCPU reports the process CPU time per operation since cpu0.
func reportCPU(b *testing.B, cpu0 int64) {
	if cpu1 := processCPU(); cpu0 >= 0 && cpu1 >= 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkPayloadDigest compares the crawl's digest of a 20 KB page
// before the archive held raw responses (PayloadDigest of the decoded body)
// with ResponsePayloadDigest of the response as received:
//
//	go test -run '^$' -bench 'BenchmarkPayloadDigest' ./storage/
func BenchmarkPayloadDigest(b *testing.B) {
	var page strings.Builder
	for i := 0; page.Len() < 20<<10; i++ {
		fmt.Fprintf(&page, "<p><a href=\"/section/%d/page-%d.html\">Article %d about crawling</a> with some text.</p>\n", i%37, i, i)
	}
	body := page.String()
	head := "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html; charset=utf-8\r\n"
	decoded := []byte(body)
	withLength := []byte(head + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	withChunks := []byte(head + "Transfer-Encoding: chunked\r\n\r\n" + chunkedBody(body, 8192))
	for _, c := range []struct {
		name   string
		digest func() string
	}{
		{"decoded-body", func() string { return PayloadDigest(decoded) }},
		{"raw-length", func() string { d, _ := ResponsePayloadDigest(withLength); return d }},
		{"raw-chunked", func() string { d, _ := ResponsePayloadDigest(withChunks); return d }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if c.digest() == "" {
					b.Fatal("no digest")
				}
			}
		})
	}
}

// chunkedBody frames body in chunks of at most n bytes, with the last
// chunk and no trailer.
func chunkedBody(body string, n int) string {
	var b strings.Builder
	for p := body; len(p) > 0; {
		k := min(len(p), n)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, p[:k])
		p = p[k:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}
