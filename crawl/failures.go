package crawl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
)

// The reasons a URL ends at once, without a retry: the same request would
// fail the same way. They start the crawl log's error of the URL.
const (
	reasonBlockedAddress    = "blocked-address"    // the address policy refused the host's address (Fetch.AllowPrivate)
	reasonTLS               = "tls-certificate"    // the server's certificate failed verification
	reasonDNSNotFound       = "dns-not-found"      // the name does not exist (NXDOMAIN); one retry at most
	reasonUnsupportedScheme = "unsupported-scheme" // not http or https
	reasonMalformedURL      = "malformed-url"      // the URL does not parse, or has no host
)

// permanent reports whether a fetch error (of a page or of its site's
// robots.txt) is permanent, and its reason: a refused address, a TLS
// certificate that fails verification, a name that does not exist, an
// unsupported scheme or a malformed URL. A name that does not exist is
// retried once (a resolver's negative answer can be a glitch); the others
// end the URL at once. Every other failure is transient or final as
// fetch.Transient says.
func permanent(err error) (reason string, ok bool) {
	switch fetch.KindOf(err) {
	case fetch.KindBlockedAddress:
		return reasonBlockedAddress, true
	case fetch.KindCertificate:
		return reasonTLS, true
	case fetch.KindDNSNotFound:
		return reasonDNSNotFound, true
	case fetch.KindUnsupportedScheme:
		return reasonUnsupportedScheme, true
	case fetch.KindTLS:
		var certErr *tls.CertificateVerificationError
		var unknownAuth x509.UnknownAuthorityError
		var hostnameErr x509.HostnameError
		var invalidCert x509.CertificateInvalidError
		if errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostnameErr) || errors.As(err, &invalidCert) {
			return reasonTLS, true
		}
	case fetch.KindDNS:
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return reasonDNSNotFound, true
		}
	case fetch.KindInvalidURL:
		var fe *fetch.Error
		if errors.As(err, &fe) {
			if u, perr := url.Parse(fe.URL); perr == nil && u.Scheme != "http" && u.Scheme != "https" {
				return reasonUnsupportedScheme, true
			}
		}
		return reasonMalformedURL, true
	}
	return "", false
}

// permanentRetries is how many retries a permanent failure of reason
// gets: one for a name that does not exist, none for the others.
func permanentRetries(reason string) int {
	if reason == reasonDNSNotFound {
		return 1
	}
	return 0
}

// cause returns the innermost useful text of a fetch error, once: without
// the kind and the URL that fetch.Error and url.Error repeat (the log line
// has both already).
func cause(err error) string {
	var blocked *fetch.BlockedAddressError
	var dnsErr *net.DNSError
	var urlErr *url.Error
	var fe *fetch.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &blocked):
		return "refused " + blocked.Reason + " address " + blocked.Addr
	case errors.As(err, &dnsErr):
		return dnsErr.Error()
	case errors.As(err, &urlErr):
		return urlErr.Err.Error()
	case errors.As(err, &fe):
		return fe.Err.Error()
	}
	return err.Error()
}

// failText is a failed attempt's crawl-log error: "REASON: CAUSE".
func failText(reason string, err error) string {
	if c := cause(err); c != "" {
		return reason + ": " + c
	}
	return reason
}

// permanentCounts counts the URLs that ended with a permanent failure, by
// reason.
type permanentCounts struct {
	blocked, tls, dnsNotFound, scheme, malformed atomic.Uint64
}

func (p *permanentCounts) add(reason string) {
	switch reason {
	case reasonBlockedAddress:
		p.blocked.Add(1)
	case reasonTLS:
		p.tls.Add(1)
	case reasonDNSNotFound:
		p.dnsNotFound.Add(1)
	case reasonUnsupportedScheme:
		p.scheme.Add(1)
	case reasonMalformedURL:
		p.malformed.Add(1)
	}
}

