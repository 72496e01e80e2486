package experiments

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/changeweb"
)

// TestRunFreshness simulates a small web and checks the simulation
// against what must hold: the budget kept, uniform's measured freshness
// near the formula's, the known-rate optimum at least uniform's on every
// web, never-changing pages at Max under it, the scheduler's state of
// constant size, the files written.
func TestRunFreshness(t *testing.T) {
	out := t.TempDir()
	cfg := FreshnessConfig{
		Web:      changeweb.Options{Seed: 3, Pages: 200, Hosts: 2, Fastest: 10 * time.Second, Slowest: 3 * time.Hour},
		Runs:     2,
		Duration: 6 * time.Hour, BudgetShare: 0.05, Max: 3 * time.Hour, Samples: 24,
		OutDir: out, Command: "crawler experiment freshness (test)",
	}
	if raceEnabled {
		// 10 times slower: a shorter run (CI runs it once more without -race).
		cfg.Duration = 3 * time.Hour
	}
	res, err := RunFreshness(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	vs := DefaultFreshnessVariants()
	if len(res.Runs) != 2*len(vs) || len(res.Points) != 2*len(vs)*cfg.Samples {
		t.Fatalf("%d runs and %d points, want %d and %d", len(res.Runs), len(res.Points), 2*len(vs), 2*len(vs)*cfg.Samples)
	}
	slots := int(res.Budget*cfg.Duration.Seconds()) + 1
	byName := map[string][]FreshnessRun{}
	for _, r := range res.Runs {
		byName[r.Variant] = append(byName[r.Variant], r)
		if r.Fetches > slots || r.Fetches+r.IdleSlots > slots+1 {
			t.Errorf("%s run %d: %d fetches and %d idle slots, the budget has %d slots", r.Variant, r.Run, r.Fetches, r.IdleSlots, slots)
		}
		if r.Fetches != r.Changed+r.Unchanged+200 {
			t.Errorf("%s run %d: %d fetches, %d changed + %d unchanged + 200 first captures", r.Variant, r.Run, r.Fetches, r.Changed, r.Unchanged)
		}
		if r.MinStateBytes != r.MaxStateBytes {
			t.Errorf("%s run %d: the scheduler's state went from %d to %d bytes", r.Variant, r.Run, r.MinStateBytes, r.MaxStateBytes)
		}
		if math.Abs(r.PlannedRate/res.Budget-1) > 0.01 {
			t.Errorf("%s run %d: planned rate %g, budget %g", r.Variant, r.Run, r.PlannedRate, res.Budget)
		}
	}
	for i := range 2 {
		uni, known := byName["uniform"][i], byName["adaptive-known"][i]
		// Uniform visits every page at N/B: the formula holds in
		// expectation; 200 pages leave a few percent of noise.
		t.Logf("run %d: uniform %.4f (formula %.4f), adaptive-known %.4f (formula %.4f)", i+1, uni.Freshness, res.Expected["uniform"][i], known.Freshness, res.Expected["adaptive-known"][i])
		if exp := res.Expected["uniform"][i]; math.Abs(uni.Freshness-exp) > 0.04 {
			t.Errorf("run %d: uniform's freshness %.4f, the formula gives %.4f", i+1, uni.Freshness, exp)
		}
		if known.Freshness < uni.Freshness {
			t.Errorf("run %d: adaptive-known's freshness %.4f below uniform's %.4f", i+1, known.Freshness, uni.Freshness)
		}
		if known.NeverAtMax != known.NeverPages || known.NeverFetches > known.NeverAllowed {
			t.Errorf("run %d: adaptive-known fetched its %d never-changing pages %d times (allowed %d), %d at Max", i+1, known.NeverPages, known.NeverFetches, known.NeverAllowed, known.NeverAtMax)
		}
	}
	for _, f := range []string{"freshness_runs.csv", "freshness_curves.csv", "freshness_over_time.png", "age_over_time.svg", "freshness_intervals.png", "report.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(out, "freshness_runs.csv"))
	if n := strings.Count(string(csv), "\n"); n != 1+len(res.Runs) {
		t.Errorf("freshness_runs.csv has %d lines, want %d", n, 1+len(res.Runs))
	}
}

func TestRunFreshnessInvalid(t *testing.T) {
	for _, cfg := range []FreshnessConfig{
		{Runs: -1},
		{Duration: time.Second},
		{BudgetShare: -1},
		{Min: time.Hour, Max: time.Minute},
		{Variants: []FreshnessVariant{{Name: "a"}, {Name: "a"}}},
		{BudgetShare: 0.0001}, // the first pass would take longer than the run
		{Web: changeweb.Options{Pages: -5}},
	} {
		cfg.OutDir = t.TempDir()
		if _, err := RunFreshness(context.Background(), cfg); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", cfg, err)
		}
	}
}
