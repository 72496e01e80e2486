package frontier

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/layercrawl/layercrawl/mlbf"
)

// Defaults of Limits fields, applied by EnsureDefaults to zero fields.
const (
	// DefaultMaxURLLength is the longest canonical URL queued, in bytes:
	// the de facto limit of browsers and of Heritrix (2083).
	DefaultMaxURLLength = 2083
	// DefaultMaxPathSegments is the most path segments (layers below the
	// host) of a queued URL, as Heritrix's TooManyPathSegmentsDecideRule.
	DefaultMaxPathSegments = 20
	// DefaultMaxSegmentRepeats is how often one path segment may occur in
	// a path: "/a/a/" passes, "/a/a/a/" is a trap (Heritrix's
	// PathologicalPathDecideRule allows two repetitions too).
	DefaultMaxSegmentRepeats = 2
	// DefaultMaxHostURLs is the per-host budget: the most URLs of one
	// host queued in one run.
	DefaultMaxHostURLs = 100_000
	// DefaultMaxChildren is the most distinct children of one prefix
	// queued in one run (see Limits.MaxChildren).
	DefaultMaxChildren = 10_000
	// DefaultSketchWidth is the number of counters in each of the
	// sketch's rows.
	DefaultSketchWidth = 1 << 16
	// DefaultPrefixes is the number of distinct prefixes the prefix
	// filter is sized for (at 1% false positives: about 4.6 MiB).
	DefaultPrefixes = 4_000_000
)

// sketchRows is the number of rows (independent hashes) of the counting
// sketch.
const sketchRows = 4

// ErrInvalidLimits is wrapped by the error of Limits.Validate.
var ErrInvalidLimits = fmt.Errorf("%w: limits", ErrInvalidOptions)

// Limits are the frontier's defences against crawler traps: static checks
// of a URL's shape, and per-run counts of what one host or one prefix has
// had queued. A zero field takes its default; a negative one turns the
// check off. They apply to discovered links and redirect targets, never to
// seeds (a seed is the operator's choice, and seeds are not counted
// either: a frontier fed only seeds pays nothing), and run after the scope and
// --allow/--deny checks and before the seen-set's TestAndAdd, so that a
// refused URL is never marked seen and is refused again (and counted
// again) each time it is discovered.
type Limits struct {
	// MaxURLLength refuses canonical URLs longer than this many bytes
	// (ever-longer URLs). Default DefaultMaxURLLength.
	MaxURLLength int
	// MaxPathSegments refuses URLs with more path segments (ever-deeper
	// paths). Default DefaultMaxPathSegments.
	MaxPathSegments int
	// MaxSegmentRepeats refuses a path in which one segment (query left
	// out) occurs more than this many times: the relative link "a/" on
	// page "/a/" gives "/a/a/", then "/a/a/a/". Default
	// DefaultMaxSegmentRepeats.
	MaxSegmentRepeats int
	// MaxHostURLs is the per-host budget: the most URLs of one host
	// (host[:port]) queued in one run. Default DefaultMaxHostURLs.
	MaxHostURLs int
	// MaxChildren is the most distinct children one prefix of the
	// seen-set's layers may gain in one run. The layers of a URL are its
	// host, then each path segment, then its query (so the query
	// variants of a path are that path's children); a URL whose path
	// would add a new child to a prefix that already has MaxChildren is
	// refused. A calendar (?d=N linking to N+1), a session id in the path
	// and a generated name per link make one prefix's children explode
	// while each URL looks ordinary. A site with more than this many pages
	// in one directory (a wiki's /wiki/) needs it raised. Default
	// DefaultMaxChildren.
	MaxChildren int
	// SketchWidth is the number of counters per row of the counting
	// sketch behind MaxHostURLs and MaxChildren (4 rows of 4-byte
	// counters: 1 MiB by default, whatever the crawl's size). Default
	// DefaultSketchWidth; rounded up to a power of two.
	SketchWidth int
	// Prefixes is how many distinct prefixes the Bloom filter that tells
	// a new child from a known one is sized for, at 1% false positives.
	// Past it the filter errs towards "known", so MaxChildren refuses
	// later, never earlier. Default DefaultPrefixes.
	Prefixes uint64
}

// EnsureDefaults sets every zero field of l to its default.
func (l *Limits) EnsureDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxURLLength, DefaultMaxURLLength)
	def(&l.MaxPathSegments, DefaultMaxPathSegments)
	def(&l.MaxSegmentRepeats, DefaultMaxSegmentRepeats)
	def(&l.MaxHostURLs, DefaultMaxHostURLs)
	def(&l.MaxChildren, DefaultMaxChildren)
	def(&l.SketchWidth, DefaultSketchWidth)
	if l.Prefixes == 0 {
		l.Prefixes = DefaultPrefixes
	}
}

