package storage

import (
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"net/http"
	"testing"
)

func TestStoredGzipRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	cases := map[string][][]byte{
		"nothing":             nil,
		"empty parts":         {{}, {}, nil},
		"one byte":            {{'x'}},
		"one full block":      {random(1<<16 - 1)},
		"one block and one":   {random(1 << 16)},
		"blocks across parts": {random(100), random(70000), {}, random(65535), random(3)},
		"large":               {random(300_000)},
	}
	for name, parts := range cases {
		member := appendStoredGzip([]byte("prefix"), parts...)
		if !bytes.HasPrefix(member, []byte("prefix")) {
			t.Fatalf("%s: the prefix was overwritten", name)
		}
		got := gunzip(t, member[len("prefix"):])
		if want := bytes.Join(parts, nil); !bytes.Equal(got, want) {
			t.Errorf("%s: decoded %d bytes, want %d", name, len(got), len(want))
		}
		total := len(bytes.Join(parts, nil))
		// Header 10, trailer 8, 5 per block.
		if max := total + 18 + 5*(total/65535+1); len(member)-len("prefix") > max {
			t.Errorf("%s: %d bytes for %d stored, want at most %d", name, len(member)-len("prefix"), total, max)
		}
	}
}

func FuzzStoredGzip(f *testing.F) {
	f.Add([]byte("hello"), []byte(""), 3)
	f.Add(bytes.Repeat([]byte{0}, 70000), []byte("tail"), 65535)
	f.Fuzz(func(t *testing.T, a, b []byte, cut int) {
		if cut < 0 || cut > len(a) {
			cut = len(a) / 2
		}
		member := appendStoredGzip(nil, a[:cut], b, a[cut:])
		zr, err := gzip.NewReader(bytes.NewReader(member))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if _, err := got.ReadFrom(zr); err != nil {
			t.Fatal(err)
		}
		if want := append(append(append([]byte{}, a[:cut]...), b...), a[cut:]...); !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("decoded %d bytes, want %d", got.Len(), len(want))
		}
	})
}

func TestPrecompressed(t *testing.T) {
	cases := []struct {
		h    http.Header
		want bool
	}{
		{http.Header{"Content-Type": {"text/html; charset=utf-8"}}, false},
		{http.Header{"Content-Type": {"image/png"}}, true},
		{http.Header{"Content-Type": {"IMAGE/JPEG"}}, true},
		{http.Header{"Content-Type": {"image/svg+xml"}}, false},
		{http.Header{"Content-Type": {"video/mp4"}}, true},
		{http.Header{"Content-Type": {"audio/mpeg"}}, true},
		{http.Header{"Content-Type": {"audio/wav"}}, false},
		{http.Header{"Content-Type": {"font/woff2"}}, true},
		// ResponseHead keeps a decoded body's Content-Encoding under
		// another name: the stored payload is not compressed.
		{http.Header{"Content-Type": {"text/css"}, "Content-Encoding": {"gzip"}}, false},
		{http.Header{"X-Content-Type": {"image/png"}}, false},
		{nil, false},
	}
	for _, c := range cases {
		if got := precompressed(ResponseHead("HTTP/1.1", 200, c.h, 0)); got != c.want {
			t.Errorf("%v: precompressed %v, want %v", c.h, got, c.want)
		}
	}
	// A head written by hand for a body stored as it came, still encoded.
	raw := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/css\r\ncontent-encoding: br\r\n\r\n")
	if !precompressed(raw) {
		t.Errorf("%q: not taken for compressed", raw)
	}
	if precompressed([]byte("HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\n\r\n")) {
		t.Error("Content-Encoding: identity taken for compressed")
	}
}

// A PNG response is stored, not deflated: its record is about the size of
// the payload, and it reads back whole.
func TestWARCStoresCompressedPayloads(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	png := make([]byte, 100_000)
	for i := range png {
		png[i] = byte(r.Uint32())
	}
	for _, level := range []int{gzip.BestSpeed, gzip.DefaultCompression, gzip.BestCompression} {
		dir := t.TempDir()
		w, err := NewWARCWriter(dir, WARCOptions{GzipLevel: level})
		if err != nil {
			t.Fatal(err)
		}
		ex := testExchanges(0)[0]
		ex.ResponseHead = ResponseHead("HTTP/1.1", 200, http.Header{"Content-Type": {"image/png"}}, len(png))
		ex.Body = png
		ex.Metadata = nil
		ref, err := w.Write(ex)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if ref.Length > int64(len(png))+2000 {
			t.Errorf("level %d: %d-byte record for a %d-byte PNG", level, ref.Length, len(png))
		}
		files := readWARCDir(t, dir)
		rec := files[0].records[len(files[0].records)-1]
		if _, payload, _ := HTTPPayload(rec.Block); !bytes.Equal(payload, png) {
			t.Errorf("level %d: the PNG did not read back", level)
		}
	}
}
