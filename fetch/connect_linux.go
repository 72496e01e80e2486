//go:build linux

package fetch

import (
	"net/netip"
	"os"
	"syscall"
)

// connectNow starts a dial's TCP connect itself, from net.Dialer.Control,
// which runs on the new non-blocking socket just before net's own
// connect(2).
//
// net's dialer, when connect returns EINPROGRESS, registers the socket with
// the runtime's poller and parks until the poller reports it writable. To a
// peer on this machine (or one very near) the handshake is complete by the
// time connect returns, but the dial still waits for the poller, and Go
// polls only when a P has nothing else to run: in a crawl whose Ps are busy
// parsing and archiving pages, that wait was most of the dial (median 0.16
// ms against curl's 0.06; docs/BENCHMARKS.md, fifth session). After this
// call net's connect is a second one on a socket already connecting, and
// Linux answers it from the socket's state: 0 once the handshake is done
// (net then returns the connection at once), EALREADY while it is not (net
// waits in the poller as before), or the connect's error (a refusal
// included), which net returns as it would have.
//
// An address with an IPv6 zone is left to net, which maps the zone to an
// interface index.
func connectNow(network, address string, c syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || ap.Addr().Zone() != "" {
		return nil
	}
	var sa syscall.Sockaddr
	if ip := ap.Addr().Unmap(); ip.Is4() && network == "tcp4" {
		sa = &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}
	} else {
		sa = &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	var cerr error
	if err := c.Control(func(fd uintptr) {
		switch err := syscall.Connect(int(fd), sa); err {
		case nil, syscall.EINPROGRESS, syscall.EINTR:
			// Under way, done, or interrupted and going on in the
			// kernel: net's connect reports which.
		default:
			cerr = os.NewSyscallError("connect", err)
		}
	}); err != nil {
		return err
	}
	return cerr
}
