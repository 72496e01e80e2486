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
// fetches, a fixed rate history) whatever the number of hosts. The server
// has read, write and idle timeouts and a cap on connections, so a slow or
// hostile client holds at most one of its own connections for a while.
//
// Listen refuses a non-loopback address unless allowRemote is set. The
// status page and the JSON never show credentials: the userinfo of URLs
// (fetched URLs, the Redis URL) is removed.
//
// # Concurrency
//
// A Monitor's methods are safe for concurrent use. Run starts the sampler
// and the HTTP server and returns after both have stopped.
package monitor
