// Command sbfsim simulates a stable Bloom filter (Deng and Rafiei
// 2006) as the seen-set of a continuous crawl, to compare with the aging
// exact set (frontier/aging.go). Run: go run ./experiments/sbfsim
//
// Model: L live (scheduled) URLs; every round each is fetched once
// (inserted, in random order), and D links to random live URLs and C
// links to new URLs (churn: each new URL seen once, then gone) are
// checked, interleaved at random. A link to a live URL that the filter
// answers "new" is a duplicate fetch (a false negative); a new URL
// answered "seen" is lost (a false positive). The SBF has m cells of d
// bits (Max = 2^d-1); each insert decrements P random cells, then sets its
// k cells to Max; a test is "seen" when its k cells are all non-zero.
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
)

func main() {
	const L, D, C = 100_000, 100_000, 10_000
	const rounds, warm = 12, 4
	fmt.Println("bytes/live-URL  d  k   P   false-neg(link to live URL)  false-pos(new URL)")
	for _, bytesPerURL := range []float64{2.2, 4, 8} {
		for _, d := range []int{1, 2, 3} {
			for _, k := range []int{3, 6} {
				m := int(bytesPerURL * 8 * L / float64(d))
				max := 1<<d - 1
				// P for a stable false-positive rate of 1% (Deng and
				// Rafiei, eq. for the stable zero fraction).
				fps := 0.01
				z := math.Pow(1-math.Pow(fps, 1/float64(k)), 1/float64(max)) // stable fraction of zeros needed
				// z = (1/(1+1/(P(1/k-1/m))))  =>  P = 1/((1/z-1)(1/k-1/m))
				P := int(math.Round(1 / ((1/z - 1) * (1/float64(k) - 1/float64(m)))))
				if P < 1 {
					P = 1
				}
				fn, fp := simulate(m, max, k, P, L, D, C, rounds, warm)
				fmt.Printf("%14.1f  %d  %d  %3d  %27.4f  %17.4f\n", bytesPerURL, d, k, P, fn, fp)
			}
		}
	}
}

func simulate(m, max, k, P, L, D, C, rounds, warm int) (fn, fp float64) {
	r := rand.New(rand.NewPCG(1, 2))
	cells := make([]uint8, m)
	idx := func(id uint64, i int) int {
		h := id*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9
		h ^= h >> 31
		h *= 0x94d049bb133111eb
		h ^= h >> 29
		return int(h % uint64(m))
	}
	test := func(id uint64) bool {
		for i := range k {
			if cells[idx(id, i)] == 0 {
				return false
			}
		}
		return true
	}
	insert := func(id uint64) {
		for range P {
			c := r.IntN(m)
			if cells[c] > 0 {
				cells[c]--
			}
		}
		for i := range k {
			cells[idx(id, i)] = uint8(max)
		}
	}
	next := uint64(1 << 40) // new URL ids
	var fnN, fnD, fpN, fpD int
	for round := range rounds {
		// events: 0 fetch of live i, 1 link to live, 2 new URL
		n := L + D + C
		order := r.Perm(n)
		for _, e := range order {
			switch {
			case e < L:
				insert(uint64(e))
			case e < L+D:
				id := uint64(r.IntN(L))
				seen := test(id)
				if round >= warm {
					fnD++
					if !seen {
						fnN++
					}
				}
				insert(id)
			default:
				next++
				seen := test(next)
				if round >= warm {
					fpD++
					if seen {
						fpN++
					}
				}
				insert(next)
			}
		}
	}
	return float64(fnN) / float64(fnD), float64(fpN) / float64(fpD)
}
