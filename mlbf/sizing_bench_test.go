package mlbf

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bits-and-blooms/bloom/v3"
)

// BenchmarkDefaultSizing compares the filters users get from the sizing
// options alone: bits-and-blooms' NewWithEstimates(N, p)
// against mlbf's Options{ExpectedURLs: N, FalsePositiveRate: p}, and
// against mlbf's previous default sizing (k=3, every segment layer sized
// for N segments at rate 0.5; reproduced with ExpectedSegments). Each
// inserts the same N distinct keys, interleaved chunk by chunk (ns/key,
// thread CPU ns/key, bits/key, "-fp" while filling), then queries fresh
// keys never inserted ("-query-fp": the false-positive rate of the full
// filter). p is MLBF_BENCH_FP (default 0.001).
//
//	go test -run XXX -bench 'DefaultSizing/keys=gen1M' -benchtime 1x -count 5 ./mlbf/
//	go test -run XXX -bench 'DefaultSizing/keys=datasets' -benchtime 1x -count 5 ./mlbf/   (needs ../shared)
//	MLBF_BENCH_LARGE=1 go test -run XXX -bench 'DefaultSizing/keys=gen20M' -benchtime 1x -count 5 -timeout 60m ./mlbf/
//
// Generated sets insert N keys and query the next 2^20 keys of the same
// generator (all distinct); the datasets' distinct keys (URL without
// scheme, split on '/') are shuffled with a fixed seed, half inserted and
// half queried. MLBF_BENCH_IMPLS limits the implementations as for
// BenchmarkTestAndAdd.
func BenchmarkDefaultSizing(b *testing.B) {
	p := 0.001
	if v := os.Getenv("MLBF_BENCH_FP"); v != "" {
		var err error
		if p, err = strconv.ParseFloat(v, 64); err != nil {
			b.Fatalf("MLBF_BENCH_FP=%q: %v", v, err)
		}
	}
	runSets(b, []benchSet{
		{"gen1M", 1 << 20, false},
		{"datasets", 0, false},
		{"gen20M", 20_000_000, true},
	}, func(b *testing.B, set benchSet) {
		var src *keySource
		if set.name == "datasets" {
			ins, q := splitKeys(distinctKeys(loadDatasets(b)), 2026)
			src = &keySource{n: len(ins), fixed: chunkOf(ins), fixedQuery: chunkOf(q)}
		} else {
			src = &keySource{n: set.n, queries: chunkKeys, gen: func() *urlGen { return newURLGen(uint64(set.n), 42) }}
		}
		benchImpls(b, src, func() ([]impl, uint64) { return defaultImpls(src.n, p), 0 })
	})
}

// defaultImpls are the filters of BenchmarkDefaultSizing for n keys at
// rate p.
func defaultImpls(n int, p float64) []impl {
	bb := bloom.NewWithEstimates(uint(n), p)
	opts := Options{ExpectedURLs: uint64(n), FalsePositiveRate: p}
	conc, _ := NewConcurrent(opts)
	filt, _ := New(opts)
	batch, _ := NewConcurrent(opts)
	d := uint64(n)
	prev, _ := NewConcurrent(Options{Hashes: 3, ExpectedURLs: d, FalsePositiveRate: p, ExpectedSegments: []uint64{d, d, d, d}})
	return onlyImpls([]impl{
		{name: "bitsandblooms", bits: uint64(bb.Cap()), run: countURLs(bb.TestAndAdd), test: countURLs(bb.Test)},
		{name: "improved-concurrent", bits: conc.TotalBits(), run: countSegs(conc.TestAndAdd), test: countSegs(conc.Test)},
		{name: "improved", bits: filt.TotalBits(), run: countSegs(filt.TestAndAdd), test: countSegs(filt.Test)},
		{name: "improved-batch", bits: batch.TotalBits(), run: countBatches(batch.TestAndAddBatch), test: countSegs(batch.Test)},
		{name: "previous-default-concurrent", bits: prev.TotalBits(), run: countSegs(prev.TestAndAdd), test: countSegs(prev.Test)},
	})
}

// queryFP runs, untimed, the test function of every implementation that
// has one over the source's fresh keys and reports the share reported
// present.
func queryFP(b *testing.B, src *keySource, impls []impl) {
	if src.fixedQuery == nil && src.queries == 0 {
		return
	}
	hits := make([]int, len(impls))
	q := 0
	src.eachQuery(func(k *keyChunk) {
		q += len(k.segs)
		for i, im := range impls {
			if im.test != nil {
				hits[i] += im.test(k)
			}
		}
	})
	for i, im := range impls {
		if im.test != nil {
			b.ReportMetric(float64(hits[i])/float64(q), im.name+"-query-fp")
		}
	}
}

// eachQuery calls fn for every chunk of the source's fresh keys: the
// generator's keys after the first n, or the fixed query chunk.
func (s *keySource) eachQuery(fn func(k *keyChunk)) {
	if s.fixedQuery != nil {
		fn(s.fixedQuery)
		return
	}
	g := s.gen()
	for done := 0; done < s.n; done += chunkKeys {
		s.chunk.fill(g, min(chunkKeys, s.n-done))
	}
	for done := 0; done < s.queries; done += chunkKeys {
		s.chunk.fill(g, min(chunkKeys, s.queries-done))
		fn(&s.chunk)
	}
}

// distinctKeys returns the distinct keys of the URLs, split the paper's
// way (SplitURL: URLs differing only in scheme are one key), in first-seen
// order.
func distinctKeys(urls []string) [][]string {
	seen := make(map[string]bool, len(urls))
	var keys [][]string
	for _, u := range urls {
		seg := SplitURL(u)
		k := strings.Join(seg, "/")
		if !seen[k] {
			seen[k] = true
			keys = append(keys, seg)
		}
	}
	return keys
}

// splitKeys shuffles a copy of keys with the seed and returns its halves:
// keys to insert and keys to query (disjoint, so every "present" answer
// for a query key is a false positive).
func splitKeys(keys [][]string, seed uint64) (insert, query [][]string) {
	k := append([][]string(nil), keys...)
	r := rand.New(rand.NewPCG(seed, 16))
	r.Shuffle(len(k), func(i, j int) { k[i], k[j] = k[j], k[i] })
	return k[:len(k)/2], k[len(k)/2:]
}

// chunkOf makes a chunk of the given keys; its urls are the keys joined
// with '/', so that a filter keyed by bytes sees the same distinct keys,
// and its segments are substrings of those joined keys, allocated in
// chunk order, so that both kinds of filter read their keys from memory
// laid out in the order they are inserted (segments left where SplitURL
// cut them from the shuffled URLs would cost the filters keyed by segments
// cache misses that have nothing to do with them).
func chunkOf(keys [][]string) *keyChunk {
	k := &keyChunk{}
	for _, s := range keys {
		u := strings.Join(s, "/")
		k.urls = append(k.urls, []byte(u))
		k.segs = append(k.segs, strings.Split(u, "/"))
	}
	return k
}
