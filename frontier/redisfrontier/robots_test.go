package redisfrontier

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
)

// fakeRobots answers robots.txt fetches with a fixed status and body and
// counts them.
type fakeRobots struct {
	status int
	body   string
	calls  atomic.Int32
}

func (f *fakeRobots) FetchRobots(_ context.Context, _ string) (*fetch.Robots, *fetch.Result, error) {
	f.calls.Add(1)
	res := &fetch.Result{Status: f.status, Body: []byte(f.body)}
	switch {
	case f.status >= 500:
		return fetch.DisallowAllRobots(), res, errors.New("server error")
	case f.status >= 400:
		return fetch.AllowAllRobots(), res, nil
	}
	rb, _ := fetch.ParseRobots(res.Body)
	return rb, res, nil
}

func TestSharedRobots(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		body        string
		wantFetches int32
		wantPrivate bool // /private allowed
	}{
		{"2xx shared", 200, "User-agent: *\nDisallow: /private\n", 1, false},
		{"4xx shared as allow-all", 404, "", 1, true},
		{"5xx not shared", 503, "", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := testClient(t)
			src := &fakeRobots{status: tt.status, body: tt.body}
			// Two workers with their own SharedRobots over one Redis.
			for w := 0; w < 2; w++ {
				rb, _, _ := NewSharedRobots(c, src, 0).FetchRobots(ctx, "http://site.test/some/page")
				if rb == nil {
					t.Fatalf("worker %d: nil robots", w)
				}
				if got := rb.Allowed("layercrawl", "/private"); got != tt.wantPrivate {
					t.Errorf("worker %d: Allowed(/private) = %v, want %v", w, got, tt.wantPrivate)
				}
				if !rb.Allowed("layercrawl", "/public") && tt.status < 500 {
					t.Errorf("worker %d: /public disallowed", w)
				}
			}
			if got := src.calls.Load(); got != tt.wantFetches {
				t.Errorf("robots.txt fetched %d times by two workers, want %d", got, tt.wantFetches)
			}
		})
	}
}

func TestDecodeRobots(t *testing.T) {
	tests := []struct {
		v      string
		ok     bool
		public bool
	}{
		{robotsAllow, true, true},
		{robotsBody + "User-agent: *\nDisallow: /\n", true, false},
		{robotsBody, true, true},
		{"garbage", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		rb, ok := decodeRobots(tt.v)
		if ok != tt.ok {
			t.Errorf("decodeRobots(%q) ok = %v, want %v", tt.v, ok, tt.ok)
			continue
		}
		if ok && rb.Allowed("x", "/public") != tt.public {
			t.Errorf("decodeRobots(%q): /public allowed = %v, want %v", tt.v, !tt.public, tt.public)
		}
	}
}

func FuzzDecodeRobots(f *testing.F) {
	f.Add(robotsAllow)
	f.Add(robotsBody + "User-agent: *\nDisallow: /x\nCrawl-delay: 3\n")
	f.Add("body")
	f.Fuzz(func(t *testing.T, v string) {
		rb, ok := decodeRobots(v)
		if ok && rb == nil {
			t.Fatalf("decodeRobots(%q) ok with nil robots", v)
		}
	})
}

// TestRobotsWaits: the first worker to see a site's robots.txt fail
// records when; the others get that time, until the site answers (Clear)
// or the record expires.
func TestRobotsWaits(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	a, b := NewRobotsWaits(c), NewRobotsWaits(c)
	t0 := time.UnixMilli(time.Now().UnixMilli())
	got, err := a.Since(ctx, "http://x.test:80", t0, time.Minute)
	if err != nil || !got.Equal(t0) {
		t.Fatalf("first Since = %v, %v; want %v", got, err, t0)
	}
	if got, err := b.Since(ctx, "http://x.test:80", t0.Add(time.Second), time.Minute); err != nil || !got.Equal(t0) {
		t.Errorf("second worker's Since = %v, %v; want the first failure %v", got, err, t0)
	}
	if got, err := b.Since(ctx, "http://y.test:80", t0.Add(time.Second), time.Minute); err != nil || !got.Equal(t0.Add(time.Second)) {
		t.Errorf("another site's Since = %v, %v; want its own", got, err)
	}
	if err := b.Clear(ctx, "http://x.test:80"); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Since(ctx, "http://x.test:80", t0.Add(2*time.Second), time.Minute); err != nil || !got.Equal(t0.Add(2*time.Second)) {
		t.Errorf("Since after Clear = %v, %v; want a new run from now", got, err)
	}
	if got, err := a.Since(ctx, "http://z.test:80", t0, 50*time.Millisecond); err != nil || !got.Equal(t0) {
		t.Fatal(got, err)
	}
	time.Sleep(100 * time.Millisecond)
	if got, err := a.Since(ctx, "http://z.test:80", t0.Add(3*time.Second), time.Minute); err != nil || !got.Equal(t0.Add(3*time.Second)) {
		t.Errorf("Since after the record expired = %v, %v; want a new run", got, err)
	}
	if err := c.rdb.Set(ctx, a.key("http://bad.test:80"), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Since(ctx, "http://bad.test:80", t0, time.Minute); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Since over a corrupt record: %v, want ErrCorrupt", err)
	}
}
