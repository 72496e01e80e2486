package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/internal/testsite"
	"github.com/layercrawl/layercrawl/storage"
)

func writeSeeds(t *testing.T, dir string, seeds []string) string {
	t.Helper()
	p := filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(p, []byte("# roots\n"+strings.Join(seeds, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCrawler runs "crawler crawl" in-process.
func runCrawler(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(ctx, env{stdin: strings.NewReader(""), stdout: &o, stderr: &e}, append([]string{"crawl"}, args...))
	return code, o.String(), e.String()
}

func readLog(t *testing.T, path string) []storage.Entry {
	t.Helper()
	entries, err := storage.ReadCrawlLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// splitLog returns the sorted URLs of the log's fetches and of its
// robots.txt refusals.
func splitLog(entries []storage.Entry) (fetched, denied []string) {
	for _, e := range entries {
		if e.Error == "robots-disallowed" {
			denied = append(denied, e.URL)
		} else {
			fetched = append(fetched, e.URL)
		}
	}
	slices.Sort(fetched)
	slices.Sort(denied)
	return fetched, denied
}

func sample(s []string) []string { return s[:min(len(s), 5)] }

// missing returns the elements of want absent from got (both sorted).
func missing(want, got []string) []string {
	var m []string
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok {
			m = append(m, w)
		}
	}
	return m
}

func dupes(sorted []string) []string {
	var d []string
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			d = append(d, sorted[i])
		}
	}
	return d
}

// checkServed checks the servers' side: every expected URL requested
// exactly once (maxDup repeats allowed in all), nothing else requested,
// robots.txt at most once per host and run.
func checkServed(t *testing.T, hosts []*testsite.Host, want []string, maxDup, runs int) {
	t.Helper()
	wantSet := map[string]bool{}
	for _, u := range want {
		wantSet[u] = true
	}
	twice := 0
	for h, hs := range hosts {
		for u, n := range hs.Requests() {
			switch {
			case strings.HasSuffix(u, "/robots.txt"):
				if n < 1 || n > runs {
					t.Errorf("host %d: robots.txt requested %d times in %d runs", h, n, runs)
				}
			case !wantSet[u]:
				t.Errorf("unexpected request %s (%d times)", u, n)
			case n > 1:
				twice += n - 1
			}
		}
	}
	if twice > maxDup {
		t.Errorf("%d duplicate requests, want at most %d", twice, maxDup)
	}
}

func TestCrawlEndToEnd(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages in child processes, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the engine's concurrency is race-tested in package crawl")
	}
	if testing.Short() {
		t.Skip("end-to-end crawl of 5,000 pages skipped in -short mode")
	}
	site, hosts := testsite.Start(t, 5000)
	wantFetched, wantDenied := site.Expected()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Roots())
	code, stdout, stderr := runCrawler(t, context.Background(),
		"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private", "--concurrency", "8",
		"--expected-urls", "100000", "--progress-interval", "200ms", "--checkpoint-interval", "300ms")
	if code != 0 {
		t.Fatalf("crawl exited %d; stderr:\n%s", code, stderr)
	}
	t.Logf("summary:\n%s", stdout)
	entries := readLog(t, filepath.Join(out, "crawl.log.jsonl"))
	fetched, denied := splitLog(entries)
	if d := dupes(fetched); len(d) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %v", len(d), sample(d))
	}
	if !slices.Equal(slices.Compact(fetched), wantFetched) {
		t.Errorf("fetched %d URLs, want %d; missing %v; unexpected %v",
			len(fetched), len(wantFetched), sample(missing(wantFetched, fetched)), sample(missing(fetched, wantFetched)))
	}
	if !slices.Equal(denied, wantDenied) {
		t.Errorf("robots.txt refused %d URLs, want %d; missing %v; unexpected %v",
			len(denied), len(wantDenied), sample(missing(wantDenied, denied)), sample(missing(denied, wantDenied)))
	}
	checkServed(t, hosts, wantFetched, 0, 1)
	checkLogFields(t, entries)
	checkWARC(t, out, entries, 0, false)
	if !strings.Contains(stdout, "crawl finished: frontier empty") {
		t.Errorf("summary missing:\n%s", stdout)
	}
	if !strings.Contains(stderr, "pages ") || !strings.Contains(stderr, "est. FP") {
		t.Errorf("no progress line on stderr:\n%s", stderr)
	}

	// A second run on the finished state fetches nothing.
	code, stdout, stderr = runCrawler(t, context.Background(),
		"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private", "--expected-urls", "100000")
	if code != 0 {
		t.Fatalf("rerun exited %d; stderr:\n%s", code, stderr)
	}
	if n := len(readLog(t, filepath.Join(out, "crawl.log.jsonl"))); n != len(entries) {
		t.Errorf("rerun of a finished crawl added %d log lines", n-len(entries))
	}
	if !strings.Contains(stdout, "0 this run") {
		t.Errorf("rerun summary:\n%s", stdout)
	}
}

