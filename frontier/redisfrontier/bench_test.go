package redisfrontier

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/mlbf"
)

// maxURLs caps the URLs the benchmarks read: the first million.
const maxURLs = 1_000_000

// sharedDatasets is where the shared URL sets live, relative to this
// package: ../shared beside the repository.
const sharedDatasets = "../../../shared/datasets"

var (
	benchURLsOnce sync.Once
	benchURLs     []string
	benchURLsErr  error
)

// loadBenchURLs returns the first n URLs of the shared datasets, read in
// file-name order (ada_kasztp, govuk_transition_old, kagi_smallweb_feeds,
// phishing_database, sogouq_sample_clicks), skipping the test when the data is absent.
func loadBenchURLs(tb testing.TB, n int) []string {
	tb.Helper()
	benchURLsOnce.Do(func() {
		files, err := filepath.Glob(filepath.Join(sharedDatasets, "*.txt.gz"))
		if err != nil || len(files) == 0 {
			benchURLsErr = os.ErrNotExist
			return
		}
		for _, name := range files {
			f, err := os.Open(name)
			if err != nil {
				benchURLsErr = err
				return
			}
			zr, err := gzip.NewReader(f)
			if err != nil {
				f.Close()
				benchURLsErr = err
				return
			}
			sc := bufio.NewScanner(zr)
			sc.Buffer(make([]byte, 1<<16), 1<<20)
			for sc.Scan() {
				if line := strings.TrimSpace(sc.Text()); line != "" {
					benchURLs = append(benchURLs, line)
				}
			}
			f.Close()
			if err := sc.Err(); err != nil {
				benchURLsErr = err
				return
			}
		}
	})
	if benchURLsErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("shared datasets at %s: %v", sharedDatasets, benchURLsErr)
		}
		tb.Skipf("shared datasets not found at %s (%v)", sharedDatasets, benchURLsErr)
	}
	if len(benchURLs) < n {
		tb.Fatalf("shared datasets hold %d URLs, want %d", len(benchURLs), n)
	}
	return benchURLs[:n]
}

// serverCPU returns the Redis server's used_cpu_user+used_cpu_sys in
// seconds (the whole server: other clients' work counts too).
func serverCPU(tb testing.TB, c *Client) float64 { return readUsage(tb, c).cpu }

func usedMemory(tb testing.TB, c *Client) int64 {
	info, err := c.rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("no used_memory in INFO memory")
	return 0
}

// BenchmarkSeenSet compares, one worker each, the scrapy-redis baseline
// (one SADD of the URL's SHA1 hex fingerprint per URL, one round trip
// each) with the Redis MLBF (TestAndAddBatch, 1,000 URLs per round trip),
// with and without the worker's local copy of known-set bits.
// One iteration checks one URL; run with -benchtime=1000000x to check the
// first million URLs of the shared datasets. Metrics: B/url is the growth of
// INFO memory's used_memory over the run, keyB/url the MEMORY USAGE of the
// keys (both per URL checked); new/url is the share reported new;
// srvCPUus/url is the Redis server's CPU time (INFO cpu, user+sys, all
// clients) per URL, which does not depend on how loaded the machine is.
func BenchmarkSeenSet(b *testing.B) {

	b.Run("baseline=sadd-sha1", func(b *testing.B) {
		urls := loadBenchURLs(b, min(b.N, maxURLs))
		c := testClient(b)
		ctx := context.Background()
		key := c.prefix + "dupefilter"
		before := usedMemory(b, c)
		cpu0 := serverCPU(b, c)
		news := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sum := sha1.Sum([]byte(urls[i%len(urls)]))
			n, err := c.rdb.SAdd(ctx, key, hex.EncodeToString(sum[:])).Result()
			if err != nil {
				b.Fatal(err)
			}
			news += int(n)
		}
		b.StopTimer()
		cpu := serverCPU(b, c) - cpu0
		after := usedMemory(b, c)
		keyBytes, err := c.rdb.MemoryUsage(ctx, key, 0).Result()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(after-before)/float64(b.N), "B/url")
		b.ReportMetric(float64(keyBytes)/float64(b.N), "keyB/url")
		b.ReportMetric(float64(news)/float64(b.N), "new/url")
		b.ReportMetric(cpu*1e6/float64(b.N), "srvCPUus/url")
	})
	b.Run("mlbf-redis/batch=1000", func(b *testing.B) { benchMLBF(b, false, 1) })
	b.Run("mlbf-redis/batch=1000/nolocalbits", func(b *testing.B) { benchMLBF(b, true, 1) })
	b.Run("mlbf-redis/batch=1000/inflight=4", func(b *testing.B) { benchMLBF(b, false, 4) })
}

