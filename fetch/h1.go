package fetch

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// h1Transport is the crawler's HTTP/1.1 client, for http:// and https://.
// It runs each exchange on the caller's goroutine: it dials (and runs the
// TLS handshake), writes the request and reads the response itself, with
// http.ReadResponse parsing the response (status line, header, chunked or
// length-delimited or read-until-close body, exactly as http.Transport
// does). http.Transport instead runs a dial goroutine and a read and a
// write goroutine per connection and hands the request and response
// between them over channels; against python's http.server, which closes
// every connection, that cost 305-327 µs of CPU per fetch against 183-200
// µs for the same exchange run inline (docs/BENCHMARKS.md, issue 16 §3).
//
// It keeps what the crawler relied on http.Transport for: idle
// connections kept for reuse where the server allows (at most
// maxIdlePerHost per host:port and maxIdle in all, closed after
// idleTimeout or when something arrived on them while idle),
// MaxConnsPerHost connections per host:port (idle ones included), a
// request on a reused connection that the server closed meanwhile sent
// again once on a new one (a GET is idempotent), the response-header
// timeout and size cap, the TLS handshake timeout, the request's context
// (its deadline bounds every read and write; canceling it closes the
// connection), and the httptrace hooks GotConn, WroteHeaderField,
// WroteHeaders and GotFirstResponseByte, from which roundTripper records
// the raw request. Only HTTP/1.1 is spoken (no ALPN), so the heads
// recorded are the ones on the wire.
type h1Transport struct {
	dial            func(ctx context.Context, network, addr string) (net.Conn, error)
	tlsConfig       *tls.Config // for https://; nil: the defaults
	tlsTimeout      time.Duration
	headerTimeout   time.Duration
	maxHeaderBytes  int64
	maxConnsPerHost int
	maxIdlePerHost  int
	maxIdle         int
	idleTimeout     time.Duration

	mu    sync.Mutex // guards the fields below
	hosts map[string]*h1Host
	nIdle int
}

// h1Host is the pool of one host:port.
type h1Host struct {
	open    int            // connections open, idle or in use
	idle    []*h1Conn      // most recently used last
	waiters []chan *h1Conn // requests waiting for a connection slot, oldest first
}

// h1Conn is one connection. Its reader is limited while a response head is
// read (MaxHeaderBytes).
type h1Conn struct {
	net.Conn          // a *tls.Conn over raw for https://
	raw      net.Conn // the TCP connection
	key      string   // scheme://host:port
	lim      headLimiter
	br       *bufio.Reader // from h1Readers, returned by close
	idleAt   time.Time
}

// h1Readers pools the connections' readers: with a server that closes
// every connection (python's HTTP/1.0 http.server), a reader per request
// was 4% of the bytes a crawl allocated.
var h1Readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// close closes c and pools its reader; c is not used again.
func (c *h1Conn) close() {
	c.Conn.Close()
	if c.br != nil {
		c.br.Reset(nil)
		h1Readers.Put(c.br)
		c.br = nil
	}
}

// headLimiter passes reads through to the connection, failing with
// errHeadTooLarge once n bytes were read while n >= 0.
type headLimiter struct {
	c net.Conn
	n int64 // bytes left; < 0 means no limit
}

var errHeadTooLarge = errors.New("response head too large")

func (l *headLimiter) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, errHeadTooLarge
	}
	if l.n > 0 && int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.c.Read(p)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}

// aLongTimeAgo is a deadline in the past, which makes blocked reads and
// writes on a connection return at once.
var aLongTimeAgo = time.Unix(1, 0)

func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return nil, fmt.Errorf("fetch: h1Transport: unsupported URL %q", req.URL)
	}
	if req.Body != nil && req.Body != http.NoBody {
		req.Body.Close()
		return nil, errors.New("fetch: h1Transport: request bodies are not supported")
	}
	ctx := req.Context()
	key := req.URL.Scheme + "://" + canonicalAddr(req.URL.Scheme, req.URL.Host)
	head, err := writeRequestHead(req)
	if err != nil {
		return nil, err
	}
	for {
		c, reused, err := t.get(ctx, key)
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(ctx, req, c, reused, head)
		if err == nil {
			return resp, nil
		}
		if !reused || !errors.Is(err, errStaleConn) || ctx.Err() != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, err
		}
		// The server closed the idle connection before it saw the
		// request: send it again on a new one.
	}
}

