package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/internal/testsite"
	"github.com/layercrawl/layercrawl/storage"
)

// syncBuffer is a bytes.Buffer a child process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var leaseIDRE = regexp.MustCompile(`lease_id=([0-9a-f]+)`)

// TestCrawlRedisWorkerKilled is issue #7's end-to-end test: three "crawler
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
	if testing.Short() {
		t.Skip("distributed crawl with a killed worker skipped in -short mode")
	}
	rdb, prefix := statusRedis(t) // skips without Redis unless CI=true; deletes the keys after
	site, hosts := testsite.Start(t, 5000)
	wantFetched, wantDenied := site.Expected()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, site.Roots())
	const (
		workers     = 3
		concurrency = 4
		killAt      = 800 // pages in the victim's log: about 40% of the crawl
	)
	// The lease bounds how long the survivors wait for the dead worker's
	// hosts; it is still far longer than one local fetch under -race.
	args := []string{"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private",
		"--concurrency", fmt.Sprint(concurrency), "--expected-urls", "100000", "--progress-interval", "1s",
		"--fetch-timeout", "3s", "--redis-lease", "6s",
		"--redis", "redis://" + statusTestRedis, "--redis-prefix", prefix}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmds, outs, errs := startCrawlChildren(t, ctx, workers, args)
	defer func() {
		for _, cmd := range cmds {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		}
	}()

	victim := cmds[0]
	held, victimID := killHoldingLeases(t, rdb, prefix, victim, errs[0], out, killAt)
	// crawler status names the dead worker's leases until they expire.
	if code, stdout, stderr := runStatusCmd(t, "--redis", "redis://"+statusTestRedis, "--redis-prefix", prefix); code != 0 ||
		!strings.Contains(stdout, fmt.Sprintf("%s %d", victimID, held)) {
		t.Errorf("status after the kill: exit %d, want the victim %s with %d leases:\n%s%s", code, victimID, held, stdout, stderr)
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
	t.Logf("victim %s killed after %v holding %d leases; crawl done after %v", victimID, killedAfter.Round(time.Millisecond), held, time.Since(start).Round(time.Millisecond))
	t.Logf("worker 1 summary:\n%s", outs[1])

	rc, err := redisfrontier.NewClient(rdb, redisfrontier.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	st, err := redisfrontier.ReadStats(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	inFlight := min(concurrency, testsite.NumHosts)
	if held < 1 || held > inFlight {
		t.Fatalf("victim held %d leases at the kill, want 1..%d", held, inFlight)
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
	}
	checkCoverage(t, slices.Compact(slices.Clone(fetched)), slices.Compact(denied), wantFetched, wantDenied)
	checkServed(t, hosts, wantFetched, maxDup, workers)
	checkLogFields(t, entries)
	checkWARC(t, out, entries, held, true)
}

// killHoldingLeases waits until the victim has logged killAt pages, then
// freezes it (SIGSTOP) and counts its leases in Redis (lease tokens start
// with its lease id) twice, 50ms apart, so that Redis has run whatever the
// worker had sent before it froze. With the same count, at least one, it
// kills the frozen worker (SIGKILL); otherwise it lets it go on (SIGCONT)
// and tries again. It returns the leases the victim held at its death,
// checked once more after the kill.
func killHoldingLeases(t *testing.T, rdb *redis.Client, prefix string, victim *exec.Cmd, stderr *syncBuffer, out string, killAt int) (int, string) {
	t.Helper()
	ctx := context.Background()
	tok := prefix + "f:{" + prefix + "f}:tok"
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
	for {
		if time.Now().After(deadline) {
			t.Fatalf("victim never held a lease with %d pages logged (id %q, log %q):\n%s", killAt, id, logPath, stderr)
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
		if countLines(logPath) < killAt {
			continue
		}
		if err := victim.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		held := leases()
		time.Sleep(50 * time.Millisecond)
		if held > 0 && leases() == held {
			if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			victim.Wait()
			// Its leases stay until they expire (6s): nothing may have
			// changed them since.
			if after := leases(); after != held {
				t.Fatalf("the dead victim's leases went from %d to %d before expiry", held, after)
			}
			return held, id
		}
		if err := victim.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
}
