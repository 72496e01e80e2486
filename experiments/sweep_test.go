package experiments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/mlbf"
)

// TestMemorySweepSizes checks the sizes one can verify by hand: at n = 1000
// and b bits per URL every structure has b·n bits (the paper filter the
// largest multiple of L+1 below, the improved one whole 512-bit blocks
// below), and the rows carry n, b and the sweep marker.
func TestMemorySweepSizes(t *testing.T) {
	var urls []string
	for i := range 3000 {
		urls = append(urls, fmt.Sprintf("https://www.site%d.example/dir%d/page-%d.html", i%50, i%7, i))
	}
	p, err := NewPlan(dataset(urls...), PlanOptions{Seed: 1, N: []int{500, 2000}, SweepN: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if p.SweepN != 1000 || p.SweepNDropped != 0 {
		t.Fatalf("got sweep n %d (dropped %d), want 1000", p.SweepN, p.SweepNDropped)
	}
	bits := []float64{4, 6.5, 10}
	so := StructureOptions{Sample: p.Insert, MaxN: p.SweepN}
	structs, sizing, err := BuildSweepStructures(nil, so, bits)
	if err != nil {
		t.Fatal(err)
	}
	// bf-equal-memory is bf at equal memory: left out, and said so.
	if want := len(AllStructures) - 1; len(structs) != want*len(bits) {
		t.Fatalf("got %d structures, want %d", len(structs), want*len(bits))
	}
	if !strings.Contains(sizing.Notes[StructBFEqualMemory], "not measured") || len(sizing.Skipped) != 0 {
		t.Errorf("bf-equal-memory note %q does not say it is not measured, or points skipped: %q", sizing.Notes[StructBFEqualMemory], sizing.Skipped)
	}
	rows, err := Run(context.Background(), p.AtSweepN(), structs, RunOptions{Sweep: SweepMemory, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(structs) {
		t.Fatalf("got %d rows, want %d (one per structure and workload)", len(rows), 2*len(structs))
	}
	var paperProbes float64
	for _, s := range structs {
		if s.Name == StructMLBFPaper {
			paperProbes = s.ProbesPerInsert
		}
	}
	for i, s := range structs {
		b := bits[i%len(bits)]    // structure order, then b order
		total := uint64(b * 1000) // 4000, 6500, 10000 bits
		var ok bool
		switch s.Name {
		case StructBF:
			ok = s.BitsTotal == total && s.Hashes == 3
		case StructBFEqualMemoryOptK:
			ok = s.BitsTotal == total && s.Hashes == int(math.Round(math.Ln2*b)) // 3, 5, 7
		case StructBFEqualProbes:
			ok = s.BitsTotal == total && s.Hashes == int(math.Round(paperProbes))
		case StructMLBFPaper:
			ok = s.BitsTotal == total/5*5 && s.Hashes == 3 // five equal layers
		case StructMLBF:
			ok = s.BitsTotal <= total && s.BitsTotal+5*512 > total && s.BitsTotal%512 == 0 && s.Hashes == 3
		}
		if !ok {
			t.Errorf("%s at b = %v: %d bits, k = %d; not what the sizing rules give for %d bits", s.Name, b, s.BitsTotal, s.Hashes, total)
		}
	}
	for i, r := range rows {
		s := structs[i/2]
		if r.Structure != s.Name || r.N != 1000 || r.Sweep != SweepMemory || r.Seed != 9 || r.BitsTotal != s.BitsTotal {
			t.Errorf("row %d: %+v, want structure %s, n 1000, sweep bits, seed 9, %d bits", i, r, s.Name, s.BitsTotal)
		}
		if r.BitsPerURL != float64(r.BitsTotal)/1000 {
			t.Errorf("row %d: bits per URL %v, want bits total / n = %v", i, r.BitsPerURL, float64(r.BitsTotal)/1000)
		}
		if s.Layers == 0 && r.TheoryFPRate != mlbf.FalsePositiveRate(s.Hashes, s.BitsTotal, 1000) {
			t.Errorf("row %d: theory %v is not formula (1)", i, r.TheoryFPRate)
		}
		if s.Name == StructMLBFPaper && r.TheoryFPRate != mlbf.PaperFalsePositiveRate(4, 3, s.BitsTotal/5, 1000) {
			t.Errorf("row %d: theory %v is not formula (4)", i, r.TheoryFPRate)
		}
	}
	// More memory, fewer false positives: the classic k = 3 filter at 4
	// bits per URL errs on about 15% of queries, at 10 on about 1.7%.
	bf := func(b float64) Row {
		for _, r := range rows {
			if r.Structure == StructBF && r.Workload == WorkloadURLID && r.BitsTotal == uint64(b*1000) {
				return r
			}
		}
		t.Fatalf("no bf row at b = %v", b)
		return Row{}
	}
	if lo, hi := bf(4), bf(10); !(lo.FPRate > 0.08 && lo.FPRate < 0.25 && hi.FPRate < 0.04 && hi.FPRate < lo.FPRate) {
		t.Errorf("bf url+id: %v at 4 bits per URL, %v at 10; want about 0.15 and 0.017", lo.FPRate, hi.FPRate)
	}
}

// TestMemorySweepMatchesNSweep: at b = (L+1)·m/n every sweep structure is
// the very filter the n sweep measures at checkpoint n (bf standing for
// bf-equal-memory), and at b = m/n the sweep's bf is the n sweep's bf, so
// their counts must be identical. The sweep's bf is also checked against a
// classic filter built and queried here directly.
func TestMemorySweepMatchesNSweep(t *testing.T) {
	var urls []string
	for i := range 3000 {
		urls = append(urls, fmt.Sprintf("http://h%d.example/d%d/p%d", i%40, i%9, i))
	}
	p, err := NewPlan(dataset(urls...), PlanOptions{Seed: 4, N: []int{512, 1024}, Holdout: 500})
	if err != nil {
		t.Fatal(err)
	}
	if p.SweepN != 1024 {
		t.Fatalf("default sweep n %d, want the largest checkpoint 1024", p.SweepN)
	}
	const m = 4096
	so := StructureOptions{Bits: m, Sample: p.Insert[:1000], MaxN: 1024}
	nStructs, _, err := BuildStructures(nil, so)
	if err != nil {
		t.Fatal(err)
	}
	nRows, err := Run(context.Background(), p, nStructs, RunOptions{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	bits := []float64{m / 1024.0, 5 * m / 1024.0} // 4 and 20
	sweep, _, err := BuildSweepStructures(nil, so, bits)
	if err != nil {
		t.Fatal(err)
	}
	memRows, err := Run(context.Background(), p.AtSweepN(), sweep, RunOptions{Parallel: 2, Sweep: SweepMemory})
	if err != nil {
		t.Fatal(err)
	}
	find := func(rows []Row, name, wl string, bitsTotal uint64) *Row {
		for i, r := range rows {
			if r.Structure == name && r.Workload == wl && r.N == 1024 && r.BitsTotal == bitsTotal {
				return &rows[i]
			}
		}
		return nil
	}
	for _, wl := range []string{WorkloadURLID, WorkloadHoldout} {
		for _, ns := range nStructs {
			sweepName := ns.Name
			if ns.Name == StructBFEqualMemory {
				sweepName = StructBF
			}
			a, b := find(nRows, ns.Name, wl, ns.BitsTotal), find(memRows, sweepName, wl, ns.BitsTotal)
			if a == nil || b == nil {
				t.Errorf("%s %s: no row with %d bits at n = 1024 in the n sweep (%v) or the memory sweep (%v)", wl, ns.Name, ns.BitsTotal, a != nil, b != nil)
				continue
			}
			if a.Hashes != b.Hashes || a.FalsePositives != b.FalsePositives || a.Queries != b.Queries || a.ExcludedMembers != b.ExcludedMembers || a.TheoryFPRate != b.TheoryFPRate {
				t.Errorf("%s %s: n sweep %+v, memory sweep %+v; want the same filter and counts", wl, ns.Name, *a, *b)
			}
		}
	}

	// Reference: a classic filter of 4·1024 bits, k = 3, holding the first
	// 1024 URLs, asked the url+id queries.
	c, err := mlbf.NewClassic(4096, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range p.Insert[:1024] {
		c.AddString(u)
	}
	var fp int64
	for _, q := range p.IDQueries[:1024] {
		if c.TestString(q) && !slices.Contains(p.Insert[:1024], q) {
			fp++
		}
	}
	if r := find(memRows, StructBF, WorkloadURLID, 4096); r == nil || r.FalsePositives != fp || fp == 0 {
		t.Errorf("bf at 4 bits per URL: got %+v, want %d false positives (and some)", r, fp)
	}
}

func TestParseBitsPerURL(t *testing.T) {
	good := []struct {
		in   string
		want []float64
	}{
		{"8", []float64{8}},
		{"8,4,4, 6", []float64{4, 6, 8}},
		{"1_0,2.5", []float64{2.5, 10}},
	}
	for _, tc := range good {
		got, err := ParseBitsPerURL(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseBitsPerURL(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "4,,8", "0", "-2", "x", "4;8", "NaN", "Inf", "1e400", "4,"} {
		if got, err := ParseBitsPerURL(bad); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "not a positive number") {
			t.Errorf("ParseBitsPerURL(%q) = %v, %v; want an error saying it is not a positive number", bad, got, err)
		}
	}
}

func TestBuildSweepStructuresErrors(t *testing.T) {
	sample := []string{"http://a.example/x", "http://b.example/y/z"}
	so := StructureOptions{Sample: sample, MaxN: 100}
	tests := []struct {
		names []string
		bits  []float64
		want  string
	}{
		{nil, nil, "no bits per URL"},
		{[]string{StructBF}, []float64{0}, "not a positive number"},
		{[]string{StructBF}, []float64{math.NaN()}, "not a positive number"},
		{[]string{StructBF}, []float64{1e12}, "not in [1, 2^40]"},
		{[]string{StructBF}, []float64{0.001}, "not in [1, 2^40]"}, // rounds to 0 bits
		{[]string{"nope"}, []float64{8}, "unknown structure"},
	}
	for _, tc := range tests {
		_, _, err := BuildSweepStructures(tc.names, so, tc.bits)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v at %v: got %v, want ErrInvalidOptions saying %q", tc.names, tc.bits, err, tc.want)
		}
	}
	// Too little memory for a multi-layer filter at this n: that point is
	// left out, never given more memory than the others.
	structs, sizing, err := BuildSweepStructures([]string{StructBF, StructMLBFPaper, StructMLBF}, so, []float64{0.04, 8, 30})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range structs {
		got = append(got, fmt.Sprintf("%s/%d", s.Name, s.BitsTotal))
	}
	// n = 100: 4, 800 and 3000 bits; mlbf-paper needs 5, mlbf 5 blocks of 512.
	if want := []string{"bf/4", "bf/800", "bf/3000", "mlbf-paper/800", "mlbf-paper/3000", "mlbf/2560"}; !slices.Equal(got, want) {
		t.Errorf("got structures %v, want %v", got, want)
	}
	if len(sizing.Skipped) != 3 || !strings.Contains(sizing.Skipped[0], "mlbf-paper at 0.04 bits per URL: 4 bits at n = 100, fewer than the 5 it needs") ||
		!strings.Contains(sizing.Skipped[2], "mlbf at 8 bits per URL: 800 bits at n = 100, fewer than the 2560 it needs (one 512-bit block per layer)") {
		t.Errorf("skipped %q, want mlbf-paper at 0.04 and mlbf at 0.04 and 8", sizing.Skipped)
	}
	_, sizing, err = BuildSweepStructures([]string{StructMLBF}, so, []float64{1})
	if err != nil || !strings.Contains(sizing.Notes[StructMLBF], "not measured") {
		t.Errorf("mlbf with no size large enough: got note %q, %v", sizing.Notes[StructMLBF], err)
	}
	// Without bf, bf-equal-memory is measured under its own name.
	structs, _, err = BuildSweepStructures([]string{StructBFEqualMemory}, so, []float64{10})
	if err != nil || len(structs) != 1 || structs[0].Name != StructBFEqualMemory || structs[0].BitsTotal != 1000 {
		t.Errorf("bf-equal-memory alone: got %+v, %v; want one structure of 1000 bits", structs, err)
	}
}

func TestPlanSweepN(t *testing.T) {
	d := dataset("http://a/1", "http://a/2", "http://a/3", "http://a/4", "http://a/5")
	tests := []struct {
		sweepN, wantN, wantDropped, wantIDQueries int
	}{
		{0, 2, 0, 2}, // the largest checkpoint
		{1, 1, 0, 2},
		{4, 4, 0, 4}, // beyond the checkpoints: the url+id queries cover it
		{9, 5, 9, 5}, // beyond the data: stop at what exists
	}
	for _, tc := range tests {
		p, err := NewPlan(d, PlanOptions{N: []int{1, 2}, Holdout: -1, SweepN: tc.sweepN})
		if err != nil {
			t.Fatal(err)
		}
		if p.SweepN != tc.wantN || p.SweepNDropped != tc.wantDropped || len(p.IDQueries) != tc.wantIDQueries {
			t.Errorf("sweep n %d: got %d, dropped %d, %d url+id queries; want %d, %d, %d",
				tc.sweepN, p.SweepN, p.SweepNDropped, len(p.IDQueries), tc.wantN, tc.wantDropped, tc.wantIDQueries)
		}
		if sp := p.AtSweepN(); !slices.Equal(sp.Checkpoints, []int{p.SweepN}) || !slices.Equal(p.Checkpoints, []int{1, 2}) {
			t.Errorf("sweep n %d: AtSweepN checkpoints %v (plan's now %v)", tc.sweepN, sp.Checkpoints, p.Checkpoints)
		}
	}
	if _, err := NewPlan(d, PlanOptions{SweepN: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative sweep n: got %v, want ErrInvalidOptions", err)
	}
}

// TestRunFPMemorySweep runs the whole experiment with a memory sweep whose
// n is beyond the data: the sweep stops at what exists and says so, its
// rows reach fp.csv and its figures decode; without a sweep the report
// says the figures are absent.
func TestRunFPMemorySweep(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "urls.txt")
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "http://h%d.example/a/%d\n", i%40, i)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var log bytes.Buffer
	rep, err := RunFP(context.Background(), FPConfig{
		Sources: []Source{{Path: in}}, Plan: PlanOptions{Seed: 2, N: []int{900}, SweepN: 5000},
		Structures: []string{StructBF, StructMLBF}, BitsPerURL: []float64{4, 8},
		Filters: StructureOptions{Bits: 1 << 14}, OutDir: out, Command: "crawler experiment fp --urls urls.txt",
		Progress: &bytes.Buffer{}, Log: &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan.SweepN != 1800 || !strings.Contains(log.String(), "sweep n = 5000 not measured") {
		t.Errorf("sweep n %d, log %q; want 1800 and a note that 5000 does not exist", rep.Plan.SweepN, log.String())
	}
	f, err := os.Open(filepath.Join(out, "fp.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadCSV(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var mem []Row
	for _, r := range rows {
		if r.IsMemorySweep() {
			mem = append(mem, r)
		}
	}
	// 2 structures x 2 sizes x 2 workloads, after the 2 x 1 x 2 n-sweep rows.
	if len(rows) != 12 || len(mem) != 8 || rows[4].Sweep != SweepMemory {
		t.Fatalf("fp.csv: %d rows, %d of the memory sweep; want 12 and 8, n-sweep rows first", len(rows), len(mem))
	}
	for _, r := range mem {
		if r.N != 1800 || (r.Structure == StructBF && r.BitsTotal != uint64(r.BitsPerURL*1800)) || r.BitsPerURL > 8 {
			t.Errorf("memory-sweep row %+v: want n 1800 and bits total = bits per URL x n", r)
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"memory sweep: n = 1800, bits per URL 4, 8", "requested sweep n 5000", "## Memory sweep structures", "## Results: memory sweep", "![fp_vs_bits_per_url_holdout](fp_vs_bits_per_url_holdout.png)"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	pf, err := os.Open(filepath.Join(out, "fp_vs_bits_per_url_url-id.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if _, err := png.Decode(pf); err != nil {
		t.Errorf("fp_vs_bits_per_url_url-id.png: %v", err)
	}

	// No sweep: no figure, and the report says so.
	out2 := filepath.Join(dir, "out2")
	rep, err = RunFP(context.Background(), FPConfig{
		Sources: []Source{{Path: in}}, Plan: PlanOptions{Seed: 2, N: []int{900}}, Structures: []string{StructBF},
		Filters: StructureOptions{Bits: 1 << 14}, OutDir: out2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(rep.Files, func(f string) bool { return strings.HasPrefix(f, "fp_vs_bits_per_url") }) {
		t.Errorf("without a sweep, files %v include an FP vs bits per URL figure", rep.Files)
	}
	report, err = os.ReadFile(filepath.Join(out2, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "no memory sweep was run") {
		t.Error("report.md without a sweep does not say the figures are absent")
	}
}
