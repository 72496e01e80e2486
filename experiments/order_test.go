package experiments

import (
	"context"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/internal/linkweb"
)

// TestRunOrder crawls a small web and checks what RunOrder scored against
// the graph: no page twice, the roots first, the budget kept, the curves
// rising to the totals, and the files written.
func TestRunOrder(t *testing.T) {
	out := t.TempDir()
	cfg := OrderConfig{
		Web:    linkweb.Options{Seed: 2, Pages: 3000, Hosts: 20, HostExponent: 1},
		Runs:   2,
		Points: 4,
		OutDir: out, Command: "crawler experiment order (test)",
	}
	res, err := RunOrder(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Budget != 300 || len(res.Top) != 30 {
		t.Fatalf("budget %d, top %d pages; want 300 and 30", res.Budget, len(res.Top))
	}
	vs := DefaultOrderVariants()
	if len(res.Runs) != 2*len(vs) {
		t.Fatalf("%d runs, want %d", len(res.Runs), 2*len(vs))
	}
	g := res.Graph
	for _, r := range res.Runs {
		if n := len(r.Fetched); n < res.Budget*9/10 || n > res.Budget {
			t.Errorf("%s run %d fetched %d pages, budget %d", r.Variant, r.Run, n, res.Budget)
		}
		s := slices.Clone(r.Fetched)
		slices.Sort(s)
		if len(slices.Compact(s)) != len(r.Fetched) {
			t.Errorf("%s run %d fetched a page twice", r.Variant, r.Run)
		}
		// Seeds go first, and one fetch per host at a time: no page of a
		// host completes before its root.
		rootDone := map[int]bool{}
		for _, p := range r.Fetched {
			h := g.HostOf(int(p))
			if g.HostStart(h) == int(p) {
				rootDone[h] = true
			} else if !rootDone[h] {
				t.Fatalf("%s run %d: page %d of host %d fetched before its root", r.Variant, r.Run, p, h)
			}
		}
		// The totals, recomputed from the graph.
		top, pr := 0, 0.0
		for _, p := range r.Fetched {
			if slices.Contains(res.Top, int(p)) {
				top++
			}
			pr += g.PageRank(int(p))
		}
		if want := float64(top) / float64(len(res.Top)); r.TopShare != want || pr-r.PageRankSum > 1e-9 || r.PageRankSum-pr > 1e-9 {
			t.Errorf("%s run %d: top share %v PageRank %v, recomputed %v %v", r.Variant, r.Run, r.TopShare, r.PageRankSum, want, pr)
		}
		if r.CPU <= 0 || r.Wall <= 0 {
			t.Errorf("%s run %d: CPU %v, wall %v", r.Variant, r.Run, r.CPU, r.Wall)
		}
	}
	if len(res.Points) != 4*len(res.Runs) {
		t.Fatalf("%d curve points, want %d", len(res.Points), 4*len(res.Runs))
	}
	for i, p := range res.Points {
		if i%4 > 0 {
			prev := res.Points[i-1]
			if p.Pages < prev.Pages || p.TopShare < prev.TopShare || p.PageRankSum < prev.PageRankSum {
				t.Errorf("curve falls: %+v after %+v", p, prev)
			}
		} else if p.Pages < 75 || p.Pages > 76 {
			t.Errorf("first point %+v: want the first 75 pages", p)
		}
	}
	f, err := os.Open(filepath.Join(out, "order_curves.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 1+len(res.Points) {
		t.Errorf("order_curves.csv: %d records, %v; want %d", len(recs), err, 1+len(res.Points))
	}
	for _, name := range []string{"order_runs.csv", "order_top_share.png", "order_top_share.svg", "order_pagerank.png", "order_pagerank.svg"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	rep, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"crawler experiment order (test)", "3000 pages on 20 hosts", "| fifo | fifo |", "| inlinks:8192 | inlinks | 4 × 1024 (16 KiB) |", "| count-min 4x1024 |"} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("report.md lacks %q:\n%s", want, rep)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "crawls")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crawls' state is left behind: %v", err)
	}
}

func TestRunOrderInvalid(t *testing.T) {
	for _, cfg := range []OrderConfig{
		{OutDir: ""},
		{OutDir: "x", Budget: 2},
		{OutDir: "x", Runs: -1},
		{OutDir: "x", Variants: []OrderVariant{{Order: "random"}}},
		{OutDir: "x", SimSketchWidths: []int{1024, 0}},
		{OutDir: "x", Variants: []OrderVariant{{Order: "fifo"}, {Order: "fifo"}}},
		{OutDir: "x", Web: linkweb.Options{Pages: 5, Hosts: 10}},
	} {
		if _, err := RunOrder(context.Background(), cfg); !errors.Is(err, ErrInvalidOptions) && !errors.Is(err, linkweb.ErrInvalidOptions) {
			t.Errorf("RunOrder(%+v) = %v, want an invalid-options error", cfg, err)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := summarize([]float64{1, 2, 3, 4, 5})
	// t(0.975, 4) = 2.776, standard error sqrt(2.5/5).
	if s.mean != 3 || s.median != 3 || s.hi-3 < 1.962 || s.hi-3 > 1.964 || math.Abs(s.lo-(6-s.hi)) > 1e-9 {
		t.Errorf("summarize(1..5) = %+v, want mean 3 ± 1.963", s)
	}
	if s := summarize([]float64{4, 1}); s.median != 2.5 {
		t.Errorf("median of 4, 1 = %v", s.median)
	}
}
