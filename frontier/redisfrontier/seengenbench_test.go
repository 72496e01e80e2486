package redisfrontier

import (
	"context"
	"testing"

	"github.com/layercrawl/layercrawl/mlbf"
)

// BenchmarkSeenGrowth compares a growing seen-set with a fixed one, both
// checking b.N distinct new URLs (growthURLs: real-looking, normalized and
// segmented as the crawler does) in batches of 4,096 with TestAndAddBatch,
// one shard, each on a fresh prefix of a private redis-server:
//
//   - fixed: sized for the b.N URLs at 1% (the count known in advance);
//   - growth: a first generation of b.N/10 URLs at 1% compound, so that
//     the URLs take 4 generations (growth 2, tightening 0.5), as in
//     TestSeenGrowthStaysWithinTarget.
//
// Run with -benchtime=200000x. Metrics per URL: ns/url (client wall
// time), srvCPUus/url (the server's CPU, INFO cpu), keyB/url (MEMORY
// USAGE of the bitmap keys: every generation), B/url (growth of INFO
// used_memory over the run: the bitmaps and the script answers kept for
// ResultTTL), new/url (share reported new: 1 minus the false positives);
// gens is the generations at the end.
func BenchmarkSeenGrowth(b *testing.B) {
	c := benchRedis(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		opts func(n int) SeenOptions
	}{
		{"fixed", func(n int) SeenOptions {
			return SeenOptions{Filter: mlbf.Options{ExpectedURLs: uint64(n), FalsePositiveRate: 0.01}, Shards: 1}
		}},
		{"growth", func(n int) SeenOptions {
			return SeenOptions{Growth: &mlbf.ScalableOptions{ExpectedURLs: uint64(n / 10), FalsePositiveRate: 0.01}, Shards: 1}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := max(b.N, 10_000)
			keys := growthURLs(b, 0, n)
			mem0 := usedMemory(b, c)
			s, err := OpenSeen(ctx, c, bc.opts(n))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Delete(ctx)
			b.ResetTimer()
			p := measurePass(b, c, "evalsha", func() int {
				news := 0
				present := make([]bool, seenBenchBatch)
				for i := 0; i < len(keys); i += seenBenchBatch {
					batch := keys[i:min(i+seenBenchBatch, len(keys))]
					if err := s.TestAndAddBatch(ctx, batch, present); err != nil {
						b.Fatal(err)
					}
					for _, x := range present[:len(batch)] {
						if !x {
							news++
						}
					}
				}
				return news
			})
			b.StopTimer()
			mem := usedMemory(b, c) - mem0
			var bitmaps []string
			gens := 1
			for sh := 0; sh < s.Shards(); sh++ {
				bitmaps = append(bitmaps, s.genKey(sh, 0))
			}
			if s.grow != nil {
				st, err := s.Growth(ctx)
				if err != nil {
					b.Fatal(err)
				}
				gens = st.Generations[0]
				for sh, g := range st.Generations {
					for i := 1; i < g; i++ {
						bitmaps = append(bitmaps, s.genKey(sh, i))
					}
				}
			}
			var keyBytes int64
			for _, k := range bitmaps {
				v, err := c.rdb.MemoryUsage(ctx, k, 0).Result()
				if err != nil {
					b.Fatal(err)
				}
				keyBytes += v
			}
			p.report(b, "new", n)
			b.ReportMetric(float64(p.news)/float64(n), "new/url")
			b.ReportMetric(float64(keyBytes)/float64(n), "keyB/url")
			b.ReportMetric(float64(mem)/float64(n), "B/url")
			b.ReportMetric(float64(gens), "gens")
		})
	}
}
