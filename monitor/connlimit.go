package monitor

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// connLimiter bounds the status server's connections: at most perClient
// from one client (an IPv4 address, or an IPv6 /64, what one host
// usually holds) and at most total in all. It never queues a connection:
// one over its client's cap is closed at once. One that finds the server
// full takes the place of the oldest connection that has waited at least
// minWait without sending a whole request header (a slow-loris client; a
// scraper's connections send theirs at once and are never displaced), if
// the newcomer's client holds no such connection; otherwise it is closed
// at once. So a scraper,
// whose connections send their header at once, always gets in, and a
// scrape never waits behind a slow client.
type connLimiter struct {
	net.Listener
	total, perClient int

	mu      sync.Mutex // protects clients and n
	clients map[netip.Prefix]*clientConns
	n       int // open connections
}

// clientConns are the open connections of one client, oldest first.
type clientConns struct {
	conns []*limitedConn
}

func newConnLimiter(ln net.Listener, total, perClient int) *connLimiter {
	return &connLimiter{Listener: ln, total: total, perClient: perClient, clients: map[netip.Prefix]*clientConns{}}
}

// clientKey is the client a remote address counts against: the IPv4
// address, or the IPv6 /64.
func clientKey(a net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Prefix{} // not TCP/IP: all such clients count as one
	}
	ip := ap.Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// Accept returns the next connection the caps admit, closing those they
// refuse.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
		c.Close()
	}
}

// admit registers c, evicting a waiting connection of the greediest client
// when the server is full, or returns nil when c must be refused.
func (l *connLimiter) admit(c net.Conn) *limitedConn {
	key := clientKey(c.RemoteAddr())
	now := time.Now()
	var victim *limitedConn
	l.mu.Lock()
	cc := l.clients[key]
	if cc == nil {
		cc = &clientConns{}
	}
	if len(cc.conns) >= l.perClient {
		l.mu.Unlock()
		return nil
	}
	if l.n >= l.total {
		victim = l.victim(key, now)
		if victim == nil {
			l.mu.Unlock()
			return nil
		}
		l.removeLocked(victim)
	}
	lc := &limitedConn{Conn: c, l: l, key: key, at: now}
	cc.conns = append(cc.conns, lc)
	l.clients[key] = cc
	l.n++
	l.mu.Unlock()
	if victim != nil {
		victim.Conn.Close() // its server goroutine ends; its Close is then a no-op
	}
	return lc
}

// minWait is how long a connection may take to send its request header
// before a newcomer may displace it: a client elsewhere on the network
// sends it half a round trip after the server accepted the connection.
const minWait = 500 * time.Millisecond

// victim returns, for a newcomer of client key, the oldest connection
// that has waited minWait or more for its first request header; or nil
// when there is none, or when client key holds such a connection itself.
// So a scraper, whose connections never wait that long, always displaces
// one, while a slow-loris client, whose connections all do, displaces
// nobody once its first ones are that old.
func (l *connLimiter) victim(key netip.Prefix, now time.Time) *limitedConn {
	stale := func(c *limitedConn) bool { return !c.served && now.Sub(c.at) >= minWait }
	if cc := l.clients[key]; cc != nil && slices.ContainsFunc(cc.conns, stale) {
		return nil
	}
	var v *limitedConn
	for _, cc := range l.clients {
		for _, c := range cc.conns {
			if stale(c) && (v == nil || c.at.Before(v.at)) {
				v = c
			}
		}
	}
	return v
}

// removeLocked forgets c; l.mu is held.
func (l *connLimiter) removeLocked(c *limitedConn) {
	if c.gone {
		return
	}
	c.gone = true
	l.n--
	cc := l.clients[c.key]
	for i, x := range cc.conns {
		if x == c {
			cc.conns = append(cc.conns[:i], cc.conns[i+1:]...)
			break
		}
	}
	if len(cc.conns) == 0 {
		delete(l.clients, c.key)
	}
}

// open returns the connections open now, for tests.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// limitedConn is a connection counted by a connLimiter.
type limitedConn struct {
	net.Conn
	l   *connLimiter
	key netip.Prefix

	at     time.Time // when it was accepted
	gone   bool      // removed from l; guarded by l.mu
	served bool      // a request of it reached the handler; guarded by l.mu
}

// Close closes the connection and frees its place.
func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.removeLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// connKey is the context key of a request's *limitedConn.
type connKey struct{}

// connContext puts the server's connection into its requests' context,
// for trackHandling.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// trackHandling marks a connection as having sent a whole request
// header, so that a full server never displaces it for a newcomer.
func trackHandling(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, _ := r.Context().Value(connKey{}).(*limitedConn); lc != nil {
			lc.l.mu.Lock()
			lc.served = true
			lc.l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}
