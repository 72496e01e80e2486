package mlbf

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
)

// Benchmarks compare, side by side in one run, the time per key of
// TestAndAdd over N distinct keys for bits-and-blooms/bloom/v3 (the
// baseline, sized for N keys at 1% by its NewWithEstimates), this package's
// classic filter and the paper and improved MLBFs at the same total memory
// as the baseline. One benchmark op inserts all N keys into a fresh filter;
// the ns/key metric is the figure to compare. Keys are generated in chunks
// of 2^20 outside the timed region.
//
//	go test -run XXX -bench 'TestAndAdd/keys=gen1M' ./mlbf/
//	go test -run XXX -bench 'TestAndAdd/keys=datasets' ./mlbf/          (needs ../shared)
//	MLBF_BENCH_LARGE=1 go test -run XXX -bench 'TestAndAdd/keys=gen40M' -benchtime 1x -timeout 60m ./mlbf/
//
// MLBF_BENCH_IMPLS=improved,improved-batch (say) limits the run to those
// implementations beside the baseline.
//
// gen10M and gen40M are skipped unless MLBF_BENCH_LARGE=1 (40M keys: about
// 50 MB per filter and a few minutes).
func BenchmarkTestAndAdd(b *testing.B) {
	runSets(b, []benchSet{
		{"gen1M", 1 << 20, false},
		{"datasets", 0, false},
		{"gen10M", 10_000_000, true},
		{"gen40M", 40_000_000, true},
	}, func(b *testing.B, set benchSet) {
		src := newKeySource(b, set.name, set.n)
		benchImpls(b, src, func() ([]impl, uint64) { return newImpls(src.n, src.sample) })
	})
}

// benchSet is a key set of a benchmark: generated keys (n of them) or the
// datasets; a large one runs only with MLBF_BENCH_LARGE=1.
type benchSet struct {
	name  string
	n     int
	large bool
}

// runSets runs fn as a sub-benchmark "keys=NAME" for every set.
func runSets(b *testing.B, sets []benchSet, fn func(b *testing.B, set benchSet)) {
	for _, set := range sets {
		b.Run("keys="+set.name, func(b *testing.B) {
			if set.large && os.Getenv("MLBF_BENCH_LARGE") != "1" {
				b.Skip("set MLBF_BENCH_LARGE=1 to run (RAM and minutes)")
			}
			fn(b, set)
		})
	}
}

// keySource yields the keys of a set chunk by chunk, the same sequence on
// every pass.
type keySource struct {
	n      int
	fixed  *keyChunk // the datasets, held whole
	gen    func() *urlGen
	chunk  keyChunk
	sample [][]string // for sizing the layers
	// Fresh keys for queryFP: the generator's next queries keys after
	// the first n, or fixedQuery.
	queries    int
	fixedQuery *keyChunk
}

const chunkKeys = 1 << 20

func newKeySource(b *testing.B, name string, n int) *keySource {
	if name == "datasets" {
		urls := loadDatasets(b)
		var k keyChunk
		k.fromURLs(urls)
		return &keySource{n: len(urls), fixed: &k, sample: k.segs}
	}
	s := &keySource{n: n, gen: func() *urlGen { return newURLGen(uint64(n), 42) }}
	// Sample the first 2^20 keys for the per-depth segment counts.
	var k keyChunk
	k.fill(s.gen(), min(n, chunkKeys))
	s.sample = k.segs
	return s
}

// fromURLs makes a chunk of given URLs.
func (k *keyChunk) fromURLs(urls []string) {
	for _, u := range urls {
		k.urls = append(k.urls, []byte(u))
		k.segs = append(k.segs, SplitURL(u))
	}
}

// each calls fn for every chunk, stopping the timer while generating.
func (s *keySource) each(b *testing.B, fn func(k *keyChunk)) {
	if s.fixed != nil {
		fn(s.fixed)
		return
	}
	g := s.gen()
	for done := 0; done < s.n; done += chunkKeys {
		b.StopTimer()
		s.chunk.fill(g, min(chunkKeys, s.n-done))
		b.StartTimer()
		fn(&s.chunk)
	}
}

