package fetch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// keepAliveServer answers every request on a connection with body, kept
// alive, and counts the connections it accepted.
func keepAliveServer(t *testing.T, body string) (string, *atomic.Int32) {
	var conns atomic.Int32
	u := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		conns.Add(1)
		for readRequest(t, br) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
	})
	return u, &conns
}

func TestH1ReusesConnections(t *testing.T) {
	u, conns := keepAliveServer(t, "hello")
	f := newTestFetcher(t, Options{})
	for i := range 5 {
		res, err := f.Fetch(context.Background(), fmt.Sprintf("%s/p%d", u, i))
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if string(res.Body) != "hello" {
			t.Fatalf("fetch %d: body %q", i, res.Body)
		}
		want := fmt.Sprintf("GET /p%d HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n", i, strings.TrimPrefix(u, "http://"), f.Options().UserAgent)
		if !strings.HasPrefix(string(res.RawRequest), want) || !strings.HasSuffix(string(res.RawRequest), "\r\n\r\n") {
			t.Errorf("fetch %d: RawRequest\n%q\ndoes not start with %q and end the head", i, res.RawRequest, want)
		}
		if !res.RemoteAddr.IsValid() || res.TTFB <= 0 {
			t.Errorf("fetch %d: RemoteAddr %v, TTFB %v", i, res.RemoteAddr, res.TTFB)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 sequential fetches, want 1", n)
	}
}

// TestH1CutBodyClosesConnection: a body cut at MaxBodySize leaves the rest
// unread on the connection, which must then not be reused (its next
// "response" would be the rest of the body).
func TestH1CutBodyClosesConnection(t *testing.T) {
	u, conns := keepAliveServer(t, strings.Repeat("x", 10000))
	f := newTestFetcher(t, Options{MaxBodySize: 100})
	for i := range 3 {
		res, err := f.Fetch(context.Background(), u+"/")
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if len(res.Body) != 100 || res.Truncated != TruncatedLength {
			t.Fatalf("fetch %d: %d bytes, truncated %q", i, len(res.Body), res.Truncated)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 cut bodies, want 3", n)
	}
}

// TestH1HTTP10: an HTTP/1.0 response without a length is read to the
// connection's close, and its connection is not kept.
func TestH1HTTP10(t *testing.T) {
	var conns atomic.Int32
	u := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		conns.Add(1)
		if readRequest(t, br) {
			io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<a href=/x>x</a>")
		}
	})
	f := newTestFetcher(t, Options{})
	for i := range 2 {
		res, err := f.Fetch(context.Background(), u+"/")
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if len(res.Links) != 1 || res.Proto != "HTTP/1.0" {
			t.Fatalf("fetch %d: links %v, proto %q", i, res.Links, res.Proto)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestH1UnsolicitedResponse: a server that sends a 408 on an idle
// connection before closing it; the next fetch must not take that 408 for
// its answer.
func TestH1UnsolicitedResponse(t *testing.T) {
	var conns atomic.Int32
	sent := make(chan struct{}, 1)
	u := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if conns.Add(1) > 1 {
			for readRequest(t, br) {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
			return
		}
		if readRequest(t, br) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			time.Sleep(10 * time.Millisecond)
			io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
			sent <- struct{}{}
			readRequest(t, br) // and never answer it
		}
	})
	f := newTestFetcher(t, Options{FetchTimeout: 2 * time.Second})
	if _, err := f.Fetch(context.Background(), u+"/"); err != nil {
		t.Fatal(err)
	}
	<-sent
	time.Sleep(10 * time.Millisecond) // for the 408 to reach the client's socket
	res, err := f.Fetch(context.Background(), u+"/")
	if err != nil || res.Status != 200 {
		t.Fatalf("second fetch: %v, %v", res, err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestH1InformationalResponses(t *testing.T) {
	u := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if readRequest(t, br) {
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"+
				"HTTP/1.1 100 Continue\r\n\r\n"+
				"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		}
	})
	f := newTestFetcher(t, Options{})
	res, err := f.Fetch(context.Background(), u+"/")
	if err != nil || res.Status != 200 || string(res.Body) != "ok" {
		t.Fatalf("got %v, %v", res, err)
	}
	u = rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if readRequest(t, br) {
			for {
				if _, err := io.WriteString(c, "HTTP/1.1 103 Early Hints\r\n\r\n"); err != nil {
					return
				}
			}
		}
	})
	_, err = f.Fetch(context.Background(), u+"/")
	wantKind(t, err, KindProtocol)
}

func TestH1HeaderTooLarge(t *testing.T) {
	u := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if readRequest(t, br) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 64<<10)+"\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	f := newTestFetcher(t, Options{MaxHeaderBytes: 8 << 10})
	_, err := f.Fetch(context.Background(), u+"/")
	wantKind(t, err, KindProtocol)
	if !strings.Contains(err.Error(), "exceeded 8192 bytes") {
		t.Errorf("err = %v, want it to name the 8192-byte cap", err)
	}
	// Under the cap the same head is fine.
	f = newTestFetcher(t, Options{MaxHeaderBytes: 128 << 10})
	if res, err := f.Fetch(context.Background(), u+"/"); err != nil || string(res.Body) != "ok" {
		t.Fatalf("under the cap: %v, %v", res, err)
	}
}

