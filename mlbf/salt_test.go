package mlbf

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// saltedKeys are keys of four segments, the first ones shared, as URLs'.
func saltedKey(i int) []string {
	return []string{"example.test", fmt.Sprintf("d%d", i%7), fmt.Sprintf("p%d", i), "index.html"}
}

// falsePositives fills a small filter of the salt with n keys and returns
// which of the next probes keys it answers "maybe seen" for.
func falsePositives(t *testing.T, salt uint64, n, probes int) map[int]bool {
	t.Helper()
	f, err := New(Options{ExpectedURLs: uint64(n), FalsePositiveRate: 0.05, Salt: salt})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f.Add(saltedKey(i))
	}
	fp := map[int]bool{}
	for i := n; i < n+probes; i++ {
		if f.Test(saltedKey(i)) {
			fp[i] = true
		}
	}
	return fp
}

// Filters of different salts take different keys for false positives: the
// overlap of their false-positive sets is what independent filters give
// (about rate² of the probes), not the whole set.
func TestSaltChangesFalsePositives(t *testing.T) {
	const n, probes = 2000, 40000
	a, b := falsePositives(t, 0, n, probes), falsePositives(t, 0x9e3779b97f4a7c15, n, probes)
	again := falsePositives(t, 0x9e3779b97f4a7c15, n, probes)
	both := 0
	for k := range a {
		if b[k] {
			both++
		}
	}
	if len(a) < 100 || len(b) < 100 {
		t.Fatalf("%d and %d false positives: the filter is too good for the test", len(a), len(b))
	}
	// Independent: expect len(a)*len(b)/probes in both; a salt that did
	// nothing would put all of them there.
	indep := float64(len(a)) * float64(len(b)) / probes
	if float64(both) > 3*indep+10 {
		t.Errorf("%d keys false positives under both salts, of %d and %d; independent filters: about %.0f", both, len(a), len(b), indep)
	}
	if len(again) != len(b) {
		t.Errorf("the same salt gave %d false positives, then %d", len(b), len(again))
	}
	t.Logf("false positives: %d unsalted, %d salted, %d in both (independent: %.1f)", len(a), len(b), both, indep)
}

// A salted filter saves its salt (format version 2) and reads back with
// it, answering as before; an unsalted one is still written in version 1;
// paper mode refuses a salt; filters of different salts do not merge.
func TestSaltPersist(t *testing.T) {
	const salt = 0x0123456789abcdef
	for _, o := range []Options{
		{ExpectedURLs: 1000, FalsePositiveRate: 0.01, Salt: salt},
		{ExpectedURLs: 1000, FalsePositiveRate: 0.01},
	} {
		f, err := NewConcurrent(o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			f.Add(saltedKey(i))
		}
		data, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := data[4], byte(1+min(o.Salt, 1)); got != want {
			t.Errorf("salt %#x: format version %d, want %d", o.Salt, got, want)
		}
		var back Concurrent
		if err := back.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
		if back.Salt() != o.Salt {
			t.Errorf("salt read back %#x, want %#x", back.Salt(), o.Salt)
		}
		for i := range 2000 {
			if got, want := back.Test(saltedKey(i)), f.Test(saltedKey(i)); got != want {
				t.Fatalf("salt %#x: key %d answers %v read back, %v before", o.Salt, i, got, want)
			}
		}
	}
	if _, err := New(Options{Mode: Paper, Salt: 1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("paper mode with a salt: %v, want ErrInvalidOptions", err)
	}
	a, _ := New(Options{ExpectedURLs: 100, Salt: 1})
	b, _ := New(Options{ExpectedURLs: 100, Salt: 2})
	if err := a.Merge(b); !errors.Is(err, ErrIncompatible) {
		t.Errorf("merge of different salts: %v, want ErrIncompatible", err)
	}
}

// A growing filter keeps its salt through growth and persistence, and new
// generations get it too.
func TestScalableSalt(t *testing.T) {
	const salt = 0xfeedface
	s, err := NewScalable(ScalableOptions{ExpectedURLs: 50, FalsePositiveRate: 0.01, Salt: salt})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		s.Add(saltedKey(i))
	}
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var back Scalable
	if _, err := back.ReadFrom(&buf); err != nil {
		t.Fatal(err)
	}
	if back.Salt() != salt || len(back.gens) < 3 {
		t.Fatalf("read back salt %#x with %d generations, want %#x and several", back.Salt(), len(back.gens), uint64(salt))
	}
	for _, g := range back.gens {
		if g.Salt() != salt {
			t.Errorf("a generation has salt %#x", g.Salt())
		}
	}
	for i := range 400 {
		if !back.Test(saltedKey(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	for i := 400; i < 2000; i++ {
		back.Add(saltedKey(i))
	}
	if g := back.gens[len(back.gens)-1]; g.Salt() != salt {
		t.Errorf("a generation added after ReadFrom has salt %#x", g.Salt())
	}
}
