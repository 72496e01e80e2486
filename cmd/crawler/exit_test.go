package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/storage"
)

// TestCrawlNoSeedFetched runs the command on a loopback seed without
// --allow-private: it ends at once with the exit status of a crawl that
// fetched no seed, one line on stderr naming the cause and the fix, and
// the summary; run again with --allow-private, the failed seed is queued
// again and fetched.
func TestCrawlNoSeedFetched(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	start := time.Now()
	code, stdout, stderr := runCrawler(t, context.Background(), "--out", out, "--progress-interval", "-1", srv.URL+"/")
	if code != exitNoSeed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitNoSeed, stderr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v: a refused address is not retried", took)
	}
	var last string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.HasPrefix(l, "crawler crawl: ") {
			if last != "" {
				t.Errorf("more than one error line:\n%s", stderr)
			}
			last = l
		}
	}
	want := "crawler crawl: no seed could be fetched: " + srv.URL + "/: blocked-address: robots.txt: refused loopback address " + u.Host +
		": pass --allow-private to crawl local sites"
	if last != want {
		t.Errorf("error line\n%q, want\n%q", last, want)
	}
	if !strings.HasPrefix(stdout, "crawl finished: no seed could be fetched") {
		t.Errorf("summary does not say that no seed could be fetched:\n%s", stdout)
	}
	if !strings.Contains(stdout, "failed for good   1 URLs: 1 refused addresses") {
		t.Errorf("summary does not count the refused seed:\n%s", stdout)
	}

	// The user's natural next step.
	code, stdout, stderr = runCrawler(t, context.Background(), "--out", out, "--progress-interval", "-1", "--allow-private", srv.URL+"/")
	if code != 0 {
		t.Fatalf("rerun with --allow-private: exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "pages fetched     1 this run") {
		t.Errorf("rerun did not fetch the seed:\n%s", stdout)
	}
	entries := readLog(t, filepath.Join(out, "crawl.log.jsonl"))
	if len(entries) != 2 || entries[1].Status != 200 {
		t.Errorf("log %+v, want the refusal then a 200", entries)
	}
}