// improvedSizes derives improved-mode layer sizes for n keys from the
// segment counts of a sample of sampleLen keys (EstimateSegments; deep
// layers scaled by n/sampleLen, the host layer by the square root, as
// hosts saturate), then scales them to total bits.
func improvedSizes(counts []uint64, sampleLen, n int, total uint64, k int) []uint64 {
	est := append([]uint64(nil), counts...)
	scale := float64(n) / float64(sampleLen)
	for i := range est {
		f := scale
		if i == 0 && scale > 1 {
			f = sqrt(scale)
		}
		est[i] = uint64(float64(est[i]) * f)
	}
	o := Options{ExpectedURLs: uint64(n), ExpectedSegments: est, Hashes: k}
	o.EnsureDefaults()
	sizes, err := o.layerSizes()
	if err != nil {
		panic(err)
	}
	var sum uint64
	for _, s := range sizes {
		sum += s
	}
	for i := range sizes {
		sizes[i] = roundBlocks(uint64(float64(sizes[i]) * float64(total) / float64(sum)))
	}
	return sizes
}

// impl is one filter under benchmark: run inserts a chunk of keys and
// returns how many were reported present; test (optional) queries a chunk
// of keys never inserted and returns how many were reported present; bits
// (optional) is the filter's size.
type impl struct {
	name string
	run  func(k *keyChunk) int
	test func(k *keyChunk) int
	bits uint64
}

func newImpls(n int, sample [][]string) (impls []impl, total uint64) {
	base := bloom.NewWithEstimates(uint(n), 0.01)
	total = uint64(base.Cap())
	layers := improvedSizes(EstimateSegments(sample, DefaultLayers), len(sample), n, total, DefaultHashes)
	bb := bloom.New(uint(total), base.K())
	cl, _ := NewClassic(total, int(base.K()))
	pf, _ := New(Options{Mode: Paper, BitsPerLayer: total / (DefaultLayers + 1)})
	imp, _ := New(Options{LayerBits: layers})
	conc, _ := NewConcurrent(Options{LayerBits: layers})
	batch, _ := NewConcurrent(Options{LayerBits: layers})
	fbatch, _ := New(Options{LayerBits: layers})
	all := []impl{
		{name: "bitsandblooms", run: countURLs(bb.TestAndAdd)},
		{name: "classic", run: countURLs(cl.TestAndAdd)},
		{name: "paper", run: countSegs(pf.TestAndAdd)},
		{name: "improved", run: countSegs(imp.TestAndAdd)},
		{name: "improved-concurrent", run: countSegs(conc.TestAndAdd)},
		{name: "improved-batch", run: countBatches(batch.TestAndAddBatch)},
		{name: "improved-filter-batch", run: countBatches(fbatch.TestAndAddBatch)},
	}
	return onlyImpls(all), total
}

// countURLs runs f on every key of a chunk as bytes (the whole URL) and
// counts the true answers.
func countURLs(f func([]byte) bool) func(k *keyChunk) int {
	return countKeys(f, func(k *keyChunk) [][]byte { return k.urls })
}

// countSegs runs f on every key of a chunk as segments and counts the true
// answers.
func countSegs(f func([]string) bool) func(k *keyChunk) int {
	return countKeys(f, func(k *keyChunk) [][]string { return k.segs })
}

func countKeys[K any](f func(K) bool, keys func(k *keyChunk) []K) func(k *keyChunk) int {
	return func(k *keyChunk) int {
		n := 0
		for _, key := range keys(k) {
			if f(key) {
				n++
			}
		}
		return n
	}
}

// countBatches runs a TestAndAddBatch over a chunk in batches of 256 and
// counts the keys reported present.
func countBatches(f func(keys [][]string, present []bool)) func(k *keyChunk) int {
	present := make([]bool, 256)
	return func(k *keyChunk) int {
		n := 0
		for i := 0; i < len(k.segs); i += len(present) {
			keys := k.segs[i:min(i+len(present), len(k.segs))]
			f(keys, present)
			for _, p := range present[:len(keys)] {
				if p {
					n++
				}
			}
		}
		return n
	}
}

// onlyImpls returns the implementations MLBF_BENCH_IMPLS=name,name,...
// names, and the first (the baseline) always; all of them if it is unset.
func onlyImpls(all []impl) []impl {
	only := os.Getenv("MLBF_BENCH_IMPLS")
	if only == "" {
		return all
	}
	impls := all[:1]
	for _, im := range all[1:] {
		if strings.Contains(","+only+",", ","+im.name+",") {
			impls = append(impls, im)
		}
	}
	return impls
}

