//go:build linux

package fetch

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A dial through connectNow gives a working connection, and a refused one
// the error net's own connect gives, classified alike.
func TestConnectNow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	d := &net.Dialer{Control: connectNow, Timeout: 5 * time.Second}
	for range 50 {
		c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
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
	// A port nobody listens on (taken, then freed).
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l2.Addr().String()
	l2.Close()
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
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
				c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
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
