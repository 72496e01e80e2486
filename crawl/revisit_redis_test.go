package crawl

import (
	"context"
	"crypto/rand"
	"encoding/binary"
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
	ctx := context.Background()
	rdb, client, prefix := payloadsRedis(t)
	p := redisPayloads{client: client, max: 3}
	date := time.Date(2026, 11, 23, 1, 2, 3, 4000, time.UTC)
	for i := range 5 {
		_, found, err := p.TestAndAdd(ctx, fmt.Sprintf("sha1:D%d", i), storage.Revisit{TargetURI: fmt.Sprintf("http://x/%d", i), Date: date, RecordID: fmt.Sprintf("<urn:uuid:%d>", i)})
		if err != nil || found {
			t.Fatalf("add %d: found %v, %v", i, found, err)
		}
	}
	for _, i := range []int{4, 3, 2, 0} {
		got, found, err := p.TestAndAdd(ctx, fmt.Sprintf("sha1:D%d", i), storage.Revisit{TargetURI: "http://y/", Date: date})
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= 2; found != want || want && (got.TargetURI != fmt.Sprintf("http://x/%d", i) || !got.Date.Equal(date) || got.RecordID != fmt.Sprintf("<urn:uuid:%d>", i)) {
			t.Errorf("digest %d: found %v %+v, want %v", i, found, got, want)
		}
	}
	if n, err := rdb.LLen(ctx, prefix+"{payloads}:w:order").Result(); err != nil || n != 3 {
		t.Errorf("order list holds %d (%v), want 3", n, err)
	}
}

// An index of the previous format (digests of decoded bodies under
// {payloads}:d: and {payloads}:order) is not read, and is deleted as the
// new one grows.
func TestRedisPayloadsPreviousFormat(t *testing.T) {
	ctx := context.Background()
	rdb, client, prefix := payloadsRedis(t)
	// The previous layout: value = 8 zero bytes | date | URI.
	date := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	const old = 40
	for i := range old {
		key := fmt.Sprintf("%s{payloads}:d:sha1:OLD%d", prefix, i)
		v := binary.BigEndian.AppendUint64(make([]byte, 8), uint64(date.UnixNano()))
		v = append(v, fmt.Sprintf("http://old/%d", i)...)
		if err := rdb.Set(ctx, key, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.RPush(ctx, prefix+"{payloads}:order", key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	p := redisPayloads{client: client, max: -1}
	calls := 0
	for i := range old {
		_, found, err := p.TestAndAdd(ctx, fmt.Sprintf("sha1:OLD%d", i), storage.Revisit{TargetURI: "http://new/", Date: date})
		calls++
		if err != nil || found {
			t.Fatalf("old digest %d: found %v, %v", i, found, err)
		}
		if n, _ := rdb.LLen(ctx, prefix+"{payloads}:order").Result(); n == 0 {
			break
		}
	}
	if want := (old + redisPayloadDropPerCall - 1) / redisPayloadDropPerCall; calls != want {
		t.Errorf("old index gone after %d calls, want %d", calls, want)
	}
	if keys, _ := rdb.Keys(ctx, prefix+"{payloads}:d:*").Result(); len(keys) != 0 {
		t.Errorf("%d keys of the previous index left", len(keys))
	}
}

// payloadsRedis returns a client of the Redis at 127.0.0.1:6379 and a
// redisfrontier client under a fresh key prefix, whose keys are deleted
// when the test ends; without Redis the test is skipped (failed under
// CI=true).
func payloadsRedis(t *testing.T) (*redis.Client, *redisfrontier.Client, string) {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
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
	return rdb, client, prefix
}
