package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/internal/hostile"
	"github.com/layercrawl/layercrawl/storage"
)

// Requirements on a crawl of the hostile web with default
// limits. The race detector multiplies both time and memory (its shadow
// memory covers the duplicate filter (tens of MiB) of the default
// --expected-urls several times over): under -race the wall-time bound is
// raised so that only a hang fails, and peak RSS is only reported. Run
// without -race to check the figures themselves:
//
//	go test -run '^TestCrawlHostile$' -v ./cmd/crawler/
const (
	hostileMaxWall     = 2 * time.Minute
	hostileMaxWallRace = 5 * time.Minute
	hostileMaxRSS      = 512 << 20
)

// hostileArgs are the only flags the requirement allows besides the
// defaults: private addresses (the site is on loopback) and no delay. The
// requirement is about one attempt per URL, so retries (which came later) are off: with them every timeout of the drip and
// the silent host would be waited for four times. crawl's
// TestRetryBadInput covers retries of hostile hosts.
func hostileArgs(t *testing.T, site *hostile.Site, dir string) (args []string, out string) {
	out = filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Seeds())
	// For the same reason robots.txt is waited for briefly: the site whose
	// robots.txt never answers would otherwise hold its URLs for the
	// default --robots-wait of 5 minutes before they end robots-unavailable.
	return []string{"--seeds", seeds, "--out", out, "--allow-private", "--delay", "-1", "--progress-interval", "-1", "--max-retries", "-1",
		"--robots-wait", "20s"}, out
}

