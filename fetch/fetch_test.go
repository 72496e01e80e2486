package fetch

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newTestFetcher returns a Fetcher allowed to reach httptest servers on
// loopback, closed when the test ends.
func newTestFetcher(t testing.TB, opts Options) *Fetcher {
	t.Helper()
	opts.AllowPrivate = true
	f, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(f.Close)
	return f
}

func serve(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// rawServer accepts TCP connections and hands each to handle, for servers
// that misbehave below HTTP.
func rawServer(t testing.TB, handle func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				handle(c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String()
}

func readRequest(t testing.TB, br *bufio.Reader) bool {
	_, err := http.ReadRequest(br)
	return err == nil
}

func wantKind(t *testing.T, err error, want Kind) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want kind %v", want)
	}
	if got := KindOf(err); got != want {
		t.Fatalf("kind = %v, want %v (err: %v)", got, want, err)
	}
	var fe *Error
	if !errors.As(err, &fe) || !errors.Is(err, kindSentinels[want]) {
		t.Fatalf("err %v is not an *Error matching the %v sentinel", err, want)
	}
	if !strings.HasPrefix(err.Error(), "fetch: "+want.String()+" ") {
		t.Errorf("err string %q does not start with %q", err.Error(), "fetch: "+want.String())
	}
}

func TestFetchHTML(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Test", "1")
		fmt.Fprint(w, `<html><head><base href="/base/"></head><body><a href="a">A</a> <a href="b" rel="nofollow">B</a> <iframe src="/f"></iframe></body></html>`)
	})
	f := newTestFetcher(t, Options{UserAgent: "testbot/1.0"})
	res, err := f.Fetch(context.Background(), srv.URL+"/dir/page?q=1")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if res.Status != 200 || res.Proto != "HTTP/1.1" || res.Truncated != "" || res.Location != "" {
		t.Errorf("status %d proto %q truncated %q location %q", res.Status, res.Proto, res.Truncated, res.Location)
	}
	if got, want := res.Base.String(), srv.URL+"/base/"; got != want {
		t.Errorf("Base = %q, want %q", got, want)
	}
	if got, want := hrefs(res.Links), "a:a iframe:/f"; got != want {
		t.Errorf("Links = %q, want %q", got, want)
	}
	if res.NofollowSkipped != 1 || res.LinksDropped != 0 {
		t.Errorf("NofollowSkipped %d LinksDropped %d, want 1 0", res.NofollowSkipped, res.LinksDropped)
	}
	if !res.RemoteAddr.Addr().IsLoopback() || res.RemoteAddr.String() != srv.Listener.Addr().String() {
		t.Errorf("RemoteAddr = %v, want %v", res.RemoteAddr, srv.Listener.Addr())
	}
	if res.Duration <= 0 || res.TTFB <= 0 || res.TTFB > res.Duration || res.FetchedAt.IsZero() {
		t.Errorf("timing: duration %v ttfb %v at %v", res.Duration, res.TTFB, res.FetchedAt)
	}
	req := string(res.RawRequest)
	for _, want := range []string{"GET /dir/page?q=1 HTTP/1.1\r\n", "\r\nHost: " + srv.Listener.Addr().String() + "\r\n", "\r\nUser-Agent: testbot/1.0\r\n", "\r\nAccept-Encoding: gzip, deflate\r\n"} {
		if !strings.Contains(req, want) {
			t.Errorf("RawRequest %q lacks %q", req, want)
		}
	}
	if !strings.HasPrefix(req, "GET ") || !strings.HasSuffix(req, "\r\n\r\n") {
		t.Errorf("RawRequest %q is not a request head", req)
	}
	head := string(res.RawResponseHead)
	if !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") || !strings.Contains(head, "\r\nX-Test: 1\r\n") || !strings.HasSuffix(head, "\r\n\r\n") {
		t.Errorf("RawResponseHead = %q", head)
	}
	// The head plus body parse back into the same response.
	back, err := http.ReadResponse(bufio.NewReader(io.MultiReader(bytes.NewReader(res.RawResponseHead), bytes.NewReader(res.Body))), nil)
	if err != nil {
		t.Fatalf("re-reading the recorded response: %v", err)
	}
	body, _ := io.ReadAll(back.Body)
	if !bytes.Equal(body, res.Body) {
		t.Errorf("recorded head and body do not re-read to the body")
	}
}

