package monitor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/internal/testsite"
)

// TestHostileClients runs a real crawl observed by a Monitor whose server
// is flooded by bad clients: slow-loris clients that never finish their
// request, clients that request pages and never read, and more
// connections than MaxConns. The crawl must finish as fast as without
// them, with every page, the slow clients must be cut by the timeouts, and
// the server must answer again once they are gone.
func TestHostileClients(t *testing.T) {
	site, _ := testsite.Start(t, 150)
	want, _ := site.Expected()
	crawlOnce := func(hostile bool) (time.Duration, crawl.Stats) {
		m, err := New(Options{Interval: 10 * time.Millisecond, MaxConns: 4, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		o := crawl.Options{Seeds: site.Roots(), Dir: t.TempDir(), Concurrency: 6, ExpectedURLs: 100_000, Observer: m}
		o.Politeness.Delay = -1
		o.Fetch.AllowPrivate = true
		cr, err := crawl.New(o)
		if err != nil {
			t.Fatal(err)
		}
		defer cr.Close()
		ln, _, err := Listen("127.0.0.1:0", false)
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := m.Run(ctx, ln, cr); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
		var cut []time.Duration // how long the server kept each slow-loris client
		var mu sync.Mutex
		if hostile {
			for i := range 12 {
				wg.Go(func() {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						return // refused beyond the backlog: fine
					}
					defer c.Close()
					start := time.Now()
					if i%2 == 0 {
						// Slow loris: half a request, then silence.
						io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
					} else {
						// Ask for pages, never read the answers.
						for range 50 {
							io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
						}
					}
					if i%2 == 0 {
						c.SetReadDeadline(time.Now().Add(20 * time.Second))
						io.Copy(io.Discard, c)
						mu.Lock()
						cut = append(cut, time.Since(start))
						mu.Unlock()
					} else {
						<-ctx.Done()
					}
				})
			}
		}
		start := time.Now()
		if err := cr.Run(context.Background()); err != nil {
			t.Fatalf("crawl: %v", err)
		}
		took := time.Since(start)
		if hostile {
			// The server is usable again once the bad clients are cut.
			time.Sleep(time.Second)
			res, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/status.json")
			if err != nil {
				t.Errorf("status after the hostile clients: %v", err)
			} else {
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || !strings.Contains(string(body), `"fetched"`) {
					t.Errorf("status after the hostile clients: %d %.100s", res.StatusCode, body)
				}
			}
		}
		cancel()
		wg.Wait()
		if hostile && len(cut) == 0 {
			t.Error("no slow-loris client was cut")
		}
		for _, d := range cut {
			if d > 5*time.Second {
				t.Errorf("a slow-loris client was kept %v (ReadTimeout 300ms)", d)
			}
		}
		return took, cr.Stats()
	}
	quiet, _ := crawlOnce(false)
	loud, s := crawlOnce(true)
	if s.Pages != uint64(len(want)) {
		t.Errorf("hostile run fetched %d pages, want %d", s.Pages, len(want))
	}
	// Generous: the machine is shared; a stalled crawl would wait for the
	// clients' 20 s.
	if loud > 3*quiet+2*time.Second {
		t.Errorf("crawl took %v with hostile clients, %v without", loud, quiet)
	}
	t.Logf("crawl of %d pages: %v quiet, %v with hostile clients", len(want), quiet, loud)
}

// An oversized request header is refused, not buffered.
func TestRequestHeaderBounded(t *testing.T) {
	_, base := startMonitor(t, Options{}, &fakeSource{s: sampleStats()})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 1<<20)+"\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("1 MiB header: %s", res.Status)
	}
}

// slowLoris keeps one connection from local to addr sending a request
// header one byte a second, reconnecting 20ms after the server cuts it,
// until ctx ends. It counts the connections the server cut.
func slowLoris(ctx context.Context, local, addr string, cuts *atomic.Int64) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	const req = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " // never finished
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		for i := 0; ctx.Err() == nil; i++ {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := c.Write([]byte{req[i%len(req)]}); err != nil {
				break
			}
			// A byte a second; a closed connection shows as a read of
			// EOF or reset within that second.
			c.SetReadDeadline(time.Now().Add(time.Second))
			var b [64]byte
			if _, err := c.Read(b[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
		}
		stop()
		c.Close()
		if ctx.Err() == nil {
			cuts.Add(1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSlowLorisDoesNotStarveScrapes: slow-loris clients (one header byte a
// second, reconnecting when cut) attack the status server while 8
// scrapers fetch /metrics and /status.json in a loop over kept-alive
// connections. Every scrape must answer 200 within a second. Loopback is
// one host, so the attackers and the scrapers use different source
// addresses of 127.0.0.0/8, as attackers elsewhere on a network would:
// 50 connections from one address (held to MaxConnsPerClient, the rest
// refused), and 100 from ten addresses (more than MaxConns in all: a
// scraper's new connection displaces an attacker's that has waited 500ms,
// and no connection of a scraper is ever displaced).
func TestSlowLorisDoesNotStarveScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("10s of slow-loris attack: skipped in -short")
	}
	for _, tc := range []struct {
		name      string
		attackers []string // source address of each attacking connection
	}{
		{"one address", slices.Repeat([]string{"127.0.0.2"}, 50)},
		{"ten addresses", func() (a []string) {
			for i := range 100 {
				a = append(a, fmt.Sprintf("127.0.0.%d", 10+i%10))
			}
			return a
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{s: sampleStats()}
			_, base := startMonitor(t, Options{Interval: 100 * time.Millisecond}, src)
			addr := strings.TrimPrefix(base, "http://")
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			var cuts atomic.Int64
			for _, a := range tc.attackers {
				wg.Go(func() { slowLoris(ctx, a, addr, &cuts) })
			}
			time.Sleep(1500 * time.Millisecond) // the attack settles in
			const scrapers, scrapeFor = 8, 5 * time.Second
			var mu sync.Mutex // protects slowest, failures, n
			var slowest time.Duration
			var failures []string
			n := 0
			end := time.Now().Add(scrapeFor)
			var sg sync.WaitGroup
			for i := range scrapers {
				sg.Go(func() {
					d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}
					c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
					defer c.CloseIdleConnections()
					path := []string{"/metrics", "/status.json"}[i%2]
					for time.Now().Before(end) {
						start := time.Now()
						res, err := c.Get(base + path)
						var code int
						if err == nil {
							io.Copy(io.Discard, res.Body)
							res.Body.Close()
							code = res.StatusCode
						}
						took := time.Since(start)
						mu.Lock()
						n++
						slowest = max(slowest, took)
						if err != nil || code != 200 || took > time.Second {
							failures = append(failures, fmt.Sprintf("%s: %d %v after %v", path, code, err, took))
						}
						mu.Unlock()
						time.Sleep(50 * time.Millisecond)
					}
				})
			}
			sg.Wait()
			if len(failures) > 0 {
				t.Errorf("%d of %d scrapes failed or took over 1s; first: %s", len(failures), n, failures[0])
			}
			if cuts.Load() == 0 {
				t.Error("no attacking connection was ever cut")
			}
			t.Logf("%d attacking connections from %d addresses: %d scrapes by %d scrapers, slowest %v; attacking connections cut %d",
				len(tc.attackers), len(slices.Compact(slices.Sorted(slices.Values(tc.attackers)))), n, scrapers, slowest.Round(time.Millisecond), cuts.Load())
		})
	}
}