// TestCrawlHostile crawls the hostile web with default limits in a child
// process, whose wall time and peak RSS are measured and which checks
// itself for leaked goroutines once the crawl has returned. The crawl must
// end by itself and log every URL it attempted with the specific outcome.
func TestCrawlHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("hostile-web crawl (35 s or more: the drip runs into the 30 s fetch timeout) skipped in -short mode")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // the site's handlers
	site := hostile.Start(hostile.Options{})
	defer site.Close()

	args, out := hostileArgs(t, site, t.TempDir())
	if raceEnabled {
		// The default --expected-urls sizes the filter at tens of MiB, whose
		// checkpoints cost the race detector about a minute here; the
		// figures under -race are not the requirement's anyway.
		args = append(args, "--expected-urls", "200000")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHostileChild$")
	cmd.Env = append(os.Environ(), "LAYERCRAWL_HOSTILE_CHILD="+strings.Join(args, "\x1f"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	limit := hostileMaxWall
	if raceEnabled {
		limit = hostileMaxWallRace
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		// SIGQUIT makes the child print every goroutine's stack: where
		// it hangs.
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		log, _ := os.ReadFile(filepath.Join(out, "crawl.log.jsonl"))
		t.Fatalf("crawl still running after %v; crawl log:\n%s\nstderr:\n%s", limit, log, stderr.String())
	}
	took := time.Since(start)
	if err != nil {
		t.Fatalf("crawl: %v\nstderr:\n%s", err, stderr.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage for the child")
	}
	rss := ru.Maxrss << 10 // KiB on Linux
	t.Logf("crawl of the hostile web: %v, peak RSS %.1f MiB (race detector: %v)\n%s",
		took.Round(time.Millisecond), float64(rss)/(1<<20), raceEnabled, stdout.String())
	if !raceEnabled && rss >= hostileMaxRSS {
		t.Errorf("peak RSS %d MiB, want under %d MiB", rss>>20, hostileMaxRSS>>20)
	}
	checkHostileCrawl(t, site, out, stdout.String())
}

// TestHelperHostileChild is the child process of TestCrawlHostile: it runs
// the crawl in-process and exits 3 if goroutines outlive it.
func TestHelperHostileChild(t *testing.T) {
	args := os.Getenv("LAYERCRAWL_HOSTILE_CHILD")
	if args == "" {
		t.Skip("helper process for TestCrawlHostile")
	}
	before := goleak.IgnoreCurrent()
	code := run(context.Background(), env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, append([]string{"crawl"}, strings.Split(args, "\x1f")...))
	if err := goleak.Find(before); err != nil {
		fmt.Fprintf(os.Stderr, "goroutines leaked by the crawl: %v\n", err)
		os.Exit(3)
	}
	os.Exit(code)
}

// checkHostileCrawl checks the crawl log and summary of a crawl of site.
func checkHostileCrawl(t *testing.T, site *hostile.Site, out, summary string) {
	t.Helper()
	entries := readLog(t, filepath.Join(out, "crawl.log.jsonl"))
	byURL := map[string]storage.Entry{}
	for _, e := range entries {
		if _, dup := byURL[e.URL]; dup {
			t.Errorf("%s logged twice", e.URL)
		}
		byURL[e.URL] = e
		// A line either reports an HTTP status or names what went
		// wrong with a specific kind.
		switch {
		case e.Status == 0 && e.Error == "":
			t.Errorf("%s: neither status nor error", e.URL)
		case strings.HasPrefix(e.Error, fetch.KindOther.String()+":"):
			t.Errorf("%s: unspecific error %q", e.URL, e.Error)
		case e.Status == 0 && strings.HasPrefix(e.Error, "robots-unavailable") && !strings.Contains(e.Error, "robots.txt: "):
			t.Errorf("%s: robots.txt failure without its cause: %q", e.URL, e.Error)
		}
		if len(e.URL) > 2083 {
			t.Errorf("%.80s...: %d bytes, above the default --max-url-length", e.URL, len(e.URL))
		}
		if e.Depth > 20 {
			t.Errorf("%s: depth %d beyond the default --max-depth", e.URL, e.Depth)
		}
		if e.Bytes > fetch.DefaultMaxBodySize {
			t.Errorf("%s: %d bytes kept, above the default body cap", e.URL, e.Bytes)
		}
	}

	// Every URL the site was asked for has its line.
	for u, n := range site.Requests() {
		if strings.HasSuffix(u, "/robots.txt") {
			continue
		}
		if _, ok := byURL["http://"+u]; !ok {
			t.Errorf("http://%s requested %d times but not in the log", u, n)
		}
		if n > 1 {
			t.Errorf("http://%s requested %d times", u, n)
		}
	}

	const invalid = "http://" + hostile.UnresolvableHost
	tests := []struct {
		url       string
		status    int
		errPrefix string // "" for none
		truncated string
	}{
		{site.Drip + "/drip", 200, "timeout: ", fetch.TruncatedTime},
		{site.Silent + "/silent", 0, "timeout: ", ""},
		{site.Main + "/endless", 200, "", fetch.TruncatedLength},
		{site.Main + "/big", 200, "", fetch.TruncatedLength},
		{site.Main + "/bomb", 200, "", fetch.TruncatedLength},
		{site.Main + "/reset", 0, "connection-reset: ", ""},
		{site.Main + "/reset-mid-body", 200, "connection-reset: ", fetch.TruncatedDisconnect},
		{site.Main + "/short", 200, "truncated-response: ", fetch.TruncatedDisconnect},
		{site.Main + "/garbage", 0, "protocol: ", ""},
		{site.Main + "/links", 200, "", ""},
		{site.Main + "/links/4999", 200, "", ""},
		{site.Main + "/bad-bytes", 200, "", ""},
		{site.Main + "/loop/a", 302, "", ""},
		{site.Main + "/loop/b", 302, "", ""},
		{site.Main + "/chain/10", 301, "", ""},
		{site.Main + "/deep/a/a/", 200, "", ""},
		{site.Main + "/private/secret", 0, "robots-disallowed", ""},
		{site.HugeRobots + "/private/x", 0, "robots-disallowed", ""},
		{site.HugeRobots + "/after-cut/x", 200, "", ""}, // its rule lies past the 500 KiB cut
		{site.SlowRobots + "/", 0, "robots-unavailable: robots.txt: timeout: ", ""},
		{invalid + "/", 0, "dns-not-found: robots.txt: lookup no-such-host.hostile.invalid", ""},
		{invalid + "/linked", 0, "dns-not-found: robots.txt: lookup no-such-host.hostile.invalid", ""},
	}
	for _, tc := range tests {
		e, ok := byURL[tc.url]
		if !ok {
			t.Errorf("%s: no log line", tc.url)
			continue
		}
		if e.Status != tc.status || !strings.HasPrefix(e.Error, tc.errPrefix) || (tc.errPrefix == "") != (e.Error == "") || e.Truncated != tc.truncated {
			t.Errorf("%s: status %d error %q truncated %q; want %d, %q..., %q", tc.url, e.Status, e.Error, e.Truncated, tc.status, tc.errPrefix, tc.truncated)
		}
	}
	// What the limits must have kept out.
	for _, u := range []string{
		site.Main + "/links/5000",   // past the 5,000-link cap
		site.Main + "/chain/11",     // the 11th redirect hop
		site.Main + "/deep/a/a/a/",  // "a" a third time
		site.Main + "/reset-target", // linked from a body cut by a reset: kept
	} {
		_, got := byURL[u]
		if want := u == site.Main+"/reset-target"; got != want {
			t.Errorf("%s in the log: %v, want %v", u, got, want)
		}
	}
	// Each limit the site runs into is counted in the summary.
	for _, want := range []string{
		"crawl finished: frontier empty",
		"outlinks          1 pages cut at --max-outlinks 5000, 45000 links dropped",
		// endless, big, bomb; drip; reset-mid-body, short
		"truncated         3 bodies cut at --max-body-size 10485760, 1 by --fetch-timeout 30s, 2 by a disconnect",
		"1 given up as their robots.txt did not answer within --robots-wait 20s",                                 // the slow robots.txt
		"failed for good   2 URLs: 0 refused addresses (--allow-private), 0 TLS certificates, 2 names not found", // the .invalid host twice
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	for _, counter := range []string{"beyond --max-depth", "beyond --max-redirects", "longer than --max-url-length", "beyond --max-segment-repeats"} {
		if n := summaryCount(summary, counter); n < 1 {
			t.Errorf("summary counts %d %q, want at least 1:\n%s", n, counter, summary)
		}
	}
}

// summaryCount returns the number printed just before label in the
// summary, -1 if there is none.
func summaryCount(summary, label string) int {
	i := strings.Index(summary, " "+label)
	if i < 0 {
		return -1
	}
	j := strings.LastIndexAny(summary[:i], " ,\n") + 1
	var n int
	if _, err := fmt.Sscan(summary[j:i], &n); err != nil {
		return -1
	}
	return n
}

// TestCrawlLimitFlags checks that the trap-limit flags reach the frontier
// and that what they refuse is counted, in-process, with no goroutine left
// behind. The slow endpoints are denied to keep it short.
func TestCrawlLimitFlags(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	site := hostile.Start(hostile.Options{})
	defer site.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, []string{site.Main + "/"})
	code, stdout, stderr := runCrawler(t, context.Background(), "--seeds", seeds, "--out", out, "--allow-private", "--delay", "-1",
		"--expected-urls", "10000", "--progress-interval", "-1",
		"--deny", `/(drip|silent|endless|big|bomb)$`, "--deny", "^"+regexp.QuoteMeta(site.SlowRobots),
		"--max-host-urls", "40", "--max-url-length", "300", "--max-outlinks", "100", "--retry-backoff", "10ms")
	if code != 0 {
		t.Fatalf("crawl exited %d:\n%s", code, stderr)
	}
	mainURLs := map[string]bool{} // a URL retried has a line per attempt
	for _, e := range readLog(t, filepath.Join(out, "crawl.log.jsonl")) {
		if strings.HasPrefix(e.URL, site.Main+"/") {
			mainURLs[e.URL] = true
		}
		if len(e.URL) > 300 {
			t.Errorf("%.60s...: %d bytes, above --max-url-length 300", e.URL, len(e.URL))
		}
	}
	// Seeds are neither refused nor counted: the seed and a budget of 40.
	if main := len(mainURLs); main != 41 {
		t.Errorf("%d URLs of the main host logged, want 41 (the seed and a budget of 40)", main)
	}
	if n := summaryCount(stdout, "over --max-host-urls"); n < 1 {
		t.Errorf("summary counts %d refusals by the host budget:\n%s", n, stdout)
	}
	if !strings.Contains(stdout, "1 pages cut at --max-outlinks 100, 49900 links dropped") {
		t.Errorf("summary of the outlinks cap:\n%s", stdout)
	}
}

// TestCrawlLimitFlagsOff checks the one convention of limits, in flags as
// in the library: 0 takes the default, a negative value turns a limit
// off; the fetcher's defences (body size, timeouts) cannot be turned off.
func TestCrawlLimitFlagsOff(t *testing.T) {
	for _, tc := range []struct {
		flag  string
		field func(o *crawl.Options) int
	}{
		{"--max-url-length", func(o *crawl.Options) int { return o.Admission.Limits.MaxURLLength }},
		{"--max-path-segments", func(o *crawl.Options) int { return o.Admission.Limits.MaxPathSegments }},
		{"--max-segment-repeats", func(o *crawl.Options) int { return o.Admission.Limits.MaxSegmentRepeats }},
		{"--max-host-urls", func(o *crawl.Options) int { return o.Admission.Limits.MaxHostURLs }},
		{"--max-children", func(o *crawl.Options) int { return o.Admission.Limits.MaxChildren }},
		{"--max-depth", func(o *crawl.Options) int { return o.Admission.MaxDepth }},
		{"--max-redirects", func(o *crawl.Options) int { return o.Admission.MaxRedirects }},
		{"--max-outlinks", func(o *crawl.Options) int { return o.Fetch.MaxOutlinks }},
	} {
		for _, v := range []string{"-1", "0", "7"} {
			var c crawlCommand
			fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
			crawlFlags(fs, &c)
			if _, err := parseCrawlArgs(fs, []string{tc.flag, v}); err != nil {
				t.Fatalf("%s %s: %v", tc.flag, v, err)
			}
			c.opts.Dir = t.TempDir()
			want, _ := strconv.Atoi(v)
			if got := tc.field(&c.opts); got != want {
				t.Errorf("%s %s: option %d, want %d", tc.flag, v, got, want)
			}
			c.opts.EnsureDefaults()
			if err := c.opts.Validate(); err != nil {
				t.Errorf("%s %s: %v", tc.flag, v, err)
			}
			if got := tc.field(&c.opts); v == "0" && got == 0 {
				t.Errorf("%s 0: no default taken", tc.flag)
			}
		}
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"--max-body-size", "-1"}, {"--fetch-timeout", "-1s"}} {
		code, _, stderr := runCrawler(t, context.Background(), append(append([]string{"--out", dir}, args...), "http://127.0.0.1:1/")...)
		if code != 2 || !strings.Contains(stderr, "negative") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a usage error", args, code, stderr)
		}
	}
}
