package crawl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/layercrawl/layercrawl/storage"
)

// runRedisWorkerDirs runs one worker of a Redis-mode crawl under prefix
// per directory of dirs, each writing there, and returns their Stats.
func runRedisWorkerDirs(t *testing.T, o Options, prefix string, dirs ...string) []Stats {
	t.Helper()
	stats, errs := runRedisWorkersEach(len(dirs), prefix, func(i int) Options {
		o := o
		o.Dir = dirs[i]
		return o
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	return stats
}

// redisLogs reads the Redis workers' crawl logs of dirs.
func redisLogs(t *testing.T, dirs ...string) []storage.Entry {
	t.Helper()
	var entries []storage.Entry
	for _, d := range dirs {
		logs, _ := filepath.Glob(filepath.Join(d, "crawl-*.log.jsonl"))
		for _, l := range logs {
			entries = append(entries, readLog(t, l)...)
		}
	}
	return entries
}

// TestRecrawlRedis runs TestRecrawlConditional's second crawl with two
// Redis workers, given a local crawl, or a Redis crawl's two worker
// directories (their states, or their WARC files and logs when the
// states are gone); and a local crawl given a Redis crawl's directories.
// Each URL is fetched once across the workers; unchanged pages are
// revisits of the first crawl's responses, changed ones archived in full,
// gone ones logged, new ones fetched.
func TestRecrawlRedis(t *testing.T) {
	for _, tc := range []struct {
		name                string
		firstRedis, rebuild bool
		secondRedis         bool
	}{
		{name: "local then redis", secondRedis: true},
		{name: "redis then redis", firstRedis: true, secondRedis: true},
		{name: "redis rebuilt then redis", firstRedis: true, rebuild: true, secondRedis: true},
		{name: "redis then local", firstRedis: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRecrawlSite(t, recrawlPages())
			base := t.TempDir()
			firsts := []string{filepath.Join(base, "first")}
			if tc.firstRedis {
				firsts = []string{filepath.Join(base, "first-a"), filepath.Join(base, "first-b")}
				stats := runRedisWorkerDirs(t, recrawlOptions(s, ""), testRedisPrefix(t, "recrawl1"), firsts...)
				if stats[0].Fetch.Fetched+stats[1].Fetch.Fetched == 0 {
					t.Fatal("the first crawl fetched nothing")
				}
				for _, d := range firsts {
					states, _ := filepath.Glob(filepath.Join(d, workerStatePrefix+"*"))
					if len(states) != 1 {
						t.Fatalf("%s: worker states %v, want one", d, states)
					}
					if tc.rebuild {
						os.RemoveAll(states[0])
					}
				}
			} else if _, err := run(t, context.Background(), recrawlOptions(s, firsts[0])); err != nil {
				t.Fatal(err)
			}
			changeRecrawlSite(s)
			if !tc.secondRedis {
				second := filepath.Join(base, "second")
				c, err := run(t, context.Background(), recrawlOptions(s, second, firsts...))
				if err != nil {
					t.Fatal(err)
				}
				st := c.Stats().Fetch.Recrawl
				if st.Previous != 9 {
					t.Errorf("%d previous captures imported, want 9", st.Previous)
				}
				checkRecrawlDirs(t, s, firsts, []string{second}, readLog(t, filepath.Join(second, "crawl.log.jsonl")), st)
				checkRevisitsResolve(t, append(firsts, second)...)
				return
			}
			seconds := []string{filepath.Join(base, "second-a"), filepath.Join(base, "second-b")}
			stats := runRedisWorkerDirs(t, recrawlOptions(s, "", firsts...), testRedisPrefix(t, "recrawl2"), seconds...)
			var sum RecrawlStats
			for i, st := range stats {
				r := st.Fetch.Recrawl
				if r.Previous != 9 {
					t.Errorf("worker %d imported %d previous captures, want 9", i, r.Previous)
				}
				sum.Unchanged += r.Unchanged
				sum.Changed += r.Changed
				sum.New += r.New
				sum.Gone += r.Gone
				sum.BytesSaved += r.BytesSaved
			}
			checkRecrawlDirs(t, s, firsts, seconds, redisLogs(t, seconds...), sum)
			checkRevisitsResolve(t, append(firsts, seconds...)...)
		})
	}
}