// Validate reports whether l can be used. It expects EnsureDefaults to
// have run.
func (l *Limits) Validate() error {
	if l.SketchWidth < 1 || l.SketchWidth > 1<<26 {
		return fmt.Errorf("%w: SketchWidth %d not in [1, 2^26]", ErrInvalidLimits, l.SketchWidth)
	}
	if l.Prefixes > 1<<32 {
		return fmt.Errorf("%w: Prefixes %d above 2^32", ErrInvalidLimits, l.Prefixes)
	}
	return nil
}

// LimitStats counts the URLs each limit refused in this run.
type LimitStats struct {
	TooLong         uint64 // longer than MaxURLLength
	TooManySegments uint64 // more than MaxPathSegments
	RepeatedSegment uint64 // a segment more than MaxSegmentRepeats times
	HostBudget      uint64 // host over MaxHostURLs
	TooManyChildren uint64 // prefix over MaxChildren
}

// Total returns the sum of the counters.
func (s LimitStats) Total() uint64 {
	return s.TooLong + s.TooManySegments + s.RepeatedSegment + s.HostBudget + s.TooManyChildren
}

// refusal says which limit refused a URL.
type refusal uint8

const (
	admit refusal = iota
	refuseLength
	refuseSegments
	refuseRepeat
	refuseHostBudget
	refuseChildren
)

// traps applies Limits. Counts are kept in a count-min sketch with
// conservative update (Estan and Varghese), and whether a prefix is a new
// child in a classic Bloom filter, so memory stays fixed however many
// hosts and prefixes a crawl meets. The sketch never under-estimates a
// count, so a collision can only refuse early; the Bloom filter's false
// positives take a new child for a known one, so they can only refuse
// late.
type traps struct {
	lim  Limits
	seed maphash.Seed
	mask uint64

	counting bool // MaxHostURLs or MaxChildren is on

	mu    sync.Mutex    // protects cells and known
	cells []uint32      // sketchRows rows of mask+1 counters
	known *mlbf.Classic // prefixes seen, nil without MaxChildren

	refused [refuseChildren + 1]atomic.Uint64 // by refusal
}

func newTraps(l Limits) *traps {
	w := uint64(1)
	for w < uint64(l.SketchWidth) {
		w <<= 1
	}
	return &traps{lim: l, seed: maphash.MakeSeed(), mask: w - 1, counting: l.MaxHostURLs > 0 || l.MaxChildren > 0}
}

// allocLocked makes the sketch and the prefix filter on first use.
func (t *traps) allocLocked() {
	if t.cells != nil {
		return
	}
	t.cells = make([]uint32, sketchRows*(t.mask+1))
	if t.lim.MaxChildren > 0 {
		// Validate bounds Prefixes, so sizing cannot fail.
		t.known, _ = mlbf.NewClassicFor(max(t.lim.Prefixes, 1), 0.01)
	}
}

// prefixes returns the layers' prefixes of canon, shortest first, ending
// with canon itself: segs are the seen-set's layers (host first), whose
// join with "/" is canon. A query is one layer below its path, so the
// query variants of a path are its children.
func prefixes(dst []string, canon string, segs []string) []string {
	if !joinsTo(segs, canon) {
		// Segments are substrings of canon in every Normalizer the
		// frontier is given; be safe with one that differs.
		canon = strings.Join(segs, "/")
	}
	end := -1
	for i, seg := range segs {
		if i == len(segs)-1 {
			if q := strings.IndexByte(seg, '?'); q >= 0 {
				dst = append(dst, canon[:end+1+q])
			}
		}
		end += 1 + len(seg)
		dst = append(dst, canon[:end])
	}
	return dst
}

// joinsTo reports whether segs joined with "/" give canon, without
// building the join.
func joinsTo(segs []string, canon string) bool {
	pos := 0
	for i, seg := range segs {
		if i > 0 {
			if pos >= len(canon) || canon[pos] != '/' {
				return false
			}
			pos++
		}
		if !strings.HasPrefix(canon[pos:], seg) {
			return false
		}
		pos += len(seg)
	}
	return pos == len(canon)
}