func TestFetchStatusesAreResults(t *testing.T) {
	var targetHits atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/target", http.StatusMovedPermanently)
		case "/target":
			targetHits.Add(1)
		case "/missing":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(404)
			fmt.Fprint(w, `<a href="/from-404">`)
		case "/down":
			w.WriteHeader(503)
		}
	})
	f := newTestFetcher(t, Options{})
	tests := []struct {
		path     string
		status   int
		location string
		links    int
	}{
		{"/moved", 301, "/target", 0},
		{"/missing", 404, "", 0},
		{"/down", 503, "", 0},
	}
	for _, tt := range tests {
		res, err := f.Fetch(context.Background(), srv.URL+tt.path)
		if err != nil {
			t.Fatalf("Fetch(%s): %v", tt.path, err)
		}
		if res.Status != tt.status || res.Location != tt.location || len(res.Links) != tt.links {
			t.Errorf("Fetch(%s) = status %d location %q links %d, want %d %q %d", tt.path, res.Status, res.Location, len(res.Links), tt.status, tt.location, tt.links)
		}
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("redirect target fetched %d times, want 0 (redirects are the frontier's)", n)
	}
}

func gzipBytes(t testing.TB, p []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(p)
	zw.Close()
	return b.Bytes()
}

func TestFetchGzip(t *testing.T) {
	page := []byte(`<html><a href="/zipped">z</a>` + strings.Repeat(" ", 5000) + `</html>`)
	zipped := gzipBytes(t, page)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip, deflate" {
			t.Errorf("Accept-Encoding = %q, want gzip, deflate", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", fmt.Sprint(len(zipped)))
		w.Write(zipped)
	})
	f := newTestFetcher(t, Options{})
	res, err := f.Fetch(context.Background(), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Body, page) {
		t.Errorf("Body not decoded: %d bytes", len(res.Body))
	}
	if got := hrefs(res.Links); got != "a:/zipped" {
		t.Errorf("Links = %q", got)
	}
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("Header lost Content-Encoding")
	}
	if h := string(res.RawResponseHead); strings.Contains(h, "Content-Encoding") || strings.Contains(h, "Content-Length") {
		t.Errorf("RawResponseHead %q describes the encoded body, not Body", h)
	}
}

// bomb returns a gzip stream of n MiB of zeros, as concatenated gzip
// members (RFC 1952 section 2.2), which Go's reader decodes as one stream.
func bomb(t testing.TB, mib int) []byte {
	member := gzipBytes(t, make([]byte, 1<<20))
	return bytes.Repeat(member, mib)
}

func TestFetchGzipBomb(t *testing.T) {
	payload := bomb(t, 512) // 512 MiB of zeros in about 0.5 MiB
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/encoded":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
		case "/sitemap.xml.gz":
			// No Content-Encoding: colly itself would gunzip this (it does
			// for *.xml.gz and */gzip types), after its size limit.
			w.Header().Set("Content-Type", "application/x-gzip")
		}
		w.Write(payload)
	})
	// A 1 MiB cap keeps the test quick under -race; the defence is the
	// same at any cap: the decoder is never asked for more than cap+1 bytes.
	const limit = 1 << 20
	f := newTestFetcher(t, Options{MaxBodySize: limit})
	for _, path := range []string{"/encoded", "/sitemap.xml.gz"} {
		t.Run(path, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := f.Fetch(context.Background(), srv.URL+path)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if path == "/encoded" {
				if res.Truncated != TruncatedLength || len(res.Body) != limit {
					t.Errorf("Truncated %q, %d bytes; want %q, %d", res.Truncated, len(res.Body), TruncatedLength, limit)
				}
			} else if !bytes.Equal(res.Body, payload) || res.Truncated != "" {
				// Smaller than the cap as sent; colly would have gunzipped it.
				t.Errorf("a gzip file served as such must be kept as sent: %d bytes, truncated %q", len(res.Body), res.Truncated)
			}
			// Decoding the whole bomb would allocate 512 MiB or more.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Errorf("fetch allocated %d MiB", alloc>>20)
			}
		})
	}
}

