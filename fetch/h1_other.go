//go:build !unix

package fetch

import "net"

// idleConnUsable is true where the connection cannot be peeked at without
// blocking: a connection closed meanwhile is found when the request is
// sent (the request then goes again on a new one), but an unsolicited
// response would be read as the next request's.
func idleConnUsable(net.Conn) bool { return true }
