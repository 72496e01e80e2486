package crawl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/storage"
)

// The Redis payload index answers like the local one and keeps the last
// max digests.
func TestRedisPayloadsBounded(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis: %v (CI=true: Redis is required)", err)
		}
		t.Skipf("no redis: %v", err)
	}
	var b [6]byte
	rand.Read(b[:])
	prefix := "lctest:" + hex.EncodeToString(b[:]) + ":"
	client, err := redisfrontier.NewClient(rdb, redisfrontier.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	})
	p := redisPayloads{client: client, max: 3}
	date := time.Date(2026, 11, 23, 1, 2, 3, 4000, time.UTC)
	for i := range 5 {
		_, found, err := p.TestAndAdd(ctx, fmt.Sprintf("sha1:D%d", i), storage.Revisit{TargetURI: fmt.Sprintf("http://x/%d", i), Date: date})
		if err != nil || found {
			t.Fatalf("add %d: found %v, %v", i, found, err)
		}
	}
	for _, i := range []int{4, 3, 2, 0} {
		got, found, err := p.TestAndAdd(ctx, fmt.Sprintf("sha1:D%d", i), storage.Revisit{TargetURI: "http://y/", Date: date})
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= 2; found != want || want && (got.TargetURI != fmt.Sprintf("http://x/%d", i) || !got.Date.Equal(date)) {
			t.Errorf("digest %d: found %v %+v, want %v", i, found, got, want)
		}
	}
	if n, err := rdb.LLen(ctx, prefix+"{payloads}:order").Result(); err != nil || n != 3 {
		t.Errorf("order list holds %d (%v), want 3", n, err)
	}
}
