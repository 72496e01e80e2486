package crawl

import (
	"context"
	"github.com/layercrawl/layercrawl/internal/testsite"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu          sync.Mutex
	fetches     []FetchEvent
	checkpoints []CheckpointEvent
}

func (r *recorder) Fetched(ev FetchEvent) {
	r.mu.Lock()
	r.fetches = append(r.fetches, ev)
	r.mu.Unlock()
}

func (r *recorder) Checkpointed(ev CheckpointEvent) {
	r.mu.Lock()
	r.checkpoints = append(r.checkpoints, ev)
	r.mu.Unlock()
}

// The Observer sees every fetch of the crawl log, once, with what the log
// line says, and the checkpoints.
func TestObserver(t *testing.T) {
	site, _ := testsite.Start(t, 200)
	dir := t.TempDir()
	rec := &recorder{}
	o := testOptions(site, dir)
	o.Observer = rec
	// A crawl of 200 local pages can end within 50ms, before a checkpoint
	// at that interval (and the final one is skipped when the journal is
	// short): 1ms makes several certain.
	o.CheckpointInterval = time.Millisecond
	c, err := run(t, context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	logged := map[string]int{}
	for _, e := range readLog(t, filepath.Join(dir, "crawl.log.jsonl")) {
		if e.Status != 0 || e.WARCFile != "" {
			logged[e.URL] = e.Status
		}
	}
	if got, want := uint64(len(rec.fetches)), c.Stats().Fetch.Fetched; got != want {
		t.Errorf("observer saw %d fetches, Stats.Fetch.Fetched %d", got, want)
	}
	seen := map[string]bool{}
	for _, ev := range rec.fetches {
		if seen[ev.URL] {
			t.Errorf("%s observed twice", ev.URL)
		}
		seen[ev.URL] = true
		status, ok := logged[ev.URL]
		switch {
		case !ok && ev.Err == nil:
			t.Errorf("%s observed, not in the log", ev.URL)
		case ok && status != ev.Status:
			t.Errorf("%s: observed status %d, logged %d", ev.URL, ev.Status, status)
		case ev.Err == nil && (ev.Duration <= 0 || ev.TTFB <= 0 || ev.TTFB > ev.Duration || ev.WARCBytes <= 0 || ev.At.IsZero()):
			t.Errorf("%s: event %+v lacks timings or sizes", ev.URL, ev)
		}
	}
	if len(rec.checkpoints) == 0 || rec.checkpoints[len(rec.checkpoints)-1].Duration <= 0 {
		t.Errorf("checkpoints observed: %+v", rec.checkpoints)
	}
}
