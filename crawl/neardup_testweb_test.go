package crawl

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/layercrawl/layercrawl/internal/testweb"
)

// The press releases of testweb's near-duplicate hosts (pages that differ
// only in a date and a counter) are the ground truth: every one but the
// first of its group is logged near_duplicate_of a page of its group.
func TestNearDuplicatesTestweb(t *testing.T) {
	w, err := testweb.Start(testweb.Options{Hosts: 12, Pages: 600, NearDuplicates: true, Addressing: testweb.Loopback})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	exp, err := w.Expected(testweb.ExpectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(exp.NearDuplicates) == 0 {
		t.Fatal("testweb made no near-duplicate groups")
	}
	var seeds []string
	for h := range w.Hosts() {
		seeds = append(seeds, w.Root(h))
	}
	dir := t.TempDir()
	o := Options{Seeds: seeds, Dir: dir, Concurrency: 4, ExpectedURLs: 100_000}
	o.Politeness.Delay = -1
	o.Fetch.AllowPrivate = true
	if _, err := run(t, context.Background(), o); err != nil {
		t.Fatal(err)
	}
	group := map[string]int{}
	for i, g := range exp.NearDuplicates {
		for _, u := range g {
			group[u] = i + 1
		}
	}
	var want, found, outside int
	seen := map[int]bool{}
	for _, e := range readLog(t, filepath.Join(dir, "crawl.log.jsonl")) {
		g := group[e.URL]
		switch {
		case g == 0:
			if e.NearDuplicateOf != "" {
				outside++
			}
		case !seen[g]:
			seen[g] = true // the first of its group has nothing to duplicate
		default:
			want++
			if e.NearDuplicateOf != "" {
				found++
				if group[e.NearDuplicateOf] != g {
					t.Errorf("%s: near_duplicate_of %s, outside its group", e.URL, e.NearDuplicateOf)
				}
			}
		}
	}
	if want == 0 || float64(found) < 0.95*float64(want) {
		t.Errorf("found %d of %d press-release repeats", found, want)
	}
	t.Logf("%d groups: %d of %d repeats found; %d other pages logged as near-duplicates", len(exp.NearDuplicates), found, want, outside)
}