// errStaleConn marks a failure on a reused connection before any byte of
// a response arrived.
var errStaleConn = errors.New("fetch: reused connection closed by the server")

// exchange sends head on c and reads the response head. On success the
// response's body owns c.
func (t *h1Transport) exchange(ctx context.Context, req *http.Request, c *h1Conn, reused bool, head []byte) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: c.Conn, Reused: reused})
	}
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		t.discard(c)
		return nil, err
	}
	if trace != nil {
		traceHead(trace, head)
	}
	if _, err := c.Conn.Write(head); err != nil {
		if reused {
			err = fmt.Errorf("%w: %w", errStaleConn, err)
		}
		return fail(err)
	}
	headDeadline := deadline
	if t.headerTimeout > 0 {
		if d := time.Now().Add(t.headerTimeout); deadline.IsZero() || d.Before(deadline) {
			headDeadline = d
		}
	}
	c.SetReadDeadline(headDeadline)
	c.lim.n = t.maxHeaderBytes
	var resp *http.Response
	for n1xx := 0; ; n1xx++ {
		if _, err := c.br.Peek(1); err != nil {
			if reused && n1xx == 0 && (errors.Is(err, io.EOF) || isReset(err)) {
				err = fmt.Errorf("%w: %w", errStaleConn, err)
			}
			return fail(t.headError(err, headDeadline, deadline))
		}
		if n1xx == 0 && trace != nil && trace.GotFirstResponseByte != nil {
			trace.GotFirstResponseByte()
		}
		var err error
		resp, err = http.ReadResponse(c.br, req)
		if err != nil {
			return fail(t.headError(err, headDeadline, deadline))
		}
		if resp.StatusCode >= 200 || resp.StatusCode < 100 {
			break
		}
		if resp.StatusCode == http.StatusSwitchingProtocols || n1xx >= 5 {
			return fail(fmt.Errorf("net/http: invalid or too many 1xx responses (last %d)", resp.StatusCode))
		}
		// 100 Continue, 103 Early Hints...: the final response follows.
		c.lim.n = t.maxHeaderBytes
	}
	c.lim.n = -1
	c.SetReadDeadline(deadline)
	resp.Body = &h1Body{rc: resp.Body, t: t, c: c, stop: stop, reuse: !resp.Close && !req.Close}
	return resp, nil
}

// headError names a failure while reading a response head.
func (t *h1Transport) headError(err error, headDeadline, deadline time.Time) error {
	switch {
	case errors.Is(err, errHeadTooLarge):
		return fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", t.maxHeaderBytes)
	case errors.Is(err, errStaleConn):
		return err
	case isTimeout(err) && !headDeadline.Equal(deadline):
		return fmt.Errorf("net/http: timeout awaiting response headers: %w", err)
	}
	return err
}

// h1Body is a response body. Read to its end it gives its connection back
// for reuse where the response allows; closed before its end it closes the
// connection (the rest of a body nobody wants is not read).
type h1Body struct {
	rc    io.ReadCloser
	t     *h1Transport
	c     *h1Conn
	stop  func() bool
	reuse bool
	eof   bool
	done  bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("http: read on closed response body")
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *h1Body) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if b.stop() && b.eof && b.reuse && b.c.br.Buffered() == 0 {
		b.c.SetDeadline(time.Time{})
		b.t.put(b.c)
		return nil
	}
	b.t.discard(b.c)
	return nil
}

