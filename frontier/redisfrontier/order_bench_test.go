package redisfrontier

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/internal/linkweb"
	"github.com/layercrawl/layercrawl/mlbf"
)

// benchOrders are the orders BenchmarkOrder compares, side by side: fifo,
// and inlinks with the done script's BITFIELD calls reading 10 counters
// and writing 7 (countChunk), reading 64 and writing 48, or reading and
// writing 1 (one call per counter, as many calls as a sketch read with
// GETRANGE and written with SETRANGE would make).
var benchOrders = []struct {
	name  string
	order frontier.Order
	chunk int
}{
	{"fifo", frontier.OrderFIFO, 0},
	{"inlinks", frontier.OrderInlinks, countChunk},
	{"inlinks-chunk64", frontier.OrderInlinks, 64},
	{"inlinks-chunk1", frontier.OrderInlinks, 1},
}

// benchOrderFrontier opens a frontier of the given order on a private
// redis-server, with the crawler's seen-set (growing, exact, salted, at
// 0.001) sized for urls.
func benchOrderFrontier(b *testing.B, order frontier.Order, chunk int, urls int, maxPages int64) (*Client, *Frontier) {
	c := benchRedis(b)
	ctx := context.Background()
	g := mlbf.ScalableOptions{ExpectedURLs: uint64(max(urls, 1000)), FalsePositiveRate: 0.001}
	s, err := OpenSeen(ctx, c, SeenOptions{Growth: &g, Exact: true, Salted: true, ExactURLs: uint64(max(urls, 1000))})
	if err != nil {
		b.Fatal(err)
	}
	f, err := Open(ctx, c, Options{Seen: s, Normalizer: testNormalizer(b), Order: order, ExpectedURLs: uint64(max(urls, 1000)),
		MaxPages: maxPages, Politeness: frontier.PolitenessOptions{Delay: -1}})
	if err != nil {
		b.Fatal(err)
	}
	if chunk > 0 {
		f.chunk = chunk
	}
	return c, f
}

// driveFrontier runs goroutines that take entries and report them done
// with links(url) until the frontier is exhausted or hits its page
// limit; it returns the entries done and the links reported.
func driveFrontier(b *testing.B, f *Frontier, goroutines int, links func(rng *rand.Rand, url string) []string) (pages, nlinks int64) {
	var wg sync.WaitGroup
	var np, nl atomic.Int64
	errs := make(chan error, goroutines)
	for w := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 34))
			ctx := context.Background()
			for {
				e, err := f.Next(ctx)
				if errors.Is(err, frontier.ErrExhausted) || errors.Is(err, frontier.ErrPageLimit) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				l := links(rng, e.URL)
				if err := f.Done(ctx, e, frontier.Outcome{Fetched: true, Links: l}); err != nil {
					errs <- err
					return
				}
				np.Add(1)
				nl.Add(int64(len(l)))
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return np.Load(), nl.Load()
}

// BenchmarkOrder compares the Redis CPU of the orders (benchOrders) on a
// private redis-server, 4 goroutines, no politeness delay:
//
//   - crawl: a crawl of the order experiment's web (internal/linkweb,
//     seed 1, 20,000 pages on 100 hosts of Zipf sizes, 6 to 18 extra
//     links a page) to b.N pages, without HTTP: each page's links
//     reported to Done. Metric srvCPUus/page.
//   - next: b.N URLs queued (100 hosts, each root's links), each handed
//     out and done without links: Next, the queue and the choice of
//     host. Metrics srvCPUus/next, and B/queued, the growth of
//     used_memory per URL queued (the seen-set's share included).
//   - count: the same, each page now linking to 20 of the queued URLs
//     (3 in 4 on its own host, skewed): counted, and raised in their
//     queues with inlinks. Metric
//     srvCPUus/link is count's CPU per page less next's, per link (the
//     whole cost of a link, seen-set check included; the order's share is
//     the difference between orders).
//
// Run with -benchtime=20000x.
func BenchmarkOrder(b *testing.B) {
	for _, o := range benchOrders {
		b.Run("crawl/"+o.name, func(b *testing.B) { benchOrderCrawl(b, o.order, o.chunk) })
	}
	for _, o := range benchOrders {
		var nextCPU float64
		b.Run("next/"+o.name, func(b *testing.B) { nextCPU = benchOrderQueue(b, o.order, o.chunk, 0, 0) })
		b.Run("count/"+o.name, func(b *testing.B) { benchOrderQueue(b, o.order, o.chunk, 20, nextCPU) })
	}
}

