package redisfrontier

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
)

// TestFrontierTrapLimits: in Redis mode the trap limits of
// frontier.Limits apply to discovered links (they did nothing
// before): a repeated segment and an over-long URL are refused, never
// queued nor marked seen, and counted in WorkerStats; a seed is exempt.
func TestFrontierTrapLimits(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	f := openTestFrontier(t, c, Options{Politeness: frontier.PolitenessOptions{Delay: -1}, Poll: 10 * time.Millisecond,
		Admission: frontier.AdmissionOptions{Limits: frontier.Limits{MaxSegmentRepeats: 2, MaxURLLength: 60, MaxHostURLs: 3}}})
	// The seed itself has a segment three times: seeds are exempt.
	seed := "http://trap.test/a/a/a/"
	if n, err := f.AddSeeds(ctx, []string{seed}); err != nil || n != 1 {
		t.Fatalf("AddSeeds = %d, %v; want 1, nil", n, err)
	}
	long := "/" + strings.Repeat("l", 50) // 68 bytes in all
	links := map[string][]string{
		seed: {
			"/x/x/x/", // repeated segment
			"/x/x/",   // twice is allowed
			long,
			"/p1", "/p2", // with /x/x/, the host's budget of 3
			"http://elsewhere.test/", // out of scope
		},
		// The budget is checked before each page's seen-set batch, so
		// the next page's link finds it spent.
		"http://trap.test/p1": {"/p3"},
	}
	var got []string
	for {
		e, err := f.Next(ctx)
		if errors.Is(err, frontier.ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.URL)
		if err := f.Done(ctx, e, frontier.Outcome{Fetched: true, Links: links[e.URL]}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{seed, "http://trap.test/x/x/", "http://trap.test/p1", "http://trap.test/p2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("fetched %q, want %q", got, want)
	}
	ws := f.WorkerStats()
	wantLimits := frontier.LimitStats{RepeatedSegment: 1, TooLong: 1, HostBudget: 1}
	if ws.Limits != wantLimits || ws.OutOfScope != 1 {
		t.Errorf("WorkerStats = %+v, want Limits %+v and OutOfScope 1", ws, wantLimits)
	}
	// A refused URL is not marked seen: as seeds (exempt from the trap
	// limits), all three are new.
	refused := []string{"http://trap.test/x/x/x/", "http://trap.test" + long, "http://trap.test/p3"}
	if n, err := f.AddSeeds(ctx, refused); err != nil || n != len(refused) {
		t.Fatalf("AddSeeds(refused) = %d, %v; want %d, nil", n, err, len(refused))
	}
}
