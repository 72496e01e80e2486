package fetch

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	century := time.Duration(maxRetryAfterSeconds) * time.Second
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{" 7\t", 7 * time.Second, true},
		{"7\n", 0, false},
		{"0", 0, true},
		{"Mon, 23 Nov 2026 12:00:30 GMT", 30 * time.Second, true}, // IMF-fixdate
		{"Monday, 23-Nov-26 12:01:00 GMT", time.Minute, true},     // RFC 850
		{"Mon Nov 23 12:00:05 2026", 5 * time.Second, true},       // asctime
		{"Mon, 23 Nov 2026 11:00:00 GMT", 0, true},                // past: at once
		{"Tue, 23 Nov 2027 12:00:00 GMT", 365 * 24 * time.Hour, true},
		{"99999999999999999999999", century, true}, // overflows uint64
		{"9999999999", century, true},
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"+3", 0, false},
		{"Mon, 32 Nov 2026 12:00:00 GMT", 0, false},
	} {
		got, ok := ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseRetryAfter checks ParseRetryAfter against a slow reference: a
// value of digits is that many seconds (capped), anything http.ParseTime
// takes is a date, and nothing else is accepted; the delay is never
// negative nor over a century.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "Mon, 23 Nov 2026 12:00:30 GMT", "Mon Nov 23 12:00:05 2026", "x", "-1", "1e3", "18446744073709551616"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	century := time.Duration(maxRetryAfterSeconds) * time.Second
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := ParseRetryAfter(v, now)
		if got < 0 || got > century || (!ok && got != 0) {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v: out of range", v, got, ok)
		}
		s := trimSpace(v)
		var want time.Duration
		wantOK := true
		if n, err := strconv.ParseUint(s, 10, 64); err == nil && s[0] != '+' {
			want = min(time.Duration(min(n, maxRetryAfterSeconds))*time.Second, century)
		} else if allDigits(s) {
			want = century
		} else if tm, err := http.ParseTime(s); err == nil {
			want = min(max(tm.Sub(now), 0), century)
		} else {
			wantOK = false
		}
		if got != want || ok != wantOK {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v; reference says %v, %v", v, got, ok, want, wantOK)
		}
	})
}

// trimSpace and allDigits are the reference's own, byte by byte.
func trimSpace(s string) string {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' }
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func TestTransient(t *testing.T) {
	wrap := func(k Kind, err error) error { return &Error{Kind: k, URL: "http://a/", Err: err} }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused", wrap(KindConnect, syscall.ECONNREFUSED), true},
		{"reset", wrap(KindConnectionReset, syscall.ECONNRESET), true},
		{"timeout", wrap(KindTimeout, context.DeadlineExceeded), true},
		{"truncated", wrap(KindTruncated, io.ErrUnexpectedEOF), true},
		{"dns servfail", wrap(KindDNS, &net.DNSError{Err: "server misbehaving", Name: "a", IsTemporary: true}), true},
		{"dns timeout", wrap(KindDNS, &net.DNSError{Err: "i/o timeout", Name: "a", IsTimeout: true}), true},
		{"dns nxdomain", wrap(KindDNS, &net.DNSError{Err: "no such host", Name: "a", IsNotFound: true}), false},
		{"tls", wrap(KindTLS, fmt.Errorf("bad cert")), false},
		{"protocol", wrap(KindProtocol, fmt.Errorf("malformed HTTP")), false},
		{"invalid url", wrap(KindInvalidURL, fmt.Errorf("no host")), false},
		{"blocked", wrap(KindBlockedAddress, &BlockedAddressError{Addr: "127.0.0.1:80", Reason: "loopback"}), false},
		{"canceled", wrap(KindCanceled, context.Canceled), false},
		{"other", fmt.Errorf("something"), false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("Transient(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTransientStatus(t *testing.T) {
	want := map[int]bool{408: true, 425: true, 429: true, 500: true, 502: true, 503: true, 504: true}
	for code := 100; code < 600; code++ {
		if got := TransientStatus(code); got != want[code] {
			t.Errorf("TransientStatus(%d) = %v, want %v", code, got, want[code])
		}
	}
}
