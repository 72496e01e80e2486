package fetch

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// DefaultUserAgent is the User-Agent sent when Options.UserAgent is empty.
// Its product token ("layercrawl") is what robots.txt groups are matched
// against.
const DefaultUserAgent = "layercrawl/0.1 (+https://github.com/layercrawl/layercrawl)"

// Defaults of Options fields, applied by EnsureDefaults to zero fields.
const (
	DefaultMaxBodySize           = 10 << 20 // 10 MiB, after decompression
	DefaultMaxRobotsSize         = 500 << 10
	DefaultMaxRobotsRedirects    = 5
	DefaultMaxOutlinks           = 5000
	DefaultMaxHeaderBytes        = 256 << 10
	DefaultRobotsTimeout         = 15 * time.Second
	DefaultFetchTimeout          = 30 * time.Second
	DefaultConnectTimeout        = 10 * time.Second
	DefaultTLSHandshakeTimeout   = 10 * time.Second
	DefaultResponseHeaderTimeout = 15 * time.Second
	DefaultMaxConnsPerHost       = 4
	DefaultAccept                = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
)

// ErrInvalidOptions is wrapped by the error of Options.Validate.
var ErrInvalidOptions = errors.New("fetch: invalid options")

// Options configures a Fetcher. The zero value is usable: EnsureDefaults
// fills every zero field with the default documented on it. New copies the
// Options it is given.
type Options struct {
	// UserAgent is sent with every request. Default DefaultUserAgent.
	UserAgent string
	// Accept is the Accept header of page requests. Default DefaultAccept.
	Accept string

	// MaxBodySize caps the body kept per response, counted after gzip
	// decompression; a longer body is cut there and the Result is marked
	// Truncated "length". Default 10 MiB.
	MaxBodySize int64
	// MaxCaptureSize caps the bytes kept of each request and of each
	// response as they crossed the wire (Result.RawRequest, RawResponse):
	// head, transfer coding and content coding included. A response cut
	// there is still read (Body may be complete) and RawTruncated is
	// "length". Default MaxBodySize + 1 MiB, room for a head and the chunk
	// framing of an uncompressed body of MaxBodySize; a compressed body
	// decodes to more than it weighs on the wire, so it fits too.
	// FetchBodyLimit with a larger limit raises the cap to limit + 1 MiB.
	MaxCaptureSize int64
	// MaxRobotsSize caps a robots.txt body (RFC 9309 section 2.5 requires at
	// least 500 KiB to be parsed). Default 500 KiB.
	MaxRobotsSize int64
	// MaxRobotsRedirects is how many redirects a robots.txt fetch follows
	// (RFC 9309 section 2.3.1.2: at least five). Default 5.
	MaxRobotsRedirects int
	// RobotsTimeout bounds a whole robots.txt fetch, redirects included.
	// Default 15s.
	RobotsTimeout time.Duration
	// MaxHeaderBytes caps the response head. Default 256 KiB.
	MaxHeaderBytes int64

	// FetchTimeout bounds a whole fetch: connect, request, response head
	// and body. A server dripping its body is cut off here. Default 30s.
	FetchTimeout time.Duration
	// ConnectTimeout bounds the TCP connect. Default 10s.
	ConnectTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake. Default 10s.
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response head after the
	// request was written. Default 15s.
	ResponseHeaderTimeout time.Duration
	// MaxConnsPerHost caps connections per host:port. Default 4.
	MaxConnsPerHost int

	// MaxOutlinks caps the links kept per page (like Nutch's
	// db.max.outlinks.per.page); links beyond it are counted in
	// Result.LinksDropped. Default 5000; negative means no cap.
	MaxOutlinks int
	// FollowNofollow keeps links marked rel="nofollow" (or on a page with
	// <meta name="robots" content="nofollow">). Default false: skipped.
	FollowNofollow bool
	// NoEmbeds leaves page requisites (HopEmbed links: images, scripts,
	// stylesheets, media, CSS references) out of Result.Links. Default
	// false: they are extracted.
	NoEmbeds bool

	// AllowPrivate permits connecting to loopback, private, link-local,
	// unspecified and other non-global addresses. Default false: such
	// addresses are refused at connect time with KindBlockedAddress.
	AllowPrivate bool

	// Resolver resolves host names. Default net.DefaultResolver.
	Resolver *net.Resolver
	// TLSConfig configures the TLS connections of https:// fetches: its
	// RootCAs (a private CA: nil means the system roots), Certificates
	// (client certificates), InsecureSkipVerify (nothing verified: a
	// crawl of a test site only), MinVersion and the like. It is cloned
	// by New. Its NextProtos are cleared, as fetch speaks HTTP/1.1 only,
	// and an empty ServerName is the URL's host. Default nil: Go's
	// defaults with the system roots.
	TLSConfig *tls.Config

	// Proxy, when set, is an HTTP forward proxy every request goes
	// through, robots.txt and sitemaps included:
	// http://[user:password@]host[:port]. http:// URLs are sent to it in
	// absolute form; https:// ones through a CONNECT tunnel, inside
	// which fetch runs TLS with the origin, so RawRequest and RawResponse
	// are the origin's exchange and never the proxy's reply to CONNECT.
	// The userinfo is sent as Basic Proxy-Authorization. The address
	// policy does not apply to the proxy itself (it was chosen by whoever
	// configured the crawl); for the target, which the proxy resolves,
	// fetch resolves the host too and refuses it when any of its
	// addresses is refused (unless AllowPrivate). What it cannot check:
	// the address the proxy actually connects to, which may differ from
	// the crawler's answer (another resolver, a record that changed in
	// between). net/http pools all http:// targets of a proxy on the
	// proxy's connections, so with a proxy MaxConnsPerHost is not applied
	// (it would cap the whole crawl): a crawl's politeness keeps its own
	// per-host limit. Default nil: direct connections; environment
	// variables (HTTP_PROXY ...) are never read.
	Proxy *url.URL
}

