package monitor_test

import (
	"fmt"
	"time"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/monitor"
)

// A Monitor is the crawl's Observer; its registry holds the metrics that
// /metrics serves. A program that has its own HTTP server can register
// them there instead of calling Run.
func Example() {
	m, err := monitor.New(monitor.Options{})
	if err != nil {
		panic(err)
	}
	opts := crawl.Options{Seeds: []string{"https://example.org/"}, Dir: "crawl-out", Observer: m}
	_ = opts // crawl.New(opts), then m.Run(ctx, ln, crawler) beside crawler.Run(ctx)

	// What the crawl reports for each fetch:
	m.Fetched(crawl.FetchEvent{URL: "https://user:pw@example.org/", Status: 200, Duration: 120 * time.Millisecond, TTFB: 40 * time.Millisecond, Bytes: 5120})
	m.Fetched(crawl.FetchEvent{URL: "https://example.org/missing", Status: 404, Duration: 30 * time.Millisecond, TTFB: 30 * time.Millisecond})

	families, err := m.Registry().Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "layercrawl_fetches_total":
			for _, mt := range f.Metric {
				fmt.Printf("%s{outcome=%q} %g\n", f.GetName(), mt.Label[0].GetValue(), mt.Counter.GetValue())
			}
		case "layercrawl_fetch_duration_seconds":
			h := f.Metric[0].Histogram
			fmt.Printf("%s count %d sum %.2f\n", f.GetName(), h.GetSampleCount(), h.GetSampleSum())
		}
	}
	// Output:
	// layercrawl_fetch_duration_seconds count 2 sum 0.15
	// layercrawl_fetches_total{outcome="error"} 0
	// layercrawl_fetches_total{outcome="http_error"} 1
	// layercrawl_fetches_total{outcome="ok"} 1
}