func TestFetchOversizedBodies(t *testing.T) {
	const limit = 256 << 10
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		chunk := bytes.Repeat([]byte("<p>text "), 4096)
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", fmt.Sprint(8*limit))
			for i := 0; i < 8*limit/len(chunk)+1; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/endless":
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/exact":
			w.Write(bytes.Repeat([]byte("a"), limit))
		}
	})
	f := newTestFetcher(t, Options{MaxBodySize: limit})
	tests := []struct {
		path  string
		trunc string
	}{
		{"/big", TruncatedLength},
		{"/endless", TruncatedLength},
		{"/exact", ""},
	}
	for _, tt := range tests {
		res, err := f.Fetch(context.Background(), srv.URL+tt.path)
		if err != nil {
			t.Fatalf("Fetch(%s): %v", tt.path, err)
		}
		if res.Truncated != tt.trunc || len(res.Body) != limit {
			t.Errorf("Fetch(%s): Truncated %q, %d bytes; want %q, %d", tt.path, res.Truncated, len(res.Body), tt.trunc, limit)
		}
	}
}

func TestFetchDrip(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/silent" {
			<-r.Context().Done() // never answers
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(200)
		for {
			w.Write([]byte("<"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	f := newTestFetcher(t, Options{FetchTimeout: 700 * time.Millisecond, ResponseHeaderTimeout: 300 * time.Millisecond})

	start := time.Now()
	res, err := f.Fetch(context.Background(), srv.URL+"/drip")
	wantKind(t, err, KindTimeout)
	if res == nil || res.Truncated != TruncatedTime || len(res.Body) == 0 || res.Status != 200 {
		t.Fatalf("partial result = %+v, want status 200, some body, truncated %q", res, TruncatedTime)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("drip fetch took %v, want about the 700ms timeout", d)
	}
	var fe *Error
	if !errors.As(err, &fe) || fe.FetchedAt.Sub(start).Abs() > 100*time.Millisecond || fe.Duration < 600*time.Millisecond ||
		res.Duration < 600*time.Millisecond || res.RawTruncated != TruncatedTime || !strings.HasPrefix(string(res.RawResponse), "HTTP/1.1 200 OK\r\n") {
		t.Errorf("timed-out fetch: error %+v, result duration %v raw-truncated %q: want its start, its duration and the capture cut", fe, res.Duration, res.RawTruncated)
	}
	wantReadOnce(t, err, srv.URL+"/drip")

	start = time.Now()
	res, err = f.Fetch(context.Background(), srv.URL+"/silent")
	wantKind(t, err, KindTimeout)
	wantReadOnce(t, err, srv.URL+"/silent")
	if !errors.As(err, &fe) || fe.Duration < 250*time.Millisecond || fe.FetchedAt.Sub(start).Abs() > 100*time.Millisecond {
		t.Errorf("timed-out fetch: %+v, want its start and duration", fe)
	}
	if res != nil {
		t.Errorf("result %+v for a server that never answered", res)
	}
}

func TestFetchCancel(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	f := newTestFetcher(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := f.Fetch(ctx, srv.URL)
	wantKind(t, err, KindCanceled)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("canceled fetch returned after %v", d)
	}
}

func TestFetchBrokenConnections(t *testing.T) {
	reset := func(c net.Conn) {
		c.(*net.TCPConn).SetLinger(0) // close with RST
		c.Close()
	}
	tests := []struct {
		name    string
		handle  func(c net.Conn, br *bufio.Reader)
		kind    Kind
		partial string // expected partial body; "" means no Result
		trunc   string
	}{
		{"reset before response", func(c net.Conn, br *bufio.Reader) {
			readRequest(t, br)
			reset(c)
		}, KindConnectionReset, "", ""},
		{"close before response", func(c net.Conn, br *bufio.Reader) {
			readRequest(t, br)
		}, KindConnectionReset, "", ""},
		{"reset mid-body", func(c net.Conn, br *bufio.Reader) {
			readRequest(t, br)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n<a href=\"/x\">")
			time.Sleep(50 * time.Millisecond)
			reset(c)
		}, KindConnectionReset, "<a href=\"/x\">", TruncatedDisconnect},
		{"short body", func(c net.Conn, br *bufio.Reader) {
			readRequest(t, br)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n<a href=\"/x\">")
		}, KindTruncated, "<a href=\"/x\">", TruncatedDisconnect},
		{"short chunked body", func(c net.Conn, br *bufio.Reader) {
			readRequest(t, br)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n100\r\nwor")
		}, KindTruncated, "hellowor", TruncatedDisconnect},
		{"garbage status line", func(c net.Conn, br *bufio.Reader) {
			readRequest(t, br)
			io.WriteString(c, "SSH-2.0-OpenSSH_9.0\r\n\r\n")
		}, KindProtocol, "", ""},
		{"corrupt gzip", func(c net.Conn, br *bufio.Reader) {
			readRequest(t, br)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 12\r\n\r\nnot gzip at all")
		}, KindProtocol, "", TruncatedDisconnect},
		{"huge header", func(c net.Conn, br *bufio.Reader) {
			readRequest(t, br)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 1<<20)+"\r\n\r\n")
		}, KindProtocol, "", ""},
	}
	f := newTestFetcher(t, Options{FetchTimeout: 5 * time.Second})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := rawServer(t, tt.handle)
			res, err := f.Fetch(context.Background(), u+"/")
			wantKind(t, err, tt.kind)
			if tt.trunc == "" && tt.partial == "" {
				if res != nil {
					t.Errorf("got a Result %+v, want none", res)
				}
				return
			}
			if res == nil {
				t.Fatalf("no partial Result")
			}
			if string(res.Body) != tt.partial || res.Truncated != tt.trunc {
				t.Errorf("partial body %q truncated %q, want %q %q", res.Body, res.Truncated, tt.partial, tt.trunc)
			}
		})
	}
}

