package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestUsageDocFlags checks that docs/USAGE.md's flag reference is the
// output of "crawler crawl -h": a flag added, renamed or redocumented
// without regenerating it fails here. To regenerate, paste the output of
// "go run ./cmd/crawler crawl -h 2>&1" between the markers.
func TestUsageDocFlags(t *testing.T) {
	doc, err := os.ReadFile("../../docs/USAGE.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- crawl -h begin -->\n```\n", "```\n<!-- crawl -h end -->"
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/USAGE.md has no flag reference between %q and %q", begin, end)
	}
	code, _, help := runCrawler(t, context.Background(), "-h")
	if code != 0 {
		t.Fatalf("crawl -h exit %d", code)
	}
	if got := s[i+len(begin) : j]; got != help {
		gl, hl := strings.Split(got, "\n"), strings.Split(help, "\n")
		for k := 0; k < min(len(gl), len(hl)); k++ {
			if gl[k] != hl[k] {
				t.Fatalf("docs/USAGE.md's flag reference differs from crawl -h at line %d:\n doc: %s\n -h:  %s\nregenerate it with: go run ./cmd/crawler crawl -h 2>&1", k+1, gl[k], hl[k])
			}
		}
		t.Fatalf("docs/USAGE.md's flag reference has %d lines, crawl -h %d: regenerate it", len(gl), len(hl))
	}
}
