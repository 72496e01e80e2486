//go:build unix

package fetch

import (
	"errors"
	"net"
	"syscall"
)

// idleConnUsable reports whether an idle connection can carry a request:
// nothing has arrived on it since its last response. Data there would be
// an unsolicited response (some servers send a 408 before closing an idle
// connection), read as the answer to the next request; an end of stream
// means the server closed it. It peeks without blocking (one recv with
// MSG_PEEK | MSG_DONTWAIT): a read with a past deadline would not reach
// the socket.
func idleConnUsable(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	usable := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Only "nothing to read" means usable: a byte, an end of stream
		// (no error, no byte) or a reset do not.
		usable = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK)
		return true // never wait for readiness
	})
	return err == nil && usable
}
