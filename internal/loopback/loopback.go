// Package loopback guards the test servers that listen on every address so
// that all of 127.0.0.0/8 reaches them (one listener serving many loopback
// hosts): Only closes connections from any other peer.
package loopback

import (
	"net"
	"net/netip"
)

// Only wraps a listener: its Accept closes, without a word, every
// connection whose peer is not a loopback address, and returns the next
// one that is.
type Only struct{ net.Listener }

// Accept returns the next connection from a loopback peer.
func (l Only) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil && ap.Addr().Unmap().IsLoopback() {
			return c, nil
		}
		c.Close()
	}
}