// check reports which limit, if any, refuses canon; it counts the refusal.
func (t *traps) check(canon, host string, segs []string) refusal {
	r := t.shape(canon, segs)
	if r == admit && t.counting {
		var buf [24]string
		ps := prefixes(buf[:0], canon, segs)
		t.mu.Lock()
		t.allocLocked()
		if t.lim.MaxHostURLs > 0 && t.estimateLocked(hostKey(host)) >= uint64(t.lim.MaxHostURLs) {
			r = refuseHostBudget
		}
		if r == admit && t.known != nil {
			// Adding canon makes a new child of each prefix whose
			// child on canon's path is new.
			for d := 0; d+1 < len(ps); d++ {
				if !t.known.TestString(ps[d+1]) && t.estimateLocked(ps[d]) >= uint64(t.lim.MaxChildren) {
					r = refuseChildren
					break
				}
			}
		}
		t.mu.Unlock()
	}
	if r != admit {
		t.refused[r].Add(1)
	}
	return r
}

func hostKey(host string) string { return "\x00host\x00" + host }

// shape runs the checks that need no counting.
func (t *traps) shape(canon string, segs []string) refusal {
	if t.lim.MaxURLLength > 0 && len(canon) > t.lim.MaxURLLength {
		return refuseLength
	}
	path := segs
	if len(path) > 0 {
		path = path[1:] // the host layer
	}
	// A trailing slash ends the path with an empty segment; it adds no
	// depth ("http://h/" has none).
	n := len(path)
	if n > 0 && path[n-1] == "" {
		n--
	}
	if t.lim.MaxPathSegments > 0 && n > t.lim.MaxPathSegments {
		return refuseSegments
	}
	if t.lim.MaxSegmentRepeats > 0 && len(path) > t.lim.MaxSegmentRepeats {
		if repeated(path, t.lim.MaxSegmentRepeats) {
			return refuseRepeat
		}
	}
	return admit
}

// repeated reports whether a non-empty segment (query left out) occurs
// more than max times. Paths are short (MaxPathSegments), so the quadratic
// scan beats a map.
func repeated(path []string, max int) bool {
	strip := func(s string) string {
		if i := strings.IndexByte(s, '?'); i >= 0 {
			return s[:i]
		}
		return s
	}
	for i, s := range path {
		s = strip(s)
		if s == "" {
			continue
		}
		n := 1
		for _, o := range path[i+1:] {
			if strip(o) == s {
				if n++; n > max {
					return true
				}
			}
		}
	}
	return false
}

// added counts a URL the seen-set reported new and that was queued.
func (t *traps) added(canon, host string, segs []string) {
	if !t.counting {
		return
	}
	var buf [24]string
	ps := prefixes(buf[:0], canon, segs)
	t.mu.Lock()
	t.allocLocked()
	t.incrementLocked(hostKey(host))
	if t.known != nil {
		for d := 0; d+1 < len(ps); d++ {
			if !t.known.TestAndAddString(ps[d+1]) {
				t.incrementLocked(ps[d])
			}
		}
	}
	t.mu.Unlock()
}

// indexes returns key's cell in each row. One 64-bit hash gives two
// 32-bit halves; rows combine them as h1 + row*h2 (Kirsch and
// Mitzenmacher).
func (t *traps) indexes(key string) (idx [sketchRows]uint64) {
	h := maphash.String(t.seed, key)
	h1, h2 := h&0xffffffff, (h>>32)|1
	for r := range idx {
		idx[r] = uint64(r)*(t.mask+1) + ((h1 + uint64(r)*h2) & t.mask)
	}
	return idx
}

func (t *traps) estimateLocked(key string) uint64 {
	min := uint32(1<<32 - 1)
	for _, i := range t.indexes(key) {
		if c := t.cells[i]; c < min {
			min = c
		}
	}
	return uint64(min)
}

// incrementLocked adds one to key's count with conservative update: only
// the rows holding the minimum grow, which keeps over-estimates small.
func (t *traps) incrementLocked(key string) {
	idx := t.indexes(key)
	min := uint32(1<<32 - 1)
	for _, i := range idx {
		if c := t.cells[i]; c < min {
			min = c
		}
	}
	if min == 1<<32-1 {
		return
	}
	for _, i := range idx {
		if t.cells[i] == min {
			t.cells[i]++
		}
	}
}

func (t *traps) snapshot() LimitStats {
	return LimitStats{
		TooLong:         t.refused[refuseLength].Load(),
		TooManySegments: t.refused[refuseSegments].Load(),
		RepeatedSegment: t.refused[refuseRepeat].Load(),
		HostBudget:      t.refused[refuseHostBudget].Load(),
		TooManyChildren: t.refused[refuseChildren].Load(),
	}
}