func benchOrderCrawl(b *testing.B, order frontier.Order, chunk int) {
	g, err := linkweb.Generate(linkweb.Options{Seed: 1, Pages: 20_000, Hosts: 100, HostExponent: 1})
	if err != nil {
		b.Fatal(err)
	}
	url := func(p int) string {
		h := g.HostOf(p)
		return fmt.Sprintf("http://h%d.test%s", h, linkweb.Path(p-g.HostStart(h)))
	}
	page := map[string]int{}
	for p := range g.Pages() {
		page[url(p)] = p
	}
	c, f := benchOrderFrontier(b, order, chunk, g.Pages(), int64(b.N))
	var seeds []string
	for h := range g.Hosts() {
		seeds = append(seeds, url(g.HostStart(h)))
	}
	if _, err := f.AddSeeds(context.Background(), seeds); err != nil {
		b.Fatal(err)
	}
	cpu0 := serverCPU(b, c)
	b.ResetTimer()
	pages, links := driveFrontier(b, f, 4, func(_ *rand.Rand, u string) []string {
		var out []string
		for _, q := range g.Out(page[u]) {
			out = append(out, url(int(q)))
		}
		return out
	})
	b.StopTimer()
	cpu := serverCPU(b, c) - cpu0
	b.ReportMetric(cpu*1e6/float64(pages), "srvCPUus/page")
	b.ReportMetric(float64(links)/float64(pages), "links/page")
}

// benchOrderQueue queues b.N URLs on 100 hosts (each root linking to its
// host's), then hands them out and reports each done with perPage links
// to queued URLs. It returns the server's CPU per page; with nextCPU, that
// of the same run without links, it reports the CPU per link.
func benchOrderQueue(b *testing.B, order frontier.Order, chunk, perPage int, nextCPU float64) float64 {
	const hosts = 100
	n := max(b.N, hosts)
	url := func(i int) string { return fmt.Sprintf("http://h%d.test/p%d", i%hosts, i/hosts) }
	c, f := benchOrderFrontier(b, order, chunk, n+hosts, 0)
	ctx := context.Background()
	mem0 := usedMemory(b, c)
	var roots []string
	for h := range hosts {
		roots = append(roots, fmt.Sprintf("http://h%d.test/", h))
	}
	if _, err := f.AddSeeds(ctx, roots); err != nil {
		b.Fatal(err)
	}
	for range hosts {
		e, err := f.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var h int
		if _, err := fmt.Sscanf(e.URL, "http://h%d.test/", &h); err != nil {
			b.Fatal(err)
		}
		var links []string
		for i := h; i < n; i += hosts {
			links = append(links, url(i))
		}
		if err := f.Done(ctx, e, frontier.Outcome{Fetched: true, Links: links}); err != nil {
			b.Fatal(err)
		}
	}
	queuedBytes := float64(usedMemory(b, c)-mem0) / float64(n)
	perHost := n / hosts
	cpu0 := serverCPU(b, c)
	b.ResetTimer()
	pages, links := driveFrontier(b, f, 4, func(rng *rand.Rand, u string) []string {
		var h int
		fmt.Sscanf(u, "http://h%d.test/", &h) // the URLs are ours
		out := make([]string, perPage)
		for i := range out {
			// As linkweb's: 3 in 4 on the page's host.
			th := h
			if rng.IntN(4) == 0 {
				th = rng.IntN(hosts)
			}
			out[i] = url(th + hosts*int(rng.Float64()*rng.Float64()*float64(perHost)))
		}
		return out
	})
	b.StopTimer()
	cpu := serverCPU(b, c) - cpu0
	perPageCPU := cpu / float64(pages)
	b.ReportMetric(perPageCPU*1e6, "srvCPUus/next")
	b.ReportMetric(queuedBytes, "B/queued")
	if links > 0 && nextCPU > 0 {
		b.ReportMetric((perPageCPU-nextCPU)*1e6*float64(pages)/float64(links), "srvCPUus/link")
	}
	return perPageCPU
}
