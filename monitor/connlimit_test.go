package monitor

import (
	"net"
	"os"
	"testing"
	"time"
)

// A client is held to MaxConnsPerClient connections: one more is closed
// at once, not queued, while another client still gets in.
func TestConnsPerClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimiter(ln, 4, 2)
	defer l.Close()
	go func() {
		for {
			if _, err := l.Accept(); err != nil {
				return
			}
		}
	}()
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closed := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err != nil && !os.IsTimeout(err)
	}
	a1, a2, a3 := dial("127.0.0.2"), dial("127.0.0.2"), dial("127.0.0.2")
	if !closed(a3) || closed(a1) || closed(a2) {
		t.Error("a client's third connection was not refused, or one of its first two was")
	}
	b := dial("127.0.0.3")
	if closed(b) {
		t.Error("another client's connection was refused")
	}
	if n := l.open(); n != 3 {
		t.Errorf("open connections %d, want 3", n)
	}
}

// A full server: a newcomer from a client with no connection waiting
// minWait or more for its header displaces the oldest such connection,
// never one that has sent a request; a newcomer from a client that holds
// such a connection is refused.
func TestConnsDisplaced(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimiter(ln, 4, 4)
	defer l.Close()
	accepted := make(chan *limitedConn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c.(*limitedConn)
		}
	}()
	dial := func(from string) (net.Conn, *limitedConn) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		select {
		case lc := <-accepted:
			return c, lc
		case <-time.After(300 * time.Millisecond):
			return c, nil // refused: never accepted
		}
	}
	closed := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err != nil && !os.IsTimeout(err)
	}
	served, lc := dial("127.0.0.2") // the greedy client's oldest, but it sent a request
	l.mu.Lock()
	lc.served = true
	l.mu.Unlock()
	oldest, _ := dial("127.0.0.2")
	a3, _ := dial("127.0.0.2")
	b1, _ := dial("127.0.0.3")
	time.Sleep(minWait + 50*time.Millisecond)
	if _, lc := dial("127.0.0.2"); lc != nil {
		t.Error("a client with waiting connections got a fifth one into a full server")
	}
	c, lc := dial("127.0.0.4")
	if lc == nil || closed(c) {
		t.Fatal("a newcomer from another client was refused by a full server")
	}
	if !closed(oldest) || closed(served) || closed(a3) || closed(b1) {
		t.Error("the newcomer did not displace exactly the oldest waiting connection")
	}
	if n := l.open(); n != 4 {
		t.Errorf("open connections %d, want 4", n)
	}
}
