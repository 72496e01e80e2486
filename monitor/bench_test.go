package monitor

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/crawl"
)

// BenchmarkFetched is the monitor's cost per fetch on the crawl's
// workers, with fetches spread over 1,000 hosts.
func BenchmarkFetched(b *testing.B) {
	m, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]crawl.FetchEvent, 1000)
	for i := range evs {
		evs[i] = crawl.FetchEvent{URL: fmt.Sprintf("http://h%d.example/d%d/p%d.html", i, i/100, i), At: time.Now(),
			Duration: time.Duration(i) * time.Microsecond, TTFB: time.Microsecond, Status: 200, Bytes: 500, WARCBytes: 600}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Fetched(evs[i%len(evs)])
			i++
		}
	})
}

// BenchmarkSample is the cost of one sample (once per Interval): the
// status document of a crawl with 10,000 tracked hosts, as JSON and HTML.
func BenchmarkSample(b *testing.B) {
	m, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10_000 {
		m.Fetched(crawl.FetchEvent{URL: fmt.Sprintf("http://h%d.example/", i), Status: 200, Duration: time.Millisecond})
	}
	s := sampleStats()
	var o crawl.Options
	rate := make([]RatePoint, DefaultHistory)
	b.ReportAllocs()
	for b.Loop() {
		m.sampleStats(s, &o, rate, false)
	}
	d := m.doc.Load()
	b.ReportMetric(float64(len(d.json)), "json-bytes")
	b.ReportMetric(float64(len(d.html)), "html-bytes")
}

// BenchmarkScrape is the cost of one GET /metrics.
func BenchmarkScrape(b *testing.B) {
	m, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	feedB(m)
	s := sampleStats()
	m.stats.Store(&s)
	h := m.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		io.Copy(io.Discard, rec.Body)
	}
}

func feedB(m *Monitor) {
	for i := range 100 {
		m.Fetched(crawl.FetchEvent{URL: fmt.Sprintf("http://h%d.example/", i), Status: 200 + i%4*100, Duration: time.Millisecond})
	}
}
