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

// simOptions configure simulateOrder.
type simOptions struct {
	budget, concurrency int
	// counter counts in-links; nil: fifo within each host.
	counter inlinkCounter
	// window > 0 makes only the first window pages of a host's queue (in
	// discovery order) candidates, as a frontier that holds that many in
	// memory.
	window int
	// hostsInTurn serves the hosts in turn, as fifo does, whatever their
	// counts (always so without a counter).
	hostsInTurn bool
}

// simulateOrder replays a crawl of g from the host roots without HTTP, in
// rounds of at most concurrency fetches on distinct hosts, until budget
// pages. Without a counter it orders as the crawler's fifo does (each
// host's queue first in, first out, hosts served in turn); with one, each
// host's most linked-to candidate first (its root before all) and, unless
// hostsInTurn, the hosts whose best candidate has the most in-links first.
// A fetched page's links are counted, one per linking page, when its round
// ends. It returns the pages in fetch order.
func simulateOrder(g *linkweb.Graph, o simOptions) []int32 {
	queues := make([][]int32, g.Hosts())
	seen := make([]bool, g.Pages())
	for h := range queues {
		r := int32(g.HostStart(h))
		queues[h], seen[r] = []int32{r}, true
	}
	var fetched []int32
	next := 0 // hosts in turn: the host served next
	type pick struct {
		host, at int
		count    uint64
	}
	// best returns host h's best candidate and its count.
	best := func(h int) (int, uint64) {
		q := queues[h]
		if o.counter == nil {
			return 0, 0
		}
		if o.window > 0 {
			q = q[:min(len(q), o.window)]
		}
		at, bc := -1, uint64(0)
		for i, p := range q {
			c := uint64(o.counter.count(p))
			if int(p) == g.HostStart(h) {
				c = math.MaxUint64 // seeds first
			}
			if at < 0 || c > bc {
				at, bc = i, c
			}
		}
		return at, bc
	}
	for len(fetched) < o.budget {
		var round []pick
		if o.counter == nil || o.hostsInTurn {
			for i := 0; i < len(queues) && len(round) < o.concurrency; i++ {
				h := (next + i) % len(queues)
				if len(queues[h]) > 0 {
					at, c := best(h)
					round = append(round, pick{host: h, at: at, count: c})
				}
			}
			if len(round) > 0 {
				next = (round[len(round)-1].host + 1) % len(queues)
			}
		} else {
			for h, q := range queues {
				if len(q) > 0 {
					at, c := best(h)
					round = append(round, pick{host: h, at: at, count: c})
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
			round = round[:min(len(round), o.concurrency)]
		}
		if len(round) == 0 {
			break
		}
		var done []int32
		for _, pk := range round {
			if len(fetched) == o.budget {
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
				if o.counter != nil {
					o.counter.add(t)
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
