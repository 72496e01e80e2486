package fetch

import (
	"bytes"
	"compress/gzip"
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
	"syscall"
	"time"

	"github.com/gocolly/colly/v2"
)

// Values of Result.Truncated, the reasons of WARC 1.1's WARC-Truncated
// field, so storage can copy it into the record.
const (
	TruncatedLength     = "length"     // the body reached MaxBodySize (after decompression)
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
	// Header holds the response header fields as received (including any
	// Content-Encoding that fetch decoded).
	Header http.Header
	// ContentType is the Content-Type header, or the type sniffed from the
	// body (http.DetectContentType) when the header is absent.
	ContentType string
	// Body is the response body, gzip-decoded when the server sent
	// Content-Encoding gzip, at most MaxBodySize bytes.
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
	// RemoteAddr is the address connected to (zero if no connection).
	RemoteAddr netip.AddrPort
	// FetchedAt is when the fetch started; Duration how long it took until
	// the body was read; TTFB the time to the first response byte.
	FetchedAt time.Time
	Duration  time.Duration
	TTFB      time.Duration
	// RawRequest is the request head as written on the wire: request line
	// and header fields, ending with an empty line. GET requests have no
	// body.
	RawRequest []byte
	// RawResponseHead is the status line and header fields, ending with an
	// empty line, consistent with Body: Go's HTTP client has already
	// removed the chunked Transfer-Encoding, and when fetch gzip-decoded
	// the body the Content-Encoding and Content-Length fields are left out.
	// Field names are in canonical case and sorted, as Go's parser leaves
	// them. Together with Body it forms a WARC response record's payload.
	RawResponseHead []byte
}

// Fetcher fetches pages and robots.txt files. It is safe for concurrent
// use; create one per crawl and share it (it pools connections).
type Fetcher struct {
	opts         Options
	h1           *h1Transport
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
	// No TCP keep-alive probes: a connection is idle at most idleTimeout
	// (30 s, the probes' own first interval) before it is closed, and a
	// stalled response is bounded by the fetch's deadline. Turning them
	// off saves four setsockopt calls per connection.
	dialer := &net.Dialer{
		Timeout:   opts.ConnectTimeout,
		KeepAlive: -1,
		Resolver:  opts.Resolver,
		// The address policy first: a refused address is never
		// connected to. Then the connect itself, so that a handshake
		// done at once is not waited for in the poller (connectNow).
		Control: func(network, address string, c syscall.RawConn) error {
			if !opts.AllowPrivate {
				if err := dialControl(network, address, c); err != nil {
					return err
				}
			}
			return connectNow(network, address, c)
		},
	}
	var tlsConfig *tls.Config
	if opts.TLSConfig != nil {
		tlsConfig = opts.TLSConfig.Clone()
		tlsConfig.NextProtos = nil
	}
	// Environment proxies are not used: they would bypass the address
	// policy. Only HTTP/1.1 is spoken, so the raw request and response heads
	// handed to WARC records are what went over the wire; fetch decodes gzip
	// itself, so that the decoded size is what MaxBodySize caps (see
	// readBody).
	h1 := &h1Transport{
		dial:            dialer.DialContext,
		tlsConfig:       tlsConfig,
		tlsTimeout:      opts.TLSHandshakeTimeout,
		headerTimeout:   opts.ResponseHeaderTimeout,
		maxHeaderBytes:  opts.MaxHeaderBytes,
		maxConnsPerHost: opts.MaxConnsPerHost,
		maxIdlePerHost:  2,
		maxIdle:         256,
		idleTimeout:     30 * time.Second,
	}
	f := &Fetcher{opts: opts, h1: h1}
	rt := &roundTripper{next: h1}
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
func (f *Fetcher) Close() { f.h1.CloseIdleConnections() }

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
// about as long as a fetch over loopback (issue #5).
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
		return nil, &Error{Kind: KindInvalidURL, URL: rawURL, Err: err}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &Error{Kind: KindInvalidURL, URL: rawURL, Err: fmt.Errorf("unsupported scheme %q", u.Scheme)}
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, &Error{Kind: KindInvalidURL, URL: rawURL, Err: errors.New("no host")}
	}
	return u, nil
}

// exchangeKey carries the *exchange of one fetch in the request context,
// from Fetch through colly to roundTripper.
type exchangeKey struct{}

// exchange collects what one fetch observed on the wire. colly's Response
// carries only status, header and a body that it may have re-encoded to
// UTF-8, so the raw request, the raw body, the remote address and the
// truncation state are recorded here by roundTripper.
type exchange struct {
	limit int64

	mu       sync.Mutex // guards the fields below: the trace hooks run on transport goroutines
	started  time.Time
	ttfb     time.Duration
	remote   netip.AddrPort
	rawReq   []byte
	resp     *http.Response
	respHead []byte
	body     []byte
	trunc    string
	bodyErr  error
	finished time.Time
}

