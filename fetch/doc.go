// Package fetch downloads pages over HTTP/1.1 with net/http's Transport,
// keeping the bytes as they crossed the wire for the archive, enforcing
// timeouts, size limits and an address policy; parses robots.txt (RFC
// 9309) and caches it per site; and extracts links and page requisites
// from HTML and CSS.
//
// # Basics
//
// A Fetcher (New) is safe for concurrent use and shares one connection
// pool. Fetch(ctx, url) performs one GET and returns a Result: status,
// header, the decoded body, the raw request and response as they crossed
// the wire, the TLS state, the remote address, timing, and for a 2xx HTML
// page its effective base URL and outlinks. Redirects are not followed: a
// 3xx Result carries Location and the caller (the frontier) treats the
// target as a new discovered URL, so every hop is normalized and
// deduplicated. FetchRobots follows up to five redirects, as RFC 9309
// section 2.3.1.2 asks.
//
// ParseRobots and Robots implement RFC 9309 matching; RobotsCache keeps
// one Robots per site for at most 24 hours (longer only while refreshing
// finds the site unreachable, up to 30 days) and fetches each site's
// robots.txt once however many goroutines ask for it at the same time.
// ExtractLinks, Extract and ExtractCSS are pure functions over a body,
// safe for concurrent use, that never modify it. Each URL they return
// carries its hop type (HopLink, HopEmbed, HopRedirect) and where it was
// written, in Heritrix's style ("a/@href", "img/@srcset", "css/url()").
//
// # The wire and the archive
//
// Every connection is wrapped so that its bytes are teed into the
// recorder of the exchange it carries (attached when httptrace's GotConn
// hands the connection to a request, detached once the body is read; a
// request the Transport sends again on a new connection after a reused one
// turned out dead starts a fresh record). For https:// fetch runs TLS
// itself in the Transport's DialTLSContext and wraps the *tls.Conn, so the
// record is the plaintext HTTP, and keeps its ConnectionState
// (Result.TLS). Result.RawRequest is the request as written;
// Result.RawResponse the response as read: 1xx interim responses, the
// status line, the header fields in their order, case and repetition, the
// body with its transfer coding (chunk sizes, extensions, trailers) and its
// content coding. That is what a WARC response record holds (WARC 1.1
// section 6.3.2), as Heritrix, wget and warcprox store it: nothing is
// re-serialized. The capture has its own cap (Options.MaxCaptureSize,
// default MaxBodySize + 1 MiB); Result.RawTruncated says when RawResponse
// is not the whole response: "length" (the capture cap, or reading
// stopped at MaxBodySize), "time" or "disconnect". Only HTTP/1.1 is
// spoken (no ALPN, no HTTP/2), one exchange per connection at a time.
//
// Result.Body is the entity decoded for analysis (link extraction,
// near-duplicate text, sitemaps): net/http removes the chunked transfer
// coding, fetch decodes the content codings it asks for (gzip, x-gzip,
// deflate as zlib or raw DEFLATE) under MaxBodySize. br is not asked for.
//
// # Limits and defences
//
//   - Whole-fetch timeout (Options.FetchTimeout, default 30s) covering
//     connect, head and body, so a server dripping bytes is cut off; plus
//     connect, TLS-handshake and response-header timeouts.
//   - Body cap (Options.MaxBodySize, default 10 MiB) counted after
//     decoding: fetch pulls at most MaxBodySize+1 decoded bytes, so a
//     compression bomb costs no more than a plain oversized body. A body
//     cut at the cap is returned with Result.Truncated = "length" and no
//     error. The capture cap (MaxCaptureSize) counts wire bytes.
//   - Response head capped (Options.MaxHeaderBytes, default 256 KiB).
//   - robots.txt capped at 500 KiB (Options.MaxRobotsSize), with its own
//     timeout; a cut last line is dropped. A robots.txt answered 5xx or
//     429 disallows the site, with an error (RFC 9309 section 2.3.1.4).
//   - Outlinks capped per page (Options.MaxOutlinks, default 5000), the
//     rest counted in Result.LinksDropped.
//   - Connection pool: MaxConnsPerHost (default 4), 2 idle connections
//     per host and 256 in all, an idle one closed after 30 s.
//   - Address policy: unless Options.AllowPrivate, the dialer refuses
//     loopback, private, link-local, unspecified, CGNAT, unique-local,
//     multicast, documentation and other non-global addresses. The check
//     runs in net.Dialer.Control on the address being connected to, after
//     resolution, so DNS rebinding cannot slip past it; environment proxies
//     are never used, since they would bypass it.
//
// # Proxies and certificates
//
// Options.Proxy sends every request through an HTTP forward proxy:
// http:// URLs in absolute form, https:// ones through a CONNECT tunnel
// opened in the TLS dialer, so the capture holds the origin's exchange and
// never the proxy's reply. The proxy itself is exempt from the address
// policy; the target is resolved by the crawler too and refused when one
// of its addresses is, but the address the proxy connects to cannot be
// checked. Options.TLSConfig sets the trusted roots (a private CA),
// client certificates or InsecureSkipVerify.
//
// # Errors
//
// Failures are *Error values whose Kind names the cause in a stable
// vocabulary (timeout, dns, dns-not-found, blocked-address, connect, tls,
// certificate, connection-reset, truncated-response, protocol, canceled,
// invalid-url, unsupported-scheme), found from the cause's types and
// sentinels only (errors.Is and errors.As), never from its text; each Kind
// has a sentinel for errors.Is (ErrTimeout, ErrDNS, ...), and
// Kind.Permanent tells the failures not worth retrying (refused address,
// certificate, NXDOMAIN, unsupported scheme, invalid URL). The message
// names the kind, the URL and the cause once each ("fetch: dns-not-found
// http://x.invalid/: lookup x.invalid: no such host"); Error.FetchedAt
// and Duration say when the failed fetch started and how long it ran. When
// the body fails midway, Fetch returns both the partial Result (Truncated
// "time" or "disconnect") and the *Error. An HTTP error status is not an
// error: it is a Result.
//
// # Caveats
//
// Nothing is persisted: RobotsCache lives in memory (at most MaxEntries
// sites, each Robots holding the parsed rules of a file of at most 500
// KiB), and the crawl stores Results itself.
//
// Cookies are not kept between fetches. A body in a content coding fetch
// does not decode (br, compress) is returned as received in Body, since
// fetch does not ask for it. Result.Header is net/http's parse (canonical
// names); RawResponse has the fields as sent. Links are extracted from 2xx text/html and
// application/xhtml+xml responses (sniffed when there is no Content-Type)
// and 2xx text/css ones; see Extract and ExtractCSS for the elements,
// attributes and CSS constructs read. Scripts are not run, so URLs that
// only JavaScript builds are not found.
package fetch
