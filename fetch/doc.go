// Package fetch downloads pages with colly as the HTTP engine, enforcing
// timeouts, size limits and an address policy; parses robots.txt (RFC
// 9309) and caches it per site; and extracts links and page requisites
// from HTML and CSS.
//
// # Basics
//
// A Fetcher (New) is safe for concurrent use and shares one connection
// pool. Fetch(ctx, url) performs one GET and returns a Result: status,
// header, body, the raw request and response heads for a WARC record, the
// remote address, timing, and for a 2xx HTML page its effective base URL
// and outlinks. Redirects are not followed: a 3xx Result carries Location
// and the caller (the frontier) treats the target as a new discovered URL,
// so every hop is normalized and deduplicated. FetchRobots follows up to
// five redirects, as RFC 9309 section 2.3.1.2 asks.
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
// # Limits and defences
//
//   - Whole-fetch timeout (Options.FetchTimeout, default 30s) covering
//     connect, head and body, so a server dripping bytes is cut off; plus
//     connect, TLS-handshake and response-header timeouts.
//   - Body cap (Options.MaxBodySize, default 10 MiB) counted after gzip
//     decoding: fetch asks for gzip and decodes it itself, pulling at most
//     MaxBodySize+1 decoded bytes, so a gzip bomb costs no more than a
//     plain oversized body. A body cut at the cap is returned with
//     Result.Truncated = "length" and no error.
//   - robots.txt capped at 500 KiB (Options.MaxRobotsSize), with its own
//     timeout; a cut last line is dropped.
//   - Outlinks capped per page (Options.MaxOutlinks, default 5000), the
//     rest counted in Result.LinksDropped.
//   - Address policy: unless Options.AllowPrivate, the dialer refuses
//     loopback, private, link-local, unspecified, CGNAT, unique-local,
//     multicast, documentation and other non-global addresses. The check
//     runs in net.Dialer.Control on the address being connected to, after
//     resolution, so DNS rebinding cannot slip past it; environment proxies
//     are not used, since they would bypass it. On Linux the same hook then
//     starts the connect itself, so that a handshake completed at once (a
//     server on this machine) is not waited for in Go's poller, which runs
//     only when a P is idle (connectNow).
//
// # Errors
//
// Failures are *Error values whose Kind names the cause in a stable
// vocabulary (timeout, dns, blocked-address, connect, tls,
// connection-reset, truncated-response, protocol, canceled, invalid-url);
// each Kind has a sentinel for errors.Is (ErrTimeout, ErrDNS, ...). When
// the body fails midway, Fetch returns both the partial Result (Truncated
// "time" or "disconnect") and the *Error. An HTTP error status is not an
// error: it is a Result.
//
// # How colly is used, and where fetch goes around it
//
// Each Fetch runs a fresh colly.Collector (built with Init, so COLLY_*
// environment variables cannot change it) with visited-URL tracking and
// robots.txt handling off (the frontier owns both), HTTP error statuses
// parsed as responses, and an http.Client shared by all fetches. A fresh
// collector per fetch is how each Fetch honours its own ctx: a Collector
// carries one context for all its requests. Two things colly cannot do
// are done in the client's RoundTripper, under colly: colly caps the body
// before its own gzip decoding (a gzip bomb passes) and truncates silently,
// and its Response lacks the raw bytes (it may re-encode the body to UTF-8),
// the raw request and the remote address. So the RoundTripper reads and
// decodes the body under the cap and records what WARC needs; colly then
// gets the status and header with an empty body, since its copy would be
// discarded (a Result is built from what the RoundTripper recorded). colly
// therefore runs no HTML callbacks: Extract finds links with a scanner
// that jumps from tag to tag in place, with no allocation per tag
// (checked against the x/net/html tokenizer; docs/BENCHMARKS.md compares
// their speed), instead of colly's goquery DOM. Only HTTP/1.1 is
// spoken, so the recorded heads are the
// ones on the wire (header order and case as Go's parser leaves them).
//
// Under the RoundTripper is fetch's own HTTP/1.1 client (for http:// and
// https://), which runs the whole exchange on the fetching goroutine: it
// dials, runs the TLS handshake, writes the request head itself (the bytes
// http.Request.Write would write) and reads the response with
// http.ReadResponse. net/http's Transport runs a dial goroutine and a read
// and a write goroutine per connection and hands the exchange between
// them; with a connection per request, as python's http.server imposes,
// that was about 40% of a fetch's CPU in the client (docs/BENCHMARKS.md,
// issue 16 section 3). The client keeps the Transport's behaviour the
// crawler relies on: keep-alive reuse (2 idle connections per host:port,
// 256 in all, 30 s; one on which anything arrived while idle is not
// reused), MaxConnsPerHost, a GET sent again once on a new connection
// when a reused one turns out closed, 1xx responses skipped, the TLS
// handshake and header timeouts and the header size cap.
//
// # Caveats
//
// Nothing is persisted: RobotsCache lives in memory (at most MaxEntries
// sites, each Robots holding the parsed rules of a file of at most 500
// KiB), and the crawl stores Results itself.
//
// Cookies are not kept between fetches. Bodies in other content codings
// than gzip (br, deflate) are returned as received, since fetch only asks
// for gzip. Links are extracted from 2xx text/html and
// application/xhtml+xml responses (sniffed when there is no Content-Type)
// and 2xx text/css ones; see Extract and ExtractCSS for the elements,
// attributes and CSS constructs read. Scripts are not run, so URLs that
// only JavaScript builds are not found.
package fetch
