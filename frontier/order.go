package frontier

import (
	"cmp"
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
// refill brings it into the window. The window slides: once a serve leaves
// it an eighth short (topUpLevel), the entries that follow it in the
// queue fill it up again, so that the candidates are always about the
// first HostWindow of the host's queue.

// DefaultInlinksHostWindow is Options.HostWindow's default with
// OrderInlinks: the entries of one host among which the most linked-to is
// chosen. A serve scans their ranks in memory (a few ns each). On the
// issue 34 web (100,000 pages, 200 hosts of Zipf sizes, a budget of
// 10,000), the frontier driven in rounds of 32 fetches the top 1% by
// in-degree at 0.91 with 256 and 0.99 with 1,024, as with no bound.
const DefaultInlinksHostWindow = 1024

// topUpLevel is the length at or below which the window of a host whose
// queue spilled is topped up from the store after a serve: an eighth of
// the window below full (each serve below a window of 8), so that a
// refill reads at least window/8 entries in one pass of the store.
func topUpLevel(window int) int { return window - max(window/8, 1) }

// InlinksKeysPerPage is how many distinct link targets a fetched page is
// taken to count, to size the default sketch of a crawl capped at
// Options.MaxPages (InlinksSketchShape).
const InlinksKeysPerPage = 100

// InlinksSketchShape returns the shape of the default in-link sketch of a
// frontier with the given Options.ExpectedURLs and MaxPages:
// countmin.Estimate of ExpectedURLs, or of MaxPages × InlinksKeysPerPage
// when that is less. A capped crawl counts the links of at most MaxPages
// pages, so a sketch for the default 10 million URLs (32 MiB) is mostly
// counters no key reaches, yet every count misses the caches across it,
// and the whole is written at each checkpoint. A resumed crawl keeps the
// sketch it saved, whatever its new MaxPages.
func InlinksSketchShape(expectedURLs uint64, maxPages int64) (rows, width int) {
	n := expectedURLs
	if maxPages > 0 && uint64(maxPages) < n/InlinksKeysPerPage {
		n = uint64(maxPages) * InlinksKeysPerPage
	}
	return countmin.Estimate(n)
}

// seedRank ranks seeds above every count.
const seedRank = math.MaxUint32

// countKey is the sketch's key of a canonical URL.
func countKey(canonical string) uint64 { return xxh3.HashString(canonical) }

// rankLocked sets e's count key and rank, as it enters h's window (the
// caller appends it), and raises h's best rank to it.
func (f *Frontier) rankLocked(h *host, e *Entry) {
	e.ck = countKey(e.URL)
	if e.Via == "" {
		e.rank = seedRank
	} else {
		e.rank = f.counts.CountHash(e.ck)
	}
	if h.pos == nil {
		h.pos = map[uint64]int{}
	}
	h.pos[e.ck] = len(h.window)
	h.best = max(h.best, e.rank)
}

// placeLocked puts back in h's window an entry that was ranked before.
func (f *Frontier) placeLocked(h *host, e Entry) {
	if h.pos == nil {
		h.pos = map[uint64]int{}
	}
	h.pos[e.ck] = len(h.window)
	h.window = append(h.window, e)
	h.best = max(h.best, e.rank)
}

// takeBestLocked removes and returns the entry of h's window with the
// highest rank (the oldest among equals), and sets h.best to the highest
// rank of those left. The ranks are kept up to date by bumpLocked, so this
// is one scan of memory, without the sketch; the window's order does not
// matter (the last entry fills the hole).
func (f *Frontier) takeBestLocked(h *host) Entry {
	w := h.window
	best := 0
	var next uint32 // the highest rank but w[best]'s
	for i := 1; i < len(w); i++ {
		if w[i].rank > w[best].rank || w[i].rank == w[best].rank && w[i].seq < w[best].seq {
			next = max(next, w[best].rank)
			best = i
		} else {
			next = max(next, w[i].rank)
		}
	}
	e := w[best]
	if h.pos[e.ck] == best {
		delete(h.pos, e.ck)
	}
	last := len(w) - 1
	if best != last {
		w[best] = w[last]
		h.pos[w[best].ck] = best
	}
	w[last] = Entry{}
	h.window = w[:last]
	h.best = next
	if len(h.window) == 0 {
		h.window, h.pos = nil, nil
	}
	return e
}

// bumpLocked records that the URL with count key ck, on host h, has
// count in-links now: if it is in h's window, its rank rises, and so may
// h's place among the ready hosts. A URL in the spilled part of the queue
// is ranked when a refill reads it.
func (f *Frontier) bumpLocked(h *host, ck uint64, count uint32) {
	i, ok := h.pos[ck]
	if !ok || i >= len(h.window) || h.window[i].ck != ck || h.window[i].rank >= count {
		return // not in the window (or, defensively, a stale index)
	}
	h.window[i].rank = count
	if count > h.best {
		h.best = count
		if h.pindex >= 0 {
			heap.Fix(&f.prio, h.pindex)
		}
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

// pageCounts collects the link targets of one page.
type pageCounts struct {
	links []pageLink
}

type pageLink struct {
	key  uint64 // countKey of the target
	host string // the target's host when known, else ""
}

func (p *pageCounts) add(key uint64, host string) {
	p.links = append(p.links, pageLink{key, host})
}

// hostBump is a URL whose count rose, with its host.
type hostBump struct {
	host  string
	key   uint64 // countKey of the URL
	count uint32
}

// countLinks adds one in-link to each distinct target (a page linking
// twice to a URL counts once) and returns the targets whose host is
// known, with their new counts, for applyLocked to re-rank.
func (f *Frontier) countLinks(p *pageCounts) []hostBump {
	if len(p.links) == 0 {
		return nil
	}
	slices.SortFunc(p.links, func(a, b pageLink) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return strings.Compare(b.host, a.host) // a known host first
	})
	p.links = slices.CompactFunc(p.links, func(a, b pageLink) bool { return a.key == b.key })
	keys := make([]uint64, len(p.links))
	for i, l := range p.links {
		keys[i] = l.key
	}
	counts := make([]uint32, len(keys))
	f.counts.AddHashes(keys, counts)
	bumps := make([]hostBump, 0, len(keys))
	for i, l := range p.links {
		if l.host != "" {
			bumps = append(bumps, hostBump{l.host, l.key, counts[i]})
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

type canonSlot struct {
	key, count uint64
	host       string
}

// canonCacheBits sizes the cache: 2^18 slots of 32 bytes, 8 MiB (and
// the host names, shared with the queue's).
const canonCacheBits = 18

func newCanonCache(bits uint) *canonCache {
	n := uint64(1) << bits
	return &canonCache{slots: make([]canonSlot, n), mask: n - 1}
}

func (c *canonCache) get(k uint64) (count uint64, host string, ok bool) {
	i := k & c.mask
	mu := &c.stripes[i%64]
	mu.Lock()
	s := c.slots[i]
	mu.Unlock()
	return s.count, s.host, s.key == k
}

func (c *canonCache) put(k, count uint64, host string) {
	i := k & c.mask
	mu := &c.stripes[i%64]
	mu.Lock()
	c.slots[i] = canonSlot{k, count, host}
	mu.Unlock()
}

// Inlinks returns the sketch of in-link counts of OrderInlinks, nil with
// OrderFIFO. The caller may persist it (MarshalBinary) beside the
// seen-set's snapshot and pass it back in Options.Inlinks on resume; it is
// safe to marshal while the frontier runs.
func (f *Frontier) Inlinks() *countmin.Sketch { return f.counts }