// TestCrawlRetryFailedFlag checks --retry-failed through the command: a
// page that failed (404) in a finished crawl is fetched again by a run
// with the flag and no seeds, not by one without it.
func TestCrawlRetryFailedFlag(t *testing.T) {
	var fixed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a" && !fixed.Load() {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<a href="/a">a</a>`)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"--out", out, "--progress-interval", "-1", "--allow-private", "--delay", "-1"}
	if code, _, stderr := runCrawler(t, context.Background(), append(args, srv.URL+"/")...); code != 0 {
		t.Fatalf("first crawl exit %d:\n%s", code, stderr)
	}
	fixed.Store(true)
	if code, stdout, stderr := runCrawler(t, context.Background(), args...); code != 0 || !strings.Contains(stdout, "pages fetched     0 this run") {
		t.Fatalf("resume without --retry-failed: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCrawler(t, context.Background(), append(args, "--retry-failed")...)
	if code != 0 || !strings.Contains(stdout, "pages fetched     1 this run") {
		t.Fatalf("resume with --retry-failed: exit %d\n%s%s", code, stdout, stderr)
	}
	entries := readLog(t, filepath.Join(out, "crawl.log.jsonl"))
	if e := entries[len(entries)-1]; e.URL != srv.URL+"/a" || e.Status != 200 {
		t.Errorf("last log line %+v, want /a fetched", e)
	}
}

// TestCrawlHelpExitStatus checks that crawl -h documents the exit status
// and the failure flags.
func TestCrawlHelpExitStatus(t *testing.T) {
	code, _, stderr := runCrawler(t, context.Background(), "-h")
	if code != 0 {
		t.Fatalf("-h exit %d", code)
	}
	for _, want := range []string{"Exit status:", fmt.Sprintf("  %d  no seed could be fetched", exitNoSeed), fmt.Sprintf("  %d  usage or state error", exitUsage), "-robots-wait", "-retry-failed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("crawl -h does not say %q", want)
		}
	}
}

// TestFailureFlags checks that --robots-wait and --retry-failed reach
// crawl.Options.
func TestFailureFlags(t *testing.T) {
	c, _, err := parseTestArgs(t, "--robots-wait", "30s", "--retry-failed", "https://a.example/")
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.RobotsWait != 30*time.Second || !c.opts.RetryFailed {
		t.Errorf("RobotsWait %v, RetryFailed %v", c.opts.RobotsWait, c.opts.RetryFailed)
	}
}

// redisLogs reads the crawl logs of every Redis worker in out, in file
// order then line order.
func redisLogs(t *testing.T, out string) []storage.Entry {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(out, "crawl-*.log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []storage.Entry
	for _, p := range logs {
		entries = append(entries, readLog(t, p)...)
	}
	return entries
}

// TestCrawlNoSeedFetchedRedis is TestCrawlNoSeedFetched in Redis mode: a
// worker whose only seed is refused exits with the status of a crawl
// that fetched no seed, naming the cause and the fix; run again with
// --allow-private on the same crawl, the failed seed is queued again
// (its failure record is in Redis) and fetched.
func TestCrawlNoSeedFetchedRedis(t *testing.T) {
	_, prefix := statusRedis(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"--out", out, "--progress-interval", "-1", "--redis", "redis://" + statusTestRedis, "--redis-prefix", prefix}
	code, stdout, stderr := runCrawler(t, context.Background(), append(args, srv.URL+"/")...)
	if code != exitNoSeed {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitNoSeed, stdout, stderr)
	}
	want := "crawler crawl: no seed could be fetched: " + srv.URL + "/: blocked-address: robots.txt: refused loopback address " + u.Host +
		": pass --allow-private to crawl local sites"
	if !strings.Contains(stderr, want+"\n") {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
	code, stdout, stderr = runCrawler(t, context.Background(), append(args, "--allow-private", srv.URL+"/")...)
	if code != 0 {
		t.Fatalf("rerun with --allow-private: exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	entries := redisLogs(t, out)
	if len(entries) != 2 || entries[0].Status != 0 || entries[1].Status != 200 {
		t.Errorf("log %+v, want the refusal then a 200", entries)
	}
}

// TestCrawlRetryFailedFlagRedis is TestCrawlRetryFailedFlag in Redis
// mode: a page that failed (404) in a finished crawl is fetched again by
// a worker started with --retry-failed and no seeds, not by one without
// it.
func TestCrawlRetryFailedFlagRedis(t *testing.T) {
	_, prefix := statusRedis(t)
	var fixed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a" && !fixed.Load() {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<a href="/a">a</a>`)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"--out", out, "--progress-interval", "-1", "--allow-private", "--delay", "-1",
		"--redis", "redis://" + statusTestRedis, "--redis-prefix", prefix}
	if code, _, stderr := runCrawler(t, context.Background(), append(args, srv.URL+"/")...); code != 0 {
		t.Fatalf("first crawl exit %d:\n%s", code, stderr)
	}
	fixed.Store(true)
	if code, stdout, stderr := runCrawler(t, context.Background(), args...); code != 0 || len(redisLogs(t, out)) != 2 {
		t.Fatalf("again without --retry-failed: exit %d, %d log lines, want 2\n%s%s", code, len(redisLogs(t, out)), stdout, stderr)
	}
	code, stdout, stderr := runCrawler(t, context.Background(), append(args, "--retry-failed")...)
	entries := redisLogs(t, out)
	if code != 0 || len(entries) != 3 {
		t.Fatalf("again with --retry-failed: exit %d, %d log lines, want 3\n%s%s", code, len(entries), stdout, stderr)
	}
	if e := entries[len(entries)-1]; e.URL != srv.URL+"/a" || e.Status != 200 {
		t.Errorf("last log line %+v, want /a fetched", e)
	}
	// The record is gone: a further run has nothing to retry.
	if code, _, stderr := runCrawler(t, context.Background(), append(args, "--retry-failed")...); code != 0 || len(redisLogs(t, out)) != 3 {
		t.Fatalf("--retry-failed again: exit %d, %d log lines, want 3\n%s", code, len(redisLogs(t, out)), stderr)
	}
}
