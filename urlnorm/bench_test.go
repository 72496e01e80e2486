package urlnorm

import (
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/PuerkitoBio/purell"
)

var benchURLs struct {
	once sync.Once
	urls []string
}

// loadBenchURLs reads every 5th line of every shared dataset (about 300,000
// URLs, all five files in proportion), once per process.
func loadBenchURLs(b *testing.B) []string {
	b.Helper()
	files, err := filepath.Glob(filepath.Join(sharedPath(b, "datasets"), "*.txt.gz"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no datasets: %v", err)
	}
	benchURLs.once.Do(func() {
		for _, f := range files {
			forEachLine(b, f, 5, func(s string) { benchURLs.urls = append(benchURLs.urls, s) })
		}
	})
	return benchURLs.urls
}

// purellFlags is purell's safe normalization plus dot-segment and
// fragment removal: the baseline the normalizer is measured against.
const purellFlags = purell.FlagsSafe | purell.FlagRemoveDotSegments | purell.FlagRemoveFragment

// BenchmarkNormalize runs the candidate and the baselines side by side over
// the same URLs; ns/op is per URL.
//
//	go test -run '^$' -bench BenchmarkNormalize -benchmem ./urlnorm/
func BenchmarkNormalize(b *testing.B) {
	urls := loadBenchURLs(b)
	b.Run("urlnorm=Normalize+AppendSegments", func(b *testing.B) {
		n := mustNew(b, Options{})
		var segs []string
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c, err := n.Normalize(urls[i%len(urls)])
			if err == nil {
				segs = n.AppendSegments(segs[:0], c)
			}
		}
	})
	b.Run("urlnorm=Normalize+Segments", func(b *testing.B) {
		n := mustNew(b, Options{})
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c, err := n.Normalize(urls[i%len(urls)])
			if err == nil {
				_ = n.Segments(c)
			}
		}
	})
	b.Run("urlnorm=Normalize+Segments,all-options", func(b *testing.B) {
		n := mustNew(b, Options{SortQuery: true, RemoveSessionParams: true, CollapseSlashes: true,
			TrailingSlash: RemoveTrailingSlash, RemoveDefaultPages: true, FoldWWW: true, IgnoreScheme: true})
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c, err := n.Normalize(urls[i%len(urls)])
			if err == nil {
				_ = n.Segments(c)
			}
		}
	})
	b.Run("baseline=purell", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, _ = purell.NormalizeURLString(urls[i%len(urls)], purellFlags)
		}
	})
	b.Run("baseline=purell+split", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c, err := purell.NormalizeURLString(urls[i%len(urls)], purellFlags)
			if err == nil {
				_ = strings.Split(strings.TrimPrefix(strings.TrimPrefix(c, "http://"), "https://"), "/")
			}
		}
	})
	b.Run("reference=net/url.Parse", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, _ = url.Parse(urls[i%len(urls)])
		}
	})
}
