package frontier

import (
	"context"
	"errors"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// lossySeen is a seen-set with false positives and no false negatives,
// like a Bloom filter: it answers "maybe seen" for every URL it holds and
// for a new URL whose hash falls in the first rate percent.
type lossySeen struct {
	*exactSeen
	rate uint32
}

func (s lossySeen) TestAndAdd(ctx context.Context, seg []string) (bool, error) {
	was, err := s.exactSeen.TestAndAdd(ctx, seg)
	if was || err != nil {
		return was, err
	}
	h := fnv.New32a()
	h.Write([]byte(strings.Join(seg, "/")))
	return h.Sum32()%100 < s.rate, nil
}

// crawlExact crawls a graphSite over a lossy seen-set and returns the
// fetched URLs, sorted with repeats kept.
func crawlExact(t *testing.T, store *memStore, exact bool, memory int64, site graphSite) ([]string, Stats) {
	t.Helper()
	f := openTest(t, Options{
		Store:       store,
		Seen:        lossySeen{newExactSeen(), 30},
		ExactDedup:  exact,
		ExactMemory: memory,
		Admission:   AdmissionOptions{Scope: ScopeHost, Deny: []*regexp.Regexp{regexp.MustCompile(`/private/`)}},
		HostWindow:  8, MemoryWindow: 20,
	})
	var seeds []string
	for _, h := range site.hosts {
		seeds = append(seeds, site.page(h, 0))
	}
	if _, err := f.AddSeeds(context.Background(), seeds); err != nil {
		t.Fatal(err)
	}
	d := driver{release: true}
	if err := d.run(context.Background(), f, 8, site.fetch); err != nil {
		t.Fatal(err)
	}
	got := d.urls()
	slices.Sort(got)
	return got, f.Stats()
}

// With 30% false positives the seen-set alone loses most of the site;
// ExactDedup rescues every one of them, counts them, and queues nothing
// twice although 8 workers race on the same links: with the fingerprints
// in memory (the default) and with every check looked up in the store.
func TestExactDedup(t *testing.T) {
	site := graphSite{hosts: []string{"a.test", "b.test", "c.test"}, n: 300}
	want := site.expected()

	lossy, s := crawlExact(t, newMemStore(), false, 0, site)
	if len(lossy) >= len(want) || s.FalsePositives != 0 || s.ExactChecks != 0 {
		t.Errorf("without ExactDedup: %d of %d URLs, stats %d checks %d false positives; want URLs lost and no checks",
			len(lossy), len(want), s.ExactChecks, s.FalsePositives)
	}
	for _, tc := range []struct {
		name   string
		memory int64
	}{{"memory", 0}, {"store", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			got, s := crawlExact(t, store, true, tc.memory, site)
			if dup := duplicates(got); len(dup) > 0 {
				t.Errorf("fetched twice: %v", dup[:min(5, len(dup))])
			}
			if !slices.Equal(got, want) {
				t.Errorf("coverage: got %d URLs, want %d; missing %v", len(got), len(want), diff(want, got))
			}
			if s.FalsePositives == 0 || s.FalsePositives > s.ExactChecks || s.ExactChecks > s.Duplicates+s.FalsePositives {
				t.Errorf("stats: %d checks, %d false positives, %d duplicates", s.ExactChecks, s.FalsePositives, s.Duplicates)
			}
			inMemory := tc.memory >= 0
			if gotMem := s.ExactInMemory == uint64(len(want)); gotMem != inMemory || inMemory != (s.ExactLookups == 0) {
				t.Errorf("%d fingerprints in memory, %d store lookups; want all %d in memory: %v", s.ExactInMemory, s.ExactLookups, len(want), inMemory)
			}
			// Every URL queued has its fingerprint, and nothing else does.
			if n := store.countPrefix(prefixFingerprint); n != len(want) {
				t.Errorf("%d fingerprints stored, want %d", n, len(want))
			}
			t.Logf("seen-set alone: %d of %d URLs; exact: %d checks, %d false positives caught, %d store lookups",
				len(lossy), len(want), s.ExactChecks, s.FalsePositives, s.ExactLookups)
		})
	}
}

// ExactDedup is fixed when a crawl starts.
func TestExactDedupResume(t *testing.T) {
	open := func(store *memStore, exact bool) error {
		_, err := Open(context.Background(), Options{Store: store, Seen: newExactSeen(), Normalizer: simpleNorm{}, ExactDedup: exact})
		return err
	}
	store := newMemStore()
	f := openTest(t, Options{Store: store})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/"}); err != nil {
		t.Fatal(err)
	}
	if err := open(store, true); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ExactDedup on a crawl begun without it: %v, want ErrInvalidOptions", err)
	}
	store = newMemStore()
	f = openTest(t, Options{Store: store, ExactDedup: true})
	if _, err := f.AddSeeds(context.Background(), []string{"http://a.test/"}); err != nil {
		t.Fatal(err)
	}
	if err := open(store, true); err != nil {
		t.Errorf("resume with ExactDedup: %v", err)
	}
	if on, err := ExactDedupState(store); !on || err != nil {
		t.Errorf("ExactDedupState = %v, %v; want true", on, err)
	}
	if err := open(store, false); err != nil {
		t.Errorf("resume without ExactDedup: %v", err)
	}
	if err := open(store, true); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ExactDedup again after a run without it: %v, want ErrInvalidOptions", err)
	}
}
