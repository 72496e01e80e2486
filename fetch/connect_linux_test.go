//go:build linux

package fetch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A dial through connectNow gives a working connection, and a refused one
// the error net's own connect gives, classified alike.
func TestConnectNow(t *testing.T) {
	addr := strings.TrimPrefix(rawServer(t, func(c net.Conn, br *bufio.Reader) { io.Copy(c, br) }), "http://")
	d := &net.Dialer{Control: connectNow, Timeout: 5 * time.Second}
	for range 50 {
		c, err := d.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("echo %q, %v", buf, err)
		}
		c.Close()
	}
	closed := closedAddr(t)
	for _, d := range []*net.Dialer{{Control: connectNow}, {}} {
		_, err := d.DialContext(context.Background(), "tcp", closed)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial %s (early connect %v): %v, want connection refused", closed, d.Control != nil, err)
		}
		if k := classify(err, nil); k != KindConnect {
			t.Errorf("dial %s (early connect %v): kind %v, want %v", closed, d.Control != nil, k, KindConnect)
		}
	}
	// IPv6 loopback, where there is one.
	if ln6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		defer ln6.Close()
		go func() {
			if c, err := ln6.Accept(); err == nil {
				c.Close()
			}
		}()
		c, err := d.DialContext(context.Background(), "tcp", ln6.Addr().String())
		if err != nil {
			t.Fatalf("dial %s: %v", ln6.Addr(), err)
		}
		c.Close()
	}
}

// The address policy runs before the early connect: a refused address is
// not even connected to (no connection waits in the listener's queue).
func TestFetchPolicyBeforeConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Fetch(context.Background(), "http://"+ln.Addr().String()+"/")
	wantKind(t, err, KindBlockedAddress)
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(200 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("a blocked address was connected to")
	}
}

// BenchmarkDialBusy dials a loopback listener while every P runs a
// CPU-bound goroutine, as in a crawl that parses and archives pages: net's
// dial waits for the poller, which runs when a P is idle; connectNow's
// does not wait for a handshake already done.
func BenchmarkDialBusy(b *testing.B) {
	addr := strings.TrimPrefix(rawServer(b, func(net.Conn, *bufio.Reader) {}), "http://")
	for _, bc := range []struct {
		name    string
		control func(string, string, syscall.RawConn) error
	}{{"net", nil}, {"connectNow", connectNow}} {
		b.Run(bc.name, func(b *testing.B) {
			var stop atomic.Bool
			var wg sync.WaitGroup
			for range runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					x := 0
					for !stop.Load() {
						for i := range 1000 {
							x += i
						}
					}
					_ = x
				})
			}
			d := &net.Dialer{Control: bc.control}
			for b.Loop() {
				c, err := d.DialContext(context.Background(), "tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			stop.Store(true)
			wg.Wait()
		})
	}
}

// A connect that does not complete at once (the listener's accept queue is
// full, so its SYN is dropped and sent again a second later) is waited for
// in the poller as before: within the dialer's timeout it fails as a
// timeout, and it succeeds once the listener has room.
func TestConnectNowPending(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	defer syscall.Shutdown(fd, syscall.SHUT_RDWR) // ends the Accept below
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // room for one connection
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	first, err := net.Dial("tcp", addr) // fills the queue
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	d := &net.Dialer{Control: connectNow, Timeout: 300 * time.Millisecond}
	start := time.Now()
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err == nil {
		c.Close()
		t.Fatal("dial to a full accept queue succeeded at once")
	}
	if took := time.Since(start); classify(err, nil) != KindTimeout || took < 250*time.Millisecond || took > 5*time.Second {
		t.Fatalf("dial to a full queue: %v (kind %v) after %v, want a timeout after 300ms", err, classify(err, nil), took)
	}

	// Room again once the listener accepts: the connect pending in the
	// poller completes when the SYN is sent again.
	go func() {
		for {
			nfd, _, err := syscall.Accept(fd)
			if err != nil {
				return
			}
			syscall.Close(nfd)
		}
	}()
	d.Timeout = 10 * time.Second
	c, err = d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("dial once the listener accepts: %v", err)
	}
	c.Close()
}
