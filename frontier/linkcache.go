package frontier

import (
	"strings"
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// linkCache remembers raw links (a page's base URL and an href as written)
// whose canonical URL is already in the seen-set, so that the next page
// carrying the same link skips resolution, normalization, the admission
// checks and the seen-set call: it would be a duplicate anyway. On real
// documentation sites about 87% of links are duplicates, and most of them
// are the same navigation links on many pages of one directory.
//
// The key is the link as written and the part of the base URL its
// resolution depends on: for a relative path ("a/b", "../c"), an absolute
// path or an absolute URL, the base up to the last '/' of its path (WHATWG
// resolution of a path never reads the base's last segment, query or
// fragment; a same-scheme "http:x" is a relative path); for a ref that is
// empty or starts with '?' or '#', the whole base. Keys are 64-bit hashes
// in a direct-mapped table of fixed size: a collision of two keys in one
// slot only forgets the older (a miss costs the normal path), and a false
// hit needs two different keys with equal 64-bit hashes.
//
// Only links that reached the seen-set are remembered, so a link refused
// once (too deep from that page, a host over its budget) is checked again
// when it shows up on another page. A linkCache is safe for concurrent
// use.
type linkCache struct {
	slots []atomic.Uint64
	mask  uint64
}

// linkCacheBits sizes a Frontier's link cache: 2^20 slots, 8 MiB.
const linkCacheBits = 20

// newLinkCache returns a cache of 2^bits slots (8 bytes each).
func newLinkCache(bits uint) *linkCache {
	n := uint64(1) << bits
	return &linkCache{slots: make([]atomic.Uint64, n), mask: n - 1}
}

// pageKeys computes the two base prefixes of one page's links once.
type pageKeys struct {
	dir  string // the base up to the last '/' of its path
	full string // the base without its fragment
}

func newPageKeys(base string) pageKeys {
	full := base
	if i := strings.IndexByte(full, '#'); i >= 0 {
		full = full[:i]
	}
	pathEnd := len(full)
	if i := strings.IndexByte(full, '?'); i >= 0 {
		pathEnd = i
	}
	dir := full[:pathEnd]
	// The path starts after "scheme://authority"; a base without a '/'
	// after its authority keeps its whole authority as the directory.
	start := 0
	if i := strings.Index(dir, "://"); i >= 0 {
		start = i + 3
	}
	if j := strings.LastIndexByte(dir[start:], '/'); j >= 0 {
		dir = dir[:start+j+1]
	}
	return pageKeys{dir: dir, full: full}
}

// key returns the cache key of href on the page.
func (p pageKeys) key(href string) uint64 {
	prefix := p.dir
	if dependsOnWholeBase(href) {
		prefix = p.full
	}
	h := xxh3.HashString(prefix) ^ xxh3.HashString(href)*0x9e3779b97f4a7c15
	if h == 0 {
		h = 1 // 0 marks an empty slot
	}
	return h
}

// dependsOnWholeBase reports whether href, once the URL parser has removed
// leading C0 controls and spaces and every tab and newline, is empty or
// starts with '?' or '#': such a reference resolves against the whole
// base, not only its directory.
func dependsOnWholeBase(href string) bool {
	for i := 0; i < len(href); i++ {
		switch c := href[i]; {
		case c == '\t' || c == '\n' || c == '\r' || c <= ' ':
			continue
		case c == '?' || c == '#':
			return true
		default:
			return false
		}
	}
	return true
}

func (c *linkCache) has(k uint64) bool { return c.slots[k&c.mask].Load() == k }
func (c *linkCache) add(k uint64)      { c.slots[k&c.mask].Store(k) }
