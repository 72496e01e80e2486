package urlnorm

import (
	"slices"
	"strings"
)

// rewrite applies the optional normalizations to a parsed URL, rebuilding
// its buffer from the components. Each step keeps the result a fixed point
// (rewriting the output again changes nothing).
func (n *Normalizer) rewrite(p *parsed) {
	b := p.buf
	out := p.scratch[:0]
	host := b[p.hostStart:p.hostEnd]
	out = append(out, b[:p.hostStart]...)
	if n.opts.FoldWWW && len(host) > 4 && string(host[:4]) == "www." {
		h := string(host)
		if full, err := RegistrableDomain(h); err == nil {
			if folded, err := RegistrableDomain(h[4:]); err == nil && folded == full {
				host = host[4:]
			}
		}
	}
	out = append(out, host...)
	out = append(out, b[p.hostEnd:p.portEnd]...)
	pathStart := len(out)
	out = n.rewritePath(out, string(b[p.portEnd:p.pathEnd]))
	if len(out) == pathStart {
		out = append(out, '/')
	}
	query := b[p.pathEnd:p.queryEnd]
	if len(query) > 0 {
		out = n.rewriteQuery(out, string(query[1:]))
	}
	out = append(out, b[p.queryEnd:]...)
	p.buf, p.scratch = out, b
}

// rewritePath appends path (which starts with '/') after the path options.
func (n *Normalizer) rewritePath(out []byte, path string) []byte {
	segs := strings.Split(path[1:], "/")
	if n.opts.RemoveSessionParams {
		for i, s := range segs {
			if strings.IndexByte(s, ';') < 0 {
				continue
			}
			r := n.dropPathParams(s)
			// Never create a "." or ".." segment: the next parse would
			// remove it, and the result would not be a fixed point.
			if !isSingleDot(r) && !isDoubleDot(r) {
				segs[i] = r
			}
		}
	}
	if n.opts.CollapseSlashes {
		// Empty segments are the runs of '/'; the last one is the trailing
		// slash and stays.
		kept := segs[:0]
		for i, s := range segs {
			if s != "" || i == len(segs)-1 {
				kept = append(kept, s)
			}
		}
		segs = kept
	}
	for changed := true; changed; {
		changed = false
		if n.opts.TrailingSlash == RemoveTrailingSlash {
			for len(segs) > 1 && segs[len(segs)-1] == "" {
				segs = segs[:len(segs)-1]
			}
		}
		if n.opts.RemoveDefaultPages && isDefaultPage(segs[len(segs)-1]) {
			segs[len(segs)-1] = ""
			// Removing trailing slashes may expose another default page:
			// "/index.html/index.html".
			changed = n.opts.TrailingSlash == RemoveTrailingSlash
		}
	}
	if n.opts.TrailingSlash == RemoveTrailingSlash && len(segs) == 1 && segs[0] == "" {
		segs = segs[:0]
	}
	if n.opts.TrailingSlash == AddTrailingSlash {
		if last := segs[len(segs)-1]; last != "" && strings.IndexByte(last, '.') < 0 {
			segs = append(segs, "")
		}
	}
	for _, s := range segs {
		out = append(out, '/')
		out = append(out, s...)
	}
	return out
}

func isDefaultPage(seg string) bool {
	for _, d := range DefaultPages() {
		if strings.EqualFold(seg, d) {
			return true
		}
	}
	return false
}

// dropPathParams removes ";name=value" parameters named in the session list
// from one path segment ("page;jsessionid=A1" -> "page").
func (n *Normalizer) dropPathParams(seg string) string {
	parts := strings.Split(seg, ";")
	kept := parts[:1]
	for _, p := range parts[1:] {
		if !n.isSessionParam(p) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ";")
}

// isSessionParam reports whether a "name=value" pair's name is in the list.
func (n *Normalizer) isSessionParam(pair string) bool {
	name := pair
	if i := strings.IndexByte(pair, '='); i >= 0 {
		name = pair[:i]
	}
	for _, s := range n.session {
		if prefix, ok := strings.CutSuffix(s, "*"); ok {
			if len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
				return true
			}
		} else if strings.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// rewriteQuery appends "?query" after the query options, or nothing when no
// pair is left.
func (n *Normalizer) rewriteQuery(out []byte, query string) []byte {
	if !n.opts.SortQuery && !n.opts.RemoveSessionParams {
		return append(append(out, '?'), query...)
	}
	pairs := strings.Split(query, "&")
	kept := pairs[:0]
	for _, p := range pairs {
		if n.opts.SortQuery && p == "" {
			continue
		}
		if n.opts.RemoveSessionParams && p != "" && n.isSessionParam(p) {
			continue
		}
		kept = append(kept, p)
	}
	if n.opts.SortQuery {
		slices.SortStableFunc(kept, func(a, b string) int {
			return strings.Compare(queryKey(a), queryKey(b))
		})
	}
	if len(kept) == 0 || len(kept) == 1 && kept[0] == "" {
		return out
	}
	out = append(out, '?')
	for i, p := range kept {
		if i > 0 {
			out = append(out, '&')
		}
		out = append(out, p...)
	}
	return out
}

func queryKey(pair string) string {
	if i := strings.IndexByte(pair, '='); i >= 0 {
		return pair[:i]
	}
	return pair
}
