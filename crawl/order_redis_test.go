package crawl

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/internal/linkweb"
)

// linkwebPages records the pages of a linkweb fetched with status 200,
// each once, and counts the fetches of a page already fetched.
type linkwebPages struct {
	web     *linkweb.Web
	mu      sync.Mutex // protects fetched and twice
	fetched map[int]bool
	twice   int
}

func (o *linkwebPages) Fetched(ev FetchEvent) {
	p, ok := o.web.PageOf(ev.URL)
	if !ok || ev.Status != 200 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fetched[p] {
		o.twice++
	}
	o.fetched[p] = true
}

func (o *linkwebPages) Checkpointed(CheckpointEvent) {}

// TestOrderInlinksRedisLinkweb: two Redis workers crawl a 3,000-page
// linkweb (30 hosts of Zipf sizes, the order experiment's shape at
// 3%) to a budget of a tenth of its pages, once fifo and once
// inlinks: inlinks fetches a clearly larger share of the 1% most
// linked-to pages, and neither fetches a page twice. A worker given the
// other order than the crawl's fails to start.
func TestOrderInlinksRedisLinkweb(t *testing.T) {
	g, err := linkweb.Generate(linkweb.Options{Seed: 1, Pages: 3000, Hosts: 30, HostExponent: 1})
	if err != nil {
		t.Fatal(err)
	}
	web, err := linkweb.Start(g, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	top := g.TopByInDegree(0.01)
	budget := g.Pages() / 10
	share := map[frontier.Order]float64{}
	for _, order := range []frontier.Order{frontier.OrderFIFO, frontier.OrderInlinks} {
		prefix := testRedisPrefix(t, "order")
		obs := &linkwebPages{web: web, fetched: map[int]bool{}}
		o := Options{Seeds: web.Roots(), Dir: t.TempDir(), Concurrency: 8, MaxPages: int64(budget), Order: order,
			ExpectedURLs: 100_000, Observer: obs}
		o.Politeness.Delay = -1
		o.Fetch.AllowPrivate = true
		runRedisWorkers(t, 2, o, prefix)
		if obs.twice > 0 {
			t.Errorf("%v: %d pages fetched twice", order, obs.twice)
		}
		if n := len(obs.fetched); n < budget*9/10 || n > budget {
			t.Errorf("%v: fetched %d pages, want about the budget of %d", order, n, budget)
		}
		in := 0
		for _, p := range top {
			if obs.fetched[p] {
				in++
			}
		}
		share[order] = float64(in) / float64(len(top))
		t.Logf("%v: %d pages, top 1%% fetched %.2f", order, len(obs.fetched), share[order])

		// The crawl's order is fixed: a worker given the other fails.
		other := frontier.OrderInlinks
		if order == other {
			other = frontier.OrderFIFO
		}
		o.Order = other
		o.Redis = &RedisOptions{URL: "redis://" + capturesTestRedis, Prefix: prefix, Worker: "late"}
		c, err := New(o)
		if err == nil {
			err = c.Run(context.Background())
			c.Close()
		}
		if !errors.Is(err, redisfrontier.ErrOrderMismatch) {
			t.Errorf("a %v worker on a %v crawl: %v, want ErrOrderMismatch", other, order, err)
		}
	}
	if share[frontier.OrderInlinks] < 1.3*share[frontier.OrderFIFO] || share[frontier.OrderInlinks] < 0.85 {
		t.Errorf("top 1%% fetched: inlinks %.2f, fifo %.2f; want at least 1.3 times and 0.85", share[frontier.OrderInlinks], share[frontier.OrderFIFO])
	}
}

// BenchmarkOrderRedisLinkweb crawls the order experiment's web
// (internal/linkweb: 100,000 pages on 200 hosts of Zipf sizes, exponent
// 1, seed 1) in Redis mode, one worker of 32 fetching goroutines, to a
// budget of 10,000 pages, fifo and inlinks alternating, one crawl per
// iteration (run with -benchtime=Nx). Metrics: top1 is the share of the
// 1% most linked-to pages fetched, prsum the sum of the fetched pages'
// PageRank, both medians over the iterations. It needs the test Redis.
func BenchmarkOrderRedisLinkweb(b *testing.B) {
	g, err := linkweb.Generate(linkweb.Options{Seed: 1, HostExponent: 1})
	if err != nil {
		b.Fatal(err)
	}
	web, err := linkweb.Start(g, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { web.Close() })
	top := g.TopByInDegree(0.01)
	budget := g.Pages() / 10
	for _, order := range []frontier.Order{frontier.OrderFIFO, frontier.OrderInlinks} {
		b.Run(order.String(), func(b *testing.B) {
			var tops, prs []float64
			for range b.N {
				obs := &linkwebPages{web: web, fetched: map[int]bool{}}
				o := Options{Seeds: web.Roots(), Dir: b.TempDir(), Concurrency: 32, MaxPages: int64(budget), Order: order, Observer: obs}
				o.Politeness.Delay = -1
				o.Fetch.AllowPrivate = true
				o.Redis = &RedisOptions{URL: "redis://" + capturesTestRedis, Prefix: testRedisPrefix(b, "orderbench"), Worker: "w0"}
				c, err := New(o)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
				in, pr := 0, 0.0
				for _, p := range top {
					if obs.fetched[p] {
						in++
					}
				}
				for p := range obs.fetched {
					pr += g.PageRank(p)
				}
				tops = append(tops, float64(in)/float64(len(top)))
				prs = append(prs, pr)
			}
			b.ReportMetric(median(tops), "top1")
			b.ReportMetric(median(prs), "prsum")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
