// Package httptrap holds the pieces the project's misbehaving test servers
// (internal/hostile, internal/faults) share: waiting that a closing server
// can end, raw connection tricks, and the gzip bomb. It exists for tests
// only.
package httptrap

import (
	"bytes"
	"compress/gzip"
	"net"
	"net/http"
	"time"
)

// Wait sleeps for d unless the client leaves or quit is closed; it reports
// whether the full d elapsed.
func Wait(r *http.Request, quit <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-quit:
	}
	return false
}

// Closed reports whether quit is closed.
func Closed(quit <-chan struct{}) bool {
	select {
	case <-quit:
		return true
	default:
		return false
	}
}

// HTML sets an HTML Content-Type on w.
func HTML(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
}

// Hijack takes over w's connection, calls fn with it and closes it.
func Hijack(w http.ResponseWriter, fn func(net.Conn)) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	fn(c)
}

// Reset closes c with a TCP RST instead of a FIN.
func Reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// GzipBomb returns mib MiB of zeros as concatenated gzip members of 1 MiB
// each (RFC 1952 section 2.2), which readers decode as one stream: about
// 1 KiB per MiB. Only one member is compressed; the rest are copies.
func GzipBomb(mib int) []byte {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		panic(err) // BestCompression is a valid level
	}
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	return bytes.Repeat(b.Bytes(), mib)
}
