package redisfrontier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"minimal", Config{URL: "redis://127.0.0.1:6379"}, true},
		{"no URL", Config{}, false},
		{"brace in prefix", Config{URL: "redis://x:1", Prefix: "a{b"}, false},
		{"backoff inverted", Config{URL: "redis://x:1", MinBackoff: time.Second, MaxBackoff: time.Millisecond}, false},
	}
	for _, tt := range tests {
		cfg := tt.cfg
		cfg.EnsureDefaults()
		err := cfg.Validate()
		if got := err == nil; got != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v does not wrap ErrConfig", tt.name, err)
		}
	}
}

func TestNewUniversal(t *testing.T) {
	tests := []struct {
		url                string
		cluster            bool
		wantCluster        bool
		wantUser, wantPass string
		wantTLS            bool
		wantAddrs          int
	}{
		{url: "redis://127.0.0.1:6379/2"},
		{url: "redis://alice:s3cret@db.example:6380", wantUser: "alice", wantPass: "s3cret"},
		{url: "rediss://:pw@db.example:6380", wantPass: "pw", wantTLS: true},
		{url: "redis://a:7000?addr=b:7001&addr=c:7002", wantCluster: true, wantAddrs: 3},
		{url: "rediss://u:p@a:7000", cluster: true, wantCluster: true, wantUser: "u", wantPass: "p", wantTLS: true, wantAddrs: 1},
	}
	for _, tt := range tests {
		rdb, err := newUniversal(Config{URL: tt.url, Cluster: tt.cluster})
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		switch c := rdb.(type) {
		case *redis.ClusterClient:
			o := c.Options()
			if !tt.wantCluster || o.Username != tt.wantUser || o.Password != tt.wantPass || (o.TLSConfig != nil) != tt.wantTLS || len(o.Addrs) != tt.wantAddrs {
				t.Errorf("%s: cluster client user %q pass %q tls %v addrs %v", tt.url, o.Username, o.Password, o.TLSConfig != nil, o.Addrs)
			}
		case *redis.Client:
			o := c.Options()
			if tt.wantCluster || o.Username != tt.wantUser || o.Password != tt.wantPass || (o.TLSConfig != nil) != tt.wantTLS {
				t.Errorf("%s: client user %q pass %q tls %v", tt.url, o.Username, o.Password, o.TLSConfig != nil)
			}
		}
		rdb.Close()
	}
	for _, bad := range []string{"http://x:1", "redis://a:b:c:d", "::"} {
		if _, err := newUniversal(Config{URL: bad}); !errors.Is(err, ErrConfig) {
			t.Errorf("newUniversal(%q) error = %v, want ErrConfig", bad, err)
		}
	}
}

func TestTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{io.EOF, true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{fmt.Errorf("wrapped: %w", io.ErrUnexpectedEOF), true},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{redis.Nil, false},
		{redis.ErrClosed, false},
		{redisError("LOADING Redis is loading the dataset in memory"), true},
		{redisError("CLUSTERDOWN The cluster is down"), true},
		{redisError("ERR wrong number of arguments"), false},
		{redisError("LCLOST seen-set shard marker missing"), false},
		{redisError("NOSCRIPT No matching script"), false},
		// A reply of the wrong shape would come back the same.
		{fmt.Errorf("%w: next replied 3 elements, want 5", ErrCorrupt), false},
	}
	for _, tt := range tests {
		if got := Transient(tt.err); got != tt.want {
			t.Errorf("Transient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

// TestRetryGivesUpWithContext: against an address nobody listens on, a
// call retries until its context ends and then reports both.
func TestRetryGivesUpWithContext(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Dial(ctx, Config{URL: "redis://" + addr, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial to a closed port = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("gave up after %v, before the context ended", d)
	}
}
