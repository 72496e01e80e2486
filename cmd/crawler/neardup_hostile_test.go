package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/internal/hostile"
)

// What --skip-near-duplicate-links saves on the hostile web: its calendar
// and session-id traps repeat their pages, so the crawl stops following
// them at their first repeat instead of at the trap limits.
func TestSkipNearDuplicateLinksHostile(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages in child processes, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the engine's concurrency is race-tested in package crawl")
	}
	site := hostile.Start(hostile.Options{})
	defer site.Close()
	crawl := func(extra ...string) (fetched, near int, stdout string) {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		seeds := writeSeeds(t, dir, []string{site.Main + "/"})
		args := append([]string{"--seeds", seeds, "--out", out, "--allow-private", "--delay", "-1",
			"--expected-urls", "10000", "--progress-interval", "-1",
			"--deny", `/(drip|silent|endless|big|bomb)$`, "--deny", "^" + regexp.QuoteMeta(site.SlowRobots)}, extra...)
		code, stdout, stderr := runCrawler(t, context.Background(), args...)
		if code != 0 {
			t.Fatalf("crawl exited %d:\n%s", code, stderr)
		}
		for _, e := range readLog(t, filepath.Join(out, "crawl.log.jsonl")) {
			if strings.HasPrefix(e.URL, site.Main+"/") {
				fetched++
				if e.NearDuplicateOf != "" {
					near++
				}
			}
		}
		return fetched, near, stdout
	}
	all, nearAll, _ := crawl()
	cut, nearCut, stdout := crawl("--skip-near-duplicate-links")
	t.Logf("main host: %d pages fetched (%d near-duplicates) without the cut, %d (%d) with --skip-near-duplicate-links", all, nearAll, cut, nearCut)
	if nearAll == 0 || cut >= all {
		t.Errorf("the cut saved nothing: %d pages without, %d with", all, cut)
	}
	if summaryCount(stdout, "links not followed") < 1 {
		t.Errorf("summary counts no links not followed:\n%s", stdout)
	}
}
