package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/changeweb"
)

// TestContinuousKill9 kills a continuous crawl with SIGKILL twice, then
// resumes it until --max-time: the resumed crawl keeps the schedule (every
// page is fetched again, none becomes new again but those in flight at a
// kill, whose completion the kill lost), and no URL is fetched twice
// within the minimum interval but across a kill.
func TestContinuousKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 test skipped in -short mode")
	}
	const pages = 30
	w, err := changeweb.Start(changeweb.Options{Seed: 11, Pages: pages, Hosts: 3, Fastest: 200 * time.Millisecond, Slowest: 20 * time.Second}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	const concurrency = 3
	const minInterval = 200 * time.Millisecond
	args := []string{"--seeds", writeSeeds(t, dir, w.Roots()), "--out", out, "--delay", "-1", "--allow-private",
		"--concurrency", "3", "--expected-urls", "10000", "--checkpoint-interval", "100ms",
		"--continuous", "--revisit-min", minInterval.String(), "--revisit-max", "700ms"}
	logPath := filepath.Join(out, "crawl.log.jsonl")
	kills := crawlKilled(t, args, logPath, 45, 110)
	before := len(readLog(t, logPath))
	code, stdout, stderr := runCrawler(t, context.Background(), append(args, "--max-time", "1500ms")...)
	if code != 0 {
		t.Fatalf("resumed crawl exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "resuming") || !strings.Contains(stdout, "interrupted: state saved") {
		t.Errorf("resume or stop at --max-time not reported:\n%s\n%s", stderr, stdout)
	}
	if !strings.Contains(stderr, "index written") {
		t.Errorf("a continuous crawl stopped at --max-time wrote no CDXJ index:\n%s", stderr)
	}
	if idx, err := os.ReadFile(filepath.Join(out, "indexes", "index.cdxj")); err != nil || len(idx) == 0 {
		t.Errorf("index.cdxj after --max-time: %d bytes, %v; want the crawl's index", len(idx), err)
	}
	if !strings.Contains(stdout, fmt.Sprint(pages)+" URLs scheduled") {
		t.Errorf("summary does not report %d URLs scheduled:\n%s", pages, stdout)
	}
	entries := readLog(t, logPath)
	byURL := map[string][]time.Time{}
	news := 0
	resumed := map[string]bool{}
	for i, e := range entries {
		if _, ok := w.PageOf(e.URL); !ok {
			t.Fatalf("logged %s, not a page", e.URL)
		}
		byURL[e.URL] = append(byURL[e.URL], e.FetchedAt)
		if e.Recrawl == "new" {
			news++
		}
		if i >= before {
			resumed[e.URL] = true
		}
	}
	if len(byURL) != pages || len(resumed) != pages {
		t.Errorf("%d pages fetched, %d in the resumed run; want all %d in both", len(byURL), len(resumed), pages)
	}
	if news < pages || news > pages+kills*concurrency {
		t.Errorf("%d fetches logged new, want %d (one per page) plus at most %d in flight at the kills", news, pages, kills*concurrency)
	}
	early := 0
	for _, ts := range byURL {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(ts); i++ {
			if ts[i].Sub(ts[i-1]) < minInterval-20*time.Millisecond {
				early++
			}
		}
	}
	if early > kills*concurrency {
		t.Errorf("%d fetches came before their interval, want at most %d (in flight at %d kills)", early, kills*concurrency, kills)
	}
}

func TestContinuousUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--budget", "5/s", "http://a.test/"}, "--budget only with --continuous"},
		{[]string{"--continuous", "--budget", "5/d", "http://a.test/"}, "want N/s"},
		{[]string{"--continuous", "--revisit-policy", "often", "http://a.test/"}, "revisit-policy"},
		{[]string{"--continuous", "--revisit-min", "-1s", "http://a.test/"}, "not positive"},
		{[]string{"--continuous", "--revisit-min", "2h", "--revisit-max", "1h", "http://a.test/"}, "Max"},
	} {
		code, _, stderr := runCrawler(t, context.Background(), append([]string{"--out", t.TempDir()}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("crawl %q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestContinuousRedisStarts: --continuous with --redis, once refused, runs
// a continuous crawl with its schedule in Redis until --max-time: the
// pages are fetched again (revisits logged changed or unchanged), and
// the summary reports the crawl's schedule and that the seen-set in
// Redis does not age.
func TestContinuousRedisStarts(t *testing.T) {
	_, prefix := statusRedis(t) // skips without Redis unless CI=true; deletes the keys after
	const pages = 9
	w, err := changeweb.Start(changeweb.Options{Seed: 5, Pages: pages, Hosts: 3, Fastest: 200 * time.Millisecond, Slowest: 20 * time.Second}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCrawler(t, context.Background(), "--seeds", writeSeeds(t, dir, w.Roots()), "--out", out, "--delay", "-1", "--allow-private",
		"--concurrency", "3", "--expected-urls", "10000", "--redis", "redis://"+statusTestRedis, "--redis-prefix", prefix,
		"--continuous", "--revisit-min", "200ms", "--revisit-max", "500ms", "--budget", "40/s", "--max-time", "5s")
	if code != 0 {
		t.Fatalf("crawl --continuous --redis exited %d:\n%s\n%s", code, stdout, stderr)
	}
	if want := fmt.Sprint(pages) + " URLs scheduled in the crawl"; !strings.Contains(stdout, want) || !strings.Contains(stdout, "does not age") {
		t.Errorf("summary does not say %q and that the seen-set does not age:\n%s", want, stdout)
	}
	logs, _ := filepath.Glob(filepath.Join(out, "crawl-*.log.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("worker logs %v, want one", logs)
	}
	recrawl := map[string]int{}
	for _, e := range readLog(t, logs[0]) {
		recrawl[e.Recrawl]++
	}
	// 5 s: a worker's start took over a second of a 2 s run under -race
	// in a loaded CI run, which left time for one revisit.
	if recrawl["new"] != pages || recrawl["changed"]+recrawl["unchanged"] < pages {
		t.Errorf("log's recrawl fields %v, want %d new and at least as many revisits", recrawl, pages)
	}
	// crawler status reads the schedule's size from Redis; the crawl is
	// not "finished" while its schedule holds URLs.
	code, stdout, stderr = runStatusCmd(t, "--redis", "redis://"+statusTestRedis, "--redis-prefix", prefix)
	if want := fmt.Sprintf("continuous: %d URLs scheduled", pages); code != 0 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "continuous, waiting for the next URL due\n") && !strings.Contains(stdout, ": running\n") {
		t.Errorf("status: exit %d, stderr %q, stdout:\n%s\nwant %q, running or waiting (not finished)", code, stderr, stdout, want)
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{{"5/s", 5}, {"5", 5}, {"120/m", 2}, {"0.5/s", 0.5}, {"3600/h", 1}} {
		if got, err := parseRate(tc.in); err != nil || got != tc.want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "0/s", "-1/s", "x/s", "5/d", "NaN"} {
		if _, err := parseRate(in); err == nil {
			t.Errorf("parseRate(%q) accepted", in)
		}
	}
}