// EnsureDefaults sets every zero field of o to its documented default.
func (o *Options) EnsureDefaults() {
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.Accept == "" {
		o.Accept = DefaultAccept
	}
	if o.MaxBodySize == 0 {
		o.MaxBodySize = DefaultMaxBodySize
	}
	if o.MaxCaptureSize == 0 {
		o.MaxCaptureSize = o.MaxBodySize + 1<<20
	}
	if o.MaxRobotsSize == 0 {
		o.MaxRobotsSize = DefaultMaxRobotsSize
	}
	if o.MaxRobotsRedirects == 0 {
		o.MaxRobotsRedirects = DefaultMaxRobotsRedirects
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.FetchTimeout == 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.RobotsTimeout == 0 {
		o.RobotsTimeout = DefaultRobotsTimeout
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.TLSHandshakeTimeout == 0 {
		o.TLSHandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	if o.ResponseHeaderTimeout == 0 {
		o.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
	}
	if o.MaxConnsPerHost == 0 {
		o.MaxConnsPerHost = DefaultMaxConnsPerHost
	}
	if o.MaxOutlinks == 0 {
		o.MaxOutlinks = DefaultMaxOutlinks
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
}

// Validate reports the first invalid field. It expects EnsureDefaults to
// have run (New does both).
func (o *Options) Validate() error {
	switch {
	case o.MaxBodySize < 0:
		return fmt.Errorf("%w: MaxBodySize %d is negative", ErrInvalidOptions, o.MaxBodySize)
	case o.MaxCaptureSize < 0:
		return fmt.Errorf("%w: MaxCaptureSize %d is negative", ErrInvalidOptions, o.MaxCaptureSize)
	case o.MaxRobotsSize < 0:
		return fmt.Errorf("%w: MaxRobotsSize %d is negative", ErrInvalidOptions, o.MaxRobotsSize)
	case o.MaxRobotsRedirects < 0:
		return fmt.Errorf("%w: MaxRobotsRedirects %d is negative", ErrInvalidOptions, o.MaxRobotsRedirects)
	case o.MaxHeaderBytes < 0:
		return fmt.Errorf("%w: MaxHeaderBytes %d is negative", ErrInvalidOptions, o.MaxHeaderBytes)
	case o.FetchTimeout < 0, o.RobotsTimeout < 0, o.ConnectTimeout < 0, o.TLSHandshakeTimeout < 0, o.ResponseHeaderTimeout < 0:
		return fmt.Errorf("%w: negative timeout", ErrInvalidOptions)
	case o.MaxConnsPerHost < 0:
		return fmt.Errorf("%w: MaxConnsPerHost %d is negative", ErrInvalidOptions, o.MaxConnsPerHost)
	}
	if p := o.Proxy; p != nil {
		if p.Scheme != "http" || p.Host == "" || p.Hostname() == "" || (p.Path != "" && p.Path != "/") || p.RawQuery != "" {
			return fmt.Errorf("%w: Proxy %q is not http://[user:password@]host[:port]", ErrInvalidOptions, p.Redacted())
		}
	}
	for _, r := range o.UserAgent {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: UserAgent contains a control character", ErrInvalidOptions)
		}
	}
	return nil
}
