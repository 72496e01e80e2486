package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/urlnorm"
)

const statusTestRedis = "127.0.0.1:6379"

// statusRedis returns a client for the test Redis and a fresh key prefix
// whose keys are deleted when the test ends; it skips without Redis unless
// CI=true.
func statusRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: statusTestRedis})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis at %s: %v (CI=true: Redis is required)", statusTestRedis, err)
		}
		t.Skipf("no redis at %s: %v", statusTestRedis, err)
	}
	var b [6]byte
	rand.Read(b[:])
	prefix := "lctest:status:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		rdb.Close()
	})
	return rdb, prefix
}

func runStatusCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, append([]string{"status"}, args...))
	return code, out.String(), errb.String()
}

func TestStatus(t *testing.T) {
	rdb, prefix := statusRedis(t)
	ctx := context.Background()
	url := "redis://" + statusTestRedis

	code, out, errOut := runStatusCmd(t, "--redis", url, "--redis-prefix", prefix)
	if code != 0 || !strings.Contains(out, "not started") {
		t.Fatalf("empty prefix: exit %d, stdout %q, stderr %q; want 0 and \"not started\"", code, out, errOut)
	}

	c, err := redisfrontier.NewClient(rdb, redisfrontier.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	seen, err := redisfrontier.OpenSeen(ctx, c, redisfrontier.SeenOptions{Filter: mlbf.Options{ExpectedURLs: 1000}, Shards: 2, Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	norm, _ := urlnorm.New(urlnorm.Options{})
	f, err := redisfrontier.Open(ctx, c, redisfrontier.Options{Seen: seen, Normalizer: norm, Politeness: frontier.PolitenessOptions{Delay: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/", "http://b.test/", "http://a.test/x"}); err != nil {
		t.Fatal(err)
	}
	e, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runStatusCmd(t, "--redis", url, "--redis-prefix", prefix)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"running", "queued 2 on 1 waiting hosts, 1 hosts in flight", "handed out 1", "discovered new 3", "hash=" + mlbf.HashID,
		"duplicate check: exact, 0 pages lost to the filter: 0 false positives caught and queued, of 0 \"maybe seen\" answers checked"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	_ = e
	// A seed list with a seen URL: one "maybe seen" answer checked.
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/", "http://c.test/"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runStatusCmd(t, "--redis", url, "--redis-prefix", prefix, "--json")
	var js struct {
		Exact *redisfrontier.ExactStats `json:"exact"`
	}
	if err := json.Unmarshal([]byte(out), &js); code != 0 || err != nil || js.Exact == nil || *js.Exact != (redisfrontier.ExactStats{Checks: 1}) {
		t.Errorf("status --json: exit %d, stderr %q, stdout %s; want the exact check's counters", code, errOut, out)
	}
}

func TestStatusUsage(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"--addr", "127.0.0.1:1", "--redis", "redis://127.0.0.1:6379"}, 2},
		{[]string{"--addr", "127.0.0.1:1", "--timeout", "2s"}, 1},
		{[]string{"--redis", "redis://127.0.0.1:1", "extra"}, 2},
		{[]string{"--redis", "redis://127.0.0.1:6379", "--redis-prefix", "a{b}"}, 1},
		{[]string{"--redis", "nonsense://x"}, 1},
	}
	for _, tt := range tests {
		if got, _, _ := runStatusCmd(t, tt.args...); got != tt.want {
			t.Errorf("status %q: exit %d, want %d", tt.args, got, tt.want)
		}
	}
}
