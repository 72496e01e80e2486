package urlnorm

import (
	"net"
	"slices"
	"strings"
	"sync"

	"golang.org/x/net/publicsuffix"
)

// Normalizer resolves, normalizes and segments URLs under one set of
// Options. It is safe for concurrent use; its zero value is not usable, call
// New.
type Normalizer struct {
	opts     Options // a copy; never modified after New
	ps       parser
	session  []string // lowercased session parameter names (RemoveSessionParams)
	optional bool     // some optional normalization rewrites the parse

	pool sync.Pool // of *parsed: reusable buffers, so Normalize allocates only its result
}

// New returns a Normalizer for opts (copied, then EnsureDefaults). It fails
// only when opts.Validate does, with an error wrapping ErrInvalidOptions.
func New(opts Options) (*Normalizer, error) {
	opts.SessionParams = slices.Clone(opts.SessionParams)
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	n := &Normalizer{opts: opts, ps: parser{mappedIPv4: opts.DecodeNumericHosts}}
	if opts.RemoveSessionParams {
		for _, s := range opts.SessionParams {
			n.session = append(n.session, strings.ToLower(s))
		}
	}
	n.optional = opts.SortQuery || opts.RemoveSessionParams || opts.CollapseSlashes ||
		opts.TrailingSlash != KeepTrailingSlash || opts.RemoveDefaultPages || opts.FoldWWW
	return n, nil
}

// Options returns a copy of the options the Normalizer was built with,
// defaults filled in (EnsureDefaults).
func (n *Normalizer) Options() Options {
	o := n.opts
	o.SessionParams = slices.Clone(o.SessionParams)
	return o
}

// maxPooled bounds the buffers kept for reuse, so one 64 KiB URL does not pin
// memory for the life of the process.
const maxPooled = 8 << 10

func (n *Normalizer) get() *parsed {
	if p, ok := n.pool.Get().(*parsed); ok {
		return p
	}
	return &parsed{buf: make([]byte, 0, 256)}
}

func (n *Normalizer) put(p *parsed) {
	if cap(p.buf) > maxPooled || cap(p.scratch) > maxPooled {
		return
	}
	n.pool.Put(p)
}

// Normalize parses raw as an absolute http or https URL with WHATWG (browser)
// semantics and returns its canonical form. Errors are *Error values
// wrapping one of the package's sentinel errors.
func (n *Normalizer) Normalize(raw string) (string, error) {
	p := n.get()
	defer n.put(p)
	if err := n.ps.parse(p, cleanInput(raw), nil); err != nil {
		return "", &Error{Op: "parse", URL: raw, Err: err}
	}
	return n.result(p, raw), nil
}

// Resolve resolves the reference ref (an href as found in a page) against
// base (the page's URL, or its <base href> already resolved by the caller)
// the way a browser does, then normalizes the result. A base that is not an
// absolute http(s) URL is an error (Op "parse base").
func (n *Normalizer) Resolve(base, ref string) (string, error) {
	b := n.get()
	defer n.put(b)
	if err := n.ps.parse(b, cleanInput(base), nil); err != nil {
		return "", &Error{Op: "parse base", URL: base, Err: err}
	}
	return n.resolve(b, ref)
}

func (n *Normalizer) resolve(base *parsed, ref string) (string, error) {
	p := n.get()
	defer n.put(p)
	if err := n.ps.parse(p, cleanInput(ref), base); err != nil {
		return "", &Error{Op: "resolve", URL: ref, Err: err}
	}
	return n.result(p, ref), nil
}

// Base is a parsed base URL, for resolving the many links of one page
// without parsing the page's URL again for each. It is immutable and safe
// for concurrent use.
type Base struct {
	n *Normalizer
	p parsed
}

// ParseBase parses base (an absolute http(s) URL) for use with
// Base.Resolve; b.Resolve(ref) equals n.Resolve(base, ref).
func (n *Normalizer) ParseBase(base string) (*Base, error) {
	b := &Base{n: n}
	if err := n.ps.parse(&b.p, cleanInput(base), nil); err != nil {
		return nil, &Error{Op: "parse base", URL: base, Err: err}
	}
	return b, nil
}

// Resolve resolves ref against the base and normalizes the result.
func (b *Base) Resolve(ref string) (string, error) { return b.n.resolve(&b.p, ref) }

// result applies the optional normalizations and returns the serialization,
// without allocating when it equals the input.
func (n *Normalizer) result(p *parsed, raw string) string {
	if n.optional {
		n.rewrite(p)
	}
	if string(p.buf) == raw {
		return raw
	}
	return string(p.buf)
}

// Segments splits a canonical URL (a result of Normalize or Resolve) into
// the filter's layers: layer 1 is "scheme://[userinfo@]host[:port]" (without
// "scheme://" when IgnoreScheme is set), then one layer per '/'-separated
// path segment, the query (and a kept "#!" fragment) staying attached to the
// last one. Joining the layers with '/' gives back the input (minus the
// scheme under IgnoreScheme), so different canonical URLs never share
// segments. The strings share the input's memory.
func (n *Normalizer) Segments(canonical string) []string {
	return n.AppendSegments(nil, canonical)
}

// AppendSegments is Segments appending to dst, for callers that reuse a
// slice.
func (n *Normalizer) AppendSegments(dst []string, canonical string) []string {
	authStart := 0
	if i := strings.Index(canonical, "://"); i >= 0 {
		authStart = i + 3
	}
	hostEnd := len(canonical)
	for i := authStart; i < len(canonical); i++ {
		if c := canonical[i]; c == '/' || c == '?' || c == '#' {
			hostEnd = i
			break
		}
	}
	if n.opts.IgnoreScheme {
		dst = append(dst, canonical[authStart:hostEnd])
	} else {
		dst = append(dst, canonical[:hostEnd])
	}
	rest := canonical[hostEnd:]
	if rest == "" {
		return dst
	}
	if rest[0] == '/' {
		rest = rest[1:]
	}
	for {
		i := strings.IndexAny(rest, "/?#")
		if i < 0 || rest[i] != '/' {
			return append(dst, rest)
		}
		dst = append(dst, rest[:i])
		rest = rest[i+1:]
	}
}

// RegistrableDomain returns the registrable domain of a host (eTLD+1 on the
// public suffix list, e.g. "news.bbc.co.uk" -> "bbc.co.uk"), for politeness
// and budgets. The host should be in canonical (ASCII, lowercase) form; an
// IP address is returned as it is, being its own registrable unit. Hosts
// without one ("co.uk", "localhost") give ErrNoRegistrableDomain.
func RegistrableDomain(host string) (string, error) {
	h := strings.ToLower(host)
	if strings.HasSuffix(h, ".") && !strings.HasSuffix(h, "..") {
		h = h[:len(h)-1]
	}
	if h == "" {
		return "", &Error{Op: "registrable domain", URL: host, Err: cause(ErrNoRegistrableDomain, "empty host")}
	}
	if h[0] == '[' || net.ParseIP(h) != nil {
		return h, nil
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return "", &Error{Op: "registrable domain", URL: host, Err: cause(ErrNoRegistrableDomain, strings.TrimPrefix(err.Error(), "publicsuffix: "))}
	}
	return d, nil
}
