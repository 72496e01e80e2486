package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"time"
)

// Kind classifies why a fetch failed, so that a crawl log can carry a
// specific, stable error string instead of whatever text the network stack
// produced, and so that a crawl can tell a failure worth retrying from a
// permanent one (Permanent).
type Kind uint8

// The kinds of fetch failure. KindOther is the zero value. KindCanceled
// stays the last kind, so that [KindCanceled+1] sizes an array indexed by
// Kind.
const (
	KindOther             Kind = iota // anything not classified below
	KindInvalidURL                    // unparsable URL, or no host
	KindBlockedAddress                // the resolved address is not allowed by the address policy
	KindDNS                           // the host name did not resolve for now (timeout, server failure)
	KindConnect                       // the TCP connection was refused or could not be made
	KindTLS                           // TLS handshake failure other than certificate verification
	KindTimeout                       // a connect, header or whole-fetch timeout fired
	KindConnectionReset               // the peer reset or closed the connection mid-exchange
	KindTruncated                     // the body ended before its declared length
	KindProtocol                      // malformed HTTP: bad status line, oversized header, bad gzip ...
	KindCertificate                   // the server's certificate did not verify (unknown authority, expired, wrong name)
	KindDNSNotFound                   // the name does not exist (NXDOMAIN)
	KindUnsupportedScheme             // the URL's scheme is not http or https
	KindCanceled                      // the caller's context was canceled
)

var kindNames = [...]string{
	KindOther:             "other",
	KindInvalidURL:        "invalid-url",
	KindBlockedAddress:    "blocked-address",
	KindDNS:               "dns",
	KindConnect:           "connect",
	KindTLS:               "tls",
	KindTimeout:           "timeout",
	KindConnectionReset:   "connection-reset",
	KindTruncated:         "truncated-response",
	KindProtocol:          "protocol",
	KindCertificate:       "certificate",
	KindDNSNotFound:       "dns-not-found",
	KindUnsupportedScheme: "unsupported-scheme",
	KindCanceled:          "canceled",
}

// String returns the kind's stable, log-friendly name ("timeout", "dns", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Permanent reports whether a failure of this kind will fail the same way
// when tried again soon, so that a crawl should give up on the URL at
// once: a refused address (the policy does not change during a crawl), a
// certificate that does not verify, a name that does not exist, an
// unsupported scheme, a malformed URL. A name not found may be a zone
// being set up: a crawl may allow it one late retry.
func (k Kind) Permanent() bool {
	switch k {
	case KindBlockedAddress, KindCertificate, KindDNSNotFound, KindUnsupportedScheme, KindInvalidURL:
		return true
	}
	return false
}

// Sentinel errors, one per Kind, for errors.Is: every *Error matches the
// sentinel of its Kind.
var (
	ErrOther             = errors.New("fetch: other error")
	ErrInvalidURL        = errors.New("fetch: invalid url")
	ErrBlockedAddress    = errors.New("fetch: blocked address")
	ErrDNS               = errors.New("fetch: dns lookup failed")
	ErrConnect           = errors.New("fetch: connect failed")
	ErrTLS               = errors.New("fetch: tls failure")
	ErrTimeout           = errors.New("fetch: timeout")
	ErrConnectionReset   = errors.New("fetch: connection reset")
	ErrTruncated         = errors.New("fetch: truncated response")
	ErrProtocol          = errors.New("fetch: protocol error")
	ErrCertificate       = errors.New("fetch: certificate verification failed")
	ErrDNSNotFound       = errors.New("fetch: no such host")
	ErrUnsupportedScheme = errors.New("fetch: unsupported scheme")
	ErrCanceled          = errors.New("fetch: canceled")
)

var kindSentinels = [...]error{
	KindOther:             ErrOther,
	KindInvalidURL:        ErrInvalidURL,
	KindBlockedAddress:    ErrBlockedAddress,
	KindDNS:               ErrDNS,
	KindConnect:           ErrConnect,
	KindTLS:               ErrTLS,
	KindTimeout:           ErrTimeout,
	KindConnectionReset:   ErrConnectionReset,
	KindTruncated:         ErrTruncated,
	KindProtocol:          ErrProtocol,
	KindCertificate:       ErrCertificate,
	KindDNSNotFound:       ErrDNSNotFound,
	KindUnsupportedScheme: ErrUnsupportedScheme,
	KindCanceled:          ErrCanceled,
}

// Error is the error returned by Fetch and FetchRobots. Its Kind says what
// went wrong in a stable vocabulary; Err is the underlying cause, with
// net/http's *url.Error (which repeats the method and URL) unwrapped.
// FetchedAt is when the fetch started and Duration how long it ran before
// it failed, for a timed-out fetch too.
type Error struct {
	Kind      Kind
	URL       string
	Err       error
	FetchedAt time.Time
	Duration  time.Duration
}

// Error names the kind, the URL and the cause once each:
// "fetch: dns-not-found https://x.invalid/: lookup x.invalid: no such host".
func (e *Error) Error() string {
	msg := "fetch: " + e.Kind.String() + " " + e.URL + ": " + e.Err.Error()
	if e.Kind == KindCertificate {
		msg += " (to trust a private CA pass its certificate with --ca-file, or skip verification with --insecure-skip-verify)"
	}
	return msg
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
	return "refusing to connect to " + e.Reason + " address " + e.Addr
}

// newError builds the *Error of a failed fetch: the cause with the
// wrappers that repeat the URL removed, its kind, and its timing.
// parentErr is the caller's context's error, fetchErr that of the fetch's
// own (FetchTimeout) context.
func (f *Fetcher) newError(err error, rawURL string, parentErr, fetchErr error, started time.Time, d time.Duration) *Error {
	kind := classify(err, parentErr)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var blocked *BlockedAddressError
	switch {
	case errors.As(err, &blocked):
		err = blocked
	case errors.As(err, &opErr) && opErr.Op == "dial" && errors.As(err, &dnsErr):
		err = dnsErr // "lookup x: no such host", without "dial tcp: "
	}
	if kind == KindTimeout && fetchErr != nil && parentErr == nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no complete response within the fetch timeout (%v): %w", f.opts.FetchTimeout, err)
	}
	return &Error{Kind: kind, URL: rawURL, Err: err, FetchedAt: started, Duration: d}
}

// classify maps an error from the HTTP stack to a Kind. parentErr is the
// caller's context's error: it tells a caller cancellation apart from the
// fetch's own deadline. Only types and sentinels are looked at.
func classify(err error, parentErr error) Kind {
	var blocked *BlockedAddressError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var decErr *decodeError
	var protoErr *ProtocolError
	var schemeErr *UnsupportedSchemeError
	var proxyErr *ProxyError
	var opErr *net.OpError
	switch {
	case errors.As(err, &blocked):
		return KindBlockedAddress
	case errors.As(err, &schemeErr):
		return KindUnsupportedScheme
	case errors.As(err, &decErr), errors.As(err, &protoErr):
		return KindProtocol
	case errors.Is(parentErr, context.Canceled):
		return KindCanceled
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return KindDNSNotFound
		}
		return KindDNS // a DNS timeout too: the name did not resolve
	case errors.As(err, &certErr), errors.As(err, &unknownAuth),
		errors.As(err, &hostnameErr), errors.As(err, &invalidCert):
		return KindCertificate
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return KindTimeout
	case isTimeout(err):
		return KindTimeout
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.As(err, &recordErr), errors.As(err, &alertErr):
		return KindTLS
	case errors.As(err, &proxyErr):
		return KindConnect
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
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return KindConnect
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
