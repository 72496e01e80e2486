package main

import (
	"context"
	"strings"
	"testing"
)

// --order takes fifo or inlinks; inlinks with --redis is a usage error,
// before any connection.
func TestCrawlOrderUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown", []string{"--order", "pagerank"}, `unknown order "pagerank"`},
		{"redis", []string{"--order", "inlinks", "--redis", "redis://127.0.0.34:1/0", "--redis-prefix", "lc-order34-"}, "Order inlinks is a local-mode option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--out", t.TempDir()}, tc.args...)
			code, _, stderr := runCrawler(t, context.Background(), append(args, "http://127.0.0.34:1/")...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("crawl %v exited %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
			}
		})
	}
}