// TestFetchRetriedRequestRecordedOnce: when a kept-alive connection turns
// out dead, Go's transport sends the GET again on a new one; RawRequest must
// hold only the request that was answered.
func TestFetchRetriedRequestRecordedOnce(t *testing.T) {
	var conns atomic.Int32
	u := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		first := conns.Add(1) == 1
		for readRequest(t, br) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
			if first {
				// Read the next request on this connection, then drop it
				// unanswered, like a server closing an idle connection.
				readRequest(t, br)
				return
			}
		}
	})
	f := newTestFetcher(t, Options{})
	for i := range 2 {
		res, err := f.Fetch(context.Background(), u+"/p")
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if n := strings.Count(string(res.RawRequest), "GET /p HTTP/1.1"); n != 1 {
			t.Errorf("fetch %d: RawRequest holds %d request lines:\n%s", i, n, res.RawRequest)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the test relies on the transport's retry)", n)
	}
}

func TestFetchHostileHTML(t *testing.T) {
	var b strings.Builder
	b.WriteString("<html>\x00\xff\xfe<a href=\"/a\x00\">\xc3\x28 <a href=\"/b\">\x00")
	for i := range 50_000 {
		fmt.Fprintf(&b, "<a href=\"/l%d\">", i)
	}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, b.String())
	})
	f := newTestFetcher(t, Options{})
	res, err := f.Fetch(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Links) != DefaultMaxOutlinks || res.LinksDropped != 50_002-DefaultMaxOutlinks {
		t.Errorf("%d links, %d dropped; want %d, %d", len(res.Links), res.LinksDropped, DefaultMaxOutlinks, 50_002-DefaultMaxOutlinks)
	}
	if res.Links[0].Href != "/a\uFFFD" || res.Links[1].Href != "/b" {
		t.Errorf("first links %q %q", res.Links[0].Href, res.Links[1].Href)
	}
	if res.Body == nil || !bytes.Equal(res.Body, []byte(b.String())) {
		t.Errorf("Body is not the raw bytes sent")
	}
}

