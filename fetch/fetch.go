package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Values of Result.Truncated and Result.RawTruncated, the reasons of WARC
// 1.1's WARC-Truncated field, so storage can copy them into the record.
const (
	TruncatedLength     = "length"     // a size cap was reached (MaxBodySize after decoding, or MaxCaptureSize)
	TruncatedTime       = "time"       // the whole-fetch timeout fired mid-body
	TruncatedDisconnect = "disconnect" // the connection broke mid-body
)

// Result is the outcome of one HTTP exchange.
type Result struct {
	// URL is the URL as passed to Fetch.
	URL string
	// Status is the HTTP status code; Proto the response's protocol
	// ("HTTP/1.1").
	Status int
	Proto  string
	// Header holds the response header fields as parsed by net/http
	// (canonical names; Content-Encoding kept even when fetch decoded
	// the body). RawResponse has them as sent.
	Header http.Header
	// ContentType is the Content-Type header, or the type sniffed from the
	// body (http.DetectContentType) when the header is absent.
	ContentType string
	// Body is the entity, decoded for analysis: without its transfer
	// coding (chunked) and, for Content-Encoding gzip, x-gzip or deflate,
	// without its content coding; at most MaxBodySize bytes after
	// decoding.
	Body []byte
	// Truncated is "" when Body is complete, otherwise a WARC-Truncated
	// reason: TruncatedLength, TruncatedTime or TruncatedDisconnect.
	Truncated string
	// Location is the raw Location header of a 3xx response, not followed
	// and not resolved: resolve it against URL.
	Location string
	// Base is the base URL for resolving Links: the <base href> of an HTML
	// page when present and valid, otherwise the requested URL.
	Base *url.URL
	// Links are the outlinks and embeds of a 2xx HTML response, or the
	// references of a 2xx text/css one, in document order, at most
	// Options.MaxOutlinks; LinksDropped counts those beyond the cap and
	// NofollowSkipped those skipped for rel=nofollow.
	Links           []Link
	LinksDropped    int
	NofollowSkipped int
	// RemoteAddr is the address connected to (zero if no connection): the
	// proxy's for an http:// URL fetched through Options.Proxy, the
	// proxy's too for https:// through its tunnel.
	RemoteAddr netip.AddrPort
	// FetchedAt is when the fetch started; Duration how long the whole
	// fetch took, body included; TTFB the time to the first response byte.
	FetchedAt time.Time
	Duration  time.Duration
	TTFB      time.Duration
	// RawRequest is the request exactly as written on the connection:
	// request line, header fields as written, then the body if any (GET
	// requests have none). Through an http proxy the request line is in
	// absolute form and carries Proxy-Authorization, as written.
	RawRequest []byte
	// RawResponse is the response exactly as read from the connection:
	// any 1xx interim responses, the status line, the header fields in
	// their order, case and repetition, then the body with its transfer
	// coding (chunk sizes, extensions, trailers) and content coding as
	// sent. At most MaxCaptureSize bytes; RawTruncated says when it is
	// not the whole response. It is what a WARC response record holds.
	RawResponse []byte
	// RawTruncated is "" when RawResponse holds the whole response,
	// otherwise a WARC-Truncated reason: TruncatedLength when
	// MaxCaptureSize was reached or reading stopped at MaxBodySize,
	// TruncatedTime or TruncatedDisconnect when the body was cut by the
	// whole-fetch timeout or the connection.
	RawTruncated string
	// RawResponseHead is the status line and header fields re-serialized
	// from the parsed response, consistent with Body (no chunked, no
	// Content-Encoding or Content-Length after decoding; canonical,
	// sorted field names).
	// RawResponse holds the response as received and is what an archive
	// should store; this field stays for one release for callers that
	// pair it with Body, and then goes.
	RawResponseHead []byte
	// TLS is the state of the TLS connection of an https:// exchange
	// (version, cipher suite, peer certificates), nil for http://.
	TLS *tls.ConnectionState
}

// Fetcher fetches pages and robots.txt files. It is safe for concurrent
// use; create one per crawl and share it (it pools connections).
type Fetcher struct {
	opts         Options
	tlsConfig    *tls.Config // never nil; NextProtos cleared
	dialer       *net.Dialer // to origins, with the address policy
	proxyDialer  *net.Dialer // to Options.Proxy, without it
	transport    *http.Transport
	pageClient   *http.Client // never follows redirects
	robotsClient *http.Client // follows up to MaxRobotsRedirects
}

