package urlnorm

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. Every error of parsing and resolution is an *Error whose
// Err wraps exactly one of these, so callers can test the cause with
// errors.Is. (Options errors wrap ErrInvalidOptions instead.)
var (
	// ErrEmpty: the input is empty once surrounding whitespace is removed.
	ErrEmpty = errors.New("urlnorm: empty URL")
	// ErrMissingScheme: the input is a relative reference and no base URL
	// was given to resolve it against.
	ErrMissingScheme = errors.New("urlnorm: missing scheme")
	// ErrUnsupportedScheme: the scheme is not http or https (mailto:,
	// javascript:, data:, ftp:, ...). Only http(s) pages are crawled.
	ErrUnsupportedScheme = errors.New("urlnorm: unsupported scheme")
	// ErrMissingHost: an http(s) URL without a host ("http:///x",
	// "http://user@/").
	ErrMissingHost = errors.New("urlnorm: missing host")
	// ErrInvalidHost: the host holds a code point that no host may contain
	// (space, '<', '%' after decoding, ...), or is not valid UTF-8.
	ErrInvalidHost = errors.New("urlnorm: invalid host")
	// ErrInvalidIDN: the host failed IDNA (UTS #46) processing.
	ErrInvalidIDN = errors.New("urlnorm: invalid internationalized domain name")
	// ErrInvalidIPv4: the host ends in a number but is not a valid IPv4
	// address in any of the forms browsers accept.
	ErrInvalidIPv4 = errors.New("urlnorm: invalid IPv4 address")
	// ErrInvalidIPv6: a bracketed host is not a valid IPv6 address.
	ErrInvalidIPv6 = errors.New("urlnorm: invalid IPv6 address")
	// ErrInvalidPort: the port is not a decimal number up to 65535.
	ErrInvalidPort = errors.New("urlnorm: invalid port")
)

// Error records a failed operation and the URL it failed on, in the manner of
// net/url.Error.
type Error struct {
	Op  string // "parse", "parse base", "resolve"
	URL string // the input as given (Error() shortens very long ones)
	Err error  // wraps one of the sentinel errors above
}

// maxQuoted bounds how much of the URL Error() repeats, so that a 65,535-byte
// input yields a readable one-line reason.
const maxQuoted = 100

func (e *Error) Error() string {
	u := e.URL
	if len(u) > maxQuoted {
		u = u[:maxQuoted] + "..." + strconv.Itoa(len(e.URL)) + " bytes"
	}
	return "urlnorm: " + e.Op + " " + strconv.Quote(u) + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// causeError is a sentinel plus the detail that tells a person what to fix.
type causeError struct {
	sentinel error
	detail   string
}

func (e *causeError) Error() string {
	s := strings.TrimPrefix(e.sentinel.Error(), "urlnorm: ")
	if e.detail == "" {
		return s
	}
	return s + ": " + e.detail
}

func (e *causeError) Unwrap() error { return e.sentinel }

func cause(sentinel error, detail string) error {
	return &causeError{sentinel: sentinel, detail: detail}
}

// describeByte names a byte for an error message: printable ASCII in quotes,
// anything else as a code.
func describeByte(c byte) string {
	if c > 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	switch c {
	case ' ':
		return "space (0x20)"
	case 0x7f:
		return "DEL (0x7f)"
	}
	return "byte 0x" + strconv.FormatUint(uint64(c)>>4, 16) + strconv.FormatUint(uint64(c)&15, 16)
}

// ErrNoRegistrableDomain: the host is itself a public suffix ("co.uk"), a
// single label ("localhost") or otherwise has no registrable domain.
var ErrNoRegistrableDomain = errors.New("urlnorm: no registrable domain")
