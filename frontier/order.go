package frontier

import (
	"container/heap"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/layercrawl/layercrawl/countmin"
)

// OrderInlinks (order.go): every link a fetched page carries is counted
// once in a count-min sketch (Frontier.Inlinks), whether its URL is new or
// already seen, so that a queued URL moves up as its count grows. The
// count is never written to the queue's records: a host's in-memory
// window is re-ranked from the sketch each time the host is served, and
// the host's best count (the most in-links among its window, a seed
// above all) orders the hosts that are ready. So a link costs one sketch
// update and no store write, and the queue's memory stays bounded by
// HostWindow and MemoryWindow, with the rest spilled to the store in
// discovery order as with OrderFIFO; a spilled entry is ranked when a
// refill brings it into the window.

// DefaultInlinksHostWindow is Options.HostWindow's default with
// OrderInlinks: the entries of one host among which the most linked-to is
// chosen. A serve reads each one's count from the sketch (about 10 ns
// each).
const DefaultInlinksHostWindow = 256

// seedRank ranks seeds above every count.
const seedRank = math.MaxUint32

// countKey is the sketch's key of a canonical URL.
func countKey(canonical string) uint64 { return xxh3.HashString(canonical) }

// rankLocked returns e's rank: its estimated in-links, seedRank for a
// seed (no Via).
func (f *Frontier) rankOf(e *Entry) uint32 {
	if e.Via == "" {
		return seedRank
	}
	return f.counts.CountHash(countKey(e.URL))
}

// takeBestLocked removes and returns the entry of h's window with the
// highest rank (the oldest among equals), and sets h.best to the highest
// rank of those left.
func (f *Frontier) takeBestLocked(h *host) Entry {
	keys := make([]uint64, 0, len(h.window))
	seeds := 0
	for i := range h.window {
		if h.window[i].Via == "" {
			seeds++
		}
		keys = append(keys, countKey(h.window[i].URL))
	}
	ranks := make([]uint32, len(keys))
	f.counts.CountHashes(keys, ranks)
	best, second := -1, uint32(0)
	for i := range h.window {
		r := ranks[i]
		if h.window[i].Via == "" {
			r = seedRank
		}
		ranks[i] = r
		switch {
		case best < 0:
			best = i
		case r > ranks[best]:
			second = max(second, ranks[best])
			best = i
		default:
			second = max(second, r)
		}
	}
	e := h.window[best]
	h.window = slices.Delete(h.window, best, best+1)
	if len(h.window) == 0 {
		h.window = nil
		second = 0
	}
	h.best = second
	return e
}

// bumpLocked raises h's best rank to r, reordering the ready hosts.
func (f *Frontier) bumpLocked(h *host, r uint32) {
	if r <= h.best {
		return
	}
	h.best = r
	if h.pindex >= 0 {
		heap.Fix(&f.prio, h.pindex)
	}
}

// unreadyLocked takes h out of whichever ready heap holds it.
func (f *Frontier) unreadyLocked(h *host) {
	if h.index >= 0 {
		heap.Remove(&f.ready, h.index)
	}
	if h.pindex >= 0 {
		heap.Remove(&f.prio, h.pindex)
	}
}

// readyCount is the number of hosts waiting to be served, ready or not.
func (f *Frontier) readyCount() int { return len(f.ready) + len(f.prio) }

// nextInlinksLocked is nextLocked's choice of host with OrderInlinks: the
// hosts whose delay has passed move from the ready-time heap to the
// count heap, and the one with the highest best rank is served.
func (f *Frontier) nextInlinksLocked(now time.Time) (e Entry, wait time.Duration, done bool, err error) {
	for len(f.ready) > 0 && !f.ready[0].at().After(now) {
		h := heap.Pop(&f.ready).(*host)
		heap.Push(&f.prio, h)
	}
	for len(f.prio) > 0 {
		h := f.prio[0]
		if h.at().After(now) {
			// A host whose queue emptied while it waited here, with
			// only retries not due yet.
			heap.Pop(&f.prio)
			heap.Push(&f.ready, h)
			continue
		}
		e, err := f.popLocked(h, now)
		return e, 0, true, err
	}
	if len(f.ready) > 0 {
		return Entry{}, f.ready[0].at().Sub(now), false, nil
	}
	return Entry{}, -1, false, nil
}