func TestH1ConnsPerHost(t *testing.T) {
	var open, most atomic.Int32
	release := make(chan struct{})
	u := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		n := open.Add(1)
		defer open.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		for readRequest(t, br) {
			<-release
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	f := newTestFetcher(t, Options{MaxConnsPerHost: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			_, err := f.Fetch(context.Background(), u+"/")
			errs <- err
		})
	}
	// Once two fetches hold the two connections and four wait, a fifth
	// waiter that gives up must not take a slot with it.
	waiting := func() int {
		f.h1.mu.Lock()
		defer f.h1.mu.Unlock()
		if h := f.h1.hosts[u]; h != nil {
			return len(h.waiters)
		}
		return 0
	}
	for deadline := time.Now().Add(5 * time.Second); open.Load() < 2 || waiting() < 4; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, %d waiting; want 2 and 4", open.Load(), waiting())
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := f.Fetch(ctx, u+"/")
	cancel()
	wantKind(t, err, KindTimeout)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if m := most.Load(); m != 2 {
		t.Errorf("at most %d connections open at once, want 2", m)
	}
	f.h1.mu.Lock()
	defer f.h1.mu.Unlock()
	if h := f.h1.hosts[u]; h == nil || h.open != len(h.idle) || len(h.waiters) != 0 {
		t.Errorf("pool after the fetches: %+v, want only idle connections", h)
	}
}

func TestH1IdleTimeout(t *testing.T) {
	u, conns := keepAliveServer(t, "ok")
	f := newTestFetcher(t, Options{})
	f.h1.idleTimeout = 20 * time.Millisecond
	for i := range 2 {
		if _, err := f.Fetch(context.Background(), u+"/"); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			time.Sleep(40 * time.Millisecond)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the idle one was past its timeout", n)
	}
	f.Close()
	f.h1.mu.Lock()
	defer f.h1.mu.Unlock()
	if len(f.h1.hosts) != 0 || f.h1.nIdle != 0 {
		t.Errorf("after Close: %d hosts, %d idle", len(f.h1.hosts), f.h1.nIdle)
	}
}

// TestH1RequestHeadLikeNetHTTP: the head h1Transport writes is the one
// http.Request.Write writes for the same GET.
func TestH1RequestHeadLikeNetHTTP(t *testing.T) {
	for _, h := range []http.Header{
		{},
		{"User-Agent": {"layercrawl/1 (+https://example.org)"}, "Accept": {"text/html"}},
		{"User-Agent": {""}, "Accept-Encoding": {"gzip"}, "X-A": {" padded ", "second"}, "Cookie": {"a=b"}},
	} {
		req, err := http.NewRequest("GET", "http://example.org:8080/a%20b/c?q=1&r=%7C", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		got, err := writeRequestHead(req)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := req.Write(&want); err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Errorf("header %v:\n got %q\nwant %q", h, got, want.String())
		}
	}
	for _, h := range []http.Header{{"X-Bad": {"a\r\nInjected: 1"}}, {"Bad Name": {"v"}}} {
		req, _ := http.NewRequest("GET", "http://example.org/", nil)
		req.Header = h
		if _, err := writeRequestHead(req); err == nil {
			t.Errorf("header %q: no error", h)
		}
	}
}

