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
	c, hook := lostReplyClient(t, nextScript)
	hook.drop.Store(1)
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
	if keys, err := c.rdb.Keys(ctx, f.key("n:")+"*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("request keys left after the crawl: %v, %v", keys, err)
	}
}

// lostReplyClient returns a Client whose calls of script lose their
// replies while the returned hook's drop is above 0 (it starts at 0).
func lostReplyClient(t *testing.T, script *redis.Script) (*Client, *lostReplies) {
	t.Helper()
	hook := &lostReplies{script: script}
	return hookedClient(t, hook), hook
}

// hookedClient returns a Client with hook on its connection and short
// retry back-offs.
func hookedClient(t *testing.T, hook redis.Hook) *Client {
	t.Helper()
	rdb := testRedis(t)
	rdb.AddHook(hook)
	c, err := NewClient(rdb, Config{Prefix: testPrefix(t, rdb), MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestScheduleLostReplies: the continuous crawl's scripts run again when
// their reply is lost (Redis gone after running one, before its reply),
// and the retry neither loses nor doubles anything: Done's completion
// with a Schedule is guarded by the lease's token (the retry finds the
// lease ended and changes nothing), a promotion moves only the URLs
// still due (the retry finds none), and a budget slot taken by the lost
// call is skipped, so the budget is under-spent, never over.
func TestScheduleLostReplies(t *testing.T) {
	ctx := context.Background()
	// scheduleAll hands out the seeds of g and completes each with a
	// Schedule due in an hour; lose, if set, runs before the first Done.
	scheduleAll := func(t *testing.T, f *Frontier, clock *testClock, g graph, lose func()) {
		t.Helper()
		if _, err := f.AddSeeds(ctx, g.seeds()); err != nil {
			t.Fatal(err)
		}
		for i := range g.n {
			e, ok := nextWithin(t, f, 2*time.Second)
			if !ok {
				t.Fatalf("seed %d not handed out", i)
			}
			if i == 0 && lose != nil {
				lose()
			}
			sc := &frontier.Schedule{Due: clock.Now().Add(time.Hour), Record: []byte("rec " + e.URL)}
			if err := f.Done(ctx, e, frontier.Outcome{Fetched: true, Schedule: sc}); err != nil {
				t.Fatalf("Done of %s: %v", e.URL, err)
			}
		}
	}
	// dueOnce checks that every URL of g is handed out exactly once
	// when due, then nothing.
	dueOnce := func(t *testing.T, f *Frontier, g graph) {
		t.Helper()
		got := map[string]int{}
		for range g.n {
			e, ok := nextWithin(t, f, 2*time.Second)
			if !ok {
				t.Fatalf("handed out %v when due, want all %d URLs", got, g.n)
			}
			got[e.URL]++
		}
		if e, ok := nextWithin(t, f, 150*time.Millisecond); ok {
			t.Fatalf("handed out %s again after %v: a URL promoted twice", e.URL, got)
		}
		for _, u := range g.seeds() {
			if got[u] != 1 {
				t.Errorf("%s handed out %d times when due, want once", u, got[u])
			}
		}
	}

	t.Run("done", func(t *testing.T) {
		c, hook := lostReplyClient(t, doneScript)
		clock := newTestClock()
		f := openTestFrontier(t, c, continuousOptions(clock.Now))
		g := graph{n: 3}
		scheduleAll(t, f, clock, g, func() { hook.drop.Store(1) })
		if got := hook.lost.Load(); got != 1 {
			t.Fatalf("%d replies lost, want 1: the fault was not injected", got)
		}
		for _, u := range g.seeds() {
			_, rec, ok, err := f.ScheduleRecord(ctx, u)
			if err != nil || !ok || string(rec) != "rec "+u {
				t.Errorf("schedule of %s = %q, %v, %v; want its record", u, rec, ok, err)
			}
		}
		st, err := f.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Scheduled != 3 || st.Done != 3 || st.Leased != 0 || st.Pages != 3 {
			t.Errorf("Stats = %+v; want 3 scheduled, 3 done, 3 pages, none leased (a completion counted twice or a lease left)", st)
		}
		clock.Advance(time.Hour)
		dueOnce(t, f, g)
	})

	t.Run("promote", func(t *testing.T) {
		c, hook := lostReplyClient(t, promoteScript)
		clock := newTestClock()
		f := openTestFrontier(t, c, continuousOptions(clock.Now))
		g := graph{n: 3}
		scheduleAll(t, f, clock, g, nil)
		clock.Advance(time.Hour)
		hook.drop.Store(1)
		dueOnce(t, f, g)
		if got := hook.lost.Load(); got != 1 {
			t.Fatalf("%d replies lost, want 1: the fault was not injected", got)
		}
		if st, err := f.Stats(ctx); err != nil || st.Promoted != 3 {
			t.Errorf("Stats = %+v, %v; want 3 promoted", st, err)
		}
	})

	t.Run("pace", func(t *testing.T) {
		c, hook := lostReplyClient(t, paceScript)
		f := openTestFrontier(t, c, continuousOptions(time.Now))
		const every = 200 * time.Millisecond
		_, s0, err := f.pace(ctx, every)
		if err != nil {
			t.Fatal(err)
		}
		hook.drop.Store(1)
		_, s2, err := f.pace(ctx, every)
		if err != nil {
			t.Fatal(err)
		}
		if got := hook.lost.Load(); got != 1 {
			t.Fatalf("%d replies lost, want 1: the fault was not injected", got)
		}
		// The lost call's slot (s0+every at the earliest) is skipped.
		if d := time.Duration(s2-s0) * time.Microsecond; d < 2*every {
			t.Errorf("slot after a lost reply %v after the one before, want at least %v (the lost call's slot skipped, never reused)", d, 2*every)
		}
	})
}
