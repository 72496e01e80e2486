package main

import (
	"testing"
	"time"
)

// TestRetryConfig checks that the retry flags reach crawl.Options, from
// the command line and from a config file under the same names.
func TestRetryConfig(t *testing.T) {
	cfg := writeConfig(t, `
max-retries = -1
retry-backoff = "100ms"
max-retry-backoff = "10s"
max-retry-after = "30s"
`)
	c, _, err := parseTestArgs(t, "--config", cfg, "https://a.example/")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.opts.Retry; r.MaxRetries != -1 || r.Backoff != 100*time.Millisecond || r.MaxBackoff != 10*time.Second || r.MaxRetryAfter != 30*time.Second {
		t.Errorf("config file: Retry %+v", r)
	}
	c, _, err = parseTestArgs(t, "--max-retries", "5", "--max-retry-after", "-1", "https://a.example/")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.opts.Retry; r.MaxRetries != 5 || r.MaxRetryAfter != -1 {
		t.Errorf("flags: Retry %+v", r)
	}
}