// exchange runs one GET through a fresh colly collector that uses client.
// A Collector holds one context for all its requests, so a collector per
// fetch is what lets every Fetch honour its own ctx; it is cheap (a few
// allocations) and shares client and its connection pool.
func (f *Fetcher) exchange(ctx context.Context, client *http.Client, u *url.URL, rawURL string, limit int64) (*exchange, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, f.opts.FetchTimeout)
	defer cancel()
	x := &exchange{limit: limit, started: time.Now()}

	// Init, not NewCollector: NewCollector lets COLLY_* environment
	// variables override the settings below.
	c := &colly.Collector{}
	c.Init()
	c.UserAgent = f.opts.UserAgent
	c.Headers = &http.Header{"Accept": {f.opts.Accept}}
	c.AllowURLRevisit = true // the frontier owns duplicate detection
	c.IgnoreRobotsTxt = true // the frontier owns robots.txt, through RobotsCache
	// colly's own limit applies before its own gunzip and truncates
	// silently; roundTripper enforces MaxBodySize after decompression
	// and records the truncation instead.
	c.MaxBodySize = 0
	c.ParseHTTPErrorResponse = true // a 404 or 503 is a result, not an error
	c.Context = context.WithValue(ctx, exchangeKey{}, x)
	c.SetClient(client)

	err := c.Visit(u.String())
	x.mu.Lock()
	defer x.mu.Unlock()
	x.finished = time.Now()
	if x.resp == nil {
		if err == nil {
			err = errors.New("no response")
		}
		kind := classify(err, parent.Err())
		if kind == KindOther && ctx.Err() == nil && x.rawReq == nil {
			var ue *url.Error
			if !errors.As(err, &ue) {
				kind = KindInvalidURL // colly rejected the URL before any request
			}
		}
		return nil, &Error{Kind: kind, URL: rawURL, Err: err}
	}
	if x.bodyErr != nil {
		kind := classify(x.bodyErr, parent.Err())
		if kind == KindOther {
			kind = KindTruncated
		}
		return x, &Error{Kind: kind, URL: rawURL, Err: x.bodyErr}
	}
	return x, nil
}

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
		RawResponseHead: x.respHead,
	}
	if res.ContentType == "" && len(res.Body) > 0 {
		res.ContentType = http.DetectContentType(res.Body)
	}
	return res
}

// roundTripper sits between colly's http.Client and the transport
// (h1Transport; a benchmark's baseline puts net/http's there). It records
// the exchange (raw request head via httptrace,
// remote address, timing) and reads the body itself: decoding gzip under
// the size cap, marking truncation and keeping the raw bytes, then hands
// colly a body already in memory.
type roundTripper struct {
	next http.RoundTripper
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
	x.resp, x.respHead, x.body, x.trunc, x.bodyErr, x.rawReq = nil, nil, nil, "", nil, nil
	x.mu.Unlock()
	// A transport may run the header hooks on another goroutine:
	// http.Transport runs them on its write goroutine, which a server
	// answering before reading the request can leave running after
	// RoundTrip returns; rawReq has its own lock for that reason.
	var rawReq lockedBuffer
	requestLine := req.Method + " " + req.URL.RequestURI() + " HTTP/1.1\r\n"
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			// Once per attempt: the transport retries an idempotent request
			// whose reused keep-alive connection turned out dead, and only
			// the last attempt's head is the one answered.
			rawReq.reset(requestLine)
			if ap, err := netip.ParseAddrPort(info.Conn.RemoteAddr().String()); err == nil {
				x.mu.Lock()
				x.remote = ap
				x.mu.Unlock()
			}
		},
		WroteHeaderField: func(key string, values []string) {
			for _, v := range values {
				rawReq.write(key, ": ", v, "\r\n")
			}
		},
		WroteHeaders: func() { rawReq.write("\r\n") },
		GotFirstResponseByte: func() {
			x.mu.Lock()
			x.ttfb = time.Since(x.started)
			x.mu.Unlock()
		},
	}
	req = req.Clone(httptrace.WithClientTrace(req.Context(), trace))
	if req.Header.Get("Accept-Encoding") == "" {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := rt.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	rb := readBody(resp, x.limit)
	resp.Body.Close()

	head := responseHead(resp, rb.decoded)
	x.mu.Lock()
	x.rawReq = rawReq.bytes()
	x.resp = resp
	x.respHead = head
	x.body = rb.body
	x.trunc = rb.trunc
	x.bodyErr = rb.err
	x.mu.Unlock()

	// colly gets the status and header but an empty body. Fetch reads the
	// Result from the exchange, never from colly's Response, so colly's
	// copy of the body (and its re-encoding of non-UTF-8 pages) would be
	// up to 2 x MaxBodySize of garbage per fetch for nothing. Uncompressed
	// keeps colly from trying to gunzip (it does so for a Content-Encoding
	// or Content-Type containing "gzip" and for *.xml.gz paths, after its
	// size limit, unless Uncompressed). colly only reads the header, so it
	// shares the Result's rather than a copy.
	out := *resp
	out.Uncompressed = true
	out.ContentLength = 0
	out.Body = http.NoBody
	return &out, nil
}

type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) write(parts ...string) {
	l.mu.Lock()
	for _, p := range parts {
		l.b.WriteString(p)
	}
	l.mu.Unlock()
}

func (l *lockedBuffer) reset(s string) {
	l.mu.Lock()
	l.b.Reset()
	l.b.WriteString(s)
	l.mu.Unlock()
}

func (l *lockedBuffer) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

type readResult struct {
	body    []byte
	trunc   string // "" or a Truncated* reason
	err     error  // why the body ended early, if it did
	decoded bool   // the body was gzip-decoded
}

// readBody reads resp's body, gzip-decoded when Content-Encoding says so,
// keeping at most limit bytes of decoded content. Decoding under the limit
// is what caps a gzip bomb: the decompressor is never asked for more than
// limit+1 bytes.
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
			rr.trunc, rr.err = truncReason(err), &gzipError{err}
			return rr
		}
		defer zr.Close()
		r = zr
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
		if rr.decoded && !errors.Is(err, io.ErrUnexpectedEOF) && !isTimeout(err) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			var ne net.Error
			if !errors.As(err, &ne) {
				rr.err = &gzipError{err}
			}
		}
	}
	if len(rr.body) == 0 {
		rr.body = nil
	}
	return rr
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

// gzipError marks a body whose gzip stream is corrupt.
type gzipError struct{ err error }

func (e *gzipError) Error() string { return "gzip: " + e.err.Error() }
func (e *gzipError) Unwrap() error { return e.err }

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