// BenchmarkTransport compares the two transports under Fetch, a page per
// connection (the server closes each, as python's http.server does) and
// kept alive, against a raw local server. cpu-ns/op is the whole
// process's CPU (client and server) per fetch: the server's share is the
// same for both, so the difference is the client's.
func BenchmarkTransport(b *testing.B) {
	page := benchPage()
	for _, keep := range []bool{false, true} {
		u := rawServer(b, func(c net.Conn, br *bufio.Reader) {
			for readRequest(b, br) {
				if !keep {
					fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n%s", page)
					return
				}
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(page), page)
			}
		})
		conn := "close"
		if keep {
			conn = "keep-alive"
		}
		for _, name := range []string{"net-http", "h1"} {
			b.Run(conn+"/"+name, func(b *testing.B) {
				f := newTestFetcher(b, Options{})
				if name == "net-http" {
					f.pageClient.Transport.(*roundTripper).next = netHTTPTransport(b, f)
				}
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					if _, err := f.FetchBody(context.Background(), u+"/"); err != nil {
						b.Fatal(err)
					}
				}
				if cpu0 >= 0 {
					b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}

func TestH1TLS(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<a href="/next">%s</a>`, r.Proto)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	f := newTestFetcher(t, Options{TLSConfig: &tls.Config{RootCAs: pool}})
	for i := range 3 {
		res, err := f.Fetch(context.Background(), srv.URL+"/")
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if res.Proto != "HTTP/1.1" || len(res.Links) != 1 || !strings.Contains(string(res.Body), "HTTP/1.1") {
			t.Fatalf("fetch %d: proto %q, body %q", i, res.Proto, res.Body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d TLS connections for 3 fetches, want 1 (kept alive)", n)
	}
	// The certificate names 127.0.0.1 and example.com: another name fails.
	f = newTestFetcher(t, Options{TLSConfig: &tls.Config{RootCAs: pool, ServerName: "other.test"}})
	_, err := f.Fetch(context.Background(), srv.URL+"/")
	wantKind(t, err, KindTLS)
}

// TestH1TLSHandshakeTimeout: a server that accepts and never answers the
// TLS handshake is given up after TLSHandshakeTimeout.
func TestH1TLSHandshakeTimeout(t *testing.T) {
	u := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		io.Copy(io.Discard, br) // until the client gives up
	})
	f := newTestFetcher(t, Options{TLSHandshakeTimeout: 100 * time.Millisecond, FetchTimeout: 5 * time.Second})
	start := time.Now()
	_, err := f.Fetch(context.Background(), "https://"+strings.TrimPrefix(u, "http://")+"/")
	wantKind(t, err, KindTimeout)
	if !strings.Contains(err.Error(), "TLS handshake timeout") {
		t.Errorf("err = %v, want it to name the TLS handshake timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v, want about 100ms", d)
	}
}

func TestCanonicalAddr(t *testing.T) {
	for _, c := range []struct{ scheme, host, want string }{
		{"http", "a.test", "a.test:80"},
		{"https", "a.test", "a.test:443"},
		{"http", "a.test:8080", "a.test:8080"},
		{"http", "a.test:", "a.test:80"},
		{"https", "[::1]", "[::1]:443"},
		{"http", "[::1]:8080", "[::1]:8080"},
		{"http", "[::1]:", "[::1]:80"},
		{"http", "127.0.0.1", "127.0.0.1:80"},
	} {
		if got := canonicalAddr(c.scheme, c.host); got != c.want {
			t.Errorf("canonicalAddr(%q, %q) = %q, want %q", c.scheme, c.host, got, c.want)
		}
	}
}

// netHTTPTransport is net/http's Transport set up as f's h1Transport is:
// the benchmarks' baseline. It is closed when the benchmark ends.
func netHTTPTransport(tb testing.TB, f *Fetcher) *http.Transport {
	h := f.h1
	tr := &http.Transport{
		TLSClientConfig:        h.tlsConfig,
		DialContext:            h.dial,
		TLSHandshakeTimeout:    h.tlsTimeout,
		ResponseHeaderTimeout:  h.headerTimeout,
		MaxResponseHeaderBytes: h.maxHeaderBytes,
		DisableCompression:     true,
		MaxIdleConns:           h.maxIdle,
		MaxIdleConnsPerHost:    h.maxIdlePerHost,
		MaxConnsPerHost:        h.maxConnsPerHost,
		IdleConnTimeout:        h.idleTimeout,
	}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(true)
	tb.Cleanup(tr.CloseIdleConnections)
	return tr
}
