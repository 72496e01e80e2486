package urlnorm

import (
	"errors"
	"fmt"
	"strings"
)

// TrailingSlash selects what Normalize does with a slash at the end of a
// non-root path.
type TrailingSlash uint8

const (
	// KeepTrailingSlash (the zero value, default) leaves the path as it is:
	// "/a" and "/a/" may be different resources.
	KeepTrailingSlash TrailingSlash = iota
	// AddTrailingSlash appends "/" to a path whose last segment is
	// non-empty and has no '.' (so "/docs" becomes "/docs/" but
	// "/file.html" is left alone).
	AddTrailingSlash
	// RemoveTrailingSlash removes every trailing "/" of a path other than
	// "/" itself ("/docs//" becomes "/docs").
	RemoveTrailingSlash
)

func (t TrailingSlash) String() string {
	switch t {
	case KeepTrailingSlash:
		return "keep"
	case AddTrailingSlash:
		return "add"
	case RemoveTrailingSlash:
		return "remove"
	}
	return fmt.Sprintf("TrailingSlash(%d)", uint8(t))
}

// DefaultSessionParams is the list RemoveSessionParams uses when
// Options.SessionParams is empty. A trailing '*' makes an entry a prefix.
// Names are compared without regard to ASCII case.
func DefaultSessionParams() []string {
	return []string{
		"jsessionid", "phpsessid", "aspsessionid*", "sid", "sessionid",
		"session_id", "cfid", "cftoken", "utm_*", "gclid", "fbclid", "msclkid",
	}
}

// DefaultPages is the list of last path segments RemoveDefaultPages removes
// (compared without regard to ASCII case).
func DefaultPages() []string {
	return []string{
		"index.html", "index.htm", "index.shtml", "index.php", "index.asp",
		"index.aspx", "index.jsp", "index.cgi", "default.htm", "default.html",
		"default.asp", "default.aspx",
	}
}

// Options selects the optional normalizations. The zero value applies only
// the safe ones (see the package documentation); every field is off by
// default.
type Options struct {
	// SortQuery sorts the query's '&'-separated pairs by key (the raw,
	// still-encoded bytes before the first '='), stably, so repeated keys
	// keep their order. ';' is not a separator, "a" stays distinct from
	// "a=", values are never re-encoded, and empty pairs ("a&&b") are
	// dropped. Default false.
	SortQuery bool
	// RemoveSessionParams drops query pairs and ';'-path parameters whose
	// name matches SessionParams. Default false.
	RemoveSessionParams bool
	// SessionParams lists the names RemoveSessionParams drops; a trailing
	// '*' matches any suffix. Default (when empty) DefaultSessionParams().
	SessionParams []string
	// CollapseSlashes replaces every run of '/' in the path with one.
	// Default false: "/a//b" and "/a/b" may be different resources.
	CollapseSlashes bool
	// TrailingSlash adds or removes a trailing '/' of non-root paths.
	// Default KeepTrailingSlash.
	TrailingSlash TrailingSlash
	// RemoveDefaultPages removes a last path segment named in DefaultPages
	// ("/a/index.html" becomes "/a/"). Default false.
	RemoveDefaultPages bool
	// FoldWWW removes a leading "www." from the host when the registrable
	// domain (public suffix list) stays the same: "www.example.com" folds to
	// "example.com", "www.co.uk" does not fold. Default false.
	FoldWWW bool
	// IgnoreScheme makes Segments leave the scheme out of layer 1, so that
	// http and https spellings of a page share one key (the paper's choice:
	// its split drops "scheme://"). Normalize still returns the scheme it
	// was given, so the URL stays fetchable. Default false.
	IgnoreScheme bool
	// DecodeNumericHosts writes an IPv4-mapped IPv6 host as its IPv4
	// address ("[::ffff:7f00:1]" becomes "127.0.0.1"). Numeric IPv4 forms
	// ("0x7f.1", "2130706433") are always canonicalized to dotted decimal
	// because WHATWG URL parsing requires it: a browser sends the same
	// request for both. The mapped IPv6 form is a different Host header,
	// hence an option. Default false.
	DecodeNumericHosts bool
}

// ErrInvalidOptions is wrapped by every error of Options.Validate, and so
// of New: errors.Is(err, urlnorm.ErrInvalidOptions).
var ErrInvalidOptions = errors.New("urlnorm: invalid options")

// EnsureDefaults fills the fields whose zero value stands for a default:
// an empty SessionParams becomes DefaultSessionParams(). New calls it on
// its copy of the options.
func (o *Options) EnsureDefaults() {
	if len(o.SessionParams) == 0 {
		o.SessionParams = DefaultSessionParams()
	}
}

// Validate reports whether the options are usable; its errors wrap
// ErrInvalidOptions.
func (o *Options) Validate() error {
	if o.TrailingSlash > RemoveTrailingSlash {
		return fmt.Errorf("%w: unknown TrailingSlash %d", ErrInvalidOptions, o.TrailingSlash)
	}
	for _, p := range o.SessionParams {
		name := strings.TrimSuffix(p, "*")
		if name == "" || strings.ContainsAny(name, "&=;#?*") {
			return fmt.Errorf("%w: session parameter %q must be a non-empty name without &=;#?* (a trailing * is a prefix match)", ErrInvalidOptions, p)
		}
	}
	return nil
}