// checkLogFields checks what every log line must carry.
func checkLogFields(t *testing.T, entries []storage.Entry) {
	t.Helper()
	var status = map[int]int{}
	for _, e := range entries {
		status[e.Status]++
		if e.FetchedAt.IsZero() {
			t.Errorf("%s: no fetched_at", e.URL)
		}
		if e.Error == "robots-disallowed" {
			continue
		}
		if e.Status == 0 || e.Error != "" {
			t.Errorf("%s: status %d error %q", e.URL, e.Status, e.Error)
		}
		if e.Depth > 0 && e.Via == "" {
			t.Errorf("%s: depth %d without via", e.URL, e.Depth)
		}
		if e.Depth >= 20 {
			t.Errorf("%s: depth %d reached the default limit: the site is too deep for an exact test", e.URL, e.Depth)
		}
		if e.Status == 200 && (e.Bytes == 0 || e.ContentType == "") {
			t.Errorf("%s: 200 with bytes %d content type %q", e.URL, e.Bytes, e.ContentType)
		}
		if e.Status/100 == 3 && e.Location == "" {
			t.Errorf("%s: redirect without location", e.URL)
		}
	}
	for _, s := range []int{200, 301, 302, 404} {
		if status[s] == 0 {
			t.Errorf("no log line with status %d", s)
		}
	}
}

// TestCrawlKill9 kills a crawl with SIGKILL mid-way, resumes it, and checks
// the union of the logs: every expected URL fetched, and only URLs in
// flight at the kill fetched twice.
func TestCrawlKill9(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages in child processes, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the engine's concurrency is race-tested in package crawl")
	}
	if testing.Short() {
		t.Skip("kill -9 test skipped in -short mode")
	}
	site, hosts := testsite.Start(t, 2000)
	wantFetched, wantDenied := site.Expected()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Roots())
	const concurrency = 4
	args := []string{"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private",
		"--concurrency", fmt.Sprint(concurrency), "--expected-urls", "100000", "--checkpoint-interval", "100ms"}
	logPath := filepath.Join(out, "crawl.log.jsonl")

	kills := crawlKilled(t, args, logPath, 300, 1200)
	code, _, stderr := runCrawler(t, context.Background(), args...)
	if code != 0 {
		t.Fatalf("resumed crawl exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "resuming") {
		t.Errorf("resume not reported:\n%s", stderr)
	}
	entries := readLog(t, logPath)
	fetched, denied := splitLog(entries)
	all := slices.Compact(slices.Clone(fetched))
	if !slices.Equal(all, wantFetched) {
		t.Errorf("union of logs: %d URLs, want %d; missing %v; unexpected %v",
			len(all), len(wantFetched), sample(missing(wantFetched, all)), sample(missing(all, wantFetched)))
	}
	if d := dupes(fetched); len(d) > kills*concurrency {
		t.Errorf("%d URLs fetched twice, want at most %d (in flight at %d kills): %v", len(d), kills*concurrency, kills, sample(d))
	}
	if got := slices.Compact(denied); !slices.Equal(got, wantDenied) {
		t.Errorf("robots refusals: %d, want %d", len(got), len(wantDenied))
	}
	checkServed(t, hosts, wantFetched, kills*concurrency, kills+1)
	checkWARC(t, out, entries, kills*concurrency, true)
	// The index at the end: the killed runs' open files read back, the
	// rest from their sidecars, the same bytes.
	checkSidecarIndex(t, out, kills)
}