// New returns a Fetcher configured by a copy of opts, after EnsureDefaults
// and Validate.
func New(opts Options) (*Fetcher, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Proxy != nil {
		p := *opts.Proxy
		opts.Proxy = &p
	}
	f := &Fetcher{opts: opts, tlsConfig: &tls.Config{}}
	if opts.TLSConfig != nil {
		f.tlsConfig = opts.TLSConfig.Clone()
	}
	f.tlsConfig.NextProtos = nil
	f.transport = f.newTransport()
	rt := &roundTripper{f: f, next: f.transport}
	f.pageClient = &http.Client{
		Transport: rt,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	maxRedirects := opts.MaxRobotsRedirects
	f.robotsClient = &http.Client{
		Transport: rt,
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	return f, nil
}

// Options returns a copy of the options in effect (defaults applied).
func (f *Fetcher) Options() Options { return f.opts }

// Close closes idle connections. The Fetcher stays usable.
func (f *Fetcher) Close() { f.transport.CloseIdleConnections() }

// Fetch downloads rawURL with GET, without following redirects, and
// extracts the links of an HTML page: it is FetchBody followed by
// ParseLinks.
//
// On success it returns the Result and a nil error, whatever the HTTP
// status; a body cut at MaxBodySize is not an error (Result.Truncated is
// "length"). When the exchange fails before a response head arrives it
// returns a nil Result and an *Error. When it fails while reading the body
// (timeout, reset, early end) it returns both: the partial Result, marked
// Truncated, and an *Error saying why.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Result, error) {
	res, err := f.FetchBody(ctx, rawURL)
	if res != nil {
		f.ParseLinks(res)
	}
	return res, err
}

// FetchBody is Fetch without the link extraction: Result.Base is the
// requested URL and Links is empty until ParseLinks. A crawler that keeps
// one request per host at a time calls FetchBody, lets the host's next
// request go out, and only then parses the page's links, which takes
// about as long as a fetch over loopback.
func (f *Fetcher) FetchBody(ctx context.Context, rawURL string) (*Result, error) {
	return f.FetchBodyLimit(ctx, rawURL, f.opts.MaxBodySize)
}

// ParseLinks sets res.Base, Links, LinksDropped and NofollowSkipped from
// the body of a 2xx HTML response returned by FetchBody (Extract), or the
// references of a 2xx stylesheet (ExtractCSS), with the Fetcher's
// MaxOutlinks, FollowNofollow and NoEmbeds; other responses are left as
// they are. It does no I/O.
func (f *Fetcher) ParseLinks(res *Result) { f.ParseLinksText(res, nil) }

// ParseLinksText is ParseLinks that also passes an HTML page's text to
// text (when not nil), from the same pass over the page.
func (f *Fetcher) ParseLinksText(res *Result, text TextSink) {
	if res.Status < 200 || res.Status >= 300 || len(res.Body) == 0 {
		return
	}
	opts := ExtractOptions{
		MaxLinks:     f.opts.MaxOutlinks,
		KeepNofollow: f.opts.FollowNofollow,
		NoEmbeds:     f.opts.NoEmbeds,
		Text:         text,
	}
	extract := Extract
	if IsCSS(res.ContentType) {
		extract = ExtractCSS
	}
	ex, err := extract(res.Body, res.ContentType, res.Base, opts)
	if err != nil || ex == nil {
		return
	}
	if ex.Base != nil {
		res.Base = ex.Base
	}
	res.Links, res.LinksDropped, res.NofollowSkipped = ex.Links, ex.Dropped, ex.NofollowSkipped
}

func parseFetchURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &Error{Kind: KindInvalidURL, URL: rawURL, Err: err}
	}
	if u.Scheme == "" {
		return nil, &Error{Kind: KindInvalidURL, URL: rawURL, Err: &UnsupportedSchemeError{}}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &Error{Kind: KindUnsupportedScheme, URL: rawURL, Err: &UnsupportedSchemeError{Scheme: u.Scheme}}
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, &Error{Kind: KindInvalidURL, URL: rawURL, Err: errNoHost}
	}
	return u, nil
}

var errNoHost = errors.New("no host")

