package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A crawl that cannot reach Redis at the start gives up after
// --redis-connect-timeout with a non-zero exit and one line naming the
// address and the cause; with --log-format json every other stderr line,
// go-redis's included, is JSON.
func TestRedisConnectTimeout(t *testing.T) {
	addr := freeAddr(t) // nothing listens there
	start := time.Now()
	code, _, stderr := runCrawler(t, context.Background(), "--out", t.TempDir(), "--log-format", "json", "--progress-interval", "-1",
		"--redis", "redis://:hunter2@"+addr, "--redis-connect-timeout", "1500ms", "http://127.0.0.1:9/")
	took := time.Since(start)
	if code == 0 || took > 5*time.Second {
		t.Errorf("exit %d after %v, want non-zero within about 1.5s", code, took)
	}
	var final []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		switch {
		case strings.HasPrefix(l, "crawler crawl: "):
			final = append(final, l)
		case !json.Valid([]byte(l)):
			t.Errorf("stderr line is not JSON: %q", l)
		}
	}
	if len(final) != 1 || !strings.Contains(final[0], "redis unreachable") || !strings.Contains(final[0], addr) ||
		!strings.Contains(final[0], "refused") {
		t.Errorf("final stderr lines %q, want one naming the unreachable address and the refused connection", final)
	}
	if strings.Contains(stderr, "hunter2") {
		t.Errorf("stderr shows the password:\n%s", stderr)
	}
}
