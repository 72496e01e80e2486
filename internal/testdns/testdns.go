// Package testdns resolves host names through a Go function, for tests
// that need many host names without a DNS server or /etc/hosts.
//
// New returns a *net.Resolver that uses Go's own resolver (PreferGo) with a
// Dial that never touches the network: each connection is an in-memory
// DNS server that answers the queries written to it from a LookupFunc.
// Anything that takes a *net.Resolver (net.Dialer.Resolver,
// fetch.Options.Resolver) then resolves through the function:
//
//	r := testdns.New(func(host string) ([]netip.Addr, error) {
//		if strings.HasSuffix(host, ".web.test") {
//			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
//		}
//		return nil, testdns.ErrNotFound
//	})
//
// What the caller of the resolver sees:
//   - addresses: A records for the IPv4 ones, AAAA for the IPv6 ones;
//   - ErrNotFound: NXDOMAIN, a *net.DNSError with IsNotFound;
//   - any other error (ErrTemporary): SERVFAIL, a *net.DNSError with
//     IsTemporary, as a failing recursive resolver gives.
//
// Go's resolver retries a SERVFAIL itself (resolv.conf's attempts, per
// name server, for A and AAAA in parallel), so one lookup through the
// resolver calls the LookupFunc several times: a function that means to
// fail one lookup must fail every call of a burst (see internal/faults).
// Names in /etc/hosts are answered from there first, as always in Go.
//
// The LookupFunc may be called from several goroutines at once. A
// connection holds no goroutine: answers are computed in Write.
package testdns

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Errors a LookupFunc returns to choose the answer.
var (
	// ErrNotFound makes the answer NXDOMAIN.
	ErrNotFound = errors.New("testdns: no such host")
	// ErrTemporary makes the answer SERVFAIL (any other error does too).
	ErrTemporary = errors.New("testdns: temporary failure")
)

// LookupFunc returns the addresses of host (lower case, without the
// trailing dot), or an error choosing a failure (ErrNotFound,
// ErrTemporary).
type LookupFunc func(host string) ([]netip.Addr, error)

// New returns a resolver answering every name through lookup.
func New(lookup LookupFunc) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return &conn{lookup: lookup}, nil
		},
	}
}

// conn is one DNS "TCP" connection (Go's resolver frames every message
// with a two-byte length on a conn that is not a net.PacketConn).
type conn struct {
	lookup LookupFunc

	mu     sync.Mutex // protects in, out and closed
	in     []byte     // bytes written, not yet a whole message
	out    []byte     // framed answers not yet read
	closed bool
}

var errClosed = errors.New("testdns: connection closed")

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, errClosed
	}
	c.in = append(c.in, p...)
	for len(c.in) >= 2 {
		n := int(binary.BigEndian.Uint16(c.in))
		if len(c.in) < 2+n {
			break
		}
		if answer := Answer(c.in[2:2+n], c.lookup); answer != nil {
			c.out = binary.BigEndian.AppendUint16(c.out, uint16(len(answer)))
			c.out = append(c.out, answer...)
		}
		c.in = c.in[2+n:]
	}
	return len(p), nil
}

func (c *conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.out) == 0 {
		// Nothing is ever answered later: a query without an answer
		// (unparsable) ends the exchange.
		return 0, io.EOF
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

func (c *conn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

type addr struct{}

func (addr) Network() string { return "testdns" }
func (addr) String() string  { return "testdns" }

func (c *conn) LocalAddr() net.Addr              { return addr{} }
func (c *conn) RemoteAddr() net.Addr             { return addr{} }
func (c *conn) SetDeadline(time.Time) error      { return nil }
func (c *conn) SetReadDeadline(time.Time) error  { return nil }
func (c *conn) SetWriteDeadline(time.Time) error { return nil }

// Answer returns the DNS response to the query msg (without framing),
// asking lookup for the first question's name; nil when msg has no
// readable header. It is exported for fuzzing and for tests that speak DNS
// themselves.
func Answer(msg []byte, lookup LookupFunc) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil
	}
	resp := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	q, err := p.Question()
	if err != nil || h.Response || h.OpCode != 0 {
		resp.RCode = dnsmessage.RCodeFormatError
		return build(resp, nil, nil)
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	addrs, err := lookup(name)
	switch {
	case errors.Is(err, ErrNotFound):
		resp.RCode = dnsmessage.RCodeNameError
		return build(resp, &q, nil)
	case err != nil:
		resp.RCode = dnsmessage.RCodeServerFailure
		return build(resp, &q, nil)
	}
	var answers []netip.Addr
	for _, a := range addrs {
		if (q.Type == dnsmessage.TypeA && a.Is4()) || (q.Type == dnsmessage.TypeAAAA && a.Is6() && !a.Is4In6()) {
			answers = append(answers, a)
		}
	}
	return build(resp, &q, answers)
}

// build packs a response; a pack error (a name too long to echo) gives a
// SERVFAIL without the question.
func build(h dnsmessage.Header, q *dnsmessage.Question, answers []netip.Addr) []byte {
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), h)
	b.EnableCompression()
	out, err := func() ([]byte, error) {
		if err := b.StartQuestions(); err != nil {
			return nil, err
		}
		if q != nil {
			if err := b.Question(*q); err != nil {
				return nil, err
			}
		}
		if err := b.StartAnswers(); err != nil {
			return nil, err
		}
		for _, a := range answers {
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
			var err error
			if a.Is4() {
				err = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
			} else {
				err = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
			}
			if err != nil {
				return nil, err
			}
		}
		return b.Finish()
	}()
	if err != nil {
		h.RCode = dnsmessage.RCodeServerFailure
		bare := dnsmessage.NewBuilder(nil, h)
		out, _ = bare.Finish() // a bare header always packs
	}
	return out
}