// benchImpls runs every implementation over the same keys, interleaved
// chunk by chunk so that the load of a shared machine hits them alike, and
// reports per implementation the wall and thread-CPU time per key (on a
// shared machine the CPU time is the fair figure), allocations per key and the
// rate of "present" answers (every key is distinct, so these are false
// positives at the fill reached when each key was inserted). mk makes the
// filters; if it returns a total, every filter has that many bits. Then,
// untimed, the implementations with a test function query the source's
// fresh keys, if it has any: "-query-fp" is the false-positive rate of the
// full filter.
func benchImpls(b *testing.B, src *keySource, mk func() ([]impl, uint64)) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := src.n
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		impls, total := mk()
		elapsed := make([]time.Duration, len(impls))
		cpu := make([]time.Duration, len(impls))
		allocs := make([]uint64, len(impls))
		fps := make([]int, len(impls))
		var ms runtime.MemStats
		b.StartTimer()
		src.each(b, func(k *keyChunk) {
			for i, im := range impls {
				runtime.ReadMemStats(&ms)
				before := ms.Mallocs
				start, startCPU := time.Now(), threadCPU()
				fps[i] += im.run(k)
				elapsed[i] += time.Since(start)
				cpu[i] += threadCPU() - startCPU
				runtime.ReadMemStats(&ms)
				allocs[i] += ms.Mallocs - before
			}
		})
		b.StopTimer()
		queryFP(b, src, impls)
		for i, im := range impls {
			b.ReportMetric(float64(elapsed[i].Nanoseconds())/float64(n), im.name+"-ns/key")
			if im.bits > 0 {
				b.ReportMetric(float64(im.bits)/float64(n), im.name+"-bits/key")
			}
			b.ReportMetric(float64(cpu[i].Nanoseconds())/float64(n), im.name+"-cpu-ns/key")
			b.ReportMetric(float64(allocs[i])/float64(n), im.name+"-allocs/key")
			b.ReportMetric(float64(fps[i])/float64(n), im.name+"-fp")
		}
		for i, im := range impls[1:] {
			b.ReportMetric(float64(cpu[i+1])/float64(cpu[0]), im.name+"/bitsandblooms-cpu")
			b.ReportMetric(float64(elapsed[i+1])/float64(elapsed[0]), im.name+"/bitsandblooms-wall")
		}
		if total > 0 {
			b.ReportMetric(float64(total)/float64(n), "bits/key")
		}
		b.StartTimer()
	}
}

func sqrt(x float64) float64 {
	r := x
	for i := 0; i < 60; i++ {
		r = (r + x/r) / 2
	}
	return r
}

// BenchmarkOps measures single calls on a filter holding 2^20 generated
// keys, reporting allocations per call (the contract is zero).
func BenchmarkOps(b *testing.B) {
	var k keyChunk
	k.fill(newURLGen(chunkKeys, 7), chunkKeys)
	f, _ := New(Options{ExpectedURLs: chunkKeys})
	p, _ := New(Options{Mode: Paper, BitsPerLayer: 1 << 24})
	c, _ := NewConcurrent(Options{ExpectedURLs: chunkKeys})
	cl, _ := NewClassicFor(chunkKeys, 0.01)
	for _, s := range k.segs[:chunkKeys/2] {
		f.Add(s)
		p.Add(s)
		c.Add(s)
	}
	mask := chunkKeys - 1
	// cpu reports the thread CPU time per op beside the wall time.
	cpu := func(b *testing.B, fn func(b *testing.B)) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b.ReportAllocs()
		start := threadCPU()
		fn(b)
		b.ReportMetric(float64((threadCPU()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.Run("improved-Test", func(b *testing.B) {
		cpu(b, func(b *testing.B) {
			for i := range b.N {
				f.Test(k.segs[i&mask])
			}
		})
	})
	b.Run("improved-TestAndAdd", func(b *testing.B) {
		cpu(b, func(b *testing.B) {
			for i := range b.N {
				f.TestAndAdd(k.segs[i&mask])
			}
		})
	})
	b.Run("paper-TestAndAdd", func(b *testing.B) {
		cpu(b, func(b *testing.B) {
			for i := range b.N {
				p.TestAndAdd(k.segs[i&mask])
			}
		})
	})
	b.Run("concurrent-TestAndAdd", func(b *testing.B) {
		cpu(b, func(b *testing.B) {
			for i := range b.N {
				c.TestAndAdd(k.segs[i&mask])
			}
		})
	})
	b.Run("concurrent-TestAndAdd-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				c.TestAndAdd(k.segs[i&mask])
				i += 7
			}
		})
	})
	b.Run("concurrent-TestAndAddBatch", func(b *testing.B) {
		cpu(b, func(b *testing.B) {
			present := make([]bool, 64)
			for i := 0; i < b.N; i += 64 {
				start := i & mask
				c.TestAndAddBatch(k.segs[start:start+min(64, b.N-i)], present)
			}
		})
	})
	b.Run("classic-TestAndAdd", func(b *testing.B) {
		cpu(b, func(b *testing.B) {
			for i := range b.N {
				cl.TestAndAdd(k.urls[i&mask])
			}
		})
	})
}