// crawlKilled runs the crawl of args in a child process once per killAt,
// killing it with SIGKILL once its log has that many lines, and returns
// the number of kills.
func crawlKilled(t *testing.T, args []string, logPath string, killAt ...int) int {
	t.Helper()
	for _, n := range killAt {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrawlChild$")
		cmd.Env = append(os.Environ(), "LAYERCRAWL_CRAWL_CHILD="+strings.Join(args, "\x1f"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) && countLines(logPath) < n {
			time.Sleep(5 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child did not die by SIGKILL (crawl too fast?): %v\n%s", err, stderr.String())
		}
	}
	return len(killAt)
}

// TestHelperCrawlChild is the crawl subprocess of TestCrawlKill9.
func TestHelperCrawlChild(t *testing.T) {
	args := os.Getenv("LAYERCRAWL_CRAWL_CHILD")
	if args == "" {
		t.Skip("helper process for TestCrawlKill9")
	}
	code := run(context.Background(), env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, append([]string{"crawl"}, strings.Split(args, "\x1f")...))
	os.Exit(code)
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte{'\n'})
}

func TestCrawlInterruptAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	site, hosts := testsite.Start(t, 1000)
	wantFetched, _ := site.Expected()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Roots())
	args := []string{"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private", "--concurrency", "4", "--expected-urls", "100000"}
	logPath := filepath.Join(out, "crawl.log.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for countLines(logPath) < 200 && ctx.Err() == nil {
			time.Sleep(2 * time.Millisecond)
		}
		cancel() // what SIGINT does through main's signal.NotifyContext
	}()
	code, stdout, stderr := runCrawler(t, ctx, args...)
	if code != 0 {
		t.Fatalf("interrupted crawl exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "interrupted: state saved") {
		t.Errorf("summary of an interrupted crawl:\n%s", stdout)
	}
	first := len(readLog(t, logPath))
	if first >= len(wantFetched) {
		t.Fatalf("crawl finished before the interrupt (%d lines)", first)
	}
	if code, _, stderr = runCrawler(t, context.Background(), args...); code != 0 {
		t.Fatalf("resumed crawl exited %d:\n%s", code, stderr)
	}
	fetched, _ := splitLog(readLog(t, logPath))
	if d := dupes(fetched); len(d) > 0 {
		t.Errorf("a clean stop refetched %d URLs: %v", len(d), sample(d))
	}
	if got := slices.Compact(fetched); !slices.Equal(got, wantFetched) {
		t.Errorf("fetched %d URLs, want %d; missing %v", len(got), len(wantFetched), sample(missing(wantFetched, got)))
	}
	checkServed(t, hosts, wantFetched, 0, 2)
	// The interrupted run closed its WARC file with its sidecar's
	// trailer: every file indexed from its sidecar.
	checkSidecarIndex(t, out, 0)
}