// UnsupportedSchemeError is the cause inside an *Error of
// KindUnsupportedScheme: fetch speaks http:// and https:// only.
type UnsupportedSchemeError struct{ Scheme string }

func (e *UnsupportedSchemeError) Error() string {
	if e.Scheme == "" {
		return "no scheme (want http or https)"
	}
	return fmt.Sprintf("unsupported scheme %q (want http or https)", e.Scheme)
}

// exchangeKey carries the *exchange of one fetch in the request context,
// from exchange to roundTripper.
type exchangeKey struct{}

// exchange collects what one fetch observed on the wire: roundTripper
// fills it for each hop (robots.txt follows redirects), the last hop's
// values win.
type exchange struct {
	limit int64

	mu       sync.Mutex // guards the fields below: the trace hooks run on transport goroutines
	started  time.Time
	ttfb     time.Duration
	remote   netip.AddrPort
	tls      *tls.ConnectionState
	rawReq   []byte
	rawResp  []byte
	rawTrunc string
	resp     *http.Response
	respHead []byte
	body     []byte
	trunc    string
	bodyErr  error
	finished time.Time
}

// exchange runs one GET through client, bounded by FetchTimeout.
func (f *Fetcher) exchange(ctx context.Context, client *http.Client, u *url.URL, rawURL string, limit int64, cond Conditional) (*exchange, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, f.opts.FetchTimeout)
	defer cancel()
	x := &exchange{limit: limit, started: time.Now()}
	fail := func(err error) (*exchange, error) {
		return nil, f.newError(err, rawURL, parent.Err(), ctx.Err(), x.started, time.Since(x.started))
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, exchangeKey{}, x), http.MethodGet, u.String(), nil)
	if err != nil {
		return fail(err)
	}
	req.Header = http.Header{
		"User-Agent":      {f.opts.UserAgent},
		"Accept":          {f.opts.Accept},
		"Accept-Encoding": {acceptEncoding},
	}
	cond.set(req.Header)
	resp, err := client.Do(req)
	if resp != nil {
		resp.Body.Close() // roundTripper has read it: this is http.NoBody
	}
	x.mu.Lock()
	x.finished = time.Now()
	got, bodyErr := x.resp != nil, x.bodyErr
	x.mu.Unlock()
	if !got {
		if err == nil {
			err = errors.New("no response")
		}
		return fail(err)
	}
	if bodyErr != nil {
		e := f.newError(bodyErr, rawURL, parent.Err(), ctx.Err(), x.started, x.finished.Sub(x.started))
		if e.Kind == KindOther {
			e.Kind = KindTruncated
		}
		return x, e
	}
	return x, nil
}

// acceptEncoding names the content codings readBody decodes.
const acceptEncoding = "gzip, deflate"

// result builds the Result; the caller holds no lock (exchange is done).
func (x *exchange) result(rawURL string) *Result {
	resp := x.resp
	res := &Result{
		URL:             rawURL,
		Status:          resp.StatusCode,
		Proto:           resp.Proto,
		Header:          resp.Header,
		ContentType:     resp.Header.Get("Content-Type"),
		Body:            x.body,
		Truncated:       x.trunc,
		RemoteAddr:      x.remote,
		FetchedAt:       x.started,
		Duration:        x.finished.Sub(x.started),
		TTFB:            x.ttfb,
		RawRequest:      x.rawReq,
		RawResponse:     x.rawResp,
		RawTruncated:    x.rawTrunc,
		RawResponseHead: x.respHead,
		TLS:             x.tls,
	}
	if res.ContentType == "" && len(res.Body) > 0 {
		res.ContentType = http.DetectContentType(res.Body)
	}
	return res
}

// roundTripper sits between the http.Client and the Transport. For each
// hop it attaches a recorder to the connection the Transport picked
// (httptrace's GotConn), reads and decodes the body under the size cap,
// detaches the recorder and stores the hop in the exchange; the client
// gets the response with an empty body.
type roundTripper struct {
	f    *Fetcher
	next http.RoundTripper
}

// hop is one request/response on the wire, possibly retried by the
// Transport on a new connection.
type hop struct {
	limit int64
	x     *exchange

	mu   sync.Mutex // guards conn and rec: GotConn may run again on a retry
	conn *captureConn
	rec  *recorder
}

