package redisfrontier

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
)

// TestBeatReclaimsDeadWorkersLeases: worker a holds a host on a one-minute
// lease and stops beating; once its liveness (300ms) expires, b's next beat
// expires a's lease and b's Next gets the entry at once, not a minute
// later. a's late Done is fenced: it queues nothing. A worker that keeps
// beating is never reaped.
func TestBeatReclaimsDeadWorkersLeases(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	opts := Options{Politeness: frontier.PolitenessOptions{Delay: -1}, Lease: time.Minute, Poll: 10 * time.Millisecond}
	a := openTestFrontier(t, c, opts)
	b := openTestFrontier(t, c, opts)
	live := openTestFrontier(t, c, opts)
	const ttl = 300 * time.Millisecond
	g := graph{n: 3}
	if _, err := a.AddSeeds(ctx, g.seeds()[:2]); err != nil {
		t.Fatal(err)
	}
	e, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	el, err := live.Next(ctx) // the other seed's host, held by a live worker
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*Frontier{a, b, live} {
		if _, err := f.Beat(ctx, Heartbeat{Name: "w", Pages: 1, InFlight: f.InFlight()}, ttl); err != nil {
			t.Fatal(err)
		}
	}
	if ws, err := b.Workers(ctx); err != nil || len(ws) != 3 || !ws[0].Alive || !ws[2].Alive {
		t.Fatalf("workers after the beats: %+v, %v; want 3 alive", ws, err)
	}
	// a stops beating; live keeps beating, and one of live's beats or
	// b's finds a gone and expires its lease (once live has been alive
	// for two liveness periods: it may reap only then).
	reaped := 0
	for end := time.Now().Add(2*ttl + 150*time.Millisecond); time.Now().Before(end); time.Sleep(ttl / 4) {
		n, err := live.Beat(ctx, Heartbeat{Name: "live", InFlight: 1}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		reaped += n
	}
	n, err := b.Beat(ctx, Heartbeat{Name: "b"}, ttl)
	if err != nil || reaped+n != 1 {
		t.Fatalf("the beats expired %d leases (%v), want a's one", reaped+n, err)
	}
	start := time.Now()
	e2, err := b.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e2.URL != e.URL || time.Since(start) > time.Second {
		t.Fatalf("b got %q after %v, want a's %q at once", e2.URL, time.Since(start), e.URL)
	}
	// a wakes up: its Done is fenced and queues nothing.
	if err := a.Done(ctx, e, frontier.Outcome{Fetched: true, Links: []string{g.url(2)}}); err != nil {
		t.Fatalf("late Done: %v", err)
	}
	for _, d := range []struct {
		f *Frontier
		e frontier.Entry
	}{{b, e2}, {live, el}} {
		if err := d.f.Done(ctx, d.e, frontier.Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Next(ctx); !errors.Is(err, frontier.ErrExhausted) {
		t.Fatalf("Next after both entries = %v, want ErrExhausted (the fenced Done queued nothing)", err)
	}
	st, err := b.Stats(ctx)
	if err != nil || st.Reaped != 1 || st.Requeued != 1 || st.Done != 2 {
		t.Errorf("Stats = %+v, %v; want Reaped 1, Requeued 1, Done 2", st, err)
	}
	ws, err := ReadWorkers(ctx, c)
	if err != nil || len(ws) != 3 || ws[2].ID != a.opts.Seen.Worker() || ws[2].Alive || !ws[0].Alive || !ws[1].Alive {
		t.Errorf("workers %+v, %v; want b and live alive, a gone and last", ws, err)
	}
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if ws, _ := ReadWorkers(ctx, c); len(ws) != 2 {
		t.Errorf("after b left: %+v, want 2 workers", ws)
	}
	if _, err := a.Beat(ctx, Heartbeat{}, time.Millisecond); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Beat with a 1ms TTL = %v, want ErrInvalidOptions", err)
	}
}

// TestFrontierWorkersLiveness: three worker processes of four goroutines
// crawl a 3,000-page, 3-host graph on one-minute leases, beating every
// 100ms (liveness 300ms). A worker killed with SIGKILL holds up nobody for
// the lease's minute: the survivors reclaim its hosts and finish within
// seconds. A worker stopped with SIGSTOP for 2s and then continued loses
// no page, and the pages fetched twice are at most its in-flight entries.
func TestFrontierWorkersLiveness(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process crawls: skipped in -short")
	}
	const pages, goroutines = 3000, 4
	for _, tc := range []struct {
		name string
		hurt func(p *os.Process) error
	}{
		{"SIGKILL", func(p *os.Process) error { return p.Signal(syscall.SIGKILL) }},
		{"SIGSTOP", func(p *os.Process) error {
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				return err
			}
			time.Sleep(2 * time.Second)
			return p.Signal(syscall.SIGCONT)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t)
			cmds, logs := startWorkers(t, 3, "LCREDIS_URL=redis://"+testAddr, "LCREDIS_PREFIX="+c.prefix,
				"LCREDIS_LEASE=1m", "LCREDIS_HEARTBEAT=100ms", "LCREDIS_PAGES="+strconv.Itoa(pages), "LCREDIS_GOROUTINES="+strconv.Itoa(goroutines))
			waitForLines(t, logs[0], 300)
			hurt := time.Now()
			if err := tc.hurt(cmds[0].Process); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make([]error, len(cmds))
			for i, cmd := range cmds {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = cmd.Wait() }()
			}
			wg.Wait()
			took := time.Since(hurt)
			for i, err := range errs[1:] {
				if err != nil {
					t.Fatalf("worker %d: %v", i+1, err)
				}
			}
			// The leases last a minute: finishing well within it means the
			// hosts came back through the beats.
			if took > 20*time.Second {
				t.Errorf("the crawl ended %v after the %s, want well within the one-minute lease", took, tc.name)
			}
			count := readFetchLogs(t, logs, pages)
			_, twice := checkFetchCounts(t, count, false)
			if twice > goroutines {
				t.Errorf("%d pages fetched twice, want at most worker 0's %d in flight", twice, goroutines)
			}
			st, err := ReadStats(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: crawl ended %v after it; pages fetched twice %d (limit %d); leases reaped %d, entries requeued %d, staged completions finished %d",
				tc.name, took.Round(time.Millisecond), twice, goroutines, st.Reaped, st.Requeued, st.Reclaimed)
		})
	}
}
