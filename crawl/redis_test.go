package crawl

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRedisLeaseDefault(t *testing.T) {
	for _, tc := range []struct{ fetch, want time.Duration }{
		{30 * time.Second, 2 * time.Minute},
		{time.Minute, 2 * time.Minute},
		{5 * time.Minute, 10 * time.Minute},
	} {
		o := Options{Dir: t.TempDir(), Redis: &RedisOptions{URL: "redis://127.0.0.1:1"}}
		o.Fetch.FetchTimeout = tc.fetch
		o.EnsureDefaults()
		if got := o.Redis.Lease; got != tc.want {
			t.Errorf("lease for a fetch timeout of %v = %v, want %v", tc.fetch, got, tc.want)
		}
	}
}

func TestRedisOptionsInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    RedisOptions
		seen Seen
	}{
		{"no URL", RedisOptions{}, nil},
		// A lease no longer than a fetch would hand live workers' entries out twice.
		{"lease within the fetch timeout", RedisOptions{URL: "redis://x", Lease: 10 * time.Second}, nil},
		{"local seen-set", RedisOptions{URL: "redis://x"}, exactSeen{}},
		{"worker name with a slash", RedisOptions{URL: "redis://x", Worker: "../w"}, nil},
	} {
		o := Options{Dir: t.TempDir(), Redis: &tc.r, Seen: tc.seen}
		o.Fetch.FetchTimeout = 10 * time.Second
		o.EnsureDefaults()
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidOptions", tc.name, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
		{"redis://user:secret@host:6379/1", "redis://user:xxxxx@host:6379/1"},
		{"rediss://:p@ss@host:6380", "rediss://:xxxxx@host:6380"},
		{"redis://user@host", "redis://user@host"},
		{"host:6379", "host:6379"},
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWorkerName(t *testing.T) {
	got := workerName()
	if !strings.HasSuffix(got, fmt.Sprintf("-%d", os.Getpid())) {
		t.Errorf("workerName() = %q, want it to end in the pid", got)
	}
	if !validWorkerName(got) {
		t.Errorf("workerName() = %q holds characters unsafe in a file name", got)
	}
}
