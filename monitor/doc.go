// Package monitor shows a running crawl: Prometheus metrics at /metrics, a
// live status page at / and its data as JSON at /status.json, and, when
// asked for, the Go profiler at /debug/pprof/.
//
// # Basics
//
// Make a Monitor with New and set it as the crawl's crawl.Options.Observer,
// so that it sees every fetch (latency, status, bytes) and checkpoint. Open
// the listener with Listen before the crawl starts, so that a bad address
// fails at once, and call Run with the crawler beside the crawl's Run.
//
// # Cost and safety
//
// The crawl never waits on a client. The Observer methods update atomic
// counters, histograms and a few small bounded tables under a mutex held
// for microseconds. Once per Options.Interval, Run reads Crawler.Stats and
// renders the status document; the handlers serve that ready copy, and
// /metrics reads the last sampled Stats, so a scrape or a page view costs
// the crawl nothing. Every response is bounded (top-N hosts, the last N
// fetches, a fixed rate history) whatever the number of hosts.
//
// Slow and hostile clients. A client must send a request's header within
// Options.ReadHeaderTimeout (2s) or be cut, as a slow-loris client is. One
// client (an IPv4 address, or an IPv6 /64) holds at most
// Options.MaxConnsPerClient connections (16); one more is closed at once,
// never queued. When Options.MaxConns (64) are open, a new connection
// takes the place of the oldest one that has waited 500ms or more
// without sending a whole request header, if the newcomer's client holds
// no such connection; otherwise it is closed at once. A scraper's
// connections send their header at once: they are never displaced, and a
// scraper always finds a slow-loris connection to displace.
// /metrics has no cap on scrapes in flight: a scrape reads sampled
// counters. So a scraper on another address than the attackers gets its
// answer at once (TestSlowLorisDoesNotStarveScrapes: 50 slow-loris
// connections from one address, or 100 from ten, against 8 scrapers:
// every scrape answered 200 within milliseconds). What the caps cannot
// do: attackers on the scraper's own address (the same host, or behind
// the same NAT) share its 16 connections, and a scrape that finds them
// all taken is refused until one is cut (at most ReadHeaderTimeout later);
// attackers that send a header at once and then hold the connection (a
// request they never read, up to WriteTimeout; an idle kept-alive
// connection, up to ReadTimeout) are never displaced: enough of them,
// from MaxConns/MaxConnsPerClient addresses or more, keep the server full
// and a newcomer is refused until one is cut.
//
// Listen refuses a non-loopback address unless allowRemote is set. The
// status page, the JSON and /debug/pprof/cmdline never show credentials:
// the userinfo of URLs (fetched URLs, the Redis URL, the command line's
// arguments) is removed.
//
// # Concurrency
//
// A Monitor's methods are safe for concurrent use. Run starts the sampler
// and the HTTP server and returns after both have stopped.
package monitor