func (h *hop) gotConn(info httptrace.GotConnInfo) {
	cc, ok := info.Conn.(*captureConn)
	if !ok {
		return
	}
	rec := &recorder{limit: h.limit}
	h.mu.Lock()
	// A retry after a reused connection turned out dead: only the last
	// attempt's bytes are the exchange's.
	if h.conn != nil {
		h.conn.detach(h.rec)
	}
	h.conn, h.rec = cc, rec
	h.mu.Unlock()
	cc.attach(rec)
	h.x.mu.Lock()
	if ap, err := netip.ParseAddrPort(cc.RemoteAddr().String()); err == nil {
		h.x.remote = ap
	}
	h.x.tls = cc.tls
	h.x.mu.Unlock()
}

// finish detaches the recorder and returns it; nil when no connection was
// obtained.
func (h *hop) finish() *recorder {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return nil
	}
	h.conn.detach(h.rec)
	return h.rec
}

// reserve grows the recorder of the response once its head is parsed, so
// that a body of known length is captured into one allocation.
func (h *hop) reserve(contentLength int64) {
	if contentLength <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return
	}
	h.conn.mu.Lock()
	defer h.conn.mu.Unlock()
	if h.conn.rec == h.rec {
		h.rec.reserve(contentLength)
	}
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	x, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if x == nil {
		return rt.next.RoundTrip(req)
	}
	// A redirect followed for robots.txt is a new hop: forget the previous
	// one, so that a hop that fails leaves no response behind it and the
	// fetch is reported as failed rather than as the earlier 3xx.
	x.mu.Lock()
	x.resp, x.respHead, x.body, x.trunc, x.bodyErr = nil, nil, nil, "", nil
	x.rawReq, x.rawResp, x.rawTrunc, x.tls = nil, nil, "", nil
	x.mu.Unlock()
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, &UnsupportedSchemeError{Scheme: req.URL.Scheme}
	}
	if err := rt.f.checkTarget(req.Context(), req.URL); err != nil {
		return nil, err
	}
	capLimit := rt.f.opts.MaxCaptureSize
	if x.limit > rt.f.opts.MaxBodySize { // FetchBodyLimit for a sitemap
		capLimit = max(capLimit, x.limit+1<<20)
	}
	h := &hop{limit: capLimit, x: x}
	trace := &httptrace.ClientTrace{
		GotConn: h.gotConn,
		GotFirstResponseByte: func() {
			x.mu.Lock()
			x.ttfb = time.Since(x.started)
			x.mu.Unlock()
		},
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := rt.next.RoundTrip(req)
	if err != nil {
		if rec := h.finish(); rec != nil && rec.size() > 0 && !isNetError(err) {
			// Bytes came back but net/http could not parse a response
			// from them (bad status line, oversized head, bad framing).
			err = &ProtocolError{Err: err}
		}
		return nil, err
	}
	h.reserve(resp.ContentLength)
	rb := readBody(resp, x.limit)
	resp.Body.Close()
	rec := h.finish()

	head := responseHead(resp, rb.decoded)
	x.mu.Lock()
	x.resp = resp
	x.respHead = head
	x.body = rb.body
	x.trunc = rb.trunc
	x.bodyErr = rb.err
	if rec != nil {
		x.rawReq, x.rawResp = rec.req, rec.response()
		switch {
		case rb.trunc != "":
			x.rawTrunc = rb.trunc
		case rec.cut:
			x.rawTrunc = TruncatedLength
		}
	}
	x.mu.Unlock()

	out := *resp
	out.ContentLength = 0
	out.Body = http.NoBody
	return &out, nil
}

// ProtocolError is the cause inside an *Error of KindProtocol when the
// server's bytes were not an HTTP/1.x response net/http could parse.
type ProtocolError struct{ Err error }

func (e *ProtocolError) Error() string { return "malformed response: " + e.Err.Error() }
func (e *ProtocolError) Unwrap() error { return e.Err }

