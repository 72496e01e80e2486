package fetch

import (
	"crypto/tls"
	"net"
	"sync"
)

// captureConn is a connection whose bytes are teed into the recorder of
// the exchange it currently carries. For https:// it wraps the *tls.Conn,
// so what it sees is the plaintext HTTP, and it keeps the handshake's
// ConnectionState (net/http's Transport does not see a *tls.Conn and
// leaves resp.TLS nil).
//
// A connection carries one exchange at a time (HTTP/1.1 without
// pipelining): roundTripper attaches a recorder when httptrace's GotConn
// hands it the connection and detaches it once the body is read and
// closed. Bytes read while no recorder is attached (the Transport peeking
// at an idle connection and finding an unsolicited response or its end)
// belong to no exchange and are not kept.
type captureConn struct {
	net.Conn
	tls *tls.ConnectionState // nil for plain http

	mu  sync.Mutex // guards rec: Read and Write run on the Transport's goroutines
	rec *recorder
}

func (c *captureConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if c.rec != nil {
			c.rec.read(p[:n])
		}
		c.mu.Unlock()
	}
	return n, err
}

// Write records p before writing it: a server may answer, and the
// exchange end, before Write returns; bytes the connection did not take
// are taken back from the record.
func (c *captureConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	rec := c.rec
	kept := 0
	if rec != nil {
		kept = rec.wrote(p)
	}
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	if n < kept {
		c.mu.Lock()
		if c.rec == rec {
			rec.unwrite(kept - n)
		}
		c.mu.Unlock()
	}
	return n, err
}

// attach makes rec the recorder of c's bytes from now on.
func (c *captureConn) attach(rec *recorder) {
	c.mu.Lock()
	c.rec = rec
	c.mu.Unlock()
}

// detach stops recording into rec, if rec is still c's recorder (the
// connection may already carry another exchange).
func (c *captureConn) detach(rec *recorder) {
	c.mu.Lock()
	if c.rec == rec {
		c.rec = nil
	}
	c.mu.Unlock()
}

// recorder holds the bytes of one exchange on one connection: those
// written (the request) and those read (interim 1xx responses, the
// response head and its body as sent), each capped at limit bytes. Its
// fields are guarded by the mutex of the captureConn it is attached to
// while attached, and owned by roundTripper once detached.
//
// The response is kept in blocks of growing size, joined once by bytes
// (the way readUpTo reads a body of unknown length): appending to one
// slice would copy it at every doubling and leave up to twice its size in
// capacity.
type recorder struct {
	limit  int64
	req    []byte
	blocks [][]byte // the response so far; every block but the last is full
	n      int64    // bytes in blocks
	cut    bool     // a write or read did not fit under limit
}

// wrote records p as written and returns how many of its bytes it kept.
func (r *recorder) wrote(p []byte) int {
	room := r.limit - int64(len(r.req))
	if int64(len(p)) > room {
		p = p[:max(room, 0)]
		r.cut = true
	}
	r.req = append(r.req, p...)
	return len(p)
}

// unwrite takes back the last n bytes recorded as written.
func (r *recorder) unwrite(n int) { r.req = r.req[:len(r.req)-n] }

func (r *recorder) read(p []byte) {
	if room := r.limit - r.n; int64(len(p)) > room {
		p = p[:max(room, 0)]
		r.cut = true
	}
	for len(p) > 0 {
		last := len(r.blocks) - 1
		if last < 0 || len(r.blocks[last]) == cap(r.blocks[last]) {
			r.grow(int64(len(p)))
			last = len(r.blocks) - 1
		}
		b := r.blocks[last]
		m := copy(b[len(b):cap(b)], p)
		r.blocks[last] = b[:len(b)+m]
		r.n += int64(m)
		p = p[m:]
	}
}

// grow adds a block for at least want more bytes: twice the bytes so far
// (4 KiB at first, 1 MiB at most, unless want is larger), never beyond
// limit.
func (r *recorder) grow(want int64) {
	size := min(max(r.n, 4<<10), 1<<20)
	size = min(max(size, want), r.limit-r.n)
	r.blocks = append(r.blocks, make([]byte, 0, size))
}

// reserve makes room for n more bytes in one block, moving the bytes
// recorded so far (a response head) into it, so that a body of known
// length ends up in a single slice.
func (r *recorder) reserve(n int64) {
	n = min(n, r.limit-r.n)
	if n <= 0 {
		return
	}
	if last := len(r.blocks) - 1; last >= 0 && int64(cap(r.blocks[last])-len(r.blocks[last])) >= n {
		return
	}
	b := make([]byte, 0, r.n+n)
	for _, old := range r.blocks {
		b = append(b, old...)
	}
	r.blocks = append(r.blocks[:0], b)
}

// response returns the response bytes recorded, in one slice of their
// exact length.
func (r *recorder) response() []byte {
	switch {
	case r.n == 0:
		return nil
	case len(r.blocks) == 1:
		return r.blocks[0]
	case len(r.blocks) == 2 && len(r.blocks[1]) == 0:
		return r.blocks[0]
	}
	out := make([]byte, 0, r.n)
	for _, b := range r.blocks {
		out = append(out, b...)
	}
	return out
}
