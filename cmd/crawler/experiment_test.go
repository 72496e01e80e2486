package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/experiments"
	"github.com/layercrawl/layercrawl/mlbf"
)

func runCmd(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

func TestExperimentFP(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages in child processes, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the engine's concurrency is race-tested in package crawl")
	}
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "%d\thttp://h%d.example/p/%d\n", i, i%30, i)
	}
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCmd(b.String(), "experiment", "fp", "--urls", "-", "--out", out,
		"--n", "500,1_000", "--bits", "8192", "--seed", "5", "--structures", "bf,mlbf-paper", "--progress=false",
		"--bits-per-url", "8,4", "--sweep-n", "800")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	csv, err := os.ReadFile(filepath.Join(out, "fp.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// Header plus 2 structures x 2 checkpoints x 2 workloads, then the
	// memory sweep: 2 structures x 2 sizes x 2 workloads, at n = 800.
	lines := strings.Split(strings.TrimSuffix(string(csv), "\n"), "\n")
	if len(lines) != 17 {
		t.Fatalf("fp.csv has %d lines, want 17:\n%s", len(lines), csv)
	}
	for i, l := range lines[1:] {
		wantEnd := ",n"
		if i >= 8 {
			wantEnd = ",bits"
			// bf at 4 then 8 bits per URL: 3200 and 6400 bits for n = 800.
			if i < 12 && !strings.Contains(l, ",bf,800,0,3,"+strconv.Itoa(3200*(1+(i-8)/2))+",") {
				t.Errorf("memory-sweep line %q: want bf, n 800 and b·n bits", l)
			}
		}
		if !strings.HasSuffix(l, wantEnd) {
			t.Errorf("line %q does not end with %q", l, wantEnd)
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "crawler experiment fp --urls - --out " + out; !strings.Contains(string(report), want) {
		t.Errorf("report.md lacks the command %q", want)
	}

	// Redraw the plots from the CSV alone.
	replot := t.TempDir()
	code, _, stderr = runCmd("", "experiment", "plot", "--csv", filepath.Join(out, "fp.csv"), "--out", replot)
	if code != 0 {
		t.Fatalf("plot: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"fp_vs_n_url-id.png", "fp_vs_bits_per_url_holdout.png"} {
		if _, err := os.Stat(filepath.Join(replot, f)); err != nil {
			t.Errorf("plot: %v", err)
		}
	}

	// The same with urlnorm segmentation.
	out2 := filepath.Join(t.TempDir(), "out")
	code, _, stderr = runCmd(b.String(), "experiment", "fp", "--urls", "-", "--out", out2, "--segments", "urlnorm",
		"--n", "1000", "--bits", "8192", "--structures", "mlbf", "--progress=false", "--bits-per-url", "none")
	if code != 0 {
		t.Fatalf("urlnorm: exit %d: %s", code, stderr)
	}
	report, err = os.ReadFile(filepath.Join(out2, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "| segmentation | urlnorm") {
		t.Error("report.md does not name the urlnorm segmentation")
	}
	if !strings.Contains(string(report), "no memory sweep was run") {
		t.Error("report.md with --bits-per-url none does not say the sweep is absent")
	}
	if _, err := os.Stat(filepath.Join(out2, "fp_vs_bits_per_url_url-id.png")); !os.IsNotExist(err) {
		t.Errorf("--bits-per-url none: FP vs bits per URL figure: got %v, want none", err)
	}
}

// TestExperimentFPSizedFromDataset runs fp without --bits on a set far
// smaller than the paper's: m comes from the data, so the classic filter's
// expected rate at the largest n is experiments.DatasetFPRate, not ~0.
func TestExperimentFPSizedFromDataset(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "http://h%d.example/p/%d\n", i%30, i)
	}
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCmd(b.String(), "experiment", "fp", "--urls", "-", "--out", out,
		"--structures", "bf", "--progress=false", "--bits-per-url", "none")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(filepath.Join(out, "fp.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := experiments.ReadCSV(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	maxN := 0
	for _, r := range rows {
		maxN = max(maxN, r.N)
	}
	want := experiments.BitsForDataset(maxN, mlbf.DefaultHashes)
	if !strings.Contains(stderr, fmt.Sprintf("m = %d bits per layer, sized from the dataset", want)) {
		t.Errorf("stderr does not give m = %d:\n%s", want, stderr)
	}
	for _, r := range rows {
		if r.BitsTotal != want {
			t.Errorf("bf at n = %d: %d bits, want %d", r.N, r.BitsTotal, want)
		}
		if r.N == maxN && math.Abs(r.TheoryFPRate-experiments.DatasetFPRate) > 0.001 {
			t.Errorf("bf at n = %d: expected rate %v, want about %v", r.N, r.TheoryFPRate, experiments.DatasetFPRate)
		}
	}
}

// TestExperimentOrder runs the order experiment on a small web.
func TestExperimentOrder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCmd("", "experiment", "order", "--pages", "2000", "--hosts", "20", "--runs", "2", "--points", "5", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	runs, err := os.ReadFile(filepath.Join(out, "order_runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// Header plus 2 runs of each order.
	if lines := strings.Count(string(runs), "\n"); lines != 1+2*len(experiments.DefaultOrderVariants()) {
		t.Errorf("order_runs.csv has %d lines:\n%s", lines, runs)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "crawler experiment order --pages 2000 --hosts 20 --runs 2 --points 5 --out " + out; !strings.Contains(string(report), want) {
		t.Errorf("report.md lacks the command %q", want)
	}
	for _, f := range []string{"order_top_share.png", "order_pagerank.svg", "order_curves.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestExperimentOrderChild runs the order experiment's crawls as child
// processes: this test binary, through a script, as the crawler.
func TestExperimentOrderChild(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "crawler")
	body := fmt.Sprintf("#!/bin/sh\nLAYERCRAWL_ORDER_CHILD=1 exec %q -test.run='^TestHelperOrderCrawler$' -- \"$@\"\n", os.Args[0])
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, _, stderr := runCmd("", "experiment", "order", "--pages", "1000", "--hosts", "10", "--runs", "1", "--orders", "fifo,inlinks:8192", "--crawler", script, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	runs, err := os.ReadFile(filepath.Join(out, "order_runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(runs)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "fifo,fifo,0,1,100,") || !strings.HasPrefix(lines[2], "inlinks:8192,inlinks,8192,1,100,") {
		t.Errorf("order_runs.csv: want a fifo and an inlinks:8192 run of 100 pages each:\n%s", runs)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "the crawler alone") {
		t.Errorf("report.md does not say the CPU is the child's:\n%s", report)
	}
}

// TestHelperOrderCrawler is the crawler of TestExperimentOrderChild.
func TestHelperOrderCrawler(t *testing.T) {
	if os.Getenv("LAYERCRAWL_ORDER_CHILD") == "" {
		t.Skip("helper process for TestExperimentOrderChild")
	}
	os.Exit(run(context.Background(), env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, flag.Args()))
}

func TestExperimentUsage(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"experiment"}, 2, "missing experiment kind"},
		{[]string{"experiment", "-h"}, 0, "Usage: crawler experiment"},
		{[]string{"experiment", "-h"}, 0, "\n  fp "},
		{[]string{"experiment", "-h"}, 0, "\n  plot "},
		{[]string{"experiment", "-h"}, 0, "\n  similarity "},
		{[]string{"experiment"}, 2, "\n  similarity "},
		{[]string{"experiment", "-h"}, 0, "\n  order "},
		{[]string{"experiment", "order", "--orders", "fifo,random", "--out", "OUT"}, 2, `unknown order "random"`},
		{[]string{"experiment", "order", "--orders", "fifo,inlinks:x", "--out", "OUT"}, 2, "the expected URLs are not a positive integer"},
		{[]string{"experiment", "order", "--pages", "10", "--hosts", "20", "--out", "OUT"}, 2, "Pages 10 below Hosts 20"},
		{[]string{"experiment", "order", "--budget", "1.5", "--out", "OUT"}, 2, "Budget 1.5 not in (0, 1]"},
		{[]string{"experiment", "order", "--host-exponent", "-1", "--out", "OUT"}, 2, "--host-exponent -1 is negative"},
		{[]string{"experiment", "nope"}, 2, "unknown experiment"},
		{[]string{"experiment", "fp"}, 2, "--urls is required"},
		{[]string{"experiment", "fp", "--urls", "x", "--n", "0"}, 2, "not a positive integer"},
		{[]string{"experiment", "fp", "--urls", "x", "--format", "csv"}, 2, "unknown format"},
		{[]string{"experiment", "fp", "--urls", "x", "--order", "random"}, 2, "unknown order"},
		{[]string{"experiment", "fp", "--urls", "x", "--structures", "bf,xyz"}, 2, "unknown structure"},
		{[]string{"experiment", "fp", "--urls", "x,", "--out", "o"}, 2, "empty file name"},
		{[]string{"experiment", "fp", "--urls", "x", "--segments", "words"}, 2, "unknown --segments"},
		{[]string{"experiment", "fp", "--urls", "x", "--bits-per-url", "4,x"}, 2, `--bits-per-url: experiments: bits per URL "x" is not a positive number`},
		{[]string{"experiment", "fp", "--urls", "x", "--bits-per-url", "0"}, 2, "is not a positive number"},
		{[]string{"experiment", "fp", "--urls", "x", "--bits-per-url", ""}, 2, "or none for no memory sweep"},
		{[]string{"experiment", "fp", "--urls", "x", "--bits-per-url", "4,,8"}, 2, "is not a positive number"},
		{[]string{"experiment", "fp", "--urls", "x", "--sweep-n", "-3"}, 2, "--sweep-n -3 is negative"},
		{[]string{"experiment", "plot"}, 2, "--csv is required"},
		{[]string{"experiment", "plot", "--csv", "/nonexistent/fp.csv"}, 1, "no such file"},
		{[]string{"experiment", "fp", "--urls", "/nonexistent/file", "--out", "OUT", "--progress=false"}, 1, "no such file"},
	}
	for _, tc := range tests {
		args := slices.Clone(tc.args)
		for i, a := range args {
			if a == "OUT" {
				args[i] = t.TempDir()
			}
		}
		code, stdout, stderr := runCmd("", args...)
		if code != tc.wantCode || !strings.Contains(stdout+stderr, tc.wantErr) {
			t.Errorf("%v: got exit %d and %q, want %d and %q", tc.args, code, stdout+stderr, tc.wantCode, tc.wantErr)
		}
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"crawler", "--urls", "a.txt,b.gz"}, "crawler --urls a.txt,b.gz"},
		{[]string{"x", "it's", ""}, `x 'it'\''s' ''`},
		{[]string{"x", "a b"}, "x 'a b'"},
	}
	for _, tc := range tests {
		if got := commandLine(tc.in); got != tc.want {
			t.Errorf("commandLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
