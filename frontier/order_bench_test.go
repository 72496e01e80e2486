package frontier

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkOrder crawls a web of 20 hosts of 500 pages, each page with 30
// links (75% on its host, Zipf-chosen, so most are duplicates), through
// the frontier alone with an in-memory store: the frontier's cost per page
// of each order. Compare the orders side by side with -count.
func BenchmarkOrder(b *testing.B) {
	const hosts, per, links = 20, 500, 30
	r := rand.New(rand.NewPCG(34, 34))
	z := rand.NewZipf(r, 1.1, 1, per-1)
	web := linkMap{}
	page := func(h, i int) string { return fmt.Sprintf("http://h%d.test/p/%d", h, i) }
	for h := range hosts {
		for i := range per {
			var l []string
			if c := 2*i + 1; c < per {
				l = append(l, page(h, c), page(h, min(c+1, per-1)))
			}
			for range links - 2 {
				th := h
				if r.Float64() >= 0.75 {
					th = r.IntN(hosts)
				}
				l = append(l, page(th, int(z.Uint64())))
			}
			web[page(h, i)] = l
		}
	}
	seeds := make([]string, hosts)
	for h := range seeds {
		seeds[h] = page(h, 0)
	}
	for _, order := range []Order{OrderFIFO, OrderInlinks} {
		b.Run(order.String(), func(b *testing.B) {
			pages := 0
			for b.Loop() {
				f, err := Open(context.Background(), Options{
					Store: newMemStore(), Seen: newExactSeen(), Normalizer: simpleNorm{},
					Politeness: PolitenessOptions{Delay: -1}, Order: order, ExpectedURLs: hosts * per,
					Admission: AdmissionOptions{Scope: ScopeAny},
				})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.AddSeeds(context.Background(), seeds); err != nil {
					b.Fatal(err)
				}
				for {
					e, err := f.Next(context.Background())
					if err != nil {
						break
					}
					if err := f.Done(context.Background(), e, Outcome{Fetched: true, Links: web[e.URL]}); err != nil {
						b.Fatal(err)
					}
					pages++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pages), "ns/page")
		})
	}
}
