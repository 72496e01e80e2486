package crawl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/layercrawl/layercrawl/countmin"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/internal/testsite"
)

// TestOrderInlinksStopAndResume: an inlinks crawl stopped part-way saves
// its in-link counts, resumes with them, and fetches every page once, one
// request per URL.
func TestOrderInlinksStopAndResume(t *testing.T) {
	site, hosts := testsite.Start(t, 600)
	want, _ := site.Expected()
	dir := t.TempDir()
	o := testOptions(site, dir)
	o.Order = frontier.OrderInlinks
	o.Concurrency = 3
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("enough")
	var n int
	var mu sync.Mutex
	o.OnPage = func(p *Page) error {
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 100 {
			cancel(stop)
		}
		return nil
	}
	if _, err := run(t, ctx, o); !errors.Is(err, stop) {
		t.Fatalf("first Run = %v, want the cancel cause %v", err, stop)
	}
	path := filepath.Join(dir, "state", InlinksFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no in-link counts after a stop: %v", err)
	}
	var saved countmin.Sketch
	if err := saved.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if saved.Total() == 0 {
		t.Errorf("the saved sketch counted no links")
	}
	o.OnPage = nil
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatalf("resumed Run: %v", err)
	}
	if got := c.front.Inlinks().Total(); got <= saved.Total() {
		t.Errorf("resumed crawl's sketch counted %d links, not more than the %d it was saved with", got, saved.Total())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := fetchedURLs(readLog(t, filepath.Join(dir, "crawl.log.jsonl")))
	if d := len(got) - len(slices.Compact(slices.Clone(got))); d > 0 {
		t.Errorf("%d URLs fetched twice after a clean stop", d)
	}
	if !slices.Equal(slices.Compact(got), want) {
		t.Errorf("fetched %d distinct URLs, want %d", len(slices.Compact(got)), len(want))
	}
	for h, hs := range hosts {
		for u, n := range hs.Requests() {
			if n > 1 && !strings.HasSuffix(u, "/robots.txt") {
				t.Errorf("host %d: %s requested %d times", h, u, n)
			}
		}
	}

	// A damaged counts file is a corrupt state, not a silent restart.
	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = New(o); err == nil {
		err = c.Run(context.Background())
		c.Close()
	}
	if !errors.Is(err, ErrCorruptState) || !errors.Is(err, countmin.ErrChecksum) {
		t.Errorf("Run with a damaged %s = %v, want ErrCorruptState and countmin.ErrChecksum", InlinksFile, err)
	}
}
