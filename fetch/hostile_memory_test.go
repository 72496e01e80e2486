package fetch_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/internal/hostile"
)

// TestConcurrentHugeBodiesMemory runs 16 fetches at once against the
// endpoints that try to exhaust memory (gzip bomb, endless and 64 MiB
// bodies) with the default 10 MiB cap, and checks that the Go heap stays
// near 16 x 10 MiB, far from the gigabytes the bodies would take uncapped.
// It is skipped under -race (whose shadow memory and slowness make the
// figure meaningless) and in -short mode.
func TestConcurrentHugeBodiesMemory(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("memory bound is measured without -race and without -short")
	}
	site := hostile.StartHost(hostile.Options{})
	defer site.Close()
	f := hostileFetcher(t, fetch.Options{FetchTimeout: 30 * time.Second})

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	paths := []string{hostile.PathBomb, hostile.PathEndless, hostile.PathBig}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.Fetch(context.Background(), site.URL+paths[i%len(paths)])
			if err != nil {
				t.Error(err)
				return
			}
			if res.Truncated != fetch.TruncatedLength || len(res.Body) != fetch.DefaultMaxBodySize {
				t.Errorf("%s: truncated %q, %d bytes", res.URL, res.Truncated, len(res.Body))
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	grew := int64(peak) - int64(base.HeapInuse)
	t.Logf("peak heap in use %d MiB (%d MiB above the start) for 16 concurrent capped fetches", peak>>20, grew>>20)
	// 16 bodies of 10 MiB are 160 MiB live; the rest is garbage not yet
	// collected (chunk joins, and the HTML tokenizer buffering a 10 MiB
	// text token). Uncapped, the bomb alone would be 512 MiB per fetch.
	if grew > 480<<20 {
		t.Errorf("heap grew by %d MiB, want under 480", grew>>20)
	}
}
