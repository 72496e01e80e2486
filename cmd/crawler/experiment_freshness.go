package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/layercrawl/layercrawl/experiments"
	"github.com/layercrawl/layercrawl/internal/changeweb"
	"github.com/layercrawl/layercrawl/revisit"
)

// runExperimentFreshness runs "crawler experiment freshness": continuous
// crawls of a changing web in simulated time, one per revisit schedule,
// scored by the freshness and age of the collection.
func runExperimentFreshness(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "experiment freshness", "[flags]")
	pages := fs.Int("pages", changeweb.DefaultPages, "pages of the changing web")
	hosts := fs.Int("hosts", changeweb.DefaultHosts, "hosts of the changing web")
	never := fs.Float64("never", changeweb.DefaultNever, "share of the pages that never change (negative: none)")
	fastest := fs.Duration("fastest", changeweb.DefaultFastest, "shortest mean interval between a page's changes")
	slowest := fs.Duration("slowest", changeweb.DefaultSlowest, "longest mean interval between a page's changes (log-uniform between the two)")
	seed := fs.Uint64("seed", 1, "seed of the first run's web (run r uses seed + r)")
	runs := fs.Int("runs", 5, "webs simulated, each with every schedule")
	duration := fs.Duration("duration", 0, "simulated time of each run (default 48h)")
	budget := fs.Float64("budget-share", 0.03, "fetch budget, in fetches per minute as a share of the pages")
	minIv := fs.Duration("revisit-min", 0, "shortest revisit interval (default 1m)")
	maxIv := fs.Duration("revisit-max", 0, "longest revisit interval (default 24h)")
	samples := fs.Int("samples", 0, "freshness samples over each run, for the curves (default 144)")
	variants := fs.String("policies", "uniform,proportional,adaptive,adaptive-undated,adaptive-known", "comma-separated schedules compared, the first the baseline: uniform, proportional or adaptive (rates estimated from the visits and Last-Modified), with -undated for rates from the visits alone, -known for the true rates")
	out := fs.String("out", "freshness-out", "output directory for freshness_runs.csv, freshness_curves.csv, plots and report.md")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	vs, err := parseFreshnessVariants(*variants)
	if err != nil {
		return fmt.Errorf("%w: --policies: %v", errUsage, err)
	}
	_, err = experiments.RunFreshness(ctx, experiments.FreshnessConfig{
		Web:      changeweb.Options{Seed: *seed, Pages: *pages, Hosts: *hosts, Never: *never, Fastest: *fastest, Slowest: *slowest},
		Variants: vs, Runs: *runs, Duration: *duration, BudgetShare: *budget, Min: *minIv, Max: *maxIv, Samples: *samples,
		OutDir:  *out,
		Command: commandLine(append([]string{"crawler", "experiment", "freshness"}, args...)),
		Log:     e.stderr,
	})
	if errors.Is(err, experiments.ErrInvalidOptions) {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return err
}

// parseFreshnessVariants parses "uniform,adaptive,adaptive-known".
func parseFreshnessVariants(s string) ([]experiments.FreshnessVariant, error) {
	var vs []experiments.FreshnessVariant
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		name, known := strings.CutSuffix(f, "-known")
		name, undated := strings.CutSuffix(name, "-undated")
		p, err := revisit.ParsePolicy(name)
		if err != nil {
			return nil, err
		}
		vs = append(vs, experiments.FreshnessVariant{Name: f, Policy: p, Known: known, Undated: undated})
	}
	return vs, nil
}
