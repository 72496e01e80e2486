package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/layercrawl/layercrawl/experiments"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// experimentKinds lists the kinds of "crawler experiment", in the order its
// help prints them.
var experimentKinds = []struct{ name, synopsis, summary string }{
	{"fp", "--urls FILE[,FILE...] [flags]", "replay URL sets through the classic and multi-layer Bloom filters; write fp.csv, plots of false positives and timings, and report.md"},
	{"plot", "--csv fp.csv [--out DIR]", "redraw the plots of a finished fp run from its fp.csv"},
	{"similarity", "--warc FILE|DIR[,...] [flags]", "compare the near-duplicate methods of package neardup on pages read from WARC files"},
	{"order", "[--pages N --hosts N --runs N --orders fifo,...] [flags]", "crawl a synthetic web with a known link graph in each crawl order, under a page budget; draw the share of the most linked-to pages and the PageRank fetched against the budget spent; report.md"},
	{"freshness", "[--pages N --runs N --duration D --budget-share S --policies uniform,...] [flags]", "revisit a web whose pages change as Poisson processes, in simulated time, under each revisit schedule at one fetch budget; draw the collection's freshness and age over time; report.md"},
}

// experimentUsage prints the kinds of experiment and how to get their flags.
func experimentUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: crawler experiment <kind> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Kinds:")
	for _, k := range experimentKinds {
		fmt.Fprintf(w, "  %-11s %s\n", k.name, k.summary)
		fmt.Fprintf(w, "  %-11s crawler experiment %s %s\n", "", k.name, k.synopsis)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "crawler experiment <kind> -h" for the flags of one kind.`)
}

// runExperiment dispatches "crawler experiment <kind>".
func runExperiment(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		experimentUsage(e.stderr)
		return fmt.Errorf("%w: missing experiment kind (fp, plot, similarity, order or freshness)", errUsage)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		experimentUsage(e.stdout)
		return flag.ErrHelp
	case "fp":
		return runExperimentFP(ctx, e, args[1:])
	case "plot":
		return runExperimentPlot(e, args[1:])
	case "similarity":
		return runExperimentSimilarity(ctx, e, args[1:])
	case "order":
		return runExperimentOrder(ctx, e, args[1:])
	case "freshness":
		return runExperimentFreshness(ctx, e, args[1:])
	}
	return fmt.Errorf("%w: unknown experiment %q (want fp, plot, similarity, order or freshness)", errUsage, args[0])
}

// runExperimentPlot redraws the plots of a finished run from its fp.csv.
func runExperimentPlot(e env, args []string) error {
	fs := newFlagSet(e, "experiment plot", "--csv fp.csv [--out DIR]")
	csvPath := fs.String("csv", "", "fp.csv written by crawler experiment fp")
	out := fs.String("out", "", "directory for the PNG and SVG files (default: the CSV's directory)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *csvPath == "" {
		return fmt.Errorf("%w: --csv is required", errUsage)
	}
	if *out == "" {
		*out = filepath.Dir(*csvPath)
	}
	f, err := os.Open(*csvPath)
	if err != nil {
		return err
	}
	rows, err := experiments.ReadCSV(f)
	f.Close()
	if err != nil {
		return err
	}
	figs, err := experiments.Figures(rows)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	names, err := experiments.WriteFigures(*out, figs)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %d plot files to %s\n", len(names), *out)
	return nil
}

func runExperimentFP(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "experiment fp", "--urls FILE[,FILE...] [flags]")
	urls := fs.String("urls", "", "comma-separated URL files, read as if concatenated (plain or gzip, detected by content); - for stdin")
	format := fs.String("format", "auto", "line format: auto (last tab-separated field), plain, sogouq (query-log URL column) or idurl (id<TAB>url)")
	column := fs.Int("column", 0, "sogouq: 1-based column of the URL; 0 = the last")
	scheme := fs.String("default-scheme", "", `scheme prefixed to URLs without one (default "" = such lines are bad; sogouq assumes http)`)
	maxLine := fs.Int("max-line-bytes", experiments.DefaultMaxLineBytes, "longer lines are skipped and counted as bad")
	ns := fs.String("n", "", "comma-separated numbers of URLs to insert (default: five evenly spaced values up to all)")
	layers := fs.Int("layers", mlbf.DefaultLayers, "L, filter layers (the integrity layer comes on top)")
	hashes := fs.Int("hashes", mlbf.DefaultHashes, "k, hash functions per layer")
	bits := fs.Uint64("bits", 0, fmt.Sprintf("m, bits of the classic filter and of each paper-MLBF layer. 0: sized from the dataset, so that bf (k = --hashes) reaches a %g%% false-positive rate at the largest n measured: m = -k·n / ln(1 - 0.01^(1/k)), about 12.4 bits per URL at k = 3 (the paper's m, %d, is that for about 1.36 million URLs)", 100*experiments.DatasetFPRate, mlbf.DefaultBitsPerLayer))
	seed := fs.Uint64("seed", 1, "seed of the insertion order and of the holdout split")
	order := fs.String("order", "shuffle", "insertion order: shuffle (seeded) or input")
	holdout := fs.Int("holdout", 0, "URLs held out for the holdout workload (default min(100000, distinct/10); -1 for none)")
	structs := fs.String("structures", "", "comma-separated structures (default all: "+strings.Join(experiments.AllStructures, ",")+")")
	parallel := fs.Int("parallel", 1, "structures measured at once (2 halves the time, adds timing noise)")
	out := fs.String("out", "experiment-out", "output directory for fp.csv, plots and report.md")
	progress := fs.Bool("progress", true, "draw a progress bar on stderr")
	bitsPerURL := fs.String("bits-per-url", experiments.FormatBitsPerURL(experiments.DefaultBitsPerURL, ","), "memory sweep: comma-separated bits per URL b; every structure is rebuilt with b·n bits at the fixed n of --sweep-n (none: no sweep, no FP vs bits per URL figures)")
	sweepN := fs.Int("sweep-n", 0, "n of the memory sweep (default 0: the largest n measured)")
	segments := fs.String("segments", "paper", "layer split for the multi-layer filters: paper (mlbf.SplitURL: drop scheme://, split on /) or urlnorm (normalize, then urlnorm Segments with the scheme kept)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *urls == "" {
		return fmt.Errorf("%w: --urls is required", errUsage)
	}
	f, err := experiments.ParseFormat(*format)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	ord, err := experiments.ParseOrder(*order)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	nList, err := parseInts(*ns)
	if err != nil {
		return fmt.Errorf("%w: --n: %v", errUsage, err)
	}
	var bpu []float64
	if *bitsPerURL != "none" {
		if bpu, err = experiments.ParseBitsPerURL(*bitsPerURL); err != nil {
			return fmt.Errorf("%w: --bits-per-url: %v (or none for no memory sweep)", errUsage, err)
		}
	}
	if *sweepN < 0 {
		return fmt.Errorf("%w: --sweep-n %d is negative", errUsage, *sweepN)
	}
	var names []string
	if *structs != "" {
		if names, err = experiments.ParseStructures(strings.Split(*structs, ",")); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	var sources []experiments.Source
	for _, p := range strings.Split(*urls, ",") {
		if p == "" {
			return fmt.Errorf("%w: empty file name in --urls", errUsage)
		}
		sources = append(sources, experiments.Source{Path: p, Stdin: e.stdin})
	}
	cfg := experiments.FPConfig{
		Sources:    sources,
		Read:       experiments.ReadOptions{Format: f, Column: *column, DefaultScheme: *scheme, MaxLineBytes: *maxLine},
		Plan:       experiments.PlanOptions{Seed: *seed, Order: ord, Holdout: *holdout, N: nList, SweepN: *sweepN},
		Structures: names,
		BitsPerURL: bpu,
		Filters:    experiments.StructureOptions{Layers: *layers, Hashes: *hashes, Bits: *bits},
		Parallel:   *parallel,
		OutDir:     *out,
		Command:    commandLine(append([]string{"crawler", "experiment", "fp"}, args...)),
		Log:        e.stderr,
	}
	switch *segments {
	case "paper":
	case "urlnorm":
		n, err := urlnorm.New(urlnorm.Options{})
		if err != nil {
			return err
		}
		cfg.Filters.Segment = experiments.NormalizedSegmenter(n)
		cfg.SegmenterName = "urlnorm: Normalize with default options, then Segments (layer 1 = scheme://host[:port]; query stays on the last segment)"
	default:
		return fmt.Errorf("%w: unknown --segments %q (want paper or urlnorm)", errUsage, *segments)
	}
	if err := cfg.Read.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *progress {
		cfg.Progress = e.stderr
	}
	_, err = experiments.RunFP(ctx, cfg)
	return err
}

// parseInts parses a comma-separated list of positive integers; "" is nil.
// Underscores are allowed as digit separators (1_500_000).
func parseInts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(f), "_", ""), 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, int(n))
	}
	return out, nil
}

// commandLine quotes args for a POSIX shell, so the report's command can be
// pasted back.
func commandLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,/:+@") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}