// benchMLBF checks the URLs in batches of 1,000 with TestAndAddBatch. With
// inflight > 1, that many goroutines of the one worker (one Seen, one
// connection pool) each take the next batch, so up to inflight batches are
// in flight at once: as in a crawl worker, whose fetch goroutines each
// check their page's links. The client then prepares and reads batches
// while Redis runs another, instead of Redis waiting for the client.
func benchMLBF(b *testing.B, nolocal bool, inflight int) {
	urls := loadBenchURLs(b, min(b.N, maxURLs))
	segs := make([][]string, len(urls))
	for i, u := range urls {
		segs[i] = mlbf.SplitURL(u)
	}
	c := testClient(b)
	ctx := context.Background()
	before := usedMemory(b, c)
	s, err := OpenSeen(ctx, c, SeenOptions{Filter: mlbf.Options{ExpectedURLs: uint64(max(len(urls), 1000)), FalsePositiveRate: 0.01}, NoLocalBits: nolocal})
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := serverCPU(b, c)
	b.ResetTimer()
	news := driveSeen(b, s, segs, inflight)
	b.StopTimer()
	cpu := serverCPU(b, c) - cpu0
	after := usedMemory(b, c)
	var keyBytes int64
	for _, ks := range s.keys {
		for _, k := range ks[2:] {
			n, err := c.rdb.MemoryUsage(ctx, k, 0).Result()
			if err == nil {
				keyBytes += n
			}
		}
	}
	b.ReportMetric(float64(after-before)/float64(b.N), "B/url")
	b.ReportMetric(float64(keyBytes)/float64(b.N), "keyB/url")
	b.ReportMetric(float64(news)/float64(b.N), "new/url")
	b.ReportMetric(cpu*1e6/float64(b.N), "srvCPUus/url")
}

// bitScripts are ways a Lua script could test-and-set a group of three
// probes in one 512-bit block (the unit of an improved-mode layer), for
// BenchmarkBitPrimitives. Each returns how many groups had a bit unset.
var bitScripts = map[string]string{
	// One BITFIELD SET u1 per probe, all in one call: what the v1
	// seenScript did. ARGV: absolute offsets.
	"bitfield": `
local args, a = {}, 0
for q = 1, #ARGV do
  args[a+1]='SET'; args[a+2]='u1'; args[a+3]=ARGV[q]; args[a+4]='1'; a = a + 4
end
local r = redis.call('BITFIELD', KEYS[1], unpack(args, 1, a))
local n = 0
for q = 1, #ARGV, 3 do if r[q] + r[q+1] + r[q+2] < 3 then n = n + 1 end end
return n`,
	// The same, seven operations per BITFIELD call, as the v2 seenScript:
	// 2 + 7*4 = 30 arguments, within the 32 that reuse cached objects.
	"bitfield-7": `
local n = 0
local r = {}
for q = 1, #ARGV - 6, 7 do
  local x = redis.call('BITFIELD', KEYS[1], 'SET', 'u1', ARGV[q], '1', 'SET', 'u1', ARGV[q+1], '1',
    'SET', 'u1', ARGV[q+2], '1', 'SET', 'u1', ARGV[q+3], '1', 'SET', 'u1', ARGV[q+4], '1',
    'SET', 'u1', ARGV[q+5], '1', 'SET', 'u1', ARGV[q+6], '1')
  for i = 1, 7 do r[q + i - 1] = x[i] end
end
for q = #ARGV - #ARGV % 7 + 1, #ARGV do
  r[q] = redis.call('BITFIELD', KEYS[1], 'SET', 'u1', ARGV[q], '1')[1]
end
for q = 1, #ARGV, 3 do if r[q] + r[q+1] + r[q+2] < 3 then n = n + 1 end end
return n`,
	// The same with every offset packed into one space-separated argument.
	"bitfield-packed": `
local args, a = {}, 0
for o in string.gmatch(ARGV[1], '%d+') do
  args[a+1]='SET'; args[a+2]='u1'; args[a+3]=o; args[a+4]='1'; a = a + 4
end
local r = redis.call('BITFIELD', KEYS[1], unpack(args, 1, a))
local n = 0
for q = 1, a / 4, 3 do if r[q] + r[q+1] + r[q+2] < 3 then n = n + 1 end end
return n`,
	// One SETBIT call per probe. ARGV: absolute offsets.
	"setbit": `
local n = 0
for q = 1, #ARGV, 3 do
  local s = redis.call('SETBIT', KEYS[1], ARGV[q], 1) + redis.call('SETBIT', KEYS[1], ARGV[q+1], 1) +
    redis.call('SETBIT', KEYS[1], ARGV[q+2], 1)
  if s < 3 then n = n + 1 end
end
return n`,
	// GETRANGE of the 64-byte block, bits tested and set in Lua, SETRANGE
	// when one changed. ARGV: groups of (block's byte offset, 3 bits in it).
	"getrange-setrange": `
local band, bor, rshift = bit.band, bit.bor, bit.rshift
local byte, char, sub = string.byte, string.char, string.sub
local n = 0
for q = 1, #ARGV, 4 do
  local start = tonumber(ARGV[q])
  local blk = redis.call('GETRANGE', KEYS[1], start, start + 63)
  local changed = false
  for j = 1, 3 do
    local b = tonumber(ARGV[q + j])
    local i = rshift(b, 3) + 1
    local mask = rshift(128, band(b, 7))
    local v = byte(blk, i)
    if band(v, mask) == 0 then
      blk = sub(blk, 1, i - 1) .. char(bor(v, mask)) .. sub(blk, i + 1)
      changed = true
    end
  end
  if changed then
    n = n + 1
    redis.call('SETRANGE', KEYS[1], start, blk)
  end
end
return n`,
}

