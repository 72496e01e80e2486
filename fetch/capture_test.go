package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fixture is a response written byte for byte by fixtureServer.
type fixture struct {
	raw   string // the bytes the server writes
	close bool   // close the connection after writing them
}

// fixtureServer serves fixtures by request path on a raw TCP listener,
// keeping connections alive unless a fixture closes it, and records each
// request's bytes exactly as read and the connection it came on.
type fixtureServer struct {
	addr string

	mu    sync.Mutex // guards reqs and conns
	reqs  map[string][]byte
	conns map[string]int // path -> connection number
}

func newFixtureServer(t testing.TB, fixtures map[string]fixture) *fixtureServer {
	t.Helper()
	s := &fixtureServer{reqs: map[string][]byte{}, conns: map[string]int{}}
	var conns atomic.Int64 // numbers the connections, so tests can tell kept-alive ones apart
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		n := int(conns.Add(1))
		for {
			head, err := readHead(br)
			if err != nil {
				return
			}
			path := strings.Fields(string(head))[1]
			s.mu.Lock()
			s.reqs[path] = head
			s.conns[path] = n
			s.mu.Unlock()
			fx, ok := fixtures[path]
			if !ok {
				fx = fixture{raw: "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"}
			}
			if _, err := c.Write([]byte(fx.raw)); err != nil || fx.close {
				return
			}
		}
	})
	s.addr = strings.TrimPrefix(url, "http://")
	return s
}

// readHead reads a request head (GETs have no body) up to its empty line.
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err != nil {
			return nil, err
		}
		if len(line) <= 2 && strings.TrimRight(string(line), "\r\n") == "" {
			return head, nil
		}
	}
}

func (s *fixtureServer) request(path string) ([]byte, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs[path], s.conns[path]
}

// compressed returns p written through the compressor w makes.
func compressed(p string, w func(io.Writer) io.WriteCloser) string {
	var b bytes.Buffer
	zw := w(&b)
	zw.Write([]byte(p))
	zw.Close()
	return b.String()
}

func gzipped(t testing.TB, p string) string {
	return compressed(p, func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) })
}

func zlibbed(t testing.TB, p string) string {
	return compressed(p, func(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) })
}

func rawDeflated(t testing.TB, p string) string {
	return compressed(p, func(w io.Writer) io.WriteCloser {
		zw, _ := flate.NewWriter(w, flate.BestCompression)
		return zw
	})
}

// chunked frames p in chunks of size n, the first one with an extension.
func chunked(p string, n int) string {
	var b strings.Builder
	for i := 0; i < len(p); i += n {
		c := p[i:min(i+n, len(p))]
		ext := ""
		if i == 0 {
			ext = ";name=\"v\""
		}
		fmt.Fprintf(&b, "%x%s\r\n%s\r\n", len(c), ext, c)
	}
	b.WriteString("0\r\nX-Checksum: abc\r\n\r\n")
	return b.String()
}

