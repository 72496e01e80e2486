package frontier_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/storage"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// The frontier must not be bounded by RAM: 2 million queued URLs with the
// process's peak RSS under 256 MiB.
const (
	rssURLs  = 2_000_000
	rssHosts = 2_000
	rssLimit = 256 << 20
)

// TestQueueMemoryBounded queues 2 million URLs over 2,000 hosts in a child
// process, through the real store and filter, serves some, checkpoints,
// and checks the child's peak memory. Without the race detector the bound
// is on VmHWM (peak RSS); under -race, whose shadow memory multiplies RSS,
// it is on the Go runtime's peak mapped memory (runtime/metrics
// /memory/classes/total:bytes, sampled), and VmHWM is only reported.
func TestQueueMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("2-million-URL memory test skipped in -short mode")
	}
	if raceEnabled && os.Getenv("FRONTIER_RSS_UNDER_RACE") == "" {
		// The race detector's shadow memory and slowdown make the figure
		// meaningless and the run take many minutes.
		t.Skip("2-million-URL memory test skipped under -race; run: go test -run '^TestQueueMemoryBounded$' ./frontier/")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperQueueMemory$", "-test.v")
	cmd.Env = append(os.Environ(), "FRONTIER_RSS_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	var hwm, peakGo, queued int64 = -1, -1, -1
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "RESULT "); ok {
			if _, err := fmt.Sscanf(rest, "vmhwm=%d gopeak=%d queued=%d", &hwm, &peakGo, &queued); err != nil {
				t.Fatalf("bad child result %q: %v", rest, err)
			}
		}
	}
	if hwm < 0 {
		t.Fatalf("child printed no result:\n%s", out)
	}
	t.Logf("queued %d URLs: peak RSS (VmHWM) %.1f MiB, peak Go-mapped memory %.1f MiB (race detector: %v)",
		queued, float64(hwm)/(1<<20), float64(peakGo)/(1<<20), raceEnabled)
	// Served entries leave the queue; the filter's false positives (about
	// 1e-4 at this size) are never queued.
	if want := int64(rssURLs - 3*rssHosts - rssURLs/1000); queued < want {
		t.Errorf("child queued %d URLs, want at least %d", queued, want)
	}
	measured, what := hwm, "peak RSS"
	if raceEnabled {
		measured, what = peakGo, "peak Go-mapped memory"
	}
	if measured >= rssLimit {
		t.Errorf("%s %d MiB, want under %d MiB", what, measured>>20, rssLimit>>20)
	}
}

func TestHelperQueueMemory(t *testing.T) {
	dir := os.Getenv("FRONTIER_RSS_CHILD")
	if dir == "" {
		t.Skip("helper process for TestQueueMemoryBounded")
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // sample the Go runtime's mapped memory
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := int64(s[0].Value.Uint64()); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	st, err := storage.Open(filepath.Join(dir, "state"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	filter, err := mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: rssURLs, FalsePositiveRate: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	norm, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := frontier.Open(context.Background(), frontier.Options{
		Store: storeAdapter{st}, Seen: seenAdapter{filter}, Normalizer: norm,
		Admission: frontier.AdmissionOptions{Scope: frontier.ScopeAny}, Politeness: frontier.PolitenessOptions{Delay: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const batch = 10_000
	urls := make([]string, 0, batch)
	for i := range rssURLs {
		urls = append(urls, fmt.Sprintf("http://h%d.example.com/section-%d/article/%d.html?ref=%d", i%rssHosts, i%97, i, i%13))
		if len(urls) == batch {
			if _, err := f.AddSeeds(ctx, urls); err != nil {
				t.Fatal(err)
			}
			urls = urls[:0]
		}
	}
	// Serve some: every host's window is loaded from the store at least
	// once.
	for range 3 * rssHosts {
		e, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Done(ctx, e, frontier.Outcome{Fetched: true}); err != nil {
			t.Fatal(err)
		}
	}
	// As the crawl command does: the snapshot is written while inserts
	// wait, without a second in-memory copy of the filter.
	if err := f.Checkpoint(ctx, func(uint64) (func(context.Context) error, error) {
		err := storage.WriteFileAtomic(filepath.Join(dir, "seen.mlbf"), func(w io.Writer) error {
			_, err := filter.WriteTo(w)
			return err
		})
		return func(context.Context) error { return nil }, err
	}); err != nil {
		t.Fatal(err)
	}
	s := f.Stats()
	runtime.KeepAlive(f)
	close(stop)
	<-done
	fmt.Printf("RESULT vmhwm=%d gopeak=%d queued=%d\n", vmHWM(t), peak.Load(), s.Queued)
	fmt.Printf("filter %d bytes, memory window %d entries\n", filter.TotalBits()/8, s.Memory)
}

// vmHWM returns the process's peak resident set size from /proc.
func vmHWM(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

type storeAdapter struct{ s *storage.Store }

func (a storeAdapter) Get(k []byte) ([]byte, error) {
	v, err := a.s.Get(k)
	if err != nil && isNotFound(err) {
		return nil, frontier.ErrNotFound
	}
	return v, err
}

func (a storeAdapter) Write(fn func(frontier.Writer) error) error {
	return a.s.Write(func(w storage.Writer) error { return fn(w) })
}

func (a storeAdapter) Ascend(start, end []byte, fn func(k, v []byte) bool) error {
	return a.s.Ascend(start, end, fn)
}

type seenAdapter struct{ f *mlbf.Concurrent }

func (s seenAdapter) TestAndAdd(_ context.Context, seg []string) (bool, error) {
	return s.f.TestAndAdd(seg), nil
}

func isNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }
