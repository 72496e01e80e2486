package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return &url.Error{Op: "Get", URL: "http://x/", Err: err} }
	dial := func(err error) error { return wrap(&net.OpError{Op: "dial", Net: "tcp", Err: err}) }
	tests := []struct {
		name   string
		err    error
		parent error
		want   Kind
	}{
		{"blocked", dial(&BlockedAddressError{Addr: "127.0.0.1:80", Reason: "loopback"}), nil, KindBlockedAddress},
		{"blocked wins over canceled", dial(&BlockedAddressError{Addr: "10.0.0.1:80", Reason: "private"}), context.Canceled, KindBlockedAddress},
		{"dns not found", dial(&net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}), nil, KindDNSNotFound},
		{"dns timeout", dial(&net.DNSError{Err: "i/o timeout", Name: "x", IsTimeout: true}), nil, KindDNS},
		{"refused", dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), nil, KindConnect},
		{"unreachable", dial(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), nil, KindConnect},
		{"reset", wrap(&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), nil, KindConnectionReset},
		{"broken pipe", wrap(&net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}), nil, KindConnectionReset},
		{"eof before response", wrap(io.EOF), nil, KindConnectionReset},
		{"short body", io.ErrUnexpectedEOF, nil, KindTruncated},
		{"deadline", wrap(context.DeadlineExceeded), nil, KindTimeout},
		{"os deadline", wrap(&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}), nil, KindTimeout},
		{"caller canceled", wrap(context.Canceled), context.Canceled, KindCanceled},
		{"canceled without parent", wrap(context.Canceled), nil, KindCanceled},
		{"unknown authority", wrap(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), nil, KindCertificate},
		{"hostname", wrap(x509.HostnameError{Host: "x"}), nil, KindCertificate},
		{"handshake timeout", wrap(&tlsHandshakeTimeoutError{after: time.Second}), nil, KindTimeout},
		{"alert", wrap(tls.AlertError(40)), nil, KindTLS},
		{"scheme", wrap(&UnsupportedSchemeError{Scheme: "ftp"}), nil, KindUnsupportedScheme},
		{"proxy refused", dial(&ProxyError{Proxy: "p:3128", Target: "x:443", Status: "403 Forbidden"}), nil, KindConnect},
		{"tls record", wrap(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), nil, KindTLS},
		{"gzip", &decodeError{"gzip", gzip.ErrHeader}, nil, KindProtocol},
		{"malformed", wrap(&ProtocolError{errors.New(`net/http: HTTP/1.x transport connection broken: malformed HTTP response "SSH-2.0"`)}), nil, KindProtocol},
		{"other", errors.New("something else"), nil, KindOther},
	}
	for _, tt := range tests {
		if got := classify(tt.err, tt.parent); got != tt.want {
			t.Errorf("%s: classify(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestErrorMatching(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("crawl: %w", &Error{Kind: KindDNS, URL: "http://x/", Err: cause})
	if !errors.Is(err, ErrDNS) || errors.Is(err, ErrTimeout) || !errors.Is(err, cause) || KindOf(err) != KindDNS {
		t.Errorf("errors.Is/KindOf do not see through %v", err)
	}
	if got, want := (&Error{Kind: KindTimeout, URL: "u", Err: cause}).Error(), "fetch: timeout u: cause"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if KindOf(nil) != KindOther || KindOf(cause) != KindOther || Kind(200).String() != "unknown" {
		t.Errorf("KindOf/String on foreign values")
	}
	for k := KindOther; k <= KindCanceled; k++ {
		if k.String() == "unknown" || kindSentinels[k] == nil {
			t.Errorf("kind %d has no name or sentinel", k)
		}
	}
}

// FuzzReadBody feeds arbitrary bodies labelled gzip (and plain) through the
// decoder with arbitrary caps: never more than the cap, never a panic, and
// a valid gzip stream within the cap decodes exactly.
func FuzzReadBody(f *testing.F) {
	var ok bytes.Buffer
	zw := gzip.NewWriter(&ok)
	zw.Write([]byte("<a href=x>hello</a>"))
	zw.Close()
	f.Add(ok.Bytes(), true, int64(100))
	f.Add(ok.Bytes(), true, int64(5))
	f.Add(ok.Bytes()[:10], true, int64(100))
	f.Add([]byte("\x1f\x8b\x08\x00garbage"), true, int64(100))
	f.Add([]byte("plain body"), false, int64(4))
	f.Add([]byte{}, true, int64(1))
	f.Fuzz(func(t *testing.T, body []byte, gz bool, limit int64) {
		if limit <= 0 || limit > 1<<20 {
			return
		}
		resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
		if gz {
			resp.Header.Set("Content-Encoding", "gzip")
			resp.ContentLength = -1
		}
		rr := readBody(resp, limit)
		if int64(len(rr.body)) > limit {
			t.Fatalf("%d bytes kept over the %d cap", len(rr.body), limit)
		}
		if (rr.trunc == "") != (rr.err == nil) && rr.trunc != TruncatedLength {
			t.Fatalf("truncated %q with error %v", rr.trunc, rr.err)
		}
		if !gz {
			want := body[:min(int64(len(body)), limit)]
			if !bytes.Equal(rr.body, want) || (int64(len(body)) > limit) != (rr.trunc == TruncatedLength) {
				t.Fatalf("plain body: got %q truncated %q", rr.body, rr.trunc)
			}
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return
		}
		full, err := io.ReadAll(io.LimitReader(zr, 2<<20))
		if err != nil || int64(len(full)) > limit {
			return
		}
		if !bytes.Equal(rr.body, full) || rr.err != nil || rr.trunc != "" {
			t.Fatalf("valid gzip within the cap: got %q (%q, %v), want %q", rr.body, rr.trunc, rr.err, full)
		}
	})
}

// FuzzReadBodyDeflate feeds arbitrary bodies labelled deflate through the
// decoder: never more than the cap, never a panic, and a zlib or raw
// DEFLATE stream of the input decodes back to it.
func FuzzReadBodyDeflate(f *testing.F) {
	f.Add([]byte("<a href=x>hello</a>"), true, int64(100))
	f.Add([]byte("<a href=x>hello</a>"), false, int64(5))
	f.Add([]byte{}, true, int64(1))
	f.Fuzz(func(t *testing.T, plain []byte, zlibWrapped bool, limit int64) {
		if limit <= 0 || limit > 1<<20 {
			return
		}
		var b bytes.Buffer
		if zlibWrapped {
			zw := zlib.NewWriter(&b)
			zw.Write(plain)
			zw.Close()
		} else {
			fw, _ := flate.NewWriter(&b, flate.DefaultCompression)
			fw.Write(plain)
			fw.Close()
		}
		for _, body := range [][]byte{b.Bytes(), plain} { // a valid stream, then garbage
			resp := &http.Response{Header: http.Header{"Content-Encoding": {"deflate"}}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: -1}
			rr := readBody(resp, limit)
			if int64(len(rr.body)) > limit {
				t.Fatalf("%d bytes kept over the %d cap", len(rr.body), limit)
			}
			if (rr.trunc == "") != (rr.err == nil) && rr.trunc != TruncatedLength {
				t.Fatalf("truncated %q with error %v", rr.trunc, rr.err)
			}
		}
		resp := &http.Response{Header: http.Header{"Content-Encoding": {"deflate"}}, Body: io.NopCloser(bytes.NewReader(b.Bytes())), ContentLength: -1}
		rr := readBody(resp, limit)
		want := plain[:min(int64(len(plain)), limit)]
		if rr.err != nil || !bytes.Equal(rr.body, want) || (int64(len(plain)) > limit) != (rr.trunc == TruncatedLength) {
			t.Fatalf("deflate (zlib %v) of %d bytes: got %d bytes, truncated %q, err %v", zlibWrapped, len(plain), len(rr.body), rr.trunc, rr.err)
		}
	})
}
