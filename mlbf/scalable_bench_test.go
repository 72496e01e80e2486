package mlbf

import (
	"sync"
	"testing"
)

// BenchmarkScalable compares, in one run, TestAndAdd per key over 2^20
// distinct generated keys: a Concurrent sized for them (the crawler's
// filter with --filter-growth=false), a Scalable sized for them (the cost
// of its read lock and of testing one generation), and a Scalable first
// sized for 1/16 of them (five generations: the cost of testing the older
// ones). "parallel" splits the keys between GOMAXPROCS goroutines. One op
// inserts all keys into a fresh filter; ns/key is the figure to compare.
//
//	go test -run XXX -bench Scalable -count 5 ./mlbf/
func BenchmarkScalable(b *testing.B) {
	const n = 1 << 20
	var k keyChunk
	k.fill(newURLGen(n, 31), n)
	type inserter interface{ TestAndAdd([]string) bool }
	impls := []struct {
		name string
		make func() inserter
	}{
		{"concurrent", func() inserter {
			f, _ := NewConcurrent(Options{ExpectedURLs: n, FalsePositiveRate: 1e-3})
			return f
		}},
		{"scalable", func() inserter {
			s, _ := NewScalable(ScalableOptions{ExpectedURLs: n, FalsePositiveRate: 1e-3})
			return s
		}},
		{"scalable-grows", func() inserter {
			s, _ := NewScalable(ScalableOptions{ExpectedURLs: n / 16, FalsePositiveRate: 1e-3})
			return s
		}},
	}
	for _, par := range []int{1, 2} {
		for _, im := range impls {
			b.Run(im.name+map[int]string{1: "", 2: "/parallel"}[par], func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					f := im.make()
					b.StartTimer()
					var wg sync.WaitGroup
					for w := 0; w < par; w++ {
						wg.Add(1)
						go func(part [][]string) {
							defer wg.Done()
							for _, seg := range part {
								f.TestAndAdd(seg)
							}
						}(k.segs[w*n/par : (w+1)*n/par])
					}
					wg.Wait()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
			})
		}
	}
}
