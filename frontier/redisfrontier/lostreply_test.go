package redisfrontier

import (
	"context"
	"errors"
	"io"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier"
)

// lostReplies is a go-redis hook that lets Redis run the first `drop`
// calls of one script and then reports a broken connection instead of
// their replies: what a worker sees when Redis goes away after running a
// command and before its reply arrives.
type lostReplies struct {
	script *redis.Script
	drop   atomic.Int32 // calls whose replies are still to be lost
	lost   atomic.Int32 // replies lost so far
}

func (h *lostReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *lostReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && h.matches(cmd) && h.drop.Add(-1) >= 0 {
			h.lost.Add(1)
			cmd.SetErr(io.ErrUnexpectedEOF)
			return io.ErrUnexpectedEOF
		}
		return err
	}
}

func (h *lostReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *lostReplies) matches(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	name, _ := args[0].(string)
	body, _ := args[1].(string)
	switch strings.ToLower(name) {
	case "evalsha":
		return body == h.script.Hash()
	case "eval":
		return body == nextScriptSource
	}
	return false
}

// TestNextRetryAfterLostReply guards the cause of a 121 s run of
// TestCrawlSurvivesRedisRestart: Next's script ran in Redis (leasing a host
// and popping its head), its reply was lost with the connection, and the
// retry leased a second host. The first host then stayed leased to nobody,
// with its entry out, until the lease expired (2 minutes). Next is now
// idempotent per lease token: the retry returns the lease the first call
// took, so exactly one host is leased and one entry served.
func TestNextRetryAfterLostReply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := testRedis(t)
	hook := &lostReplies{script: nextScript}
	hook.drop.Store(1)
	rdb.AddHook(hook)
	c, err := NewClient(rdb, Config{Prefix: testPrefix(t, rdb), MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f := openTestFrontier(t, c, Options{Politeness: frontier.PolitenessOptions{Delay: -1}, Lease: time.Hour, Poll: 10 * time.Millisecond})
	g := graph{n: 3}
	if _, err := f.AddSeeds(ctx, g.seeds()); err != nil { // three hosts
		t.Fatal(err)
	}
	e, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := hook.lost.Load(); got != 1 {
		t.Fatalf("%d replies lost, want 1: the fault was not injected", got)
	}
	st, err := f.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leased != 1 || st.Served != 1 || st.Queued != 2 {
		t.Errorf("after a retried Next: %d hosts leased, %d entries served, %d queued; want 1, 1, 2 (a lease was taken twice)",
			st.Leased, st.Served, st.Queued)
	}
	if want := map[string]int{f.opts.Seen.Worker(): 1}; !maps.Equal(st.Holders, want) {
		t.Errorf("lease holders %v, want %v", st.Holders, want)
	}
	// The whole graph is crawled without waiting for the hour-long lease.
	got := []string{e.URL}
	if err := f.Done(ctx, e, frontier.Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	for {
		e, err := f.Next(ctx)
		if errors.Is(err, frontier.ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatalf("Next after %v: %v (a host stayed leased)", got, err)
		}
		got = append(got, e.URL)
		if err := f.Done(ctx, e, frontier.Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 3 {
		t.Errorf("fetched %v, want the three seeds once each", got)
	}
	// Done forgets the lease's request key.
	if keys, err := rdb.Keys(ctx, f.key("n:")+"*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("request keys left after the crawl: %v, %v", keys, err)
	}
}
