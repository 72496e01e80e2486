package experiments

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layercrawl/layercrawl/countmin"
	"github.com/layercrawl/layercrawl/internal/linkweb"
)

// TestSketchCounter checks the simulation's sketch counter against exact
// counts: never below them, and exact for most pages when roomy.
func TestSketchCounter(t *testing.T) {
	seed := uint64(11)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, width := range []int{8, 64, 4096} {
		cm := newSketchCounter(t, width)
		exact := make(exactCounter, 5000)
		for range 20_000 {
			p := int32(rng.IntN(len(exact)))
			if rng.IntN(2) == 0 {
				p = int32(rng.IntN(50)) // a few heavy hitters
			}
			cm.add(p)
			exact.add(p)
		}
		over := 0
		for p := range int32(len(exact)) {
			got, want := cm.count(p), exact.count(p)
			if got < want {
				t.Fatalf("width %d: page %d counted %d, exact %d", width, p, got, want)
			}
			if got > want {
				over++
			}
		}
		if width == 4096 && over > len(exact)/10 {
			t.Errorf("width 4096: %d of %d pages overestimated", over, len(exact))
		}
	}
}

func newSketchCounter(t *testing.T, width int) sketchCounter {
	t.Helper()
	s, err := countmin.New(countmin.Options{Rows: 4, Width: width})
	if err != nil {
		t.Fatal(err)
	}
	return sketchCounter{s}
}

func TestSimulateOrder(t *testing.T) {
	g, err := linkweb.Generate(linkweb.Options{Seed: 3, Pages: 5000, Hosts: 20, HostExponent: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    simOptions
	}{
		{"fifo", simOptions{}},
		{"exact", simOptions{counter: make(exactCounter, g.Pages())}},
		{"exact, window 4", simOptions{counter: make(exactCounter, g.Pages()), window: 4}},
		{"exact, hosts in turn", simOptions{counter: make(exactCounter, g.Pages()), hostsInTurn: true}},
		{"count-min", simOptions{counter: newSketchCounter(t, 256)}},
	} {
		tc.o.budget, tc.o.concurrency = 1000, 8
		got := simulateOrder(g, tc.o)
		if len(got) != 1000 {
			t.Fatalf("%s: %d pages fetched, want 1000", tc.name, len(got))
		}
		s := slices.Clone(got)
		slices.Sort(s)
		if len(slices.Compact(s)) != len(got) {
			t.Errorf("%s: a page fetched twice", tc.name)
		}
		// Seeds first: no host's page before its root.
		rootAt := map[int]int{}
		for i, p := range got {
			h := g.HostOf(int(p))
			if int(p) == g.HostStart(h) {
				rootAt[h] = i
			} else if _, ok := rootAt[h]; !ok {
				t.Fatalf("%s: page %d of host %d fetched before its root", tc.name, p, h)
			}
		}
		// Politeness: a round of 8 holds 8 distinct hosts.
		for i := 0; i+8 <= 20; i += 8 {
			hosts := map[int]bool{}
			for _, p := range got[i : i+8] {
				hosts[g.HostOf(int(p))] = true
			}
			if len(hosts) != 8 {
				t.Errorf("%s: round at %d has %d hosts", tc.name, i, len(hosts))
			}
		}
	}
	// The full budget of a small web is all of it.
	if all := simulateOrder(g, simOptions{budget: g.Pages() + 10, concurrency: 8}); len(all) != g.Pages() {
		t.Errorf("fifo over the whole web fetched %d of %d pages", len(all), g.Pages())
	}
}
