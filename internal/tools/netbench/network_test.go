package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// get fetches url with c and returns how long it took and the body size.
func get(t *testing.T, c *http.Client, url string) (time.Duration, int) {
	t.Helper()
	start := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return time.Since(start), len(b)
}

// TestProxyAddsLatency checks that every exchange through a host's proxy
// takes at least its round-trip time, and not much more on loopback, and
// that the origin's counters see each answer once with its round trip.
func TestProxyAddsLatency(t *testing.T) {
	const rtt = 80 * time.Millisecond
	n, err := Start(context.Background(), Config{Hosts: 2, Pages: 4, MaxHostPages: 10, RTTMin: rtt, RTTMax: rtt})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	hosts := n.Hosts()
	if len(hosts) != 2 || hosts[0].Name != "127.1.1.1" || hosts[1].Name != "127.1.1.2" || hosts[0].RTT != rtt {
		t.Fatalf("hosts %+v, want 127.1.1.1 and 127.1.1.2 at %v", hosts, rtt)
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	const gets = 4
	for i := range gets {
		// The first exchange opens the connection; the others reuse it.
		d, _ := get(t, c, hosts[0].Seed)
		// Each direction's delay is timed from when toxiproxy read the
		// chunk, so an exchange can end a millisecond short of rtt.
		if d < rtt-2*time.Millisecond || d > rtt+150*time.Millisecond {
			t.Errorf("exchange %d took %v, want about %v", i, d, rtt)
		}
	}
	st := n.Stats()
	if got := st[hosts[0].Name]; got.Requests != gets || got.Pages != gets || got.Wire != gets*rtt {
		t.Errorf("stats %+v, want %d requests, %d pages, wire %v", got, gets, gets, gets*rtt)
	}
	if got := st[hosts[1].Name]; got.Requests != 0 {
		t.Errorf("host 2 stats %+v, want none", got)
	}
}

// TestProxyCapsRate checks the bandwidth cap on a doc site: a body of b
// bytes at r KB/s takes at least b/r.
func TestProxyCapsRate(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("x", 40_000)
	if err := os.WriteFile(filepath.Join(dir, "big.html"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	const rtt, rate = 20 * time.Millisecond, 100 // 40 KB at 100 KB/s: 0.4 s
	n, err := Start(context.Background(), Config{Docs: []Doc{{"d", dir}}, RTTMin: rtt, RTTMax: rtt, RateKB: rate})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	h := n.Hosts()[0]
	if h.Name != "127.0.2.1" {
		t.Fatalf("doc host %q, want 127.0.2.1", h.Name)
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	d, size := get(t, c, h.Seed+"big.html")
	want := rtt + transfer(int64(len(body)), rate)
	if size != len(body) || d < want-10*time.Millisecond || d > want+300*time.Millisecond {
		t.Errorf("%d bytes took %v, want %d bytes in about %v", size, d, len(body), want)
	}
	if got := n.Stats()[h.Name]; got.Requests != 1 || got.Pages != 1 || got.Wire != rtt+transfer(int64(len(body))+headBytes, rate) {
		t.Errorf("stats %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{},
		{Hosts: 300, Pages: 300},
		{Hosts: 10, Pages: 5},
		{Hosts: 1, Pages: 1, RTTMin: 50 * time.Millisecond, RTTMax: 20 * time.Millisecond},
		{Hosts: 1, Pages: 1, RTTMin: 10 * time.Millisecond, RTTMax: 10 * time.Millisecond, Jitter: 20 * time.Millisecond},
		{Hosts: 1, Pages: 1, RateKB: -1},
	} {
		if err := c.Validate(); !errors.Is(err, errConfig) {
			t.Errorf("Validate(%+v) = %v, want errConfig", c, err)
		}
	}
}

func TestIdeal(t *testing.T) {
	ms := time.Millisecond
	stats := map[string]HostStats{
		"a": {Requests: 10, Wire: 500 * ms},
		"b": {Requests: 4, Wire: 200 * ms},
		"c": {Requests: 4, Wire: 200 * ms},
		"d": {Requests: 2, Wire: 100 * ms},
		"e": {}, // never asked: no slot
	}
	for _, tc := range []struct {
		conc  int
		delay time.Duration
		want  time.Duration
	}{
		{1, 0, 1000 * ms},           // back to back
		{2, 0, 500 * ms},            // a | b c d
		{4, 0, 500 * ms},            // a is the longest host
		{2, time.Second, 9500 * ms}, // a's 10 requests with 9 delays
		{0, 0, 1000 * ms},           // treated as 1
	} {
		if got := Ideal(stats, tc.conc, tc.delay); got != tc.want {
			t.Errorf("Ideal(concurrency %d, delay %v) = %v, want %v", tc.conc, tc.delay, got, tc.want)
		}
	}
	if got := Ideal(nil, 16, 0); got != 0 {
		t.Errorf("Ideal(nil) = %v, want 0", got)
	}
}

func TestSummarize(t *testing.T) {
	tsv := strings.Join(resultHeader, "\t") + "\n" +
		"a\th1\t10\t1\t0.5\t100\t90\t1000\t8\t1.5\t0\n" +
		"a\tstd\t12\t1\t1\t100\t90\t1000\t8\t2.0\t0\n" +
		"a\th1\t14\t2\t0.5\t100\t90\t1000\t8\t1.0\t0\n" +
		"a\tstd\t99\t1\t1\t100\t90\t1000\t8\t2.0\t1\n"
	rows, err := readResults(strings.NewReader(tsv))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || median(rows[0].wall) != 12 || len(rows[1].wall) != 1 || rows[1].failed != 1 {
		t.Fatalf("rows %+v", rows)
	}
	out := table(rows, "h1")
	// std's first run pairs with h1's first (12/10), its failed second
	// with nothing.
	for _, want := range []string{"| a | h1 | 2 | 12.00 | 8.00 | 1.500 | 1.000; 1.000-1.000 | 2.00 |", "| a | std | 1 (+1 failed) | 12.00 | 8.00 | 1.500 | 1.200; 1.200-1.200 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if _, err := readResults(strings.NewReader("a\tb\n")); err == nil {
		t.Error("a short line was read")
	}
}

// TestReplay checks that replay makes exactly the requests of a paths
// file, each host's in order.
func TestReplay(t *testing.T) {
	const rtt = 10 * time.Millisecond
	n, err := Start(context.Background(), Config{Hosts: 3, Pages: 6, MaxHostPages: 10, RTTMin: rtt, RTTMax: rtt})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	hosts := n.Hosts()
	want := map[string][]string{
		hosts[0].Name: {"/robots.txt", "/", "/nothing-here"},
		hosts[2].Name: {"/"},
	}
	dir := t.TempDir()
	pathsFile, hostsFile := filepath.Join(dir, "paths"), filepath.Join(dir, "hosts")
	if err := writePaths(pathsFile, want); err != nil {
		t.Fatal(err)
	}
	var hl strings.Builder
	for _, h := range hosts {
		hl.WriteString(h.Addr + "\n")
	}
	if err := os.WriteFile(hostsFile, []byte(hl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replayCommand(context.Background(), []string{"-paths", pathsFile, "-hosts", hostsFile, "-concurrency", "2"}); err != nil {
		t.Fatal(err)
	}
	got := n.Paths()
	if len(got) != len(want) {
		t.Fatalf("paths %v, want %v", got, want)
	}
	for h, w := range want {
		if !slices.Equal(got[h], w) {
			t.Errorf("host %s: paths %v, want %v", h, got[h], w)
		}
	}
}
