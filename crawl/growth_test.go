package crawl

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/internal/testweb"
	"github.com/layercrawl/layercrawl/storage"
)

// growthOptions sizes the default filter for 200 URLs of a web of some
// thousands, at a rate low enough (1e-6) that a crawl whose filter keeps
// its rate loses no URL: the expected loss is below 0.01 URLs. The filter
// decides alone (FilterOnly): these tests measure it, not the exact check.
func growthOptions(fixed bool) func(*Options) {
	return func(o *Options) {
		o.ExpectedURLs, o.FalsePositiveRate, o.FixedFilter, o.FilterOnly = 200, 1e-6, fixed, true
		o.CheckpointInterval = 20 * time.Millisecond // snapshots while it grows
		o.Admission.MaxDepth = 0
	}
}

// A crawl that discovers 25x the URLs its filter was sized for loses URLs
// with a fixed filter and none with the default one, which adds
// generations; its snapshots, taken while it grows, resume
// as a growing filter whatever the resumed crawl's options say.
func TestFilterGrowth(t *testing.T) {
	if raceEnabled {
		t.Skip("a statistical crawl of thousands of pages, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the same code paths are race-tested on smaller crawls")
	}
	web := testweb.Options{Seed: 15, Hosts: 6, Pages: 1500}
	w, want := startWeb(t, web, testweb.ExpectOptions{})
	entries, c, _ := crawlWeb(t, w, growthOptions(true))
	if got, n := len(fetchedURLs(entries)), len(want.Fetched()); got >= n {
		t.Fatalf("a fixed filter at %dx its size fetched all %d URLs: the test does not show growth matters", n/200, n)
	} else {
		t.Logf("fixed filter: %d of %d URLs, estimated rate %.3g", got, n, c.Stats().Filter.FalsePositiveRate)
	}
	if g := c.Stats().Filter.Generations; g != 0 {
		t.Errorf("a fixed filter reports %d generations", g)
	}

	w, want = startWeb(t, web, testweb.ExpectOptions{})
	entries, c, dir := crawlWeb(t, w, growthOptions(false))
	checkCoverage(t, w, want, entries)
	s := c.Stats()
	f := s.Filter
	t.Logf("growing filter: %d URLs, %d generations, capacity %d, %d bytes, estimated rate %.3g, %d checkpoints",
		len(entries), f.Generations, f.Capacity, f.Bytes, f.FalsePositiveRate, s.Checkpoint)
	if f.Generations < 4 || f.Capacity < uint64(len(entries)) {
		t.Errorf("%d generations of capacity %d for %d URLs", f.Generations, f.Capacity, len(entries))
	}
	// (The rate estimated from the fill of generations this small is
	// noisy, 2e-7 to 4e-6 over runs; exact coverage is the measurement.)
	if s.Checkpoint < 2 {
		t.Errorf("%d checkpoints: the test wants snapshots of a growing filter", s.Checkpoint)
	}

	// Resumed with FixedFilter, the crawl keeps the growing filter it
	// saved, and says so.
	var logs bytes.Buffer
	o := Options{Seeds: w.Seeds(), Dir: dir, Concurrency: 2, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	o.Fetch.AllowPrivate, o.Fetch.Resolver = true, w.Resolver()
	growthOptions(true)(&o)
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Stats().Filter; r.Generations < f.Generations || r.EstimatedURLs < f.EstimatedURLs*0.9 {
		t.Errorf("resumed: %d generations holding %.0f URLs; the crawl saved %d holding %.0f", r.Generations, r.EstimatedURLs, f.Generations, f.EstimatedURLs)
	}
	if !strings.Contains(logs.String(), "keeps its duplicate filter") {
		t.Errorf("the resumed crawl did not say it kept its growing filter; log:\n%s", logs.String())
	}
	if again := readLog(t, filepath.Join(dir, "crawl.log.jsonl")); len(again) != len(entries) {
		t.Errorf("the resumed crawl logged %d entries, want the %d of the finished crawl", len(again), len(entries))
	}
}

// In Redis mode the shared filter grows too, its generations keys in
// Redis (redisfrontier.SeenOptions.Growth): two workers crawl a web of
// 25x the URLs it was sized for, and fetch exactly what Expected says,
// nothing twice; a worker started with a fixed filter against it is
// refused, with the flags to check.
func TestFilterGrowthRedis(t *testing.T) {
	if raceEnabled {
		t.Skip("a statistical crawl of thousands of pages, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the same code paths are race-tested on smaller crawls")
	}
	prefix := testRedisPrefix(t, "growth")
	w, want := startWeb(t, testweb.Options{Seed: 15, Hosts: 6, Pages: 1500}, testweb.ExpectOptions{})
	dir := t.TempDir()
	o := Options{Seeds: w.Seeds(), Dir: dir, Concurrency: 4}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	o.Fetch.Resolver = w.Resolver()
	growthOptions(false)(&o)
	stats := runRedisWorkers(t, 2, o, prefix)
	logs, _ := filepath.Glob(filepath.Join(dir, "crawl-*.log.jsonl"))
	var entries []storage.Entry
	for _, l := range logs {
		entries = append(entries, readLog(t, l)...)
	}
	checkCoverage(t, w, want, entries)
	f := stats[0].Filter
	t.Logf("shared growing filter: %d URLs, %d generations, capacity %d, %d bytes, estimated rate %.3g",
		len(entries), f.Generations, f.Capacity, f.Bytes, f.FalsePositiveRate)
	if f.Generations < 4 || f.Capacity < uint64(len(entries)) {
		t.Errorf("%d generations of capacity %d for %d URLs", f.Generations, f.Capacity, len(entries))
	}

	fixed := o
	fixed.FixedFilter = true
	fixed.Redis = &RedisOptions{URL: "redis://" + capturesTestRedis, Prefix: prefix, Worker: "w9"}
	c, err := New(fixed)
	if err == nil {
		err = c.Run(context.Background())
		c.Close()
	}
	if !errors.Is(err, redisfrontier.ErrIncompatible) || !strings.Contains(err.Error(), "--filter-growth") {
		t.Errorf("a fixed-filter worker on a growing crawl: %v, want ErrIncompatible naming --filter-growth", err)
	}
}
