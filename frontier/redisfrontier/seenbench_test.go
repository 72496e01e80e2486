package redisfrontier

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/internal/redistest"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// seenBenchBatch is the batch size of both sides of BenchmarkSeenVsSADD:
// the seen-set's default MaxBatch.
const seenBenchBatch = 4096

var (
	normKeysOnce sync.Once
	normURLs     []string
	normSegs     [][]string
)

// normalizedBenchKeys returns the first n URLs of the shared datasets that
// urlnorm accepts, normalized and segmented as the crawler does (default
// urlnorm.Options, Normalizer.Segments). Duplicates left by normalization
// stay: they are part of what a crawl sees.
func normalizedBenchKeys(tb testing.TB, n int) ([]string, [][]string) {
	tb.Helper()
	loadBenchURLs(tb, 0)
	normKeysOnce.Do(func() {
		norm, err := urlnorm.New(urlnorm.Options{})
		if err != nil {
			panic(err)
		}
		for _, raw := range benchURLs {
			if len(normURLs) == maxURLs {
				break
			}
			u, err := norm.Normalize(raw)
			if err != nil {
				continue
			}
			normURLs = append(normURLs, u)
			normSegs = append(normSegs, norm.Segments(u))
		}
	})
	if len(normURLs) < n {
		tb.Fatalf("shared datasets normalize to %d URLs, want %d", len(normURLs), n)
	}
	return normURLs[:n], normSegs[:n]
}

// benchRedis starts a redis-server of the benchmark's own, so that the
// server CPU it reads (INFO cpu, INFO commandstats) is its own work and not
// that of other users of the shared test Redis. LCREDIS_BENCH_ADDR names
// a server to use instead (one started under perf or valgrind, to profile
// it); its keys go under a fresh prefix.
func benchRedis(b *testing.B) *Client {
	addr := os.Getenv("LCREDIS_BENCH_ADDR")
	if addr == "" {
		addr = redistest.Start(b, 0).Addr()
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	b.Cleanup(func() { rdb.Close() })
	c, err := NewClient(rdb, Config{Prefix: testPrefix(b, rdb), MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// serverUsage is what the server says it spent: its CPU time (INFO cpu,
// user+sys, seconds) and, per command, calls and microseconds (INFO
// commandstats; a script's own count includes the commands it called).
type serverUsage struct {
	cpu   float64
	calls map[string]int64
	usec  map[string]int64
}

func readUsage(tb testing.TB, c *Client) serverUsage {
	tb.Helper()
	info, err := c.rdb.Info(context.Background(), "cpu", "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	u := serverUsage{calls: map[string]int64{}, usec: map[string]int64{}}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					tb.Fatalf("INFO cpu: %q: %v", line, err)
				}
				u.cpu += f
			}
		}
		// cmdstat_sadd:calls=3,usec=12,usec_per_call=4.00,...
		name, fields, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			switch {
			case k != "calls" && k != "usec":
			case err != nil:
				tb.Fatalf("INFO commandstats: %q: %v", line, err)
			case k == "calls":
				u.calls[name] = n
			default:
				u.usec[name] = n
			}
		}
	}
	return u
}

// pass is one run over the URLs, with what it cost the client and the server.
type pass struct {
	wall time.Duration
	cpu  float64 // server CPU, seconds
	cmd  int64   // commandstats microseconds of the side's command
	news int
}

// measurePass runs fn and returns its wall time and the server's CPU and
// commandstats time for command cmd.
func measurePass(b *testing.B, c *Client, cmd string, fn func() (news int)) pass {
	b.Helper()
	u0 := readUsage(b, c)
	start := time.Now()
	news := fn()
	wall := time.Since(start)
	u1 := readUsage(b, c)
	return pass{wall: wall, cpu: u1.cpu - u0.cpu, cmd: u1.usec[cmd] - u0.usec[cmd], news: news}
}

func (p pass) report(b *testing.B, name string, n int) {
	b.ReportMetric(float64(p.wall.Nanoseconds())/float64(n), name+"-ns/url")
	b.ReportMetric(p.cpu*1e6/float64(n), name+"-srvCPUus/url")
	b.ReportMetric(float64(p.cmd)/float64(n), name+"-cmdus/url")
}

