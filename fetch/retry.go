package fetch

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Transient reports whether a failed fetch may succeed if it is made again
// later: the connection was refused or reset, a timeout fired, the body
// ended early, or the name lookup failed temporarily (a SERVFAIL or a
// resolver timeout, not a name that does not exist). Invalid URLs, refused
// addresses, TLS and protocol errors, and cancellations are permanent: the
// same request would fail the same way. err is an error of Fetch or
// FetchBody; nil is not transient.
func Transient(err error) bool {
	switch KindOf(err) {
	case KindConnect, KindTimeout, KindConnectionReset, KindTruncated:
		return true
	case KindDNS:
		var dnsErr *net.DNSError
		return errors.As(err, &dnsErr) && (dnsErr.IsTemporary || dnsErr.IsTimeout) && !dnsErr.IsNotFound
	}
	return false
}

// TransientStatus reports whether an HTTP status says that the same request
// may succeed later: 408 Request Timeout, 425 Too Early, 429 Too Many
// Requests, 500, 502, 503 and 504 (RFC 9110 §15.5.9, §15.6; RFC 8470;
// RFC 6585). Other statuses are final.
func TransientStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Throttling reports whether an HTTP status asks the client to slow down:
// 429 Too Many Requests and 503 Service Unavailable.
func Throttling(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}

// maxRetryAfterSeconds bounds the delta-seconds form before it is turned
// into a Duration, so that a huge value cannot overflow.
const maxRetryAfterSeconds = 100 * 365 * 24 * 3600

// ParseRetryAfter parses the value of a Retry-After header (RFC 9110
// §10.2.3): a number of seconds (delay-seconds, digits only) or an
// HTTP-date, which is turned into a delay from now. A date in the past is
// a delay of 0. ok is false for any other value (empty, negative, a
// fraction, garbage), which a caller should treat as absent. A delay over
// a century is taken as a century; callers cap it further.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.Trim(v, " \t") // optional whitespace (RFC 9110 §5.6.3)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > maxRetryAfterSeconds {
			// Only an overflow fails here: all digits.
			return maxRetryAfterSeconds * time.Second, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now)
	switch {
	case d < 0:
		return 0, true
	case d > maxRetryAfterSeconds*time.Second:
		return maxRetryAfterSeconds * time.Second, true
	}
	return d, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