// get returns an idle connection to key or a new one, waiting while key has
// maxConnsPerHost open.
func (t *h1Transport) get(ctx context.Context, key string) (*h1Conn, bool, error) {
	t.mu.Lock()
	if t.hosts == nil {
		t.hosts = make(map[string]*h1Host)
	}
	h := t.hosts[key]
	if h == nil {
		h = &h1Host{}
		t.hosts[key] = h
	}
	now := time.Now()
	for len(h.idle) > 0 {
		c := h.idle[len(h.idle)-1]
		h.idle = h.idle[:len(h.idle)-1]
		t.nIdle--
		if t.idleTimeout <= 0 || now.Sub(c.idleAt) < t.idleTimeout {
			t.mu.Unlock()
			if idleConnUsable(c.raw) {
				return c, true, nil
			}
			c.close()
			t.mu.Lock()
			h.open--
			continue
		}
		h.open--
		c.close()
	}
	if t.maxConnsPerHost <= 0 || h.open < t.maxConnsPerHost {
		h.open++
		t.mu.Unlock()
		return t.dialConn(ctx, key)
	}
	ch := make(chan *h1Conn, 1)
	h.waiters = append(h.waiters, ch)
	t.mu.Unlock()
	select {
	case c := <-ch:
		if c != nil {
			return c, true, nil
		}
		return t.dialConn(ctx, key) // a slot, handed over with its count
	case <-ctx.Done():
		t.mu.Lock()
		if i := slices.Index(h.waiters, ch); i >= 0 {
			h.waiters = slices.Delete(h.waiters, i, i+1)
			t.mu.Unlock()
			return nil, false, ctx.Err()
		}
		t.mu.Unlock()
		// Handed a connection or slot as ctx ended: pass it on.
		if c := <-ch; c != nil {
			t.put(c)
		} else {
			t.release(key)
		}
		return nil, false, ctx.Err()
	}
}

// dialConn dials key for a slot already counted in open, and for
// https:// runs the TLS handshake (HTTP/1.1 only: no ALPN), within
// tlsTimeout.
func (t *h1Transport) dialConn(ctx context.Context, key string) (*h1Conn, bool, error) {
	scheme, addr, _ := strings.Cut(key, "://")
	raw, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		t.release(key)
		return nil, false, err
	}
	c := &h1Conn{Conn: raw, raw: raw, key: key}
	if scheme == "https" {
		cfg := &tls.Config{}
		if t.tlsConfig != nil {
			cfg = t.tlsConfig.Clone()
		}
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			cfg.ServerName = host
		}
		cfg.NextProtos = nil
		tc := tls.Client(raw, cfg)
		hctx, cancel := ctx, context.CancelFunc(func() {})
		if t.tlsTimeout > 0 {
			hctx, cancel = context.WithTimeout(ctx, t.tlsTimeout)
		}
		err := tc.HandshakeContext(hctx)
		timedOut := ctx.Err() == nil && errors.Is(hctx.Err(), context.DeadlineExceeded)
		cancel()
		if err != nil {
			raw.Close()
			t.release(key)
			if timedOut {
				err = fmt.Errorf("net/http: TLS handshake timeout: %w", context.DeadlineExceeded)
			}
			return nil, false, err
		}
		c.Conn = tc
	}
	c.lim = headLimiter{c: c.Conn, n: -1}
	c.br = h1Readers.Get().(*bufio.Reader)
	c.br.Reset(&c.lim)
	return c, false, nil
}

// put makes c idle, or hands it to a request waiting for key.
func (t *h1Transport) put(c *h1Conn) {
	t.mu.Lock()
	h := t.hosts[c.key]
	if t.handOffLocked(h, c) {
		return
	}
	if t.nIdle >= t.maxIdle {
		t.sweepLocked()
	}
	if len(h.idle) >= t.maxIdlePerHost || t.nIdle >= t.maxIdle {
		h.open--
		t.cleanLocked(c.key, h)
		t.mu.Unlock()
		c.close()
		return
	}
	c.idleAt = time.Now()
	h.idle = append(h.idle, c)
	t.nIdle++
	t.mu.Unlock()
}

