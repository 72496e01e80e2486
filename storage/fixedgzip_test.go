package storage

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
)

// gunzip decodes one gzip member with the standard library's reader, an
// implementation independent of appendFixedGzip.
func gunzip(t testing.TB, member []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(member))
	if err != nil {
		t.Fatalf("gzip header: %v", err)
	}
	zr.Multistream(false)
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	return got
}

func TestFixedGzipRoundTrip(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	random := make([]byte, fixedGzipMax)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	html := strings.Repeat(`<p><a href="/d1/p17.html">page 17</a> and some text</p>`+"\n", fixedGzipMax/52)
	var runs []byte
	for len(runs) < fixedGzipMax {
		runs = append(runs, bytes.Repeat([]byte{byte(r.Uint32())}, 1+r.IntN(600))...)
	}
	cases := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"one byte", []byte{0xff}},
		{"four bytes", []byte("abcd")},
		{"short repeat", []byte("abcdabcdabcd")},
		{"all literal codes", func() []byte {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}()},
		{"long run (lengths up to 258)", bytes.Repeat([]byte{'a'}, 5000)},
		{"html", []byte(html)},
		{"random", random},
		{"runs", runs[:fixedGzipMax]},
		// Distances up to the 32 KiB window: a block repeated at the far end.
		{"far repeat", append(append(append([]byte{}, random[:300]...), random[:fixedGzipMax-600]...), random[:300]...)},
	}
	var tab lzTable
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := []byte("kept")
			out := appendFixedGzip(append([]byte{}, prefix...), c.in, &tab)
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("dst prefix overwritten")
			}
			got := gunzip(t, out[len(prefix):])
			if !bytes.Equal(got, c.in) {
				t.Fatalf("round trip: got %d bytes, want %d", len(got), len(c.in))
			}
		})
	}
	// Every match length and a spread of distances, one at a time.
	for n := lzMinMatch; n <= lzMaxMatch; n++ {
		for _, d := range []int{n, n + 1, 257, 1000, 4097, 16000} {
			if d+n > fixedGzipMax {
				continue
			}
			in := append(append([]byte{}, random[:d]...), random[:n]...)
			if got := gunzip(t, appendFixedGzip(nil, in, &tab)); !bytes.Equal(got, in) {
				t.Fatalf("length %d distance %d: round trip differs", n, d)
			}
		}
	}
}

// TestFixedGzipCompresses guards against an encoder that only emits
// literals: repetitive text must shrink.
func TestFixedGzipCompresses(t *testing.T) {
	in := []byte(strings.Repeat("WARC-Type: response\r\nContent-Type: text/html\r\n", 50))
	out := appendFixedGzip(nil, in, new(lzTable))
	if len(out) > len(in)/5 {
		t.Errorf("compressed %d bytes to %d, want at most %d", len(in), len(out), len(in)/5)
	}
}

func FuzzFixedGzip(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"))
	f.Add(bytes.Repeat([]byte("ab"), 300))
	f.Add([]byte{})
	var tab lzTable
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > fixedGzipMax {
			in = in[:fixedGzipMax]
		}
		if got := gunzip(t, appendFixedGzip(nil, in, &tab)); !bytes.Equal(got, in) {
			t.Fatalf("round trip of %q differs: %q", in, got)
		}
	})
}

// BenchmarkSmallRecordGzip compresses a WARC response record of the size
// the crawl of docs/BENCHMARKS.md writes most (a small page: 5 links,
// under 1 KiB with its WARC and HTTP heads) with the general encoder at
// level 1 (the baseline: a dynamic Huffman table per member) and with
// appendFixedGzip:
//
//	go test -run '^$' -bench BenchmarkSmallRecordGzip ./storage/
func BenchmarkSmallRecordGzip(b *testing.B) {
	var rec bytes.Buffer
	rec.WriteString("WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:6f1c2a4e-9d7b-4c51-8e2a-3b9f0d6c7a15>\r\n" +
		"WARC-Date: 2026-11-21T19:54:21.685123Z\r\nWARC-Target-URI: http://127.0.0.1:18091/d3/p300.html\r\n" +
		"WARC-IP-Address: 127.0.0.1\r\nWARC-Concurrent-To: <urn:uuid:0b7e3d52-1f4a-4e8c-9c6d-2a5f8e1b4d90>\r\n" +
		"WARC-Block-Digest: sha1:6DGMNNQKABAUPVWWKJILS47JGROUEPPR\r\nWARC-Payload-Digest: sha1:4Z3RJCNLGVEVRKNIYEAJXCOTQPAIXB4R\r\n" +
		"Content-Type: application/http;msgtype=response\r\nContent-Length: 512\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Length: 420\r\nContent-Type: text/html; charset=utf-8\r\nDate: Sat, 21 Nov 2026 19:54:21 GMT\r\n\r\n" +
		"<!doctype html><html><head><title>page 300</title></head><body>\n")
	for _, href := range []string{"http://127.0.0.1:18092/d3/p301.html#from300", "http://127.0.0.1:18093/d2/./%70299.html", "http://127.0.0.1:18092/d6/p601.html", "../d3/p303.html", "/hub.html"} {
		fmt.Fprintf(&rec, "<p><a href=%q>link</a> lorem ipsum dolor sit amet</p>\n", href)
	}
	rec.WriteString("</body></html>\n\r\n\r\n")
	in := rec.Bytes()
	b.Run("baseline=klauspost-level1", func(b *testing.B) {
		var out bytes.Buffer
		zw, err := kgzip.NewWriterLevel(&out, kgzip.BestSpeed)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			out.Reset()
			zw.Reset(&out)
			zw.Write(in)
			zw.Close()
		}
		b.ReportMetric(float64(out.Len()), "out-bytes")
	})
	b.Run("fixed", func(b *testing.B) {
		var tab lzTable
		var out []byte
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			out = appendFixedGzip(out[:0], in, &tab)
		}
		b.ReportMetric(float64(len(out)), "out-bytes")
	})
}