// prioHeap orders the ready hosts by best rank, then by when they were
// last served (round-robin among equals).
type prioHeap []*host

func (q prioHeap) Len() int { return len(q) }
func (q prioHeap) Less(i, j int) bool {
	if q[i].best != q[j].best {
		return q[i].best > q[j].best
	}
	return q[i].served < q[j].served
}
func (q prioHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].pindex = i
	q[j].pindex = j
}
func (q *prioHeap) Push(x any) {
	h := x.(*host)
	h.pindex = len(*q)
	*q = append(*q, h)
}
func (q *prioHeap) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	h.pindex = -1
	*q = old[:len(old)-1]
	return h
}

// pageCounts collects the distinct link targets of one page.
type pageCounts struct {
	keys  []uint64
	hosts []string // the target's host when it was resolved here, else ""
}

func (p *pageCounts) add(key uint64, host string) {
	p.keys = append(p.keys, key)
	p.hosts = append(p.hosts, host)
}

// hostBump is a host whose queue may hold a URL whose count rose.
type hostBump struct {
	host  string
	count uint32
}

// count adds one in-link to each distinct target (a page linking twice to
// a URL counts once) and returns the hosts to bump.
func (f *Frontier) countLinks(p *pageCounts) []hostBump {
	if len(p.keys) == 0 {
		return nil
	}
	idx := make([]int, len(p.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		ka, kb := p.keys[a], p.keys[b]
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return strings.Compare(p.hosts[b], p.hosts[a]) // a known host first
	})
	keys := make([]uint64, 0, len(idx))
	hosts := make([]string, 0, len(idx))
	for _, i := range idx {
		if n := len(keys); n > 0 && keys[n-1] == p.keys[i] {
			continue
		}
		keys = append(keys, p.keys[i])
		hosts = append(hosts, p.hosts[i])
	}
	counts := make([]uint32, len(keys))
	f.counts.AddHashes(keys, counts)
	var bumps []hostBump
	for i, h := range hosts {
		if h != "" {
			bumps = append(bumps, hostBump{h, counts[i]})
		}
	}
	return bumps
}

// canonCache remembers the count key of the links the link cache holds,
// under the same keys, so that a link the link cache lets skip
// resolution is still counted: a direct-mapped table, locked in stripes.
// A collision forgets the older entry (the link is then resolved again).
type canonCache struct {
	stripes [64]sync.Mutex // stripe i protects the slots whose index is i mod 64
	slots   []canonSlot
	mask    uint64
}

type canonSlot struct{ key, count uint64 }

// canonCacheBits sizes the cache: 2^18 slots, 4 MiB.
const canonCacheBits = 18

func newCanonCache(bits uint) *canonCache {
	n := uint64(1) << bits
	return &canonCache{slots: make([]canonSlot, n), mask: n - 1}
}

func (c *canonCache) get(k uint64) (uint64, bool) {
	i := k & c.mask
	mu := &c.stripes[i%64]
	mu.Lock()
	s := c.slots[i]
	mu.Unlock()
	return s.count, s.key == k
}

func (c *canonCache) put(k, count uint64) {
	i := k & c.mask
	mu := &c.stripes[i%64]
	mu.Lock()
	c.slots[i] = canonSlot{k, count}
	mu.Unlock()
}

// Inlinks returns the sketch of in-link counts of OrderInlinks, nil with
// OrderFIFO. The caller may persist it (MarshalBinary) beside the
// seen-set's snapshot and pass it back in Options.Inlinks on resume; it is
// safe to marshal while the frontier runs.
func (f *Frontier) Inlinks() *countmin.Sketch { return f.counts }