// handOffLocked gives c (nil: a free slot, still counted in open) to the
// oldest request waiting for h and unlocks t.mu. It reports false, with
// t.mu still locked, when none is waiting.
func (t *h1Transport) handOffLocked(h *h1Host, c *h1Conn) bool {
	if len(h.waiters) == 0 {
		return false
	}
	ch := h.waiters[0]
	h.waiters = h.waiters[1:]
	t.mu.Unlock()
	ch <- c // buffered, and read by its waiter only
	return true
}

// sweepLocked closes the idle connections older than idleTimeout.
func (t *h1Transport) sweepLocked() {
	if t.idleTimeout <= 0 {
		return
	}
	now := time.Now()
	for key, h := range t.hosts {
		kept := h.idle[:0]
		for _, c := range h.idle {
			if now.Sub(c.idleAt) < t.idleTimeout {
				kept = append(kept, c)
				continue
			}
			c.close()
			h.open--
			t.nIdle--
		}
		clear(h.idle[len(kept):])
		h.idle = kept
		t.cleanLocked(key, h)
	}
}

// discard closes c and frees its slot.
func (t *h1Transport) discard(c *h1Conn) {
	c.close()
	t.release(c.key)
}

// release frees one of key's slots, handing it to a waiting request if any.
func (t *h1Transport) release(key string) {
	t.mu.Lock()
	h := t.hosts[key]
	if t.handOffLocked(h, nil) {
		return
	}
	h.open--
	t.cleanLocked(key, h)
	t.mu.Unlock()
}

// cleanLocked forgets a host with nothing open, so that the map holds
// only the hosts in use.
func (t *h1Transport) cleanLocked(key string, h *h1Host) {
	if h.open == 0 && len(h.waiters) == 0 {
		delete(t.hosts, key)
	}
}

// CloseIdleConnections closes the idle connections.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	var idle []*h1Conn
	for key, h := range t.hosts {
		idle = append(idle, h.idle...)
		h.open -= len(h.idle)
		t.nIdle -= len(h.idle)
		h.idle = nil
		t.cleanLocked(key, h)
	}
	t.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// canonicalAddr is host:port, with the scheme's port when the URL names
// none (or an empty one, as "host:").
func canonicalAddr(scheme, host string) string {
	if h, p, err := net.SplitHostPort(host); err == nil {
		if p != "" {
			return host
		}
		host = h
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port)
}

// writeRequestHead is the request line and header of a GET as
// http.Request.Write writes them: Host, then User-Agent (Go's default when
// the request has none, nothing when it is set empty), then the other
// fields sorted by name.
func writeRequestHead(req *http.Request) ([]byte, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !httpguts.ValidHostHeader(host) {
		return nil, fmt.Errorf("http: invalid Host header %q", host)
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	b := make([]byte, 0, 256)
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	ua := "Go-http-client/1.1"
	if v, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(v) > 0 {
			ua = v[0]
		}
	}
	if ua != "" {
		if !httpguts.ValidHeaderFieldValue(ua) {
			return nil, fmt.Errorf("net/http: invalid header field value for %q", "User-Agent")
		}
		b = append(b, "User-Agent: "...)
		b = append(b, ua...)
		b = append(b, "\r\n"...)
	}
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range req.Header[k] {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("net/http: invalid header field value for %q", k)
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, strings.TrimSpace(v)...)
			b = append(b, "\r\n"...)
		}
	}
	if req.Close {
		b = append(b, "Connection: close\r\n"...)
	}
	return append(b, "\r\n"...), nil
}

// traceHead reports head's fields to trace's WroteHeaderField and
// WroteHeaders, as http.Transport does while it writes them.
func traceHead(trace *httptrace.ClientTrace, head []byte) {
	if trace.WroteHeaderField != nil {
		lines := strings.Split(string(head), "\r\n")
		for _, line := range lines[1:] {
			if k, v, ok := strings.Cut(line, ": "); ok {
				trace.WroteHeaderField(k, []string{v})
			}
		}
	}
	if trace.WroteHeaders != nil {
		trace.WroteHeaders()
	}
}
