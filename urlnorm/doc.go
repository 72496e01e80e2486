// Package urlnorm resolves, normalizes and segments URLs so that two
// spellings of one page map to one duplicate-detection key and two different
// pages never do.
//
// # Basics
//
// A Normalizer is built once from Options and used from any number of
// goroutines (so is a Base from ParseBase); it keeps no state between calls
// beyond reusable buffers, and nothing is persisted, so the same Options
// give the same results in every process:
//
//	n, err := urlnorm.New(urlnorm.Options{})            // safe normalizations only
//	canon, err := n.Resolve(pageURL, href)               // browser resolution, then Normalize
//	layers := n.Segments(canon)                          // keys for the multi-layer filter
//	_, host, name, ok := urlnorm.SplitCanonical(canon)   // "news.bbc.co.uk:8080", "news.bbc.co.uk"
//	site, err := urlnorm.RegistrableDomain(name)         // "bbc.co.uk", for politeness
//
// Parsing follows the WHATWG URL Standard (what browsers do) for the two
// schemes a crawler fetches, http and https; every other scheme (mailto:,
// javascript:, data:, ftp:, ...) is rejected with ErrUnsupportedScheme. The
// tests hold it to the web-platform-tests URL suite (all 445 http(s) cases
// of urltestdata.json byte for byte without the policy, all 247 successful
// ones with it, 9 of which the RFC 3986 encoding below changes, each listed
// in the tests) and to the 42 reference-resolution examples of RFC 3986
// section 5.4, with the deliberate differences listed below.
//
// # Policy: what is merged
//
// A false merge loses a page for ever; a missed merge costs one refetch. So
// by default only spellings that every server must treat alike are merged:
//
//   - WHATWG parsing: surrounding whitespace and control characters are
//     stripped and tabs and newlines removed anywhere; '\' is '/'; scheme
//     and host are lowercased; the host is percent-decoded and converted to
//     ASCII by UTS #46 (IDNA lookup, nontransitional, CheckHyphens and
//     STD3 rules off, as browsers do); an IPv4 host in any form browsers
//     accept ("0x7f.1", "2130706433", "127.1") becomes dotted decimal; an
//     IPv6 host is written in its compressed form; the default port (80,
//     443) and an empty port are removed; "." and ".." segments (also
//     spelled "%2e") are removed; an empty path becomes "/"; spaces,
//     controls, non-ASCII bytes and the characters the standard lists are
//     percent-encoded, non-ASCII as UTF-8.
//   - Beyond the standard (the deliberate differences): percent-escapes
//     are uppercased ("%2f" -> "%2F") and escapes of unreserved characters
//     decoded ("%7e" -> "~", RFC 3986 section 6.2.2); userinfo, path,
//     query and a kept fragment are written in RFC 3986's grammar
//     (sections 2.2-2.4, 3): a character the component does not allow raw
//     is percent-encoded ('|', '[' and ']' in the path; those and '^',
//     '`', '{', '}', '\' in the query, which WHATWG leaves as typed), and
//     a '%' that does not start an escape becomes "%25", so "?q=a|b" and
//     "?q=a%7Cb", "/100%" and "/100%25" are one URL; one trailing dot of
//     the host is removed ("example.com." -> "example.com"); the fragment
//     is dropped, except a hash-bang "#!..." which AJAX sites use to name
//     pages; an empty query "?" is dropped. So outside the host a
//     canonical URL is a valid RFC 3986 URI, which net/url parses and
//     Go's HTTP client sends as it is.
//
// # Policy: what is never merged
//
// Reserved characters keep their spelling, raw or escaped: RFC 3986
// section 2.2 lets a server give '/', '?', '#', '&', '=', '+' and the
// other delimiters a meaning that their escapes ("%2F", "%3F", "%23",
// "%26", "%3D", "%2B") do not have, so neither is turned into the other
// (only the characters a component cannot hold raw are encoded); '+' in a
// query stays '+' (not a space); each escape is decoded at most once and
// never combines with its neighbours into a new one; the path is never
// lowercased; userinfo, a non-default port and the order of query pairs
// are kept. Invalid UTF-8 outside the host is percent-encoded byte by
// byte rather than replaced by U+FFFD, so different invalid inputs stay
// different.
//
// The optional normalizations (Options, all off by default) merge more at
// the risk of false merges: sorting query pairs, dropping session and
// tracking parameters, collapsing "//", adding or removing a trailing
// slash, removing "index.html"-style pages, folding "www." when the
// registrable domain is unchanged, treating http and https as one in
// Segments, and writing IPv4-mapped IPv6 hosts as IPv4. Every option keeps
// Normalize idempotent.
//
// # Segments
//
// Segments splits a canonical URL into layers: layer 1 is
// "scheme://[userinfo@]host[:port]" (the scheme is kept so that http and
// https never share a key unless IgnoreScheme is set), then one layer per
// '/'-separated path segment; the query, and a kept hash-bang, stay
// attached to the last segment, as the paper's '/' split implies (a layer
// of its own for the query was not measured, so the paper's choice stays).
// Joining the layers with '/' gives back the canonical URL, so the split is
// injective: different canonical URLs never have equal segments.
//
// # Errors
//
// Every error is an *Error{Op, URL, Err} whose Err wraps one sentinel
// (ErrUnsupportedScheme, ErrInvalidHost, ErrInvalidPort, ...) and says what
// is wrong in words a person can act on. Bad input never panics. Inputs of
// any length are accepted (a 65,535-byte URL is normalized like any other).
// Errors of Options.Validate, and so of New, wrap ErrInvalidOptions.
//
// # Performance
//
// The parser is written for this package (neither net/url nor purell
// implement the WHATWG rules) and builds the result in one pass into a
// pooled buffer: Normalize allocates only the returned string, and nothing
// when the input is already canonical. purell (github.com/PuerkitoBio/purell)
// is not used at run time: its safe flags decode "%2F", leave the query
// unnormalized, skip IDNA for NormalizeURL and leave "http://host" without
// "/"; the tests keep one case per such bug, comparing with purell's output.
//
// # Caveats
//
// Non-UTF-8 document encodings are the caller's business: the standard
// encodes the query of a link in a windows-1252 page with that encoding,
// while this package always uses UTF-8. Hosts are not resolved, so
// "localhost" and "127.0.0.1" stay different.
package urlnorm
