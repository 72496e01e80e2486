package loopback

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// TestOnly accepts a loopback peer; a non-loopback peer is tested where the
// machine has a non-loopback address to dial from.
func TestOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Only{ln}
	defer l.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func(local, remote string) {
		d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", net.JoinHostPort(remote, strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("dial %s from %s: %v", remote, local, err)
		}
		t.Cleanup(func() { c.Close() })
	}
	dial("127.0.0.1", "127.0.0.1")
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("a loopback peer was not accepted")
	}
	if ip := nonLoopback(); ip != "" {
		dial(ip, ip)
		select {
		case c := <-accepted:
			t.Fatalf("accepted a peer at %v", c.RemoteAddr())
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func nonLoopback() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
