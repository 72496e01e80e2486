package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/layercrawl/layercrawl/experiments"
	"github.com/layercrawl/layercrawl/internal/linkweb"
)

// runExperimentOrder runs "crawler experiment order": crawls of a
// synthetic web with a known link graph, each crawl order scored by the
// importance of the pages it fetched within a page budget.
func runExperimentOrder(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "experiment order", "[flags]")
	pages := fs.Int("pages", 20_000, "pages of the synthetic web")
	hosts := fs.Int("hosts", 200, "hosts of the synthetic web")
	exponent := fs.Float64("host-exponent", 1, "Zipf exponent of host sizes (0: equal hosts)")
	seed := fs.Uint64("seed", 1, "seed of the web")
	variants := fs.String("orders", orderVariantsFlag(experiments.DefaultOrderVariants()), "comma-separated crawl orders compared, the first the baseline; ORDER:N crawls with --expected-urls N, which sizes the in-link sketch (4 rows of N/8 counters, at least 1,024)")
	runs := fs.Int("runs", 3, "crawls of each order, interleaved")
	budget := fs.Float64("budget", 0.1, "the crawl's --max-pages as a share of the web's pages")
	concurrency := fs.Int("concurrency", 32, "the crawl's --concurrency")
	points := fs.Int("points", 20, "budget fractions at which the curves are sampled")
	crawler := fs.String("crawler", "", "run each crawl as a child process of this crawler binary (self: this one), so that CPU per page is the crawler's alone; default: in this process, whose CPU includes the web server's")
	out := fs.String("out", "order-out", "output directory for order_runs.csv, order_curves.csv, plots and report.md")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	vs, err := parseOrderVariants(*variants)
	if err != nil {
		return fmt.Errorf("%w: --orders: %v", errUsage, err)
	}
	if *exponent < 0 {
		return fmt.Errorf("%w: --host-exponent %g is negative", errUsage, *exponent)
	}
	if *crawler == "self" {
		if *crawler, err = os.Executable(); err != nil {
			return fmt.Errorf("--crawler self: %w", err)
		}
	}
	_, err = experiments.RunOrder(ctx, experiments.OrderConfig{
		Crawler:  *crawler,
		Web:      linkweb.Options{Seed: *seed, Pages: *pages, Hosts: *hosts, HostExponent: *exponent},
		Variants: vs, Runs: *runs, Budget: *budget, Concurrency: *concurrency, Points: *points,
		OutDir:  *out,
		Command: commandLine(append([]string{"crawler", "experiment", "order"}, args...)),
		Log:     e.stderr,
	})
	if errors.Is(err, experiments.ErrInvalidOptions) || errors.Is(err, linkweb.ErrInvalidOptions) {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return err
}

// parseOrderVariants parses "fifo,inlinks,inlinks:8192".
func parseOrderVariants(s string) ([]experiments.OrderVariant, error) {
	var vs []experiments.OrderVariant
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		order, expected, sized := strings.Cut(f, ":")
		if order == "" {
			return nil, fmt.Errorf("empty order in %q", s)
		}
		v := experiments.OrderVariant{Name: order, Order: order}
		if sized {
			n, err := strconv.ParseUint(strings.ReplaceAll(expected, "_", ""), 10, 64)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("%q: the expected URLs are not a positive integer", f)
			}
			v.Name, v.ExpectedURLs = order+":"+strconv.FormatUint(n, 10), n
		}
		vs = append(vs, v)
	}
	return vs, nil
}

func orderVariantsFlag(vs []experiments.OrderVariant) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.Order
		if v.ExpectedURLs > 0 {
			s[i] += ":" + strconv.FormatUint(v.ExpectedURLs, 10)
		}
	}
	return strings.Join(s, ",")
}
