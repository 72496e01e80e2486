package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestFilterGrowthKill9 crawls 2,000 pages with a duplicate filter first
// sized for 200 URLs (so it grows to four or more generations), kills the
// crawl with SIGKILL twice and resumes it: the snapshots of a growing
// filter, taken every 100 ms while it grows, and the journal replayed into
// it lose no URL, and the summary says how it grew.
func TestFilterGrowthKill9(t *testing.T) {
	stdout, stderr := crawlKill9Resume(t, "--expected-urls", "200", "--fp-target", "1e-6")
	m := regexp.MustCompile(`duplicate filter  \d+ URLs in (\d+) generations`).FindStringSubmatch(stdout + stderr)
	if m == nil {
		t.Fatalf("summary has no growing filter line:\n%s%s", stdout, stderr)
	}
	if g, _ := strconv.Atoi(m[1]); g < 4 {
		t.Errorf("%d generations for 2,000 pages from 200", g)
	}
	if strings.Contains(stdout+stderr, "WARNING") {
		t.Errorf("a growing filter warned about its rate:\n%s%s", stdout, stderr)
	}
}
