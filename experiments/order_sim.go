package experiments

import (
	"math"
	"slices"

	"github.com/layercrawl/layercrawl/countmin"
	"github.com/layercrawl/layercrawl/internal/linkweb"
)

// inlinkCounter counts the in-links of pages as a crawl finds them.
type inlinkCounter interface {
	add(p int32)
	count(p int32) uint32
}

// exactCounter counts exactly.
type exactCounter []uint32

func (c exactCounter) add(p int32)          { c[p]++ }
func (c exactCounter) count(p int32) uint32 { return c[p] }

// sketchCounter counts in a countmin.Sketch, the crawl's own, keyed by a
// hash of the page number.
type sketchCounter struct{ s *countmin.Sketch }

func pageHash(p int32) uint64 {
	x := uint64(p) + 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func (c sketchCounter) add(p int32)          { c.s.AddHash(pageHash(p)) }
func (c sketchCounter) count(p int32) uint32 { return c.s.CountHash(pageHash(p)) }

// simulateOrder replays a crawl of g from the host roots without HTTP, in
// rounds of at most concurrency fetches on distinct hosts, until budget
// pages: with a nil counter as the crawler's fifo order does (each host's
// queue first in, first out, hosts served in turn); with a counter, each
// host's most linked-to queued page first (its root before all), and the
// hosts whose best page has the most in-links first. A fetched page's
// links are counted, one per linking page, when its round ends. It returns
// the pages in fetch order.
func simulateOrder(g *linkweb.Graph, budget, concurrency, window int, counter inlinkCounter) []int32 {
	queues := make([][]int32, g.Hosts())
	seen := make([]bool, g.Pages())
	for h := range queues {
		r := int32(g.HostStart(h))
		queues[h], seen[r] = []int32{r}, true
	}
	var fetched []int32
	next := 0 // fifo: the host served next
	type pick struct {
		host, at int
		count    uint64
	}
	for len(fetched) < budget {
		var round []pick
		if counter == nil {
			for i := 0; i < len(queues) && len(round) < concurrency; i++ {
				h := (next + i) % len(queues)
				if len(queues[h]) > 0 {
					round = append(round, pick{host: h})
				}
			}
			if len(round) > 0 {
				next = (round[len(round)-1].host + 1) % len(queues)
			}
		} else {
			for h, q := range queues {
				best := -1
				var bc uint64
				if window > 0 {
					q = q[:min(len(q), window)]
				}
				for i, p := range q {
					c := uint64(counter.count(p))
					if int(p) == g.HostStart(h) {
						c = math.MaxUint64 // seeds first
					}
					if best < 0 || c > bc {
						best, bc = i, c
					}
				}
				if best >= 0 {
					round = append(round, pick{host: h, at: best, count: bc})
				}
			}
			slices.SortStableFunc(round, func(a, b pick) int {
				switch {
				case a.count > b.count:
					return -1
				case a.count < b.count:
					return 1
				}
				return 0
			})
			round = round[:min(len(round), concurrency)]
		}
		if len(round) == 0 {
			break
		}
		var done []int32
		for _, pk := range round {
			if len(fetched) == budget {
				break
			}
			q := queues[pk.host]
			p := q[pk.at]
			queues[pk.host] = slices.Delete(q, pk.at, pk.at+1)
			fetched = append(fetched, p)
			done = append(done, p)
		}
		for _, p := range done {
			for _, t := range g.Out(int(p)) {
				if counter != nil {
					counter.add(t)
				}
				if !seen[t] {
					seen[t] = true
					h := g.HostOf(int(t))
					queues[h] = append(queues[h], t)
				}
			}
		}
	}
	return fetched
}
