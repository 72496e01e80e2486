package redisfrontier

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/syncbuf"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/internal/redistest"
)

// beatLoop beats as a crawl worker does (crawl.startHeartbeat): every hb
// after the last beat ended, each beat giving up after 3hb, until ctx
// ends.
func beatLoop(ctx context.Context, f *Frontier, hb time.Duration) {
	for ctx.Err() == nil {
		bctx, cancel := context.WithTimeout(ctx, 3*hb)
		f.Beat(bctx, Heartbeat{Name: "survivor", InFlight: f.InFlight()}, 3*hb)
		cancel()
		sleep(ctx, hb)
	}
}

// TestDeadWorkerReclaimedAcrossOutage: a worker holding a host dies, and
// half a second later Redis (AOF, fsync always) is killed and started
// again 10s later. With the crawl's default heartbeat (2s, liveness 6s),
// the two survivors reclaim the dead worker's host within 15s of its
// death, and neither survivor's own lease is taken: exactly one lease is
// reaped. Each survivor logs the outage once at WARN when it starts and
// once when it ends, and go-redis's lines reach the same logger.
func TestDeadWorkerReclaimedAcrossOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10s Redis outage: skipped in -short")
	}
	const hb, outage = 2 * time.Second, 10 * time.Second
	r := redistest.Start(t, 0, "--appendonly", "yes", "--appendfsync", "always")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := Options{Politeness: frontier.PolitenessOptions{Delay: -1}, Lease: 2 * time.Minute, Poll: 100 * time.Millisecond}
	logs := make([]*syncbuf.Buffer, 3)
	workers := make([]*Frontier, 3)
	for i := range workers {
		logs[i] = &syncbuf.Buffer{}
		c, err := Dial(ctx, Config{URL: "redis://" + r.Addr(), Prefix: "outage:", ConnectTimeout: 5 * time.Second,
			Logger: slog.New(slog.NewJSONHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		workers[i] = openTestFrontier(t, c, opts)
	}
	victim, survivors := workers[0], workers[1:]
	g := graph{n: 3}
	if _, err := victim.AddSeeds(ctx, g.seeds()); err != nil {
		t.Fatal(err)
	}
	held, err := victim.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := victim.Beat(ctx, Heartbeat{Name: "victim", InFlight: 1}, 3*hb); err != nil {
		t.Fatal(err)
	}
	bctx, stopBeats := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopBeats(); wg.Wait() }()
	for _, s := range survivors {
		if _, err := s.Next(ctx); err != nil { // each holds a host of its own
			t.Fatal(err)
		}
		wg.Go(func() { beatLoop(bctx, s, hb) })
	}
	time.Sleep(2 * hb) // the survivors have beaten a while
	died := time.Now() // the victim beats no more
	got := make(chan time.Time, len(survivors))
	for _, s := range survivors {
		wg.Go(func() {
			e, err := s.Next(bctx)
			if err == nil && e.URL == held.URL {
				got <- time.Now()
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	r.Kill()
	time.Sleep(outage)
	r.Start()
	var took time.Duration
	select {
	case at := <-got:
		took = at.Sub(died)
	case <-time.After(30 * time.Second):
		t.Fatalf("the dead worker's host was not reclaimed %v after its death", time.Since(died))
	}
	t.Logf("the dead worker's host was reclaimed %v after its death (outage %v, from %v after it)", took.Round(time.Millisecond), outage, 500*time.Millisecond)
	if took > 15*time.Second {
		t.Errorf("reclaimed %v after the death, want within 15s", took)
	}
	st, err := ReadStats(ctx, survivors[0].c)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reaped != 1 || st.Requeued != 1 {
		t.Errorf("reaped %d, requeued %d; want 1 and 1 (the victim's lease only, no survivor's)", st.Reaped, st.Requeued)
	}
	goRedis := 0 // go-redis dials from its own goroutines: its lines go to the newest Client's logger
	for i, l := range logs[1:] {
		var began, ended int
		for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
			var rec struct {
				Level, Msg string
				Outage     time.Duration // slog's JSON: nanoseconds
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("survivor %d: log line is not JSON: %q", i, line)
			}
			switch {
			case rec.Level == "WARN" && strings.HasPrefix(rec.Msg, "redis unreachable"):
				began++
			case rec.Level == "WARN" && rec.Msg == "redis reachable again":
				ended++
				// Seen from the first call that failed (go-redis
				// retries a call for about a second first) to the first
				// that succeeded.
				if rec.Outage < outage-3*time.Second || rec.Outage > outage+5*time.Second {
					t.Errorf("survivor %d: outage logged as %v, want about %v", i, rec.Outage, outage)
				}
			case strings.HasPrefix(rec.Msg, "go-redis: "):
				goRedis++
			}
		}
		if began != 1 || ended != 1 {
			t.Errorf("survivor %d: outage logged %d times at its start and %d at its end, want once each:\n%s", i, began, ended, l)
		}
	}
	if goRedis == 0 {
		t.Error("no line of go-redis reached the survivors' loggers")
	}
}

// TestDialUnreachable: Dial gives up after ConnectTimeout with an error
// wrapping ErrUnreachable that names the address and why, never the
// password.
func TestDialUnreachable(t *testing.T) {
	addr := func() string { // a port nothing listens on
		r := redistest.Start(t, 0)
		a := r.Addr()
		r.Kill()
		return a
	}()
	start := time.Now()
	_, err := Dial(context.Background(), Config{URL: "redis://:hunter2@" + addr, ConnectTimeout: 1500 * time.Millisecond})
	took := time.Since(start)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "refused") ||
		strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Dial of a closed port = %v; want ErrUnreachable naming %s and the refused connection, without the password", err, addr)
	}
	if took < 1500*time.Millisecond || took > 3*time.Second {
		t.Errorf("Dial gave up after %v, want about ConnectTimeout (1.5s)", took)
	}
}
