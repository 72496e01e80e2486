package crawl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/internal/testweb"
	"github.com/layercrawl/layercrawl/storage"
)

const capturesTestRedis = "127.0.0.1:6379"

// TestCrawlCapturesRedis runs TestCrawlCaptures's crawl with two workers
// sharing a Redis frontier: the hop paths, sitemap flags and lastmods go
// through the Redis entry records, and the workers together fetch exactly
// what Expected says, nothing twice.
func TestCrawlCapturesRedis(t *testing.T) {
	prefix := testRedisPrefix(t, "captures")
	w, want := startWeb(t, testweb.Options{Seed: 7, Hosts: 3, Pages: 120, Embeds: true, Sitemaps: true}, testweb.ExpectOptions{Embeds: true, Sitemaps: true})
	dir := t.TempDir()
	o := Options{Seeds: w.Seeds(), Dir: dir, Concurrency: 4, ExpectedURLs: 100_000}
	o.Politeness.Delay = -1
	o.Admission.MaxDepth = -1
	o.Fetch.AllowPrivate = true
	o.Fetch.Resolver = w.Resolver()
	runRedisWorkers(t, 2, o, prefix)
	logs, _ := filepath.Glob(filepath.Join(dir, "crawl-*.log.jsonl"))
	var entries []storage.Entry
	for _, l := range logs {
		entries = append(entries, readLog(t, l)...)
	}
	checkCoverage(t, w, want, entries)
	listed := 0
	for _, e := range entries {
		if len(e.HopPath) != e.Depth {
			t.Errorf("%s: hop path %q at depth %d", e.URL, e.HopPath, e.Depth)
		}
		if !e.LastMod.IsZero() {
			listed++
		}
	}
	if listed == 0 {
		t.Error("no sitemap-listed page logged with its lastmod")
	}
}

// testRedisPrefix returns a fresh key prefix on the test Redis, whose keys
// are deleted when the test ends; it skips the test without Redis, or
// fails it under CI=true.
func testRedisPrefix(t testing.TB, name string) string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: capturesTestRedis})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := rdb.Ping(ctx).Err()
	cancel()
	if err != nil {
		rdb.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis at %s: %v (CI=true: Redis is required)", capturesTestRedis, err)
		}
		t.Skipf("no redis at %s: %v", capturesTestRedis, err)
	}
	var b [6]byte
	rand.Read(b[:])
	prefix := "lctest:" + name + ":" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
		rdb.Close()
	})
	return prefix
}

// runRedisWorkers runs n crawls of o side by side as the workers of one
// Redis-mode crawl under prefix, and returns their Stats.
func runRedisWorkers(t *testing.T, n int, o Options, prefix string) []Stats {
	t.Helper()
	stats, errs := runRedisWorkersErrs(t, n, o, prefix)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	return stats
}

// runRedisWorkersErrs is runRedisWorkers returning each worker's error
// from New, Run or Close.
func runRedisWorkersErrs(t *testing.T, n int, o Options, prefix string) ([]Stats, []error) {
	t.Helper()
	return runRedisWorkersEach(n, prefix, func(int) Options { return o })
}

// runRedisWorkersEach runs n workers at once, worker i with opts(i) in
// the Redis-mode crawl under prefix, and returns each one's Stats and its
// error from New, Run or Close.
func runRedisWorkersEach(n int, prefix string, opts func(i int) Options) ([]Stats, []error) {
	var wg sync.WaitGroup
	errs := make([]error, n)
	stats := make([]Stats, n)
	for i := range errs {
		o := opts(i)
		o.Redis = &RedisOptions{URL: "redis://" + capturesTestRedis, Prefix: prefix, Worker: "w" + string(rune('0'+i))}
		wg.Go(func() {
			c, err := New(o)
			if err != nil {
				errs[i] = err
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			errs[i] = c.Run(ctx)
			stats[i] = c.Stats()
			if cerr := c.Close(); errs[i] == nil {
				errs[i] = cerr
			}
		})
	}
	wg.Wait()
	return stats, errs
}

// TestStatsWhileRedisRunStarts reads a Redis-mode worker's Stats without
// pause while Run connects and opens the shared parts, as a status server
// or progress line does: Run sets the near-duplicate index then, so Stats
// must read it under the lock Run sets it under (-race reported the race
// in CI, and reports it here without the lock).
func TestStatsWhileRedisRunStarts(t *testing.T) {
	prefix := testRedisPrefix(t, "statsstart")
	w, _ := startWeb(t, testweb.Options{Seed: 3, Hosts: 1, Pages: 20}, testweb.ExpectOptions{})
	o := Options{Seeds: w.Seeds(), Dir: t.TempDir(), Concurrency: 2, ExpectedURLs: 10_000}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	o.Fetch.Resolver = w.Resolver()
	o.Redis = &RedisOptions{URL: "redis://" + capturesTestRedis, Prefix: prefix, Worker: "w0"}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop, done := make(chan struct{}), make(chan struct{})
	var reads, fetched int
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s := c.Stats(); s.Redis != nil && s.Fetch.Fetched > 0 {
				fetched++
			}
			reads++
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = c.Run(ctx)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if fetched == 0 {
		t.Errorf("none of %d reads of Stats during the crawl had fetches and Redis counters", reads)
	}
}
