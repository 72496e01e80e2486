package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/syncbuf"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/internal/testsite"
	"github.com/layercrawl/layercrawl/storage"
)

var leaseIDRE = regexp.MustCompile(`lease_id=([0-9a-f]+)`)

// TestCrawlRedisWorkerKilled is the distributed mode's end-to-end test: three "crawler
// crawl --redis" worker processes crawl the generated 5,000-page, 3-host
// site over HTTP, and one of them is killed with SIGKILL mid-crawl while it
// holds host leases. The other two finish the crawl.
//
// Coverage must be exact: the union of the three crawl logs is the site's
// page list and robots.txt refusals, and the servers saw no other request.
//
// Duplicates: a host is out to one worker at a time, so the killed worker
// had at most min(--concurrency, hosts) = 3 entries in flight: those of the
// leases it held. The test freezes the worker (SIGSTOP), waits for Redis to
// run whatever it had sent, and reads its leases from Redis (`held`) before
// killing it. Each lease, on expiry, is recovered once by a live worker:
// re-queued if the worker had not staged its completion (the page may have
// been fetched: one duplicate at most), or finished from the stage (no
// refetch). So the test asserts requeued+reclaimed == held (no live
// worker's lease ever expired) and duplicate fetches <= requeued <= held <=
// 3, in the logs and on the servers.
func TestCrawlRedisWorkerKilled(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages in child processes, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the engine's concurrency is race-tested in package crawl")
	}
	if testing.Short() {
		t.Skip("distributed crawl with a killed worker skipped in -short mode")
	}
	rdb, prefix := statusRedis(t) // skips without Redis unless CI=true; deletes the keys after
	const (
		workers     = 3
		concurrency = 4
	)
	undisturbed := undisturbedCrawlTime(t, workers, concurrency)
	site, hosts := testsite.Start(t, 5000)
	wantFetched, wantDenied := site.Expected()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Roots())
	start := time.Now()
	cmds, outs, errs := startVictimCrawl(t, workers, concurrency, seeds, out, prefix)

	victim := cmds[0]
	held, victimID := killHoldingLeases(t, rdb, prefix, victim, errs[0], out, uint64(len(wantFetched))*2/5)
	killed := time.Now()
	// crawler status names the dead worker's leases until they expire.
	if code, stdout, stderr := runStatusCmd(t, "--redis", "redis://"+statusTestRedis, "--redis-prefix", prefix); code != 0 ||
		!strings.Contains(stdout, fmt.Sprintf("%s %d", victimID, held)) {
		t.Errorf("status after the kill: exit %d, want the victim %s with %d leases:\n%s%s", code, victimID, held, stdout, stderr)
	}
	// How long the dead worker's hosts stayed out: until a beat of a
	// survivor ended its leases (docs/DISTRIBUTED.md quotes this line).
	rc, err := redisfrontier.NewClient(rdb, redisfrontier.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := redisfrontier.ReadStats(context.Background(), rc)
		if err != nil {
			t.Fatal(err)
		}
		if st.Reaped >= uint64(held) {
			t.Logf("the victim's %d leases were ended %v after the kill", held, time.Since(killed).Round(10*time.Millisecond))
			break
		}
		if time.Since(killed) > time.Minute {
			t.Fatalf("the victim's leases were not ended a minute after the kill (reaped %d)", st.Reaped)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ws, ok := victim.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("victim did not die by SIGKILL: %v\nstderr:\n%s", victim.ProcessState, errs[0])
	}
	killedAfter := time.Since(start)
	for i, cmd := range cmds[1:] {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\nstdout:\n%s\nstderr:\n%s", i+1, err, outs[i+1], errs[i+1])
		}
		if !strings.Contains(outs[i+1].String(), "crawl worker finished: shared frontier empty") {
			t.Errorf("worker %d: no finished summary:\n%s", i+1, outs[i+1])
		}
	}
	// The survivors left the workers' list when they finished; the
	// victim stays, gone.
	if code, stdout, stderr := runStatusCmd(t, "--redis", "redis://"+statusTestRedis, "--redis-prefix", prefix); code != 0 ||
		!regexp.MustCompile(`(?m)^worker `+victimID+` \S+: gone, `).MatchString(stdout) || strings.Count(stdout, "\nworker ") != 1 {
		t.Errorf("status after the crawl: exit %d, want only the victim %s, gone:\n%s%s", code, victimID, stdout, stderr)
	}
	doneAfter := time.Since(start)
	t.Logf("victim %s killed after %v holding %d leases; crawl done after %v", victimID, killedAfter.Round(time.Millisecond), held, doneAfter.Round(time.Millisecond))
	t.Logf("the same crawl undisturbed took %v", undisturbed.Round(time.Millisecond))
	// The survivors finish within the undisturbed crawl's
	// time plus 15s. Measured, not assumed: "within 15s of the kill" held
	// only where the rest of the crawl took less than that (a kill after
	// 13s of a 30s crawl failed it on a slower machine).
	if slack := 15 * time.Second; doneAfter > undisturbed+slack {
		t.Errorf("crawl done after %v, want within the undisturbed crawl's %v plus %v: the survivors waited for the two-minute leases, not the heartbeats",
			doneAfter, undisturbed, slack)
	}
	t.Logf("worker 1 summary:\n%s", outs[1])

	st, err := redisfrontier.ReadStats(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	inFlight := min(concurrency, testsite.NumHosts)
	if held < 1 || held > inFlight {
		t.Fatalf("victim held %d leases at the kill, want 1..%d", held, inFlight)
	}
	if st.Reaped != uint64(held) {
		t.Errorf("%d leases ended by the heartbeats, want the %d the victim held", st.Reaped, held)
	}
	if got := st.Requeued + st.Reclaimed; got != uint64(held) {
		t.Errorf("%d leases recovered after expiry (%d re-queued, %d staged), want the %d the victim held: a live worker's lease expired",
			got, st.Requeued, st.Reclaimed, held)
	}

	logs, err := filepath.Glob(filepath.Join(out, "crawl-*.log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != workers {
		t.Fatalf("crawl logs %v, want one per worker (%d)", logs, workers)
	}
	var entries []storage.Entry
	for _, p := range logs {
		e := readLog(t, p)
		if len(e) == 0 {
			t.Errorf("%s: empty: the crawl was not shared", p)
		}
		entries = append(entries, e...)
	}
	fetched, denied := splitLog(entries)
	maxDup := int(st.Requeued)
	if d := dupes(fetched); len(d) > maxDup {
		t.Errorf("%d URLs fetched twice, want at most the %d re-queued entries of the killed worker: %v", len(d), maxDup, sample(d))
	} else {
		t.Logf("URLs fetched twice after the kill: %d (leases held %d, re-queued %d, staged completions finished %d)", len(d), held, st.Requeued, st.Reclaimed)
	}
	checkCoverage(t, slices.Compact(slices.Clone(fetched)), slices.Compact(denied), wantFetched, wantDenied)
	checkServed(t, hosts, wantFetched, maxDup, workers)
	checkLogFields(t, entries)
	checkWARC(t, out, entries, held, true)
}

// killHoldingLeases is freezeHoldingLeases followed by SIGKILL. It returns
// the leases the victim held at its death, checked once more after the
// kill.
func killHoldingLeases(t *testing.T, rdb *redis.Client, prefix string, victim *exec.Cmd, stderr *syncbuf.Buffer, out string, atDone uint64) (int, string) {
	t.Helper()
	held, id, leases := freezeHoldingLeases(t, rdb, prefix, victim, stderr, out, atDone)
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.Wait()
	// Its leases stay until the heartbeats end them (3s after its
	// last beat): nothing may have changed them since.
	if after := leases(); after != held {
		t.Fatalf("the dead victim's leases went from %d to %d before its liveness expired", held, after)
	}
	return held, id
}

// freezeHoldingLeases waits until the crawl's workers together have
// completed atDone entries (the shared frontier's count) while the victim
// has logged a page and holds a lease, then freezes it (SIGSTOP) and counts
// its leases in Redis (lease tokens start with its lease id) twice, 50ms
// apart, so that Redis has run whatever the worker had sent before it
// froze. With the same count, at least one, it returns with the victim
// frozen: the count, the victim's lease id and a function counting its
// leases again; otherwise it lets it go on (SIGCONT) and tries again.
//
// The trigger is the whole crawl's progress, not the victim's: how the
// three hosts are shared among the workers varies from run to run, and a
// victim waited for until it had logged 800 pages was found at 16% to 83%
// of the crawl, and once, in a full test run, did not get there in 90s.
func freezeHoldingLeases(t *testing.T, rdb *redis.Client, prefix string, victim *exec.Cmd, stderr *syncbuf.Buffer, out string, atDone uint64) (int, string, func() int) {
	t.Helper()
	ctx := context.Background()
	tok := prefix + "f:{" + prefix + "f}:tok"
	rc, err := redisfrontier.NewClient(rdb, redisfrontier.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	var id, logPath string
	leases := func() int {
		toks, err := rdb.HVals(ctx, tok).Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, v := range toks {
			if strings.HasPrefix(v, id+"-") {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(90 * time.Second)
	var st redisfrontier.Stats
	for {
		if time.Now().After(deadline) {
			t.Fatalf("victim never held a lease with %d entries of the crawl completed (%d now; id %q, log %q):\n%s", atDone, st.Done, id, logPath, stderr)
		}
		time.Sleep(5 * time.Millisecond)
		if id == "" {
			if m := leaseIDRE.FindStringSubmatch(stderr.String()); m != nil {
				id = m[1]
			}
			logs, _ := filepath.Glob(filepath.Join(out, fmt.Sprintf("crawl-*-%d.log.jsonl", victim.Process.Pid)))
			if len(logs) == 1 {
				logPath = logs[0]
			}
			continue
		}
		if st, err = redisfrontier.ReadStats(ctx, rc); err != nil {
			t.Fatal(err)
		}
		if st.Done > 0 && st.Queued == 0 && st.Leased == 0 {
			t.Fatalf("the crawl ended (%d entries completed) before the victim was frozen holding a lease (id %q):\n%s", st.Done, id, stderr)
		}
		if st.Done < atDone || countLines(logPath) == 0 || leases() == 0 {
			continue
		}
		if err := victim.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		held := leases()
		time.Sleep(50 * time.Millisecond)
		if held > 0 && leases() == held {
			return held, id, leases
		}
		if err := victim.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrawlRedisWorkerStopped: as TestCrawlRedisWorkerKilled, but the
// victim is stopped (SIGSTOP) for 10s, a worker presumed dead that is not:
// its liveness (3s) expires, the others take its hosts back and finish,
// and when it is continued (SIGCONT) its late completions are fenced. All
// three exit cleanly, no URL is lost, and the URLs fetched twice are at
// most the entries it held when it stopped.
func TestCrawlRedisWorkerStopped(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages in child processes, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the engine's concurrency is race-tested in package crawl")
	}
	if testing.Short() {
		t.Skip("distributed crawl with a stopped worker skipped in -short mode")
	}
	rdb, prefix := statusRedis(t)
	site, hosts := testsite.Start(t, 5000)
	wantFetched, wantDenied := site.Expected()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Roots())
	const workers, concurrency, stopFor = 3, 4, 10 * time.Second
	cmds, outs, errs := startVictimCrawl(t, workers, concurrency, seeds, out, prefix)
	victim := cmds[0]
	held, victimID, _ := freezeHoldingLeases(t, rdb, prefix, victim, errs[0], out, uint64(len(wantFetched))*2/5)
	stopped := time.Now()
	time.Sleep(stopFor)
	if err := victim.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\nstdout:\n%s\nstderr:\n%s", i, err, outs[i], errs[i])
		}
	}
	t.Logf("victim %s stopped %v holding %d leases; crawl done %v after the stop", victimID, stopFor, held, time.Since(stopped).Round(time.Millisecond))

	rc, err := redisfrontier.NewClient(rdb, redisfrontier.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	st, err := redisfrontier.ReadStats(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	if held < 1 || held > min(concurrency, testsite.NumHosts) {
		t.Fatalf("victim held %d leases at the stop, want 1..%d", held, min(concurrency, testsite.NumHosts))
	}
	if st.Reaped != uint64(held) {
		t.Errorf("%d leases ended by the heartbeats, want the %d the stopped victim held", st.Reaped, held)
	}
	logs, err := filepath.Glob(filepath.Join(out, "crawl-*.log.jsonl"))
	if err != nil || len(logs) != workers {
		t.Fatalf("crawl logs %v (%v), want one per worker", logs, err)
	}
	var entries []storage.Entry
	for _, p := range logs {
		entries = append(entries, readLog(t, p)...)
	}
	fetched, denied := splitLog(entries)
	if d := dupes(fetched); len(d) > held {
		t.Errorf("%d URLs fetched twice, want at most the %d the stopped worker held: %v", len(d), held, sample(d))
	}
	checkCoverage(t, slices.Compact(slices.Clone(fetched)), slices.Compact(denied), wantFetched, wantDenied)
	checkServed(t, hosts, wantFetched, held, workers)
	// A fetch the stop caught timed out when the victim went on
	// ("will-retry: timeout"), but its lease had been taken back: the
	// retry is fenced, and another worker fetched the URL.
	ok := map[string]bool{}
	for _, e := range entries {
		if e.Error == "" {
			ok[e.URL] = true
		}
	}
	kept, fenced := entries[:0:0], 0
	for _, e := range entries {
		if strings.HasPrefix(e.Error, "will-retry: ") && ok[e.URL] {
			fenced++
			continue
		}
		kept = append(kept, e)
	}
	if fenced > held {
		t.Errorf("%d attempts failed and were fetched elsewhere, want at most the %d the stopped worker held", fenced, held)
	}
	checkLogFields(t, kept)
	checkWARC(t, out, entries, held, false)
}

// undisturbedCrawlTime crawls another copy of the generated site with
// the same workers and flags, none of them stopped, and returns how long
// it took: what a crawl with a killed worker is measured against.
func undisturbedCrawlTime(t *testing.T, workers, concurrency int) time.Duration {
	t.Helper()
	_, prefix := statusRedis(t)
	site, _ := testsite.Start(t, 5000)
	dir := t.TempDir()
	seeds := writeSeeds(t, dir, site.Roots())
	start := time.Now()
	cmds, outs, errs := startVictimCrawl(t, workers, concurrency, seeds, filepath.Join(dir, "out"), prefix)
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("undisturbed crawl, worker %d: %v\nstdout:\n%s\nstderr:\n%s", i, err, outs[i], errs[i])
		}
	}
	return time.Since(start)
}

// startVictimCrawl starts the worker processes of TestCrawlRedisWorkerKilled
// and TestCrawlRedisWorkerStopped, and kills any still running when the
// test ends. The lease is the default two minutes: the others get a dead
// worker's hosts back through the heartbeats (liveness 3s here), not by
// waiting for its leases to expire.
func startVictimCrawl(t *testing.T, workers, concurrency int, seeds, out, prefix string) (cmds []*exec.Cmd, outs, errs []*syncbuf.Buffer) {
	t.Helper()
	args := []string{"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private",
		"--concurrency", fmt.Sprint(concurrency), "--expected-urls", "100000", "--progress-interval", "1s",
		"--fetch-timeout", "3s", "--redis-lease", "2m", "--redis-heartbeat", "1s",
		"--redis", "redis://" + statusTestRedis, "--redis-prefix", prefix}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmds, outs, errs = startCrawlChildren(t, ctx, workers, args)
	t.Cleanup(func() {
		for _, cmd := range cmds {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		}
		cancel()
	})
	return cmds, outs, errs
}
