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
// The response is gathered in a pooled scratch buffer and copied once, at
// its exact size, by response: a Result lives a while (archiving), so it
// must not hold spare capacity, and growing a fresh slice per response
// cost twice the response in allocations. Once the head announces a
// Content-Length, reserve moves the bytes into a buffer of the exact size,
// which response returns without a copy.
type recorder struct {
	limit   int64
	req     []byte
	scratch *[]byte  // from scratchPool, up to maxPooledScratch bytes
	blocks  [][]byte // past maxPooledScratch: full blocks, the last one filling
	n       int64    // response bytes recorded
	exact   []byte   // the response, once reserve sized it
	cut     bool     // a write or read did not fit under limit
}

// scratchPool holds response buffers; one that grew past maxPooledScratch
// is left to the garbage collector.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledScratch = 1 << 20

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

// size is the number of response bytes recorded.
func (r *recorder) size() int64 { return r.n }

func (r *recorder) read(p []byte) {
	if room := r.limit - r.size(); int64(len(p)) > room {
		p = p[:max(room, 0)]
		r.cut = true
	}
	if len(p) == 0 {
		return
	}
	r.n += int64(len(p))
	switch {
	case r.exact != nil:
		r.exact = append(r.exact, p...)
		return
	case r.blocks == nil && r.scratch == nil:
		r.scratch = scratchPool.Get().(*[]byte)
		fallthrough
	case r.scratch != nil:
		if len(*r.scratch)+len(p) <= maxPooledScratch {
			*r.scratch = append(*r.scratch, p...)
			return
		}
		// Too large to pool: the scratch buffer becomes the first of
		// blocks joined by response.
		r.blocks = [][]byte{*r.scratch}
		r.scratch = nil
	}
	for len(p) > 0 {
		last := len(r.blocks) - 1
		if len(r.blocks[last]) == cap(r.blocks[last]) {
			r.blocks = append(r.blocks, make([]byte, 0, max(len(p), 1<<20)))
			last++
		}
		b := r.blocks[last]
		m := copy(b[len(b):cap(b)], p)
		r.blocks[last] = b[:len(b)+m]
		p = p[m:]
	}
}

// reserve makes room for n more bytes in a buffer of the exact size,
// moving the bytes recorded so far (a response head) into it.
func (r *recorder) reserve(n int64) {
	n = min(n, r.limit-r.n)
	if n <= 0 || r.blocks != nil || r.exact != nil {
		return
	}
	r.exact = make([]byte, 0, r.n+n)
	if r.scratch != nil {
		r.exact = append(r.exact, *r.scratch...)
		r.release()
	}
}

func (r *recorder) release() {
	if cap(*r.scratch) <= maxPooledScratch {
		*r.scratch = (*r.scratch)[:0]
		scratchPool.Put(r.scratch)
	}
	r.scratch = nil
}

// response returns the response bytes recorded, in one slice of their
// exact length, and gives the scratch buffer back. It is called once.
func (r *recorder) response() []byte {
	switch {
	case r.scratch != nil:
		var out []byte
		if len(*r.scratch) > 0 {
			out = exactCopy(*r.scratch)
		}
		r.release()
		return out
	case r.blocks != nil:
		out := make([]byte, 0, r.n)
		for _, b := range r.blocks {
			out = append(out, b...)
		}
		r.blocks = nil
		return out
	}
	if len(r.exact) == 0 {
		return nil
	}
	if cap(r.exact) > len(r.exact)+len(r.exact)/8 {
		// The body was shorter than announced (cut).
		return exactCopy(r.exact)
	}
	return r.exact
}

// exactCopy copies b into a slice whose capacity is its length.
func exactCopy(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}
