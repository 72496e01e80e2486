package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/layercrawl/layercrawl/internal/testsite"
)

// fakeProcs records the GOMAXPROCS settings made through it.
type fakeProcs struct {
	mu    sync.Mutex
	procs int
	calls []int
}

func (f *fakeProcs) set(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, n)
	prev := f.procs
	if n > 0 {
		f.procs = n
	}
	return prev
}

func (f *fakeProcs) got() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func TestStartCPUs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cpus       int
		procs      int // the setting found
		wantCalls  []int
		noSetFuncs bool
	}{
		{name: "fixed", cpus: 3, procs: 8, wantCalls: []int{3, 8}},
		{name: "Go's default", cpus: 0, procs: 8},
		{name: "all cores, as older configurations say", cpus: -1, procs: 8},
		{name: "in-process tests", cpus: 3, procs: 8, noSetFuncs: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeProcs{procs: tc.procs}
			set := f.set
			if tc.noSetFuncs {
				set = nil
			}
			restore := startCPUs(tc.cpus, set)
			restore()
			if got := f.got(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("settings %v, want %v", got, tc.wantCalls)
			}
			if f.procs != tc.procs {
				t.Errorf("setting after the crawl %d, want %d (the one found)", f.procs, tc.procs)
			}
		})
	}
}

func TestCPUsFlag(t *testing.T) {
	code, _, stderr := runCrawler(t, context.Background(), "--out", t.TempDir(), "--cpus", "-2", "https://example.org/")
	if code != 2 || !strings.Contains(stderr, "--cpus -2") {
		t.Errorf("--cpus -2: exit %d, stderr %q; want 2 and the flag named", code, stderr)
	}
	c, _, err := parseTestArgs(t, "--config", writeConfig(t, "cpus = 1\n"))
	if err != nil || c.cpus != 1 {
		t.Errorf("cpus = 1 in a config file: %d, %v", c.cpus, err)
	}
}

// TestCrawlCPUs runs a crawl with --cpus through the command: the setting
// is made before the crawl and restored after it.
func TestCrawlCPUs(t *testing.T) {
	site, _ := testsite.Start(t, 50)
	dir := t.TempDir()
	f := &fakeProcs{procs: 8}
	var o, e strings.Builder
	code := run(context.Background(), env{stdin: strings.NewReader(""), stdout: &o, stderr: &e, gomaxprocs: f.set},
		[]string{"crawl", "--seeds", writeSeeds(t, dir, site.Roots()), "--out", filepath.Join(dir, "out"),
			"--delay", "-1", "--allow-private", "--progress-interval", "-1", "--cpus", "2"})
	if code != 0 {
		t.Fatalf("crawl exited %d:\n%s", code, e.String())
	}
	if got, want := f.got(), []int{2, 8}; !slices.Equal(got, want) {
		t.Errorf("settings %v, want %v", got, want)
	}
}