func TestCrawlCorruptState(t *testing.T) {
	site, _ := testsite.Start(t, 300)
	tests := []struct {
		name    string
		corrupt func(t *testing.T, state string)
		want    string
	}{
		{"snapshot missing", func(t *testing.T, state string) {
			if err := os.Remove(filepath.Join(state, crawl.SnapshotFile)); err != nil {
				t.Fatal(err)
			}
		}, "seen.mlbf is missing"},
		{"snapshot damaged", func(t *testing.T, state string) {
			p := filepath.Join(state, crawl.SnapshotFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0xff
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "corrupt"},
		{"snapshot foreign", func(t *testing.T, state string) {
			if err := os.WriteFile(filepath.Join(state, crawl.SnapshotFile), []byte("hello"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "corrupt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			seeds := writeSeeds(t, dir, site.Roots())
			// A checkpoint every millisecond: the crawl writes snapshots
			// (the final one is skipped for so short a journal).
			args := []string{"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private", "--expected-urls", "10000", "--checkpoint-interval", "1ms"}
			if code, _, stderr := runCrawler(t, context.Background(), args...); code != 0 {
				t.Fatalf("first crawl exited %d:\n%s", code, stderr)
			}
			tc.corrupt(t, filepath.Join(out, "state"))
			code, _, stderr := runCrawler(t, context.Background(), args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("crawl on corrupt state exited %d, stderr %q; want %d and %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}

func TestCrawlFlags(t *testing.T) {
	dir := t.TempDir()
	seeds := writeSeeds(t, dir, []string{"http://127.0.0.1:1/"})
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--out", dir}, 2, "no seeds"},
		{[]string{"--seeds", seeds}, 2, "--out is required"},
		{[]string{"--out", dir, "ftp://example.com/"}, 2, "unsupported scheme"},
		{[]string{"--seeds", seeds, "--out", dir, "--scope", "planet"}, 2, "unknown scope"},
		{[]string{"--seeds", seeds, "--out", dir, "--allow", "("}, 2, "missing closing"},
		{[]string{"--seeds", seeds, "--out", dir, "--concurrency", "-1"}, 2, "Concurrency -1"},
		{[]string{"--seeds", seeds, "--out", dir, "--fp-target", "2"}, 2, "FalsePositiveRate 2"},
		{[]string{"--seeds", filepath.Join(dir, "absent"), "--out", dir}, 1, "no such file"},
	}
	for _, tc := range tests {
		code, _, stderr := runCrawler(t, context.Background(), tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("crawl %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestCrawlWarnsWhenFilterOverfull sizes the filter for far fewer URLs than
// the site has: with --filter-growth=false the progress line must say that
// the false-positive estimate passed the target; the default filter grows
// instead, stays within it and shows its generations.
func TestCrawlWarnsWhenFilterOverfull(t *testing.T) {
	site, _ := testsite.Start(t, 600)
	for _, fixed := range []bool{true, false} {
		dir := t.TempDir()
		seeds := writeSeeds(t, dir, site.Roots())
		code, stdout, stderr := runCrawler(t, context.Background(), "--seeds", seeds, "--out", filepath.Join(dir, "out"),
			"--delay", "-1", "--allow-private", "--expected-urls", "20", "--fp-target", "0.001", "--progress-interval", "5ms",
			fmt.Sprintf("--filter-growth=%v", !fixed))
		if code != 0 {
			t.Fatalf("crawl exited %d:\n%s", code, stderr)
		}
		warned := strings.Contains(stderr, "WARNING: estimated FP above the target 0.001")
		switch {
		case fixed && !warned:
			t.Errorf("fixed filter: no false-positive warning in the progress output:\n%s", stderr)
		case !fixed && warned:
			t.Errorf("growing filter: a false-positive warning:\n%s", stderr)
		case !fixed && !regexp.MustCompile(`filter gen [4-9] fill`).MatchString(stderr):
			t.Errorf("growing filter: the progress line shows no fourth generation:\n%s", stderr)
		case !fixed && !strings.Contains(stdout+stderr, "generations sized for"):
			t.Errorf("growing filter: no generations in the summary:\n%s%s", stdout, stderr)
		}
	}
}

// TestCrawlNetFlags: --proxy, --ca-file and --insecure-skip-verify are
// checked at start with a clear message, and a proxy password is never
// shown.
func TestCrawlNetFlags(t *testing.T) {
	dir := t.TempDir()
	seeds := writeSeeds(t, dir, []string{"http://127.0.0.1:1/"})
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--seeds", seeds, "--out", dir, "--proxy", "socks5://u:s3cret@p:1080"}, 2, "--proxy socks5://u:xxxxx@p:1080"},
		{[]string{"--seeds", seeds, "--out", dir, "--proxy", "http://u:s3cret@p:3128/path"}, 2, "Proxy"},
		{[]string{"--seeds", seeds, "--out", dir, "--proxy", "http://u:s3cret@[bad"}, 2, "--proxy (unparsable)"},
		{[]string{"--seeds", seeds, "--out", dir, "--ca-file", notPEM}, 2, "holds no PEM certificate"},
		{[]string{"--seeds", seeds, "--out", dir, "--ca-file", filepath.Join(dir, "absent.pem")}, 2, "no such file"},
	}
	for _, tc := range tests {
		code, stdout, stderr := runCrawler(t, context.Background(), tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("crawl %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
		if strings.Contains(stdout+stderr, "s3cret") {
			t.Errorf("crawl %v: the proxy password is shown: %q", tc.args, stdout+stderr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, stderr := runCrawler(t, ctx, "--seeds", seeds, "--out", t.TempDir(), "--insecure-skip-verify", "--max-retries", "-1", "--progress-interval", "-1")
	if n := strings.Count(stderr, "--insecure-skip-verify"); n != 1 || !strings.Contains(stderr, "WARN") {
		t.Errorf("--insecure-skip-verify: warned %d times, want one WARN line:\n%s", n, stderr)
	}
}
