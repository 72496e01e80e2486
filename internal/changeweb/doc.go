// Package changeweb serves a synthetic web whose pages change as Poisson
// processes with known rates, and keeps the server's own record of every
// page's versions, so that the freshness and age of a crawler's copies can
// be computed exactly from its capture times.
//
// # The web
//
// New builds it, deterministically from Options.Seed: Options.Pages pages
// spread over Options.Hosts hosts (page p on host p mod Hosts). A share
// Options.Never of the pages (default 20%) never change; every other page
// changes as a Poisson process whose mean interval between changes is
// drawn log-uniformly from [Options.Fastest, Options.Slowest] (defaults 5
// seconds and 1 day), so rates are skewed: a quarter of the changing pages
// change more than once a minute, a third less than once an hour. A
// page's change times are drawn from its own seeded generator, as
// exponential gaps from Options.Start, lazily as time passes, and kept:
// Web.Version(p, t) is the number of changes in (Start, t].
//
// # Time
//
// Time comes from Options.Clock: the real clock (the default) for crawls
// in real time, or a SimClock that an experiment advances, so that hours
// of a crawl can be simulated in seconds. Every answer is computed at the
// Clock's time when the request is served.
//
// # Serving it
//
// Start serves the web on one listener (default 0.0.0.0 with a port the
// kernel picks) that answers for every host: host h is the loopback
// address 127.36.(1+h/250).(1+h%250); connections from non-loopback peers
// are closed (internal/loopback). Page k of a host (counting the host's
// pages from 0) is at "/" for k = 0 and "/p<k>" otherwise; it links to
// pages 2k+1 and 2k+2 of its host, and the root of each host links to the
// root of the next, so that every page is reachable from any root. A page
// carries its version in its body, an ETag ("<page>.<version>") and a
// Last-Modified (the time of its latest change, or of version 0, up to
// Options.History before Start) and a Date by the web's clock; a conditional
// request whose If-None-Match names the current ETag, or, without
// If-None-Match, whose If-Modified-Since is not before Last-Modified (to
// the second, as HTTP dates go), gets 304. Every other path, robots.txt
// included, is 404. Web.PageOf maps a fetched URL back to its page.
//
// # Scoring a crawl
//
// A capture at time c holds version Version(p, c); the copy is fresh at t
// when no change falls in (c, t], and its age at t is t minus the first
// change after c (0 while fresh). Web.Score integrates both over a window
// for one page's capture times (Cho and Garcia-Molina's freshness and age,
// computed exactly from the server's record rather than from the model).
// Before its first capture a page counts as stale, its age running from
// Start. The server also counts what it answered per page (200s and 304s).
//
// # Guarantees
//
// A Web's methods are safe for concurrent use; Close waits for the
// handlers. Nothing is written to disk. Memory: a few words per page plus
// 8 bytes per change generated, so a page changing every 5 seconds adds
// 140 KB per simulated day.
package changeweb
