package fetch

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Pool settings of the Transport. A crawl keeps one request per host in
// flight by default, so two idle connections per host cover a host's next
// request; 30 s is how long an idle connection may wait before it is
// closed (Transport closes it on time, so no socket lingers in
// CLOSE_WAIT).
const (
	maxIdleConnsPerHost = 2
	maxIdleConns        = 256
	idleConnTimeout     = 30 * time.Second
)

// newTransport returns the HTTP/1.1-only Transport of f: its dialers wrap
// every connection in a captureConn, apply the address policy, and run
// https:// through the proxy's CONNECT tunnel when one is set.
func (f *Fetcher) newTransport() *http.Transport {
	opts := &f.opts
	policy := func(network, address string, c syscall.RawConn) error {
		if opts.AllowPrivate {
			return nil
		}
		return dialControl(network, address, c)
	}
	// No TCP keep-alive probes: a connection is idle at most
	// idleConnTimeout (the probes' own first interval) before it is
	// closed, and a stalled response is bounded by the fetch's deadline.
	f.dialer = &net.Dialer{Timeout: opts.ConnectTimeout, KeepAlive: -1, Resolver: opts.Resolver, Control: policy}
	// The proxy was chosen by whoever configured the crawl: the address
	// policy, which is about where crawled URLs lead, does not apply to it.
	f.proxyDialer = &net.Dialer{Timeout: opts.ConnectTimeout, KeepAlive: -1, Resolver: opts.Resolver}

	t := &http.Transport{
		// Environment proxies are never used: they would bypass the
		// address policy. Options.Proxy carries http:// targets in
		// absolute form; https:// ones go through CONNECT in dialTLS.
		Proxy: func(req *http.Request) (*url.URL, error) {
			if opts.Proxy != nil && req.URL.Scheme == "http" {
				return opts.Proxy, nil
			}
			return nil, nil
		},
		DialContext:            f.dialPlain,
		DialTLSContext:         f.dialTLS,
		ResponseHeaderTimeout:  opts.ResponseHeaderTimeout,
		MaxResponseHeaderBytes: opts.MaxHeaderBytes,
		MaxConnsPerHost:        opts.MaxConnsPerHost,
		MaxIdleConnsPerHost:    maxIdleConnsPerHost,
		MaxIdleConns:           maxIdleConns,
		IdleConnTimeout:        idleConnTimeout,
		// fetch decodes content codings itself, under MaxBodySize, and
		// keeps the coded bytes for the archive.
		DisableCompression: true,
		// HTTP/1.1 only: the bytes captured are the messages themselves,
		// not HTTP/2 frames.
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	if opts.Proxy != nil {
		// net/http pools the http:// targets of a proxy under the proxy's
		// key alone: a per-host cap there would cap the whole crawl.
		t.MaxConnsPerHost = 0
		t.MaxIdleConnsPerHost = maxIdleConns
	}
	return t
}

// dialPlain dials an http:// origin, or the proxy for an http:// target.
func (f *Fetcher) dialPlain(ctx context.Context, network, addr string) (net.Conn, error) {
	d := f.dialer
	if f.opts.Proxy != nil {
		// Every plain-http connection goes to the proxy (Transport.Proxy
		// sends all http:// targets there); the target's own address was
		// checked by roundTripper before the request.
		d = f.proxyDialer
	}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &captureConn{Conn: c}, nil
}

// dialTLS dials an https:// origin (directly, or through the proxy's
// CONNECT tunnel), runs the TLS handshake under TLSHandshakeTimeout and
// wraps the *tls.Conn, so that the capture sees the plaintext HTTP and
// never the proxy's reply to CONNECT.
func (f *Fetcher) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	var raw net.Conn
	var err error
	if f.opts.Proxy != nil {
		raw, err = f.connectTunnel(ctx, network, addr)
	} else {
		raw, err = f.dialer.DialContext(ctx, network, addr)
	}
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		raw.Close()
		return nil, err
	}
	cfg := f.tlsConfig.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	tc := tls.Client(raw, cfg)
	hctx := ctx
	if f.opts.TLSHandshakeTimeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, f.opts.TLSHandshakeTimeout)
		defer cancel()
	}
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = &tlsHandshakeTimeoutError{after: f.opts.TLSHandshakeTimeout}
		}
		return nil, err
	}
	state := tc.ConnectionState()
	return &captureConn{Conn: tc, tls: &state}, nil
}

// tlsHandshakeTimeoutError is a handshake cut by TLSHandshakeTimeout.
type tlsHandshakeTimeoutError struct{ after time.Duration }

func (e *tlsHandshakeTimeoutError) Error() string {
	return fmt.Sprintf("tls handshake timed out after %v", e.after)
}
func (e *tlsHandshakeTimeoutError) Timeout() bool   { return true }
func (e *tlsHandshakeTimeoutError) Temporary() bool { return true }

// ProxyError is the cause inside an *Error when the proxy refused to open
// a CONNECT tunnel to the target.
type ProxyError struct {
	Proxy  string // the proxy's host:port
	Target string // the host:port asked for
	Status string // the proxy's status line, e.g. "403 Forbidden"
}

func (e *ProxyError) Error() string {
	return "fetch: proxy " + e.Proxy + " refused CONNECT " + e.Target + ": " + e.Status
}

// connectTunnel opens a connection to addr through the proxy's CONNECT
// method (RFC 9110 section 9.3.6), with Proxy-Authorization from the
// proxy URL's userinfo.
func (f *Fetcher) connectTunnel(ctx context.Context, network, addr string) (net.Conn, error) {
	p := f.opts.Proxy
	paddr := canonicalAddr(p.Scheme, p.Host)
	c, err := f.proxyDialer.DialContext(ctx, network, paddr)
	if err != nil {
		return nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n"
	if p.User != nil {
		pass, _ := p.User.Password()
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(p.User.Username()+":"+pass)) + "\r\n"
	}
	req += "\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 4<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, &ProxyError{Proxy: paddr, Target: addr, Status: resp.Status}
	}
	if br.Buffered() > 0 {
		// The origin speaks first in no protocol fetch tunnels (TLS starts
		// with the client's hello): bytes here are the proxy's mistake.
		c.Close()
		return nil, &ProxyError{Proxy: paddr, Target: addr, Status: "sent data after its 200 reply"}
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// checkTarget applies the address policy to a target reached through the
// proxy, which resolves names itself: the crawler resolves the host too
// and refuses it when any of its addresses is refused. The proxy's own
// resolution may differ (another resolver, or a DNS answer that changed
// between the two lookups), which fetch cannot see.
func (f *Fetcher) checkTarget(ctx context.Context, u *url.URL) error {
	if f.opts.Proxy == nil || f.opts.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = f.opts.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return &net.OpError{Op: "dial", Net: "tcp", Err: err}
		}
	}
	for _, ip := range addrs {
		if reason := addressBlockReason(ip); reason != "" {
			return &BlockedAddressError{Addr: net.JoinHostPort(ip.String(), port), Reason: reason}
		}
	}
	return nil
}

// canonicalAddr returns host:port of an URL's host, with the scheme's
// default port when it has none.
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
