package testweb

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/procs"
)

// cpuTime returns the process's user and system CPU time (0 where it
// cannot be read).
func cpuTime() time.Duration {
	d, _ := procs.CPUTime()
	return d
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// benchSizes are the webs of the benchmarks: a small one and the 1M-page
// web.
var benchSizes = []struct{ hosts, pages int }{{10, 1000}, {10_000, 1_000_000}}

// BenchmarkHandler measures the server's own cost per request (routing,
// generating the links and rendering a content page), without HTTP.
func BenchmarkHandler(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("hosts=%d/pages=%d", sz.hosts, sz.pages), func(b *testing.B) {
			w := mustBuild(b, Options{Hosts: sz.hosts, Pages: sz.pages, MaxHostPages: MaxHostPages}, 8080)
			urls := pageURLs(w, 4096)
			reqs := make([]*http.Request, len(urls))
			for i, u := range urls {
				reqs[i], _ = http.NewRequest(http.MethodGet, u, nil)
			}
			d := &discard{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; b.Loop(); i++ {
				w.serve(d, reqs[i%len(reqs)])
			}
			b.ReportMetric(float64(cpuTime()-cpu)/1e3/float64(b.N), "cpu-µs/page")
			b.ReportMetric(float64(w.Stats().Bytes)/float64(w.Stats().Requests), "bytes/page")
		})
	}
}

// pageURLs returns n content-page URLs of w, hosts and pages drawn
// uniformly from a fixed stream.
func pageURLs(w *Web, n int) []string {
	r := rng{42}
	urls := make([]string, n)
	for i := range urls {
		h := r.intn(w.Hosts())
		urls[i] = w.PageURL(h, r.intn(w.HostPages(h)))
	}
	return urls
}

// BenchmarkServe measures pages per second over HTTP/1.1 keep-alive
// connections from a plain Go client in the same process (client and
// server share the CPUs), and the server's heap once the web is built.
func BenchmarkServe(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("hosts=%d/pages=%d", sz.hosts, sz.pages), func(b *testing.B) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			w, err := Start(Options{Hosts: sz.hosts, Pages: sz.pages, MaxHostPages: MaxHostPages})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			runtime.GC()
			runtime.ReadMemStats(&after)
			urls := pageURLs(w, 4096)
			d := &net.Dialer{Resolver: w.Resolver()}
			tr := &http.Transport{DialContext: d.DialContext, MaxIdleConns: 1024, MaxIdleConnsPerHost: 16, DisableCompression: true}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			var next atomic.Uint64
			b.SetParallelism(8)
			b.ResetTimer()
			cpu := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, urls[next.Add(1)%uint64(len(urls))], nil)
					res, err := c.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						b.Errorf("%s: status %d", req.URL, res.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			b.ReportMetric(float64(cpuTime()-cpu)/1e3/float64(b.N), "cpu-µs/page")
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-web")
		})
	}
}

// BenchmarkServeExternal loads a web served by cmd serve in another
// process, so that the server's CPU and memory can be read from /proc
// apart from the client's. It runs only when TESTWEB_ADDR names the
// server (host:port) and TESTWEB_HOSTS and TESTWEB_PAGES its size (seed
// 1, Loopback addressing); it rebuilds the same web here to know its
// URLs. TESTWEB_CONNS sets the concurrent requests (default 16).
func BenchmarkServeExternal(b *testing.B) {
	addr := os.Getenv("TESTWEB_ADDR")
	if addr == "" {
		b.Skip("TESTWEB_ADDR not set")
	}
	hosts, _ := strconv.Atoi(os.Getenv("TESTWEB_HOSTS"))
	pages, _ := strconv.Atoi(os.Getenv("TESTWEB_PAGES"))
	conns, _ := strconv.Atoi(os.Getenv("TESTWEB_CONNS"))
	if conns <= 0 {
		conns = 16
	}
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	w := mustBuild(b, Options{Seed: 1, Hosts: hosts, Pages: pages, MaxHostPages: MaxHostPages, Addressing: Loopback}, port)
	urls := pageURLs(w, 1<<16)
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 4, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var next atomic.Uint64
	b.SetParallelism((conns + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	cpu := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := c.Get(urls[next.Add(1)%uint64(len(urls))])
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	b.ReportMetric(float64(cpuTime()-cpu)/1e3/float64(b.N), "client-cpu-µs/page")
}
