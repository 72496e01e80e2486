// Package linkweb serves a synthetic web whose whole link graph is known, so
// that a crawl's order can be scored against the importance of the pages it
// fetched: the in-degree and the PageRank of every page.
//
// # The graph
//
// Generate builds it, deterministically from Options.Seed:
//
//   - Options.Pages pages on Options.Hosts hosts whose sizes follow Zipf's
//     law, host i holding a share proportional to 1/(i+1)^HostExponent
//     (0: equal hosts), every host at least one page.
//   - A spanning tree per host: page k (k >= 1) of a host is linked from a
//     page drawn uniformly among pages 0..k-1 of the same host (a random
//     recursive tree, depth about ln k), so every page is reachable from
//     its host's root, page 0 ("/").
//   - MinLinks to MaxLinks (uniform) extra links per page; each stays on
//     the page's host with probability SameHost, otherwise goes to another
//     host drawn in proportion to its size; within the target host the
//     page is drawn by Zipf's law over popularity ranks (weight
//     1/(r+1)^TargetExponent for rank r), so in-degrees follow a power
//     law. Rank 0 is the root; the other pages get their ranks in a
//     seeded random order, so that a page's popularity does not follow
//     from its depth: a breadth-first crawl gets no popular page for free
//     beyond the roots.
//
// A page's links are distinct and never point to the page itself: its
// in-degree is the number of distinct pages linking to it. PageRank is
// computed over the whole graph (damping 0.85, uniform teleport, the rank
// of pages without links spread uniformly) by power iteration until the
// L1 change of an iteration is below 1e-12.
//
// # Serving it
//
// Start serves a graph on one listener (by default 0.0.0.0 with a port the
// kernel picks) that answers for every host: host i is the loopback
// address 127.35.(1+i/250).(1+i%250) (Linux routes all of 127.0.0.0/8 to
// the listener), so any client, the crawler's command line included,
// reaches the hosts without a resolver; connections from non-loopback
// peers are closed at once. A page is a small HTML document listing its
// links (same-host ones as absolute paths, others as absolute URLs); every
// other path, robots.txt included, is 404. Web.PageOf maps a fetched URL
// back to its page.
//
// # Guarantees
//
// A Graph is read-only once generated and safe for concurrent use; so are
// a Web's methods. Close waits for the handlers. Nothing is written to
// disk. The graph is held in memory: a link list (4 bytes a link) and
// four numbers per page.
package linkweb
