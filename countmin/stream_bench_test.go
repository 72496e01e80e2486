package countmin

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// linkGraph is a synthetic web like issue 34's: pages on hosts of Zipf
// sizes (exponent 1), a spanning tree per host, and 6-18 extra links per
// page to Zipf-chosen targets, 75% on the same host. It returns each
// page's distinct link targets.
func linkGraph(pages, hosts int, seed uint64) [][]int {
	r := rand.New(rand.NewPCG(seed, 34))
	var hsum float64
	for h := range hosts {
		hsum += 1 / float64(h+1)
	}
	start := make([]int, hosts+1)
	for h := range hosts {
		start[h+1] = start[h] + max(1, int(float64(pages)/hsum/float64(h+1)))
	}
	n := start[hosts]
	hostZipf := rand.NewZipf(r, 1.0001, 1, uint64(hosts-1))
	out := make([][]int, n)
	for h := range hosts {
		size := start[h+1] - start[h]
		var pageZipf *rand.Zipf
		if size > 1 {
			pageZipf = rand.NewZipf(r, 1.0001, 1, uint64(size-1))
		}
		pick := func(size int, z *rand.Zipf) int {
			if z == nil {
				return 0
			}
			return int(z.Uint64())
		}
		for i := range size {
			p := start[h] + i
			var links []int
			for c := 2*i + 1; c <= 2*i+2 && c < size; c++ {
				links = append(links, start[h]+c)
			}
			for range 6 + r.IntN(13) {
				th, tz := h, pageZipf
				if r.Float64() >= 0.75 {
					th = int(hostZipf.Uint64())
					tz = nil
					if s := start[th+1] - start[th]; s > 1 {
						tz = rand.NewZipf(r, 1.0001, 1, uint64(s-1))
					}
				}
				links = append(links, start[th]+pick(start[th+1]-start[th], tz))
			}
			slices.Sort(links)
			out[p] = slices.Compact(links)
		}
	}
	return out
}

// BenchmarkLinkStream counts the in-links of a 100,000-page synthetic web
// in sketches of 4 rows and several widths, conservative and plain, and
// reports the overestimate against the exact counts and how much of the
// true top 1% by in-links the sketch's top 1% holds (what ordering by the
// sketch costs). The figures are in docs/BENCHMARKS.md.
func BenchmarkLinkStream(b *testing.B) {
	graph := linkGraph(100_000, 200, 1)
	exact := make([]uint32, len(graph))
	adds := 0
	for _, links := range graph {
		for _, t := range links {
			exact[t]++
			adds++
		}
	}
	keys := make([]string, len(graph))
	for i := range keys {
		keys[i] = fmt.Sprintf("https://h.example/p/%d", i)
	}
	top := topShare(exact, exact)
	if top != 1 {
		b.Fatalf("the exact counts' top 1%% holds %v of itself", top)
	}
	_, sized := Estimate(uint64(len(graph)))
	for _, width := range []int{1024, 4096, sized, 65536} {
		for _, conservative := range []bool{true, false} {
			name := fmt.Sprintf("4x%d/conservative=%v", width, conservative)
			b.Run(name, func(b *testing.B) {
				var est []uint32
				for b.Loop() {
					s, _ := New(Options{Rows: 4, Width: width, Seed: 9})
					p := &plain{s: s, counts: make([]uint32, 4*width)}
					for _, links := range graph {
						for _, t := range links {
							if conservative {
								s.Add(keys[t])
							} else {
								p.add(keys[t])
							}
						}
					}
					est = make([]uint32, len(graph))
					for i, k := range keys {
						if conservative {
							est[i] = s.Count(k)
						} else {
							est[i] = p.count(k)
						}
					}
				}
				var over float64
				exactN := 0
				for i, e := range est {
					if e < exact[i] {
						b.Fatalf("page %d: estimate %d below the true %d", i, e, exact[i])
					}
					over += float64(e - exact[i])
					if e == exact[i] {
						exactN++
					}
				}
				b.ReportMetric(over/float64(len(est)), "overestimate/page")
				b.ReportMetric(float64(exactN)/float64(len(est)), "exact-share")
				b.ReportMetric(topShare(est, exact), "top1%-recall")
				b.ReportMetric(float64(adds)/float64(len(est)), "inlinks/page")
			})
		}
	}
}

// topShare returns the share of the top 1% of pages by exact that are in
// the top 1% by est (ties by page number).
func topShare(est, exact []uint32) float64 {
	k := len(est) / 100
	top := func(c []uint32) []int {
		idx := make([]int, len(c))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return int(c[b]) - int(c[a]) })
		return idx[:k]
	}
	want := map[int]bool{}
	for _, i := range top(exact) {
		want[i] = true
	}
	hit := 0
	for _, i := range top(est) {
		if want[i] {
			hit++
		}
	}
	return float64(hit) / float64(k)
}