func (p *permanentCounts) stats() PermanentStats {
	return PermanentStats{BlockedAddress: p.blocked.Load(), TLS: p.tls.Load(), DNSNotFound: p.dnsNotFound.Load(),
		UnsupportedScheme: p.scheme.Load(), MalformedURL: p.malformed.Load()}
}

// PermanentStats count the URLs that ended at once, without a retry, as
// the same request would fail the same way, by reason (their crawl-log
// error starts with it). A URL counts once, whether its own fetch or its
// site's robots.txt failed so.
type PermanentStats struct {
	BlockedAddress    uint64 // "blocked-address": a loopback, private or link-local address refused without Fetch.AllowPrivate
	TLS               uint64 // "tls-certificate": the certificate failed verification
	DNSNotFound       uint64 // "dns-not-found": the name does not exist, after one retry
	UnsupportedScheme uint64 // "unsupported-scheme": not http or https
	MalformedURL      uint64 // "malformed-url": the URL does not parse or has no host
}

// Total returns the sum of the counts.
func (p PermanentStats) Total() uint64 {
	return p.BlockedAddress + p.TLS + p.DNSNotFound + p.UnsupportedScheme + p.MalformedURL
}

// ErrNoSeedFetched is matched (errors.Is) by the error Run returns when
// the crawl ended without fetching anything, and the seeds it tried all
// failed: refused, unreachable, or their robots.txt never answered. The
// error is a *NoSeedFetchedError, which names the first seed and why.
// In Redis mode a worker returns it when its seeds failed and no worker
// of the crawl got a response while it ran (the shared count of
// responses did not move).
var ErrNoSeedFetched = errors.New("crawl: no seed could be fetched")

// NoSeedFetchedError is the error of Run when no seed could be fetched.
type NoSeedFetchedError struct {
	Seeds int    // seeds that ended failed in this run
	URL   string // the first of them
	// Reason is its reason ("blocked-address", "robots-unavailable",
	// "retries-exhausted: timeout", ...), Detail its crawl-log error (the
	// reason and the cause), Err the fetch error behind it, if any
	// (errors.As finds a *fetch.BlockedAddressError, a *net.DNSError, ...
	// in it).
	Reason, Detail string
	Err            error
}

func (e *NoSeedFetchedError) Error() string {
	s := fmt.Sprintf("crawl: no seed could be fetched: %s: %s", e.URL, e.Detail)
	if e.Seeds > 1 {
		s += fmt.Sprintf(" (and %d more seeds failed)", e.Seeds-1)
	}
	return s
}

// Is makes the error match ErrNoSeedFetched.
func (e *NoSeedFetchedError) Is(target error) bool { return target == ErrNoSeedFetched }

// Unwrap returns the fetch error.
func (e *NoSeedFetchedError) Unwrap() error { return e.Err }

// seedOutcomes notes, in this run, whether any fetch got a response and
// which seeds ended failed, so that Run can tell a crawl that fetched
// nothing at all.
type seedOutcomes struct {
	responses atomic.Uint64 // fetches that got an HTTP response
	mu        sync.Mutex    // protects failed and first
	failed    int
	first     NoSeedFetchedError
}

// isSeed reports whether ent is a seed: no page led to it.
func isSeed(ent frontier.Entry) bool { return ent.Via == "" && ent.Depth == 0 && !ent.Sitemap }

// seedFailed records that seed ent ended failed, for reason (logged as
// detail) and err.
func (s *seedOutcomes) seedFailed(ent frontier.Entry, reason, detail string, err error) {
	if !isSeed(ent) {
		return
	}
	s.mu.Lock()
	if s.failed == 0 {
		s.first = NoSeedFetchedError{URL: ent.URL, Reason: reason, Detail: detail, Err: err}
	}
	s.failed++
	s.mu.Unlock()
}

// err returns the error of a run that fetched nothing while its seeds
// failed; nil otherwise.
func (s *seedOutcomes) err() error {
	if s.responses.Load() > 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == 0 {
		return nil
	}
	e := s.first
	e.Seeds = s.failed
	return &e
}
