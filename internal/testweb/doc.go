// Package testweb serves a synthetic web of any number of hosts from one
// process and one listener, for crawl tests and benchmarks at scale, and
// computes exactly which URLs a crawl of it fetches.
//
// # The web
//
// Everything is generated on the fly from Options.Seed: a page is a pure
// function of (seed, host, path), so the server holds no page in memory
// (about 100 bytes per host: its size, popularity rank and name) and the
// same Options give the same web byte for byte.
//
//   - Host sizes follow a truncated Pareto distribution scaled to exactly
//     Options.Pages pages (10,000 hosts, 1M pages: median 40 pages, the
//     largest 1% of hosts hold 28% of the pages).
//   - Pages are 2-5 KiB of HTML: a root listing the host's directories,
//     directory indexes of 100 pages, and content pages linking to home,
//     their directory, their neighbours, three related pages of the host
//     (Zipf-popular) and Options.CrossLinks pages of other hosts, whose
//     in-degree follows a power law (hosts ranked by a seeded
//     permutation, ranks drawn log-uniformly).
//   - Duplicates: a share of links spell their target another way that
//     urlnorm's default normalization merges (host and scheme case,
//     percent-encoded unreserved characters, dot segments, fragments, an
//     empty query, scheme-relative, numeric IPv4 forms, the default port).
//   - Redirects (/old/pN, 301), dead links (404), PDFs, links to
//     robots.txt-disallowed pages (/private/, and *.pdf on every fourth
//     host), rel="nofollow" links, mailto: and javascript: links.
//   - Traps, on Options.TrapHosts hosts, each bounded so that coverage
//     stays defined: a 120-month calendar, a shop whose links carry one of
//     8 session ids (merged by urlnorm's RemoveSessionParams), and three
//     30-page path traps that the crawler's static limits cut: "a/" links
//     (MaxSegmentRepeats), "sN/" links (MaxPathSegments) and 100 bytes
//     longer per link (MaxURLLength).
//   - Options.Embeds: requisites (stylesheets with @import and url(), a
//     script, images with srcset, a picture, style attributes and
//     elements, a favicon, and a script, stylesheet and font on an
//     off-host CDN). Every embed chain is at most two hops.
//   - Options.Sitemaps: robots.txt Sitemap lines, a sitemap index, a gzip
//     child, pages only a sitemap lists, and on host 0 an oversized
//     sitemap (50,000 spellings of its pages, then 10 URLs past the limit).
//   - Options.NearDuplicates: press releases that differ only in a date
//     and a counter.
//
// Each host stays below the crawler's default per-host budget and
// per-prefix children limit (MaxHostPages), so that those order-dependent
// limits never decide what is fetched.
//
// # Reaching it
//
// With Names addressing (the default) host i is "h<i>.web.test" and the
// CDN "static.cdn.test", all served by one listener on 127.0.0.1 that
// dispatches on the Host header; a client resolves them with
// Web.Resolver:
//
//	w, err := testweb.Start(testweb.Options{Hosts: 100, Pages: 20_000})
//	...
//	defer w.Close()
//	f, err := fetch.New(fetch.Options{AllowPrivate: true, Resolver: w.Resolver()})
//
// With Loopback addressing host i is a loopback address (127.1.1.1,
// 127.1.1.2, ...) and the listener binds 0.0.0.0, so any client reaches
// the hosts without a resolver; cmd serve prints the seeds of such a web
// for a crawl in another process.
//
// # Checking a crawl
//
// Web.Expected walks the same generator the server uses and returns the
// canonical URLs a crawl fetches (by links, as requisites, through
// sitemaps, or as <link> elements followed as links), those robots.txt
// denies and those a sitemap lists past its limit, for a given scope,
// seeds, normalization of session ids and static trap limits; a test
// compares them with its crawl log. The package's tests check Expected
// against a crawl built from fetch, urlnorm and the frontier's Admission
// in each mode. Options.Record makes Web.Requests count requests per URL,
// to check that nothing was fetched twice.
//
// # Guarantees
//
// A Web's methods are safe for concurrent use. Close waits for every
// handler. Nothing is written to disk.
package testweb
