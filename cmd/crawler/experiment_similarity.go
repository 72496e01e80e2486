package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/layercrawl/layercrawl/experiments"
)

// runExperimentSimilarity runs "crawler experiment similarity": the
// near-duplicate methods of package neardup compared on pages read from
// WARC files.
func runExperimentSimilarity(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "experiment similarity", "--warc FILE|DIR[,...] [flags]")
	warc := fs.String("warc", "", "comma-separated WARC files or directories (searched for *.warc.gz), e.g. the warc/ of a crawl")
	pages := fs.Int("pages", 1000, "distinct HTML pages kept from the WARC files")
	minWords := fs.Int("min-words", 50, "least visible words of a page kept")
	rates := fs.String("rates", "0.01,0.05,0.1,0.2,0.4", "comma-separated word edit rates of the copies")
	sizes := fs.String("sizes", "1000,10000,100000", "comma-separated collection sizes at which query time is measured")
	bytesPerPage := fs.Int("bytes-per-page", 256, "memory per page given to every method's sketch")
	threshold := fs.Float64("threshold", 0.7, "estimated resemblance at which a method reports a pair")
	seed := fs.Uint64("seed", 1, "seed of the copies' edits")
	out := fs.String("out", "similarity-out", "output directory for similarity.csv, plots and report.md")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *warc == "" {
		return fmt.Errorf("%w: --warc is required", errUsage)
	}
	var rs []float64
	for _, f := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r < 0 || r > 1 {
			return fmt.Errorf("%w: --rates: %q is not a rate in [0, 1]", errUsage, f)
		}
		rs = append(rs, r)
	}
	ns, err := parseInts(*sizes)
	if err != nil {
		return fmt.Errorf("%w: --sizes: %v", errUsage, err)
	}
	if *pages < 1 || *bytesPerPage < 32 || !(*threshold > 0 && *threshold <= 1) {
		return fmt.Errorf("%w: --pages %d, --bytes-per-page %d (>= 32), --threshold %g (in (0, 1])", errUsage, *pages, *bytesPerPage, *threshold)
	}
	_, err = experiments.RunSimilarity(ctx, experiments.SimilarityConfig{
		WARC: strings.Split(*warc, ","), Pages: *pages, MinWords: *minWords, Rates: rs, Sizes: ns,
		BytesPerPage: *bytesPerPage, Threshold: *threshold, Seed: *seed, OutDir: *out,
		Command: commandLine(append([]string{"crawler", "experiment", "similarity"}, args...)),
		Log:     e.stderr,
	})
	return err
}