// TestFetchRawBodyKept checks that Body is the bytes on the wire even for
// a non-UTF-8 page, which colly re-encodes in its own Response.
func TestFetchRawBodyKept(t *testing.T) {
	page := []byte("<a href=\"/caf\xe9\">caf\xe9</a>")
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		w.Write(page)
	})
	f := newTestFetcher(t, Options{})
	res, err := f.Fetch(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Body, page) {
		t.Errorf("Body = %q, want the raw %q", res.Body, page)
	}
	if got := hrefs(res.Links); got != "a:/café" {
		t.Errorf("Links = %q", got)
	}
}

func TestFetchAddressPolicy(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	f, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]", "0.0.0.0"} {
		u := fmt.Sprintf("http://%s:%d/", host, port)
		_, err := f.Fetch(context.Background(), u)
		if host == "[::1]" && KindOf(err) == KindConnect {
			continue // no IPv6 loopback here; the policy test for it is TestAddressBlockReason
		}
		wantKind(t, err, KindBlockedAddress)
		wantReadOnce(t, err, u)
		var be *BlockedAddressError
		if !errors.As(err, &be) || be.Reason == "" || !KindBlockedAddress.Permanent() {
			t.Errorf("%s: no BlockedAddressError in %v", u, err)
		}
		if want := "refusing to connect to " + be.Reason + " address "; !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "dial tcp") {
			t.Errorf("%q: want the refusal named once, without dial tcp", err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server reached %d times despite the policy", n)
	}
	// FetchRobots goes through the same dialer: blocked means unreachable.
	r, _, err := f.FetchRobots(context.Background(), srv.URL)
	wantKind(t, err, KindBlockedAddress)
	if !r.DisallowsAll() {
		t.Errorf("blocked robots.txt must mean disallow all")
	}
}

func TestFetchInvalidURL(t *testing.T) {
	f := newTestFetcher(t, Options{})
	for _, u := range []string{"", "http://", "http:///path", "://x", "http://[::1", "http://a b/", "/relative"} {
		res, err := f.Fetch(context.Background(), u)
		if res != nil {
			t.Errorf("Fetch(%q) returned a result", u)
		}
		if KindOf(err) != KindInvalidURL || !KindOf(err).Permanent() {
			t.Errorf("Fetch(%q) error %v, want kind invalid-url", u, err)
		}
		wantReadOnce(t, err, u)
	}
	for _, u := range []string{"ftp://example.com/", "mailto:a@b", "javascript:void(0)"} {
		res, err := f.Fetch(context.Background(), u)
		if res != nil || KindOf(err) != KindUnsupportedScheme || !errors.Is(err, ErrUnsupportedScheme) || !KindOf(err).Permanent() {
			t.Errorf("Fetch(%q) = %v, %v; want kind unsupported-scheme", u, res, err)
		}
		wantReadOnce(t, err, u)
	}
}

// wantReadOnce checks that an error message names its kind and the URL
// once each and carries none of net/http's own wrapping (`Get "url"`).
func wantReadOnce(t *testing.T, err error, rawURL string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", rawURL)
		return
	}
	msg := err.Error()
	kind := KindOf(err).String()
	if !strings.HasPrefix(msg, "fetch: "+kind+" "+rawURL+": ") {
		t.Errorf("%q does not start with %q", msg, "fetch: "+kind+" "+rawURL+": ")
	}
	if rawURL != "" && strings.Count(msg, rawURL) != 1 {
		t.Errorf("%q names %q %d times", msg, rawURL, strings.Count(msg, rawURL))
	}
	if strings.Count(msg, "fetch:") != 1 || strings.Contains(msg, `Get "`) {
		t.Errorf("%q repeats its wrapping", msg)
	}
	var fe *Error
	if errors.As(err, &fe) && fe.FetchedAt.IsZero() && KindOf(err) != KindInvalidURL && KindOf(err) != KindUnsupportedScheme {
		t.Errorf("%q: FetchedAt not set", msg)
	}
}

