package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// Kind classifies why a fetch failed, so that a crawl log can carry a
// specific, stable error string instead of whatever text the network stack
// produced.
type Kind uint8

// The kinds of fetch failure. KindOther is the zero value.
const (
	KindOther           Kind = iota // anything not classified below
	KindInvalidURL                  // unparsable URL, unsupported scheme, no host
	KindBlockedAddress              // the resolved address is not allowed by the address policy
	KindDNS                         // the host name did not resolve
	KindConnect                     // the TCP connection was refused or could not be made
	KindTLS                         // TLS handshake or certificate failure
	KindTimeout                     // a connect, header or whole-fetch timeout fired
	KindConnectionReset             // the peer reset or closed the connection mid-exchange
	KindTruncated                   // the body ended before its declared length
	KindProtocol                    // malformed HTTP: bad status line, oversized header, bad gzip ...
	KindCanceled                    // the caller's context was canceled
)

var kindNames = [...]string{
	KindOther:           "other",
	KindInvalidURL:      "invalid-url",
	KindBlockedAddress:  "blocked-address",
	KindDNS:             "dns",
	KindConnect:         "connect",
	KindTLS:             "tls",
	KindTimeout:         "timeout",
	KindConnectionReset: "connection-reset",
	KindTruncated:       "truncated-response",
	KindProtocol:        "protocol",
	KindCanceled:        "canceled",
}

// String returns the kind's stable, log-friendly name ("timeout", "dns", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Sentinel errors, one per Kind, for errors.Is: every *Error matches the
// sentinel of its Kind.
var (
	ErrOther           = errors.New("fetch: other error")
	ErrInvalidURL      = errors.New("fetch: invalid url")
	ErrBlockedAddress  = errors.New("fetch: blocked address")
	ErrDNS             = errors.New("fetch: dns lookup failed")
	ErrConnect         = errors.New("fetch: connect failed")
	ErrTLS             = errors.New("fetch: tls failure")
	ErrTimeout         = errors.New("fetch: timeout")
	ErrConnectionReset = errors.New("fetch: connection reset")
	ErrTruncated       = errors.New("fetch: truncated response")
	ErrProtocol        = errors.New("fetch: protocol error")
	ErrCanceled        = errors.New("fetch: canceled")
)

var kindSentinels = [...]error{
	KindOther:           ErrOther,
	KindInvalidURL:      ErrInvalidURL,
	KindBlockedAddress:  ErrBlockedAddress,
	KindDNS:             ErrDNS,
	KindConnect:         ErrConnect,
	KindTLS:             ErrTLS,
	KindTimeout:         ErrTimeout,
	KindConnectionReset: ErrConnectionReset,
	KindTruncated:       ErrTruncated,
	KindProtocol:        ErrProtocol,
	KindCanceled:        ErrCanceled,
}

// Error is the error returned by Fetch and FetchRobots. Its Kind says what
// went wrong in a stable vocabulary; Err is the underlying cause.
type Error struct {
	Kind Kind
	URL  string
	Err  error
}

func (e *Error) Error() string {
	return "fetch: " + e.Kind.String() + " " + e.URL + ": " + e.Err.Error()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind.
func (e *Error) Is(target error) bool {
	return int(e.Kind) < len(kindSentinels) && target == kindSentinels[e.Kind]
}

// KindOf returns the Kind of err if it is or wraps an *Error, and KindOther
// otherwise.
func KindOf(err error) Kind {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return KindOther
}

// BlockedAddressError is the cause inside an *Error of KindBlockedAddress:
// the dialer refused the resolved address because of the address policy.
type BlockedAddressError struct {
	Addr   string // the resolved ip:port the dialer was about to connect to
	Reason string // "loopback", "private", "link-local", ...
}

func (e *BlockedAddressError) Error() string {
	return "fetch: refusing to connect to " + e.Reason + " address " + e.Addr
}

// classify maps an error from the HTTP stack to a Kind. parentCanceled
// tells a caller cancellation apart from the fetch's own deadline.
func classify(err error, parentErr error) Kind {
	var blocked *BlockedAddressError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var unknownAuth x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var alertErr tls.AlertError
	var gzErr *gzipError
	switch {
	case errors.As(err, &blocked):
		return KindBlockedAddress
	case errors.As(err, &gzErr):
		return KindProtocol
	case errors.Is(parentErr, context.Canceled):
		return KindCanceled
	case errors.As(err, &dnsErr):
		return KindDNS // a DNS timeout too: the name did not resolve
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return KindTimeout
	case isTimeout(err):
		return KindTimeout
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.As(err, &certErr), errors.As(err, &recordErr), errors.As(err, &unknownAuth),
		errors.As(err, &hostnameErr), errors.As(err, &invalidCert), errors.As(err, &alertErr):
		return KindTLS
	case isReset(err):
		return KindConnectionReset
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EADDRNOTAVAIL):
		return KindConnect
	case errors.Is(err, io.ErrUnexpectedEOF):
		return KindTruncated
	case errors.Is(err, io.EOF):
		// The server closed the connection before sending a response.
		return KindConnectionReset
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return KindConnect
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		msg := urlErr.Err.Error()
		if strings.Contains(msg, "malformed HTTP") || strings.Contains(msg, "exceeded") ||
			strings.Contains(msg, "bad Content-Length") || strings.Contains(msg, "invalid") {
			return KindProtocol
		}
	}
	return KindOther
}

// isReset reports whether err is the peer resetting or aborting the
// connection.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
