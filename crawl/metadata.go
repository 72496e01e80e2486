package crawl

import (
	"crypto/tls"
	"net/url"
	"strings"
	"unsafe"

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
func pageMetadata(ent frontier.Entry, res *fetch.Result) []byte {
	b := metadataHead(ent, res)
	if b == nil {
		return nil
	}
	refs := newPageRefs(res.Base)
	var line []byte
	for _, l := range res.Links {
		var ok bool
		if line, ok = refs.appendResolved(line[:0], l.Href); !ok {
			continue // not a URL: it never reaches the frontier either
		}
		hop := l.Hop
		if hop == 0 {
			hop = fetch.HopLink
		}
		line = append(append(append(append(line, ' '), byte(hop)), ' '), l.Context...)
		// AppendWARCField copies line before it is written again.
		b = storage.AppendWARCField(b, "outlink", unsafe.String(unsafe.SliceData(line), len(line)))
	}
	return b
}

// metadataHead starts the metadata block of an HTML page with its via,
// hop path and TLS version and cipher suite (https), room made for its outlinks; nil for anything else.
func metadataHead(ent frontier.Entry, res *fetch.Result) []byte {
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
	if t := res.TLS; t != nil {
		// The connection the page came over, as the response record
		// (plaintext bytes) cannot say.
		b = storage.AppendWARCField(b, "tlsVersion", tls.VersionName(t.Version))
		b = storage.AppendWARCField(b, "tlsCipherSuite", tls.CipherSuiteName(t.CipherSuite))
	}
	return b
}

// pageRefs resolves the references of one page as url.URL.Parse on its
// base does, and gives the same strings. The references most pages are
// made of, a relative path of plain characters ("ch01.html",
// "../api/fs.html#fs_stat", "./x/") or a fragment alone ("#top"), are
// joined to a prefix that Parse gave once for the page, which halves the
// time of a page's metadata record (6% of a crawl's CPU with Parse for
// every reference; BenchmarkPageMetadata, docs/BENCHMARKS.md). Any other
// reference goes through Parse.
type pageRefs struct {
	base *url.URL // nil: references are kept as they are
	dir  string   // "x" resolved, without the "x"; "" when not used
	path int      // where dir's path starts
	self string   // "#x" resolved, without the "x"; "" when not used
}

func newPageRefs(base *url.URL) pageRefs {
	r := pageRefs{base: base}
	if base == nil || base.Opaque != "" || base.Host == "" {
		return r
	}
	if u, err := base.Parse("x"); err == nil {
		s, p := u.String(), u.EscapedPath()
		if strings.HasSuffix(s, "/x") && strings.HasSuffix(p, "/x") {
			r.dir, r.path = s[:len(s)-1], len(s)-len(p)
		}
	}
	if u, err := base.Parse("#x"); err == nil {
		if s := u.String(); strings.HasSuffix(s, "#x") {
			r.self = s[:len(s)-1]
		}
	}
	return r
}

// appendResolved appends ref resolved to dst, or reports false when it is
// not a URL.
func (r *pageRefs) appendResolved(dst []byte, ref string) ([]byte, bool) {
	if r.base == nil {
		return append(dst, ref...), true
	}
	if out, ok := r.join(dst, ref); ok {
		return out, true
	}
	u, err := r.base.Parse(ref)
	if err != nil {
		return dst, false
	}
	return append(dst, u.String()...), true
}

// join appends a plain reference resolved by joining strings; false for
// any other, left to url.URL.Parse.
func (r *pageRefs) join(dst []byte, ref string) ([]byte, bool) {
	if frag, ok := strings.CutPrefix(ref, "#"); ok {
		if r.self == "" || frag == "" || !plain(frag, false) {
			return dst, false
		}
		return append(append(dst, r.self...), frag...), true
	}
	if r.dir == "" {
		return dst, false
	}
	path, frag, hasFrag := strings.Cut(ref, "#")
	if hasFrag && (frag == "" || !plain(frag, false)) {
		return dst, false
	}
	dir := r.dir
	for {
		if rest, ok := strings.CutPrefix(path, "./"); ok {
			path = rest
			continue
		}
		if rest, ok := strings.CutPrefix(path, "../"); ok {
			// Up one directory; at the root, stay there.
			if i := strings.LastIndexByte(dir[:len(dir)-1], '/'); i >= r.path {
				dir = dir[:i+1]
			}
			path = rest
			continue
		}
		break
	}
	if path == "" || path[0] == '/' || !plain(path, true) || hasDotSegment(path) {
		return dst, false
	}
	dst = append(append(dst, dir...), path...)
	if hasFrag {
		dst = append(append(dst, '#'), frag...)
	}
	return dst, true
}

// plain reports whether s holds only ASCII letters, digits, "-", ".",
// "_", "~" and, if slash, "/": characters that url.URL.String writes as
// they are, in a path and in a fragment.
func plain(s string, slash bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/' && slash:
		default:
			return false
		}
	}
	return true
}

// hasDotSegment reports whether a path has a "." or ".." segment, or an
// empty one ("a//b"), which resolution would rewrite.
func hasDotSegment(path string) bool {
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return strings.Contains(path, "//")
}