// TestFetchDNS uses a resolver whose DNS server cannot be reached and, if
// the machine's resolver answers, a name under .invalid (RFC 6761: never
// resolves).
func TestFetchDNS(t *testing.T) {
	noDNS := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		return nil, errors.New("no DNS server in this test")
	}}
	f := newTestFetcher(t, Options{Resolver: noDNS})
	_, err := f.Fetch(context.Background(), "http://host.does-not-exist.invalid/")
	wantKind(t, err, KindDNS)

	f = newTestFetcher(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = f.Fetch(ctx, "http://host.does-not-exist.invalid/")
	wantKind(t, err, KindDNSNotFound)
	wantReadOnce(t, err, "http://host.does-not-exist.invalid/")
	if !KindDNSNotFound.Permanent() || KindDNS.Permanent() || Transient(err) {
		t.Errorf("NXDOMAIN must be permanent and a failed lookup not")
	}
	if want := "lookup host.does-not-exist.invalid"; !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "dial tcp") {
		t.Errorf("%q: want the lookup named once, without dial tcp", err)
	}
}

func TestFetchTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<a href="/secure">`)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)

	// The test server's certificate is self-signed: refused by default.
	_, err := newTestFetcher(t, Options{}).Fetch(context.Background(), srv.URL+"/")
	wantKind(t, err, KindCertificate)
	wantReadOnce(t, err, srv.URL+"/")
	var certErr *tls.CertificateVerificationError
	if !errors.As(err, &certErr) || !KindCertificate.Permanent() || !strings.Contains(err.Error(), "--ca-file") || !strings.Contains(err.Error(), "--insecure-skip-verify") {
		t.Errorf("%q: want a permanent certificate error naming --ca-file and --insecure-skip-verify", err)
	}

	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	f := newTestFetcher(t, Options{TLSConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}}})
	res, err := f.Fetch(context.Background(), srv.URL+"/")
	if err != nil {
		t.Fatalf("Fetch over TLS: %v", err)
	}
	if res.Proto != "HTTP/1.1" || hrefs(res.Links) != "a:/secure" || !strings.HasPrefix(string(res.RawRequest), "GET / HTTP/1.1\r\n") {
		t.Errorf("proto %q links %q request %q", res.Proto, hrefs(res.Links), res.RawRequest)
	}
	if res.TLS == nil || res.TLS.Version < tls.VersionTLS12 || res.TLS.CipherSuite == 0 || !res.TLS.HandshakeComplete {
		t.Errorf("TLS state %+v, want the handshake's", res.TLS)
	}
	if !strings.HasPrefix(string(res.RawResponse), "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(string(res.RawResponse), `<a href="/secure">`) {
		t.Errorf("RawResponse %q, want the plaintext response", res.RawResponse)
	}
}

// closedAddr returns a loopback address nobody listens on: a port taken,
// then freed.
func closedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestFetchConnectRefused(t *testing.T) {
	f := newTestFetcher(t, Options{})
	_, err := f.Fetch(context.Background(), "http://"+closedAddr(t)+"/")
	wantKind(t, err, KindConnect)
}

// TestFetchConcurrent runs many fetches at once through one Fetcher (run
// with -race).
func TestFetchConcurrent(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<a href="%s/next">`, r.URL.Path)
	})
	f := newTestFetcher(t, Options{MaxConnsPerHost: 8})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/p%d", i)
			res, err := f.Fetch(context.Background(), srv.URL+path)
			if err != nil {
				errs <- err
				return
			}
			if len(res.Links) != 1 || res.Links[0].Href != path+"/next" || !strings.Contains(string(res.RawRequest), "GET "+path+" ") {
				errs <- fmt.Errorf("%s: links %v, request %q", path, res.Links, res.RawRequest)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"zero", Options{}, true},
		{"negative body", Options{MaxBodySize: -1}, false},
		{"negative timeout", Options{FetchTimeout: -time.Second}, false},
		{"control in agent", Options{UserAgent: "a\r\nX-Evil: 1"}, false},
		{"negative outlinks means no cap", Options{MaxOutlinks: -1}, true},
	}
	for _, tt := range tests {
		_, err := New(tt.opts)
		if (err == nil) != tt.ok {
			t.Errorf("%s: New error %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: error %v does not wrap ErrInvalidOptions", tt.name, err)
		}
	}
	f, _ := New(Options{})
	defer f.Close()
	if o := f.Options(); o.MaxBodySize != DefaultMaxBodySize || o.MaxOutlinks != DefaultMaxOutlinks || o.UserAgent != DefaultUserAgent {
		t.Errorf("defaults not applied: %+v", o)
	}
}