// BenchmarkSeenVsSADD compares the seen-set with the
// scrapy-redis fingerprint set with its SADDs pipelined, both over the same
// URLs (the first b.N of the shared datasets that urlnorm accepts, as the
// crawler normalizes and segments them) in batches of 4,096, each side on
// a fresh key prefix of a private redis-server. Each sub-benchmark makes
// passes over the URLs: "new" inserts them (all but the duplicates left by
// normalization are new), "seen" checks them again. The seen-set makes a
// third pass, "seenother", from a second Seen: another worker, whose local
// bits are empty, so that every probe goes to Redis (in "seen" the worker
// knows every bit it set and sends none).
//
// Run with -benchtime=1000000x. ns/op covers all passes; read the
// per-pass metrics: ns/url (client wall time), srvCPUus/url (the server's
// CPU, INFO cpu user+sys: network, parsing and the command),
// cmdus/url (INFO commandstats time of SADD or EVALSHA alone: wall time,
// so it grows with the machine's load, unlike the CPU time), new/url
// (share reported new in the first pass), keyB/url (MEMORY USAGE of the
// side's keys), B/url (growth of INFO used_memory over the first pass,
// the seen-set's creation included; it counts the script answers kept
// for SeenOptions.ResultTTL too).
func BenchmarkSeenVsSADD(b *testing.B) {
	c := benchRedis(b)
	ctx := context.Background()

	b.Run("sadd-sha1-pipelined", func(b *testing.B) {
		urls, _ := normalizedBenchKeys(b, min(b.N, maxURLs))
		key := c.prefix + "dupefilter"
		defer c.rdb.Del(ctx, key)
		mem0 := usedMemory(b, c)
		run := func() int {
			news := 0
			cmds := make([]*redis.IntCmd, 0, seenBenchBatch)
			for i := 0; i < len(urls); i += seenBenchBatch {
				cmds = cmds[:0]
				_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, u := range urls[i:min(i+seenBenchBatch, len(urls))] {
						sum := sha1.Sum([]byte(u))
						cmds = append(cmds, p.SAdd(ctx, key, hex.EncodeToString(sum[:])))
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				for _, cmd := range cmds {
					news += int(cmd.Val())
				}
			}
			return news
		}
		b.ResetTimer()
		first := measurePass(b, c, "sadd", run)
		mem := usedMemory(b, c) - mem0
		second := measurePass(b, c, "sadd", run)
		b.StopTimer()
		keyBytes, err := c.rdb.MemoryUsage(ctx, key, 0).Result()
		if err != nil {
			b.Fatal(err)
		}
		first.report(b, "new", len(urls))
		second.report(b, "seen", len(urls))
		b.ReportMetric(float64(first.news)/float64(len(urls)), "new/url")
		b.ReportMetric(float64(keyBytes)/float64(len(urls)), "keyB/url")
		b.ReportMetric(float64(mem)/float64(len(urls)), "B/url")
		if second.news != 0 {
			b.Fatalf("second pass: %d URLs new", second.news)
		}
	})

	// mlbf: sized for the URLs at 1%, the rate first measured; mlbf-fp0.001
	// at the crawler's default target, 0.1%.
	for _, p := range []struct {
		name string
		rate float64
	}{{"mlbf", 0.01}, {"mlbf-fp0.001", 0.001}} {
		b.Run(p.name, func(b *testing.B) { benchSeenPasses(b, c, p.rate) })
	}
}

// benchSeenPasses is BenchmarkSeenVsSADD's seen-set side, its filter sized
// for the URLs at rate.
func benchSeenPasses(b *testing.B, c *Client, rate float64) {
	ctx := context.Background()
	{
		_, segs := normalizedBenchKeys(b, min(b.N, maxURLs))
		opts := SeenOptions{Filter: mlbf.Options{ExpectedURLs: uint64(max(len(segs), 1000)), FalsePositiveRate: rate}}
		mem0 := usedMemory(b, c)
		s, err := OpenSeen(ctx, c, opts)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Delete(ctx)
		run := func(s *Seen) func() int {
			return func() int {
				news := 0
				present := make([]bool, seenBenchBatch)
				for i := 0; i < len(segs); i += seenBenchBatch {
					keys := segs[i:min(i+seenBenchBatch, len(segs))]
					if err := s.TestAndAddBatch(ctx, keys, present); err != nil {
						b.Fatal(err)
					}
					for _, p := range present[:len(keys)] {
						if !p {
							news++
						}
					}
				}
				return news
			}
		}
		b.ResetTimer()
		first := measurePass(b, c, "evalsha", run(s))
		mem := usedMemory(b, c) - mem0
		second := measurePass(b, c, "evalsha", run(s))
		b.StopTimer()
		other, err := OpenSeen(ctx, c, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		third := measurePass(b, c, "evalsha", run(other))
		b.StopTimer()
		var keyBytes int64
		for _, ks := range s.keys {
			for _, k := range ks[2:] {
				n, err := c.rdb.MemoryUsage(ctx, k, 0).Result()
				if err != nil {
					b.Fatal(err)
				}
				keyBytes += n
			}
		}
		first.report(b, "new", len(segs))
		second.report(b, "seen", len(segs))
		third.report(b, "seenother", len(segs))
		b.ReportMetric(float64(first.news)/float64(len(segs)), "new/url")
		b.ReportMetric(float64(keyBytes)/float64(len(segs)), "keyB/url")
		b.ReportMetric(float64(mem)/float64(len(segs)), "B/url")
		for _, p := range []pass{second, third} {
			if p.news != 0 {
				b.Fatalf("a later pass found %d of %d URLs new", p.news, len(segs))
			}
		}
	}
}