// BenchmarkBitPrimitives measures the Redis CPU of the ways a script can
// test-and-set probes, which is what bounds a worker's seen-set checks per
// second: one iteration is one group of three random probes in one 512-bit
// block of a 12-million-bit key, 500 groups per script call, on a private
// redis-server (see benchRedis). The metric srvCPUns/probe is the server's
// CPU (INFO cpu) per probe.
func BenchmarkBitPrimitives(b *testing.B) {
	const bitsInKey, groupsPerCall = 12_000_000, 500
	for _, name := range []string{"bitfield", "bitfield-7", "bitfield-packed", "setbit", "getrange-setrange"} {
		b.Run(name, func(b *testing.B) {
			c := benchRedis(b)
			ctx := context.Background()
			key := c.prefix + "bits"
			if err := c.rdb.SetBit(ctx, key, bitsInKey-1, 0).Err(); err != nil {
				b.Fatal(err)
			}
			sc := redis.NewScript(bitScripts[name])
			r := rand.New(rand.NewPCG(1, 2))
			cpu0 := serverCPU(b, c)
			b.ResetTimer()
			for done := 0; done < b.N; {
				var args []any
				var packed []byte
				for g := 0; g < groupsPerCall && done < b.N; g, done = g+1, done+1 {
					blk := r.Uint64N(bitsInKey / 512)
					bs := [3]uint64{r.Uint64N(512), r.Uint64N(512), r.Uint64N(512)}
					switch name {
					case "getrange-setrange":
						args = append(args, blk*64, bs[0], bs[1], bs[2])
					case "bitfield-packed":
						for _, x := range bs {
							packed = strconv.AppendUint(packed, blk*512+x, 10)
							packed = append(packed, ' ')
						}
					default:
						args = append(args, blk*512+bs[0], blk*512+bs[1], blk*512+bs[2])
					}
				}
				if packed != nil {
					args = []any{packed}
				}
				if err := sc.Run(ctx, c.rdb, []string{key}, args...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric((serverCPU(b, c)-cpu0)*1e9/float64(3*b.N), "srvCPUns/probe")
		})
	}
}

// driveSeen sends b.N keys (segs, cycled) through s.TestAndAddBatch in
// batches of 1,000 from inflight goroutines and returns how many it
// answered new; an error fails the benchmark.
func driveSeen(b *testing.B, s *Seen, segs [][]string, inflight int) int {
	const batch = 1000
	ctx := context.Background()
	var next, newCount atomic.Int64
	errs := make(chan error, inflight)
	var wg sync.WaitGroup
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			present := make([]bool, batch)
			keys := make([][]string, 0, batch)
			for {
				i := int(next.Add(batch)) - batch
				if i >= b.N {
					return
				}
				keys = keys[:0]
				for ; i < b.N && len(keys) < batch; i++ {
					keys = append(keys, segs[i%len(segs)])
				}
				if err := s.TestAndAddBatch(ctx, keys, present); err != nil {
					errs <- err
					return
				}
				n := 0
				for _, p := range present[:len(keys)] {
					if !p {
						n++
					}
				}
				newCount.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return int(newCount.Load())
}
