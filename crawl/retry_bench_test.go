package crawl

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/internal/faults"
	"github.com/layercrawl/layercrawl/internal/testweb"
	"github.com/layercrawl/layercrawl/storage"
)

// BenchmarkRetryCoverage measures the coverage of a crawl of the synthetic
// web (16 hosts, 320 pages) when each attempt fails transiently with the
// given probability, independently and without bound (a URL can fail on
// every attempt), with and without retries. A page lost loses the pages
// only it links to, so coverage falls faster than the failure rate.
// Metrics: coverage-% of the URLs a fault-free crawl fetches, and
// attempts/URL. Run with -benchtime 1x (docs/BENCHMARKS.md, "Retries under transient failures").
func BenchmarkRetryCoverage(b *testing.B) {
	for _, rate := range []float64{0.05, 0.2, 0.5} {
		for _, retries := range []int{-1, DefaultMaxRetries} {
			b.Run(fmt.Sprintf("rate=%g/retries=%d", rate, max(retries, 0)), func(b *testing.B) {
				for range b.N {
					in, err := faults.New(faults.Options{Seed: 12, Rate: rate, MaxFailures: -1})
					if err != nil {
						b.Fatal(err)
					}
					w, err := testweb.Start(testweb.Options{Hosts: 16, Pages: 320, Wrap: in.Wrap})
					if err != nil {
						b.Fatal(err)
					}
					exp, err := w.Expected(testweb.ExpectOptions{})
					if err != nil {
						b.Fatal(err)
					}
					dir := b.TempDir()
					o := retryOptions(w, dir)
					o.Retry.MaxRetries = retries
					c, err := New(o)
					if err != nil {
						b.Fatal(err)
					}
					if err := c.Run(context.Background()); err != nil {
						b.Fatal(err)
					}
					c.Close()
					w.Close()
					in.Close()
					entries, err := storage.ReadCrawlLogFile(filepath.Join(dir, "crawl.log.jsonl"))
					if err != nil {
						b.Fatal(err)
					}
					ok, tried := map[string]bool{}, map[string]bool{}
					attempts := 0
					for _, e := range entries {
						if e.Attempt > 0 {
							attempts++
							tried[e.URL] = true
							// Without retries a 503 is final with no error.
							if e.Error == "" && !fetch.TransientStatus(e.Status) {
								ok[e.URL] = true
							}
						}
					}
					covered := 0
					for _, u := range exp.Fetched() {
						if ok[u] {
							covered++
						}
					}
					b.ReportMetric(100*float64(covered)/float64(len(exp.Fetched())), "coverage-%")
					b.ReportMetric(float64(attempts)/float64(len(tried)), "attempts/URL")
				}
			})
		}
	}
}
