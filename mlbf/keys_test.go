package mlbf

import (
	"bufio"
	"compress/gzip"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"
)

// sharedDir locates ../shared beside the repository (../../shared from this
// package). Tests that need it skip when it is absent, unless CI=true.
func sharedDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "shared", "datasets")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("shared datasets not found at %s (CI=true): %v", dir, err)
		}
		tb.Skipf("shared datasets not found at %s; clone ../shared beside the repository to run this", dir)
	}
	return dir
}

// loadDatasets reads every URL of ../shared/datasets/*.txt.gz (about 1.5
// million), in file order.
func loadDatasets(tb testing.TB) []string {
	dir := sharedDir(tb)
	files, err := filepath.Glob(filepath.Join(dir, "*.txt.gz"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no datasets in %s: %v", dir, err)
	}
	var urls []string
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			tb.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if len(sc.Bytes()) > 0 {
				urls = append(urls, sc.Text())
			}
		}
		if err := sc.Err(); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		f.Close()
	}
	return urls
}

// urlGen generates deterministic, distinct URL-like keys with a skewed
// host distribution (Zipf over n/25 hosts), section and sub-section
// vocabularies (Zipf), depths 1..7 (mostly 2..4) and a unique last segment,
// so that the distinct segment count grows with depth as in real crawls.
type urlGen struct {
	r       *rand.Rand
	host    *rand.Zipf
	section *rand.Zipf
	sub     *rand.Zipf
	hosts   uint64
	i       uint64
}

var (
	tlds     = []string{"com", "org", "net", "de", "co.uk", "fr", "io", "gov.uk", "cn", "ru"}
	sections = []string{"news", "blog", "products", "category", "tag", "user", "docs", "search", "article", "shop", "forum", "wiki", "en", "de", "static", "media", "page", "archive", "events", "help"}
	depthCDF = []float64{0.10, 0.35, 0.65, 0.85, 0.94, 0.98, 1}
)

func newURLGen(n uint64, seed uint64) *urlGen {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	hosts := max(n/25, 1000)
	return &urlGen{
		r:       r,
		host:    rand.NewZipf(r, 1.1, 2, hosts-1),
		section: rand.NewZipf(r, 1.2, 1, 5000),
		sub:     rand.NewZipf(r, 1.05, 1, 200000),
		hosts:   hosts,
	}
}

// appendURL appends the next URL to b; it also appends the offsets of the
// end of the scheme and of every '/' after it to cuts.
func (g *urlGen) appendURL(b []byte, cuts []int32) ([]byte, []int32) {
	b = append(b, "https://"...)
	cuts = append(cuts, int32(len(b)))
	h := g.host.Uint64()
	if h%3 == 0 {
		b = append(b, "www."...)
	}
	b = append(b, "site"...)
	b = strconv.AppendUint(b, h*2654435761%(g.hosts*7), 36)
	b = append(b, '.')
	b = append(b, tlds[h%uint64(len(tlds))]...)
	u := g.r.Float64()
	depth := 1
	for depth < len(depthCDF) && u > depthCDF[depth-1] {
		depth++
	}
	for d := 1; d < depth; d++ {
		cuts = append(cuts, int32(len(b)))
		b = append(b, '/')
		switch d {
		case 1:
			s := g.section.Uint64()
			if s < uint64(len(sections)) {
				b = append(b, sections[s]...)
			} else {
				b = append(b, 's')
				b = strconv.AppendUint(b, s, 10)
			}
		case 2:
			if g.r.IntN(3) == 0 {
				b = strconv.AppendUint(b, 2000+g.r.Uint64N(26), 10)
			} else {
				b = append(b, 'c')
				b = strconv.AppendUint(b, g.sub.Uint64(), 36)
			}
		default:
			b = append(b, 'd')
			b = strconv.AppendUint(b, g.r.Uint64N(1000), 10)
		}
	}
	// The unique last segment.
	cuts = append(cuts, int32(len(b)))
	b = append(b, '/')
	if g.r.IntN(4) == 0 {
		b = append(b, "?id="...)
	} else {
		b = append(b, "item-"...)
	}
	b = strconv.AppendUint(b, g.i*0x9e3779b97f4a7c15, 36) // a bijection of i: unique
	g.i++
	return b, cuts
}

// keyChunk holds a chunk of keys in reusable memory: urls[i] is the whole
// URL, segs[i] its segments (the paper's split: scheme dropped, split on
// '/'). The strings alias the chunk's arena: they are valid only until the
// next fill.
type keyChunk struct {
	arena []byte
	cuts  []int32
	ends  []int32
	urls  [][]byte
	segs  [][]string
	all   []string
}

func (k *keyChunk) fill(g *urlGen, n int) {
	k.arena, k.cuts, k.ends = k.arena[:0], k.cuts[:0], k.ends[:0]
	for i := 0; i < n; i++ {
		k.arena, k.cuts = g.appendURL(k.arena, k.cuts)
		k.ends = append(k.ends, int32(len(k.arena)), int32(len(k.cuts)))
	}
	k.urls, k.segs, k.all = k.urls[:0], k.segs[:0], k.all[:0]
	str := func(a, b int32) string {
		if a == b {
			return ""
		}
		return unsafe.String(&k.arena[a], int(b-a))
	}
	start, cut := int32(0), int32(0)
	for i := 0; i < n; i++ {
		end, cutEnd := k.ends[2*i], k.ends[2*i+1]
		k.urls = append(k.urls, k.arena[start:end])
		first := len(k.all)
		cs := k.cuts[cut:cutEnd]
		for j, c := range cs {
			a := c
			if j > 0 {
				a++ // skip the '/'
			}
			b := end
			if j+1 < len(cs) {
				b = cs[j+1]
			}
			k.all = append(k.all, str(a, b))
		}
		k.segs = append(k.segs, k.all[first:len(k.all):len(k.all)])
		start, cut = end, cutEnd
	}
}
