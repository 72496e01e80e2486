package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/syncbuf"

	"github.com/layercrawl/layercrawl/internal/testsite"
	"github.com/layercrawl/layercrawl/monitor"
)

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// monitoredCrawl is a crawl running in-process with --http-addr.
type monitoredCrawl struct {
	addr, out      string
	stdout, stderr *syncbuf.Buffer
	code           chan int
}

// startMonitoredCrawl crawls a generated site of pages pages slowly (delay
// between two requests to a host) with its status server on.
func startMonitoredCrawl(t *testing.T, pages int, delay string, extra ...string) *monitoredCrawl {
	t.Helper()
	site, _ := testsite.Start(t, pages)
	m := &monitoredCrawl{addr: freeAddr(t), out: t.TempDir(), stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, code: make(chan int, 1)}
	args := append([]string{"crawl", "--out", m.out, "--allow-private", "--delay", delay, "--concurrency", "3",
		"--expected-urls", "100000", "--progress-interval", "-1", "--http-addr", m.addr}, extra...)
	args = append(args, site.Roots()...)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		m.code <- run(ctx, env{stdin: strings.NewReader(""), stdout: m.stdout, stderr: m.stderr}, args)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-m.code:
		case <-time.After(30 * time.Second):
			t.Error("crawl did not stop")
		}
	})
	// Wait for the server.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", m.addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status server did not come up; stderr:\n%s", m.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return m
}

// status reads the status document through "crawler status --addr --json".
func (m *monitoredCrawl) status(t *testing.T) monitor.Status {
	t.Helper()
	code, out, errs := runStatusCmd(t, "--addr", m.addr, "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d: %s", code, errs)
	}
	var st monitor.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json output: %v\n%s", err, out)
	}
	return st
}

func TestStatusAddr(t *testing.T) {
	m := startMonitoredCrawl(t, 60, "100ms")
	// The status server answers from its first sample, which may come
	// before Run has set the start time.
	st := m.status(t)
	for deadline := time.Now().Add(10 * time.Second); st.Started.IsZero() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		st = m.status(t)
	}
	if st.Mode != "local" || st.Started.IsZero() {
		t.Errorf("status: mode %q started %v", st.Mode, st.Started)
	}
	var later monitor.Status
	for deadline := time.Now().Add(20 * time.Second); later.Totals.Fetched <= st.Totals.Fetched; {
		if time.Now().After(deadline) {
			t.Fatalf("fetched stays at %d", st.Totals.Fetched)
		}
		time.Sleep(200 * time.Millisecond)
		later = m.status(t)
	}
	code, out, errs := runStatusCmd(t, "--addr", "http://"+m.addr+"/")
	if code != 0 || !strings.Contains(out, "crawl at http://"+m.addr+"/: ") || !strings.Contains(out, "pages fetched ") {
		t.Errorf("status --addr: exit %d\n%s%s", code, out, errs)
	}
	if code := <-m.code; code != 0 {
		t.Fatalf("crawl exit %d: %s", code, m.stderr.String())
	}
	m.code <- 0
	// After the crawl the server is gone: status fails clearly.
	if code, _, errs := runStatusCmd(t, "--addr", m.addr, "--timeout", "2s"); code != 1 || !strings.Contains(errs, "connect") {
		t.Errorf("status of a stopped crawl: exit %d: %s", code, errs)
	}
}

func TestHTTPAddrFlags(t *testing.T) {
	dir := t.TempDir()
	// A non-loopback address is refused without --http-allow-remote.
	code, _, errs := runCrawler(t, context.Background(), "--out", dir, "--http-addr", "0.0.0.0:0", "http://127.0.0.1:1/")
	if code == 0 || !strings.Contains(errs, "not loopback") {
		t.Errorf("--http-addr 0.0.0.0:0: exit %d: %s", code, errs)
	}
	if code, _, errs := runCrawler(t, context.Background(), "--out", dir, "--log-format", "xml", "http://127.0.0.1:1/"); code != 2 || !strings.Contains(errs, "--log-format") {
		t.Errorf("--log-format xml: exit %d: %s", code, errs)
	}
	// With it, the crawl runs and warns, in JSON records.
	site, _ := testsite.Start(t, 20)
	args := append([]string{"--out", dir, "--allow-private", "--delay", "-1", "--http-addr", "0.0.0.0:0", "--http-allow-remote",
		"--log-format", "json", "--progress-interval", "-1"}, site.Roots()...)
	code, out, errs := runCrawler(t, context.Background(), args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var warned, finished bool
	for _, line := range strings.Split(strings.TrimSpace(errs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("stderr line is not JSON: %q", line)
		}
		if rec["time"] == nil || rec["level"] == nil || rec["msg"] == nil {
			t.Errorf("record lacks time, level or msg: %q", line)
		}
		warned = warned || rec["level"] == "WARN" && strings.Contains(rec["msg"].(string), "remote clients")
		finished = finished || rec["msg"] == "crawl finished" && rec["fetched"] != nil
	}
	if !warned || !finished {
		t.Errorf("warned %v, finished %v:\n%s", warned, finished, errs)
	}
	if !strings.Contains(out, "pages fetched") {
		t.Errorf("summary missing:\n%s", out)
	}
}

// In Redis mode the status document carries the worker's name, the Redis
// URL without credentials and the shared counters' time.
func TestStatusAddrRedisMode(t *testing.T) {
	_, prefix := statusRedis(t)
	m := startMonitoredCrawl(t, 300, "100ms", "--redis", "redis://"+statusTestRedis, "--redis-prefix", prefix)
	var st monitor.Status
	for deadline := time.Now().Add(20 * time.Second); st.SharedAt.IsZero() || st.Totals.Fetched == 0 || st.Totals.Pages == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no shared counters or fetches in the status: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
		st = m.status(t)
	}
	if st.Mode != "redis" || st.Worker == "" || st.Redis != "redis://"+statusTestRedis || st.Totals.Pages == 0 {
		t.Errorf("redis-mode status: mode %q worker %q redis %q pages %d", st.Mode, st.Worker, st.Redis, st.Totals.Pages)
	}
}

// TestHTTPLinger: the status server stays up for --http-linger after the
// crawl ends, and a scrape then sees the final counts: /status.json says
// done with every page, /metrics counts every fetch.
func TestHTTPLinger(t *testing.T) {
	const pages = 40
	m := startMonitoredCrawl(t, pages, "-1", "--http-linger", "4s")
	var summary time.Time
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(m.stdout.String(), "pages fetched") {
			summary = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no summary after 30s:\n%s", m.stderr.String())
		}
	}
	// The summary is printed when the crawl has ended: the server is
	// still up, with the last sample.
	st := m.status(t)
	if !st.Done || st.Totals.Pages < pages {
		t.Errorf("status after the crawl: done %v, pages %d; want done with %d pages", st.Done, st.Totals.Pages, pages)
	}
	res, err := http.Get("http://" + m.addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape after the crawl: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want := fmt.Sprintf("layercrawl_pages_fetched_total %d\n", st.Totals.Fetched)
	if !strings.Contains(string(body), want) {
		t.Errorf("scrape after the crawl lacks %q", want)
	}
	select {
	case code := <-m.code:
		m.code <- code
		t.Fatalf("crawler exited (%d) before --http-linger passed", code)
	case <-time.After(time.Until(summary.Add(3 * time.Second))):
	}
	select {
	case code := <-m.code:
		m.code <- code
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("crawler still running 13s after the crawl ended with --http-linger 4s")
	}
}
