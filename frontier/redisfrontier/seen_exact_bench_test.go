package redisfrontier

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/mlbf"
)

// TestSeenExactIntset: the exact check's buckets stay Redis intsets (8
// bytes per fingerprint) up to 3x the URLs they are sized for (384 a
// bucket on average, 6 standard deviations below Redis's default
// set-max-intset-entries of 512).
func TestSeenExactIntset(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	const urls = 15_000
	s, err := OpenSeen(ctx, c, SeenOptions{Filter: mlbf.Options{ExpectedURLs: urls, FalsePositiveRate: 0.01}, Exact: true, ExactURLs: urls / 3})
	if err != nil {
		t.Fatal(err)
	}
	keys := exactURLs(urls)
	present := make([]bool, len(keys))
	if err := s.TestAndAddBatch(ctx, keys, present); err != nil {
		t.Fatal(err)
	}
	var cmds []*redis.StringCmd
	var sizes []*redis.IntCmd
	_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := 0; b < s.buckets; b++ {
			k := s.tag(0) + ":x:" + strconv.Itoa(b)
			cmds = append(cmds, p.ObjectEncoding(ctx, k))
			sizes = append(sizes, p.SCard(ctx, k))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	hashtables := 0
	for i, cmd := range cmds {
		total += sizes[i].Val()
		if cmd.Val() != "intset" {
			hashtables++
			t.Logf("bucket %d: %d fingerprints, encoding %q", i, sizes[i].Val(), cmd.Val())
		}
	}
	if total != urls {
		t.Errorf("buckets hold %d fingerprints, want %d", total, urls)
	}
	if hashtables > 0 {
		t.Errorf("%d of %d buckets are not intsets", hashtables, s.buckets)
	}
}

// BenchmarkSeenExact compares the growing seen-set the crawler uses
// (--fp-target 0.001, sized for the URLs checked) filter-only with the
// same with the exact check, on a private redis-server: the first
// b.N/2 URLs of the shared datasets, each checked twice (new, then a
// duplicate: the exact check's cost falls on the filter's "maybe seen"
// answers), in batches of 1,000 from 4 goroutines. One iteration is one
// check. Run with -benchtime=2000000x for a million URLs. Metrics:
// srvCPUus/check is the server's CPU per check (INFO cpu); B/url the growth
// of used_memory and exactB/url the MEMORY USAGE of the exact check's
// buckets, per distinct URL; fp/url the false positives the exact check
// caught per distinct URL.
func BenchmarkSeenExact(b *testing.B) {
	for _, exact := range []bool{false, true} {
		name := "filter-only"
		if exact {
			name = "exact"
		}
		b.Run(name, func(b *testing.B) { benchSeenExact(b, exact) })
	}
}

func benchSeenExact(b *testing.B, exact bool) {
	distinct := max(b.N/2, 1)
	urls := loadBenchURLs(b, min(distinct, maxURLs))
	segs := make([][]string, len(urls))
	for i, u := range urls {
		segs[i] = mlbf.SplitURL(u)
	}
	c := benchRedis(b)
	ctx := context.Background()
	before := usedMemory(b, c)
	g := mlbf.ScalableOptions{ExpectedURLs: uint64(max(len(urls), 1000)), FalsePositiveRate: 0.001}
	s, err := OpenSeen(ctx, c, SeenOptions{Growth: &g, Exact: exact, Salted: true})
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := serverCPU(b, c)
	b.ResetTimer()
	driveSeen(b, s, segs, 4)
	b.StopTimer()
	cpu := serverCPU(b, c) - cpu0
	after := usedMemory(b, c)
	var exactBytes int64
	if exact {
		for sh := range s.keys {
			var cmds []*redis.IntCmd
			_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for bk := 0; bk < s.buckets; bk++ {
					cmds = append(cmds, p.MemoryUsage(ctx, s.tag(sh)+":x:"+strconv.Itoa(bk), 0))
				}
				return nil
			})
			if err != nil && err != redis.Nil {
				b.Fatal(err)
			}
			for _, cmd := range cmds {
				exactBytes += cmd.Val()
			}
		}
	}
	st, err := s.ExactStats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(cpu*1e6/float64(b.N), "srvCPUus/check")
	b.ReportMetric(float64(after-before)/float64(len(urls)), "B/url")
	b.ReportMetric(float64(exactBytes)/float64(len(urls)), "exactB/url")
	b.ReportMetric(float64(st.Caught)/float64(len(urls)), "fp/url")
}
