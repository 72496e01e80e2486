package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/syncbuf"

	"github.com/layercrawl/layercrawl/internal/testsite"
	"github.com/layercrawl/layercrawl/storage"
)

// TestCrawlRedisWorkers runs three "crawler crawl --redis" worker
// processes on one --out directory against the generated site: together
// they must fetch exactly the expected pages, none twice, each worker in
// its own crawl log and WARC files.
func TestCrawlRedisWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("three-worker distributed crawl skipped in -short mode")
	}
	_, prefix := statusRedis(t) // skips without Redis unless CI=true; deletes the keys after
	site, hosts := testsite.Start(t, 1500)
	wantFetched, wantDenied := site.Expected()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Roots())
	args := []string{"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private",
		"--concurrency", "4", "--expected-urls", "100000", "--progress-interval", "500ms",
		"--redis", "redis://" + statusTestRedis, "--redis-prefix", prefix}

	const workers = 3
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmds, outs, errs := startCrawlChildren(t, ctx, workers, args)
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\nstdout:\n%s\nstderr:\n%s", i, err, outs[i], errs[i])
		}
	}
	for i := range cmds {
		t.Logf("worker %d summary:\n%s", i, outs[i])
		if !strings.Contains(outs[i].String(), "crawl worker finished: shared frontier empty") {
			t.Errorf("worker %d: no finished summary:\n%s", i, outs[i])
		}
		if !strings.Contains(errs[i].String(), "shared: pages") {
			t.Errorf("worker %d: no progress line on stderr:\n%s", i, errs[i])
		}
		// The trap limits apply in Redis mode: no note saying
		// otherwise, and the summary counts this worker's refusals.
		if strings.Contains(errs[i].String(), "not applied") {
			t.Errorf("worker %d: stale note that the trap limits are not applied:\n%s", i, errs[i])
		}
		if !strings.Contains(outs[i].String(), "trap limits ") {
			t.Errorf("worker %d: no trap limits line in the summary:\n%s", i, outs[i])
		}
		// The exact check is the default in Redis mode too.
		if !strings.Contains(outs[i].String(), "pages lost        0 to the duplicate filter") {
			t.Errorf("worker %d: the summary does not say no page was lost to the filter:\n%s", i, outs[i])
		}
		// The shared filter grows by default: the summary says how.
		if !strings.Contains(outs[i].String(), "generations sized for") {
			t.Errorf("worker %d: no growing filter line in the summary:\n%s", i, outs[i])
		}
	}

	logs, err := filepath.Glob(filepath.Join(out, "crawl-*.log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != workers {
		t.Fatalf("crawl logs %v, want one per worker (%d)", logs, workers)
	}
	var entries []storage.Entry
	busy := 0
	for _, p := range logs {
		e := readLog(t, p)
		if len(e) > 0 {
			busy++
		}
		entries = append(entries, e...)
	}
	if busy < 2 {
		t.Errorf("only %d of %d workers fetched anything: the crawl was not shared", busy, workers)
	}
	fetched, denied := splitLog(entries)
	if d := dupes(fetched); len(d) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %v", len(d), sample(d))
	}
	checkCoverage(t, slices.Compact(slices.Clone(fetched)), denied, wantFetched, wantDenied)
	// robots.txt is shared through Redis, but workers asking for a site
	// at the same moment may each fetch it once.
	checkServed(t, hosts, wantFetched, 0, workers)
	checkLogFields(t, entries)
	checkWARC(t, out, entries, 0, false)
}

func TestCrawlRedisFlags(t *testing.T) {
	dir := t.TempDir()
	seeds := writeSeeds(t, dir, []string{"http://127.0.0.1:1/"})
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--seeds", seeds, "--out", out, "--redis", "redis://127.0.0.1:1", "--state", dir}, 2},
		{[]string{"--seeds", seeds, "--out", out, "--redis", "nonsense://x"}, 1},
		{[]string{"--seeds", seeds, "--out", out, "--redis", "redis://127.0.0.1:6379", "--redis-prefix", "a{b}"}, 1},
		// A lease no longer than a fetch would hand live workers' entries out twice.
		{[]string{"--seeds", seeds, "--out", out, "--redis", "redis://127.0.0.1:1", "--fetch-timeout", "10s", "--redis-lease", "10s"}, 2},
	} {
		code, _, stderr := runCrawler(t, context.Background(), tc.args...)
		if code != tc.code {
			t.Errorf("crawl %v: exit %d, want %d; stderr:\n%s", tc.args, code, tc.code, stderr)
		}
	}
}

// startCrawlChildren starts n "crawler crawl" processes (this test binary
// re-executed) with args, their output captured.
func startCrawlChildren(t *testing.T, ctx context.Context, n int, args []string) (cmds []*exec.Cmd, outs, errs []*syncbuf.Buffer) {
	t.Helper()
	cmds = make([]*exec.Cmd, n)
	outs = make([]*syncbuf.Buffer, n)
	errs = make([]*syncbuf.Buffer, n)
	for i := range cmds {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperCrawlChild$")
		cmd.Env = append(os.Environ(), "LAYERCRAWL_CRAWL_CHILD="+strings.Join(args, "\x1f"))
		outs[i], errs[i] = &syncbuf.Buffer{}, &syncbuf.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], errs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	return cmds, outs, errs
}

// checkCoverage compares the distinct URLs fetched and refused by
// robots.txt, over all workers' logs, with the site's.
func checkCoverage(t *testing.T, fetched, denied, wantFetched, wantDenied []string) {
	t.Helper()
	if !slices.Equal(fetched, wantFetched) {
		t.Errorf("union of the logs: %d URLs, want %d; missing %v; unexpected %v",
			len(fetched), len(wantFetched), sample(missing(wantFetched, fetched)), sample(missing(fetched, wantFetched)))
	}
	if !slices.Equal(denied, wantDenied) {
		t.Errorf("robots.txt refused %d URLs, want %d; missing %v; unexpected %v",
			len(denied), len(wantDenied), sample(missing(wantDenied, denied)), sample(missing(denied, wantDenied)))
	}
}
