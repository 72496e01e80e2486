package monitor

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
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