// TestRawCapture: RawResponse is exactly the bytes the server wrote for
// the response, RawRequest exactly those it read, and Body the decoded
// entity, for responses a re-serializing client would alter.
func TestRawCapture(t *testing.T) {
	entity := strings.Repeat("<p>Hello, wire.</p>\n", 40)
	big := strings.Repeat("x", 100<<10)
	fixtures := map[string]fixture{
		"/odd":     {raw: "HTTP/1.1 200 OK\r\ncontent-TYPE: text/plain\r\nX-Dup: a\r\nETag: \"e1\"\r\nX-Dup: b\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 5\r\n\r\nhello"},
		"/chunked": {raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\nTrailer: X-Checksum\r\n\r\n" + chunked(entity, 100)},
		"/gzip":    {raw: "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(gzipped(t, entity), 64)},
		"/gzip-length": {raw: "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nContent-Length: " +
			fmt.Sprint(len(gzipped(t, entity))) + "\r\nVary: Accept-Encoding\r\n\r\n" + gzipped(t, entity)},
		"/deflate": {raw: "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: deflate\r\nContent-Length: " +
			fmt.Sprint(len(zlibbed(t, entity))) + "\r\n\r\n" + zlibbed(t, entity)},
		"/raw-deflate": {raw: "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: deflate\r\nContent-Length: " +
			fmt.Sprint(len(rawDeflated(t, entity))) + "\r\n\r\n" + rawDeflated(t, entity)},
		"/cut-chunk":    {raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n5\r\nhello\r\na\r\nwor", close: true},
		"/http10":       {raw: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nServer: old\r\n\r\nread until close\r\nand more", close: true},
		"/early":        {raw: "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"},
		"/not-modified": {raw: "HTTP/1.1 304 Not Modified\r\nETag: \"e1\"\r\nDate: Sat, 28 Nov 2026 07:00:00 GMT\r\n\r\n"},
		"/no-content":   {raw: "HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"},
		"/big":          {raw: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + fmt.Sprint(len(big)) + "\r\n\r\n" + big},
	}
	srv := newFixtureServer(t, fixtures)
	tests := []struct {
		path      string
		opts      Options
		body      string
		trunc     string
		rawTrunc  string
		rawPrefix bool // RawResponse is a prefix of the fixture (cut), not all of it
		wantErr   Kind
	}{
		{path: "/odd", body: "hello"},
		{path: "/chunked", body: entity},
		{path: "/gzip", body: entity},
		{path: "/gzip-length", body: entity},
		{path: "/deflate", body: entity},
		{path: "/raw-deflate", body: entity},
		{path: "/cut-chunk", body: "hellowor", trunc: TruncatedDisconnect, rawTrunc: TruncatedDisconnect, wantErr: KindTruncated},
		{path: "/http10", body: "read until close\r\nand more"},
		{path: "/early", body: "ok"},
		{path: "/not-modified"},
		{path: "/no-content"},
		{path: "/big", opts: Options{MaxBodySize: 1000}, body: big[:1000], trunc: TruncatedLength, rawTrunc: TruncatedLength, rawPrefix: true},
		{path: "/big", opts: Options{MaxCaptureSize: 500}, body: big, rawTrunc: TruncatedLength, rawPrefix: true},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			tt.opts.AllowPrivate = true
			tt.opts.UserAgent = "testbot/1.0"
			f, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			u := "http://" + srv.addr + tt.path
			res, err := f.FetchBody(context.Background(), u)
			if tt.wantErr != 0 {
				wantKind(t, err, tt.wantErr)
			} else if err != nil {
				t.Fatal(err)
			}
			if res == nil {
				t.Fatal("no result")
			}
			want := fixtures[tt.path].raw
			got := string(res.RawResponse)
			switch {
			case tt.rawPrefix:
				if !strings.HasPrefix(want, got) || len(got) == len(want) || len(got) == 0 {
					t.Errorf("RawResponse is %d bytes, want a proper prefix of the %d-byte fixture", len(got), len(want))
				}
				if tt.opts.MaxCaptureSize > 0 && int64(len(got)) != tt.opts.MaxCaptureSize {
					t.Errorf("RawResponse is %d bytes, want the %d-byte cap", len(got), tt.opts.MaxCaptureSize)
				}
			case got != want:
				t.Errorf("RawResponse\n got %q\nwant %q", got, want)
			}
			if string(res.Body) != tt.body {
				t.Errorf("Body = %.80q (%d bytes), want %.80q (%d bytes)", res.Body, len(res.Body), tt.body, len(tt.body))
			}
			if res.Truncated != tt.trunc || res.RawTruncated != tt.rawTrunc {
				t.Errorf("Truncated %q RawTruncated %q, want %q %q", res.Truncated, res.RawTruncated, tt.trunc, tt.rawTrunc)
			}
			req, _ := srv.request(tt.path)
			if !bytes.Equal(res.RawRequest, req) {
				t.Errorf("RawRequest\n got %q\nwant %q (as the server read it)", res.RawRequest, req)
			}
			if res.FetchedAt.IsZero() || res.Duration <= 0 || res.Duration < res.TTFB {
				t.Errorf("FetchedAt %v Duration %v TTFB %v", res.FetchedAt, res.Duration, res.TTFB)
			}
		})
	}
}

// TestRawCaptureKeepAlive: two different responses on one kept-alive
// connection are captured apart, each exactly.
func TestRawCaptureKeepAlive(t *testing.T) {
	fixtures := map[string]fixture{
		"/one": {raw: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nx-one: 1\r\n\r\none"},
		"/two": {raw: "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n"},
	}
	srv := newFixtureServer(t, fixtures)
	f := newTestFetcher(t, Options{})
	for _, path := range []string{"/one", "/two", "/one"} {
		res, err := f.FetchBody(context.Background(), "http://"+srv.addr+path)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.RawResponse); got != fixtures[path].raw {
			t.Errorf("%s: RawResponse %q, want %q", path, got, fixtures[path].raw)
		}
		if req, _ := srv.request(path); !bytes.Equal(res.RawRequest, req) {
			t.Errorf("%s: RawRequest %q, want %q", path, res.RawRequest, req)
		}
	}
	_, c1 := srv.request("/one")
	_, c2 := srv.request("/two")
	if c1 != c2 || c1 == 0 {
		t.Errorf("requests came on connections %d and %d, want one kept alive", c1, c2)
	}
}

// FuzzCapture serves arbitrary bytes as a response: the capture never
// holds more than the server wrote, and when net/http accepts a response
// whose body ends with the connection, RawResponse is all of it.
func FuzzCapture(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nok\r\n0\r\nT: 1\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 200 OK\r\nContent-Encoding: gzip\r\n\r\n\x1f\x8b\x08\x00"))
	f.Add([]byte("HTTP/1.1 103 Early\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\nxyz"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 4<<10 {
			return
		}
		srv := newFixtureServer(t, map[string]fixture{"/": {raw: string(raw), close: true}})
		fe, err := New(Options{AllowPrivate: true, FetchTimeout: 2 * time.Second, ResponseHeaderTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer fe.Close()
		res, _ := fe.FetchBody(context.Background(), "http://"+srv.addr+"/")
		if res == nil {
			return
		}
		if !bytes.HasPrefix(raw, res.RawResponse) {
			t.Fatalf("RawResponse %q is not a prefix of what was written %q", res.RawResponse, raw)
		}
		if res.Truncated == "" && res.RawTruncated == "" && !bytes.Equal(raw, res.RawResponse) {
			t.Fatalf("complete response: RawResponse %q, want %q", res.RawResponse, raw)
		}
	})
}

// FuzzRecorder checks the recorder against plain concatenation: reads of
// arbitrary sizes (crossing the pooled scratch's limit into blocks), an
// optional reserve after the first read, and the cap.
func FuzzRecorder(f *testing.F) {
	f.Add(uint16(10), uint32(100), int64(0), int64(1<<30), byte(1))
	f.Add(uint16(4000), uint32(3<<20), int64(3<<20), int64(1<<30), byte(7))
	f.Add(uint16(65535), uint32(5<<20), int64(0), int64(2<<20), byte(3))
	f.Fuzz(func(t *testing.T, step uint16, total uint32, reserve, limit int64, seed byte) {
		if step == 0 || total > 8<<20 || limit <= 0 {
			return
		}
		r := &recorder{limit: limit}
		var want []byte
		for i, off := 0, 0; off < int(total); i++ {
			n := min(int(step)+int(seed)*i%97, int(total)-off)
			p := bytes.Repeat([]byte{byte(i) ^ seed}, n)
			r.read(p)
			want = append(want, p...)
			off += n
			if i == 0 && reserve > 0 {
				r.reserve(reserve)
			}
		}
		cut := int64(len(want)) > limit
		if cut {
			want = want[:limit]
		}
		got := r.response()
		if !bytes.Equal(got, want) || r.cut != cut {
			t.Fatalf("recorded %d bytes (cut %v), want %d (cut %v)", len(got), r.cut, len(want), cut)
		}
		if cap(got) > len(got)+len(got)/8+1 {
			t.Fatalf("%d bytes of capacity for %d", cap(got), len(got))
		}
	})
}