// isNetError reports whether err came from the connection rather than
// from parsing: a timeout, a reset, an end of stream, a socket error.
func isNetError(err error) bool {
	var opErr *net.OpError
	return isTimeout(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &opErr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

type readResult struct {
	body    []byte
	trunc   string // "" or a Truncated* reason
	err     error  // why the body ended early, if it did
	decoded bool   // the body was decoded from its content coding
}

// readBody reads resp's body, decoded from its content coding when
// Content-Encoding is gzip, x-gzip or deflate, keeping at most limit
// bytes of decoded content. Decoding under the limit is what caps a
// compression bomb: the decompressor is never asked for more than limit+1
// bytes.
func readBody(resp *http.Response, limit int64) readResult {
	var rr readResult
	var r io.Reader = resp.Body
	switch strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))) {
	case "gzip", "x-gzip":
		rr.decoded = true
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return rr // an empty body labelled gzip
			}
			rr.trunc, rr.err = truncReason(err), &decodeError{"gzip", err}
			return rr
		}
		defer zr.Close()
		r = zr
	case "deflate":
		rr.decoded = true
		dr, err := deflateReader(resp.Body)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return rr
			}
			rr.trunc, rr.err = truncReason(err), &decodeError{"deflate", err}
			return rr
		}
		defer dr.Close()
		r = dr
	}
	hint := int64(0)
	if resp.ContentLength > 0 && !rr.decoded {
		hint = resp.ContentLength
	}
	var err error
	rr.body, err = readUpTo(r, limit+1, hint)
	n := int64(len(rr.body))
	switch {
	case n > limit:
		// Past the cap the rest of the body is not wanted, so an error
		// arriving with the byte beyond it does not matter.
		rr.body, rr.trunc = rr.body[:limit], TruncatedLength
	case err != nil:
		rr.trunc, rr.err = truncReason(err), err
		if rr.decoded && !isNetError(err) {
			rr.err = &decodeError{strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))), err}
		}
	}
	if len(rr.body) == 0 {
		rr.body = nil
	}
	return rr
}

// deflateReader decodes the "deflate" content coding: a zlib stream (RFC
// 9110 section 8.4.1.2), or the raw DEFLATE stream that some servers send
// instead, told apart by the zlib header's check bits.
func deflateReader(body io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReader(body)
	hdr, err := br.Peek(2)
	if err != nil {
		if len(hdr) == 0 {
			return nil, err
		}
		return nil, io.ErrUnexpectedEOF
	}
	if hdr[0]&0x0f == 8 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 {
		return zlib.NewReader(br)
	}
	return flate.NewReader(br), nil
}

// readUpTo reads r until EOF or max bytes, keeping the result at its exact
// size: a Result can live a while (archiving, link handling), so spare
// capacity would be held memory. With a length hint (Content-Length) a body
// of that length is read into one allocation. Otherwise it is read in
// chunks of growing size and joined once at the end: about twice the body
// in allocations, where doubling one slice costs up to four times and can
// leave twice the body in capacity.
func readUpTo(r io.Reader, limit, hint int64) ([]byte, error) {
	size := int64(32 << 10)
	if hint > 0 {
		size = hint + 1 // room for the read that returns EOF
	}
	var chunks [][]byte
	var total int64
	var err error
	for total < limit && err == nil {
		buf := make([]byte, min(size, limit-total))
		n := 0
		for n < len(buf) && err == nil {
			var m int
			m, err = r.Read(buf[n:])
			n += m
		}
		chunks = append(chunks, buf[:n])
		total += int64(n)
		size = min(max(2*size, 32<<10), 1<<20)
	}
	if err == io.EOF {
		err = nil
	}
	if len(chunks) == 1 {
		return chunks[0], err
	}
	out := make([]byte, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out, err
}

func truncReason(err error) string {
	if isTimeout(err) || errors.Is(err, context.DeadlineExceeded) {
		return TruncatedTime
	}
	return TruncatedDisconnect
}

// decodeError marks a body whose content coding is corrupt.
type decodeError struct {
	coding string
	err    error
}

func (e *decodeError) Error() string { return e.coding + ": " + e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// responseHead renders the status line and header fields of resp.
func responseHead(resp *http.Response, decoded bool) []byte {
	var b bytes.Buffer
	status := resp.Status
	if status == "" {
		status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	fmt.Fprintf(&b, "%s %s\r\n", resp.Proto, status)
	h := resp.Header
	if decoded {
		h = h.Clone()
		h.Del("Content-Encoding")
		h.Del("Content-Length")
	}
	_ = h.Write(&b) // writing to a bytes.Buffer cannot fail
	b.WriteString("\r\n")
	return b.Bytes()
}
