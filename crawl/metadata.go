package crawl

import (
	"net/url"
	"strings"
	"sync"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// pageMetadata returns the block of the WARC metadata record of an HTML
// page (nil for anything else), as Heritrix writes it: the page's via and
// hop path, then one line per outlink and requisite extracted, in
// document order, "outlink: URL HOP CONTEXT" (for example
// "outlink: http://a.test/x L a/@href", or "... E img/@src"), the URL
// resolved against the page's base but not normalized. Links that
// OnPage or a Collector add or remove later are not in it.
// The resolution is memoized across pages by r (nil: none).
func pageMetadata(ent frontier.Entry, res *fetch.Result, r *outlinkResolver) []byte {
	if res.Status < 200 || res.Status >= 300 || !fetch.IsHTML(res.ContentType, res.Body) {
		return nil
	}
	b := make([]byte, 0, 64+len(res.Links)*80)
	if ent.Via != "" {
		b = storage.AppendWARCField(b, "via", ent.Via)
	}
	if ent.Hops != "" {
		b = storage.AppendWARCField(b, "hopsFromSeed", ent.Hops)
	}
	var line []byte
	var keys resolveKeys
	if res.Base != nil {
		keys = newResolveKeys(res.Base)
	}
	for _, l := range res.Links {
		target := l.Href
		if res.Base != nil {
			var ok bool
			if target, ok = r.resolve(res.Base, keys, l.Href); !ok {
				continue // not a URL: it never reaches the frontier either
			}
		}
		hop := l.Hop
		if hop == 0 {
			hop = fetch.HopLink
		}
		line = append(append(append(append(append(line[:0], target...), ' '), byte(hop)), ' '), l.Context...)
		b = storage.AppendWARCField(b, "outlink", string(line))
	}
	return b
}

// outlinkResolver resolves references against pages' base URLs as
// url.URL.Parse does, remembering the results across pages: the pages of
// one directory share most of their links (navigation, stylesheets), and
// the resolution, a parse and a String per outlink, was 3% of a crawl's
// CPU on the documentation sites of docs/BENCHMARKS.md. A reference with
// a path of its own resolves from the base's scheme, user, host and path
// up to its last "/" (RFC 3986 section 5.2.3, and url.URL.ResolveReference),
// so the results are keyed by that prefix and the reference; one that may
// have none (empty, "?query", "#fragment", "//authority") by the whole
// base. It is safe for
// concurrent use, and its memory is bounded (maxResolved, maxResolvedBytes).
type outlinkResolver struct {
	mu    sync.Mutex // guards m and bytes
	m     map[resolveKey]resolved
	bytes int // of the strings in m, counting a shared base per entry
}

// maxResolved and maxResolvedBytes bound outlinkResolver's memory (about
// 12 MiB with the map's own): when either is reached it starts again
// empty. Hostile pages of long URLs reach the second first.
const (
	maxResolved      = 1 << 16
	maxResolvedBytes = 8 << 20
)

type resolveKey struct{ base, ref string }

type resolved struct {
	url string
	ok  bool
}

// resolveKeys are one base URL's two keys: its directory prefix and the
// whole URL. Both are empty when the base cannot be keyed (opaque).
type resolveKeys struct{ dir, full string }

func newResolveKeys(base *url.URL) resolveKeys {
	if base.Opaque != "" {
		return resolveKeys{}
	}
	p := base.EscapedPath()
	dir := base.Scheme + "://"
	if base.User != nil {
		dir += base.User.String() + "@"
	}
	dir += base.Host + p[:strings.LastIndexByte(p, '/')+1]
	return resolveKeys{dir: dir, full: base.String()}
}

// resolve returns ref resolved against base and written as a string, and
// false when ref does not parse. keys are base's.
func (r *outlinkResolver) resolve(base *url.URL, keys resolveKeys, ref string) (string, bool) {
	if r == nil || keys.dir == "" {
		return resolveRef(base, ref)
	}
	k := resolveKey{keys.dir, ref}
	if ref == "" || ref[0] == '?' || ref[0] == '#' || strings.HasPrefix(ref, "//") {
		// No path of its own ("//" alone is an empty authority and path).
		k.base = keys.full
	}
	r.mu.Lock()
	v, hit := r.m[k]
	r.mu.Unlock()
	if hit {
		return v.url, v.ok
	}
	v.url, v.ok = resolveRef(base, ref)
	// The reference may share the page's memory (the extractor's strings
	// point into the body): the map keeps its own copy.
	k.ref = strings.Clone(ref)
	size := len(k.base) + len(k.ref) + len(v.url)
	r.mu.Lock()
	if len(r.m) >= maxResolved || r.bytes+size > maxResolvedBytes || r.m == nil {
		r.m = make(map[resolveKey]resolved, 1024)
		r.bytes = 0
	}
	if _, ok := r.m[k]; !ok {
		r.m[k] = v
		r.bytes += size
	}
	r.mu.Unlock()
	return v.url, v.ok
}

func resolveRef(base *url.URL, ref string) (string, bool) {
	u, err := base.Parse(ref)
	if err != nil {
		return "", false
	}
	return u.String(), true
}
