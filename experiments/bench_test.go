package experiments

import (
	"context"
	"path/filepath"
	"testing"
)

// benchPlan loads the shared datasets once for the benchmarks and plans
// 200,000 insertions (seed 1), skipping when the data are absent.
func benchPlan(b *testing.B) *Plan {
	b.Helper()
	dir := filepath.Join("..", "..", "shared", "datasets")
	d, err := LoadDataset(context.Background(), []Source{
		{Path: filepath.Join(dir, "govuk_transition_old.txt.gz")},
		{Path: filepath.Join(dir, "phishing_database.txt.gz")},
	}, ReadOptions{})
	if err != nil {
		b.Skipf("shared datasets not readable (%v); clone beside ../shared to run this benchmark", err)
	}
	p, err := NewPlan(d, PlanOptions{Seed: 1, N: []int{200_000}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkStructures measures one insertion, one url+id query (a
// non-member differing from an inserted URL in its last segment) and one
// holdout query (a real URL never inserted) of every
// structure, side by side in one run, with the paper's parameters (L=4,
// k=3, m=16,829,152) and 200,000 real URLs inserted before the queries.
// These are the per-operation costs behind the paper's Figs. 6 and 7.
func BenchmarkStructures(b *testing.B) {
	p := benchPlan(b)
	const n = 200_000
	structs, _, err := BuildStructures(nil, StructureOptions{Sample: p.Insert[:SampleSize], MaxN: n})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range structs {
		b.Run("insert/"+s.Name, func(b *testing.B) {
			f, err := s.New()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f.Add(p.Insert[i%n])
			}
		})
		b.Run("query-url+id/"+s.Name, func(b *testing.B) {
			f, err := s.New()
			if err != nil {
				b.Fatal(err)
			}
			for _, u := range p.Insert[:n] {
				f.Add(u)
			}
			present := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if f.Test(p.IDQueries[i%n]) {
					present++
				}
			}
			b.ReportMetric(float64(present)/float64(b.N), "present/op")
		})
		b.Run("query-holdout/"+s.Name, func(b *testing.B) {
			f, err := s.New()
			if err != nil {
				b.Fatal(err)
			}
			for _, u := range p.Insert[:n] {
				f.Add(u)
			}
			present := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if f.Test(p.Holdout[i%len(p.Holdout)]) {
					present++
				}
			}
			b.ReportMetric(float64(present)/float64(b.N), "present/op")
		})
	}
}
