package redisfrontier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier"
)

// testAddr is the Redis the tests use (CI starts one there).
const testAddr = "127.0.0.1:6379"

// testRedis returns a go-redis client for the test Redis, skipping the
// test when none answers (failing it when CI=true).
func testRedis(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testAddr, MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis at %s: %v (CI=true: Redis is required)", testAddr, err)
		}
		t.Skipf("no redis at %s (%v); start one or set CI=true to fail instead", testAddr, err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// testPrefix returns a fresh key prefix and deletes its keys when the test
// ends.
func testPrefix(t testing.TB, rdb *redis.Client) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	prefix := "lctest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() { deletePrefix(t, rdb, prefix) })
	return prefix
}

func deletePrefix(t testing.TB, rdb *redis.Client, prefix string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("scan %s*: %v", prefix, err)
		return
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := rdb.Del(ctx, keys[:n]...).Err(); err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		keys = keys[n:]
	}
}

// testClient returns a Client over the test Redis with a fresh prefix.
func testClient(t testing.TB) *Client {
	t.Helper()
	rdb := testRedis(t)
	c, err := NewClient(rdb, Config{Prefix: testPrefix(t, rdb), MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// helperEnv names the role a re-executed test binary plays; see TestMain.
const helperEnv = "LCREDIS_HELPER"

// helpers are the roles a re-executed test binary can play: each reads its
// parameters from the environment, works, and exits.
var helpers = map[string]func() int{}

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		fn, ok := helpers[role]
		if !ok {
			os.Stderr.WriteString("unknown helper role " + role + "\n")
			os.Exit(2)
		}
		os.Exit(fn())
	}
	os.Exit(m.Run())
}

// leaseOf returns the lease a holds on e, which a.Next handed out.
func leaseOf(a *Frontier, e frontier.Entry) lease {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out[e.URL][0]
}

// stageAndDie makes the first two steps of a Done under the lease l, as
// Done makes them: it stages st (the completion) and checks st's
// candidates in the seen-set, then stops, as a worker killed before it
// queues them would. It returns the candidates the check found new.
func stageAndDie(t *testing.T, c *Client, a *Frontier, l lease, st stage) []record {
	t.Helper()
	ctx := context.Background()
	blob, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := stageScript.Run(ctx, c.rdb, []string{a.key("tok")}, a.tag, l.host, l.token, string(blob)).Int64(); err != nil || n != 1 {
		t.Fatalf("stage = %d, %v", n, err)
	}
	adds, _, _, err := a.check(ctx, st.Batch, st.Cands)
	if err != nil {
		t.Fatal(err)
	}
	return adds
}
