package redisfrontier

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/mlbf"
)

// tinyFilter is so small that a few thousand distinct keys give the
// filter many false positives.
var tinyFilter = mlbf.Options{Layers: 2, Hashes: 2, LayerBits: []uint64{1024, 1024, 4096}}

// exactURLs returns n distinct keys, several per host and directory.
func exactURLs(n int) [][]string {
	keys := make([][]string, n)
	for i := range keys {
		keys[i] = []string{fmt.Sprintf("https://h%d.example", i%13), fmt.Sprintf("d%d", i%17), fmt.Sprintf("p%d.html", i)}
	}
	return keys
}

// TestSeenExactLosesNothing: with the exact check, a seen-set whose
// filter errs for a large share of new keys reports every distinct key new
// exactly once (and its repeats present), fixed or growing, in batches
// that repeat keys, and counts the false positives it caught; the same
// keys filter-only lose some (so the test can fail).
func TestSeenExactLosesNothing(t *testing.T) {
	r := seedRand(t)
	keys := exactURLs(4000)
	// Every key twice, shuffled, in batches of up to 300.
	var stream []int
	for i := range keys {
		stream = append(stream, i, i)
	}
	r.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })
	grow := &mlbf.ScalableOptions{ExpectedURLs: 500, FalsePositiveRate: 0.2, Layers: 2}
	for _, tt := range []struct {
		name  string
		opts  SeenOptions
		exact bool
	}{
		{"fixed filter-only", SeenOptions{Filter: tinyFilter, Shards: 2}, false},
		{"fixed exact", SeenOptions{Filter: tinyFilter, Shards: 2, Exact: true, ExactURLs: 1000}, true},
		{"fixed exact salted batch 7", SeenOptions{Filter: tinyFilter, Shards: 3, Exact: true, Salted: true, MaxBatch: 7}, true},
		{"growing exact", SeenOptions{Growth: grow, Shards: 2, Exact: true}, true},
		{"growing exact no local bits", SeenOptions{Growth: grow, Shards: 1, Exact: true, NoLocalBits: true, MaxBatch: 50}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := OpenSeen(ctx, testClient(t), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if s.Exact() != tt.exact {
				t.Fatalf("Exact() = %v, want %v", s.Exact(), tt.exact)
			}
			newCount := make([]int, len(keys))
			seenOnce := make([]bool, len(keys))
			var wrongNew, lost int
			present := make([]bool, 300)
			for start := 0; start < len(stream); {
				n := min(1+r.IntN(300), len(stream)-start)
				idx := stream[start : start+n]
				batch := make([][]string, n)
				for j, i := range idx {
					batch[j] = keys[i]
				}
				if err := s.TestAndAddBatch(ctx, batch, present); err != nil {
					t.Fatal(err)
				}
				for j, i := range idx {
					switch {
					case !present[j]:
						newCount[i]++
						if seenOnce[i] {
							wrongNew++
						}
					case !seenOnce[i]:
						lost++
					}
					seenOnce[i] = true
				}
				start += n
			}
			st, err := s.ExactStats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d keys: %d lost to false positives, %d exact checks, %d caught", len(keys), lost, st.Checks, st.Caught)
			if wrongNew != 0 {
				t.Errorf("%d repeats reported new", wrongNew)
			}
			if !tt.exact {
				if lost == 0 {
					t.Fatalf("filter-only lost no key: the filter is too large for the test to mean anything")
				}
				return
			}
			if lost != 0 {
				t.Errorf("%d of %d new keys reported present", lost, len(keys))
			}
			if st.Caught == 0 || st.Checks < uint64(len(keys)) {
				t.Errorf("exact stats %+v: want checks >= %d (every repeat) and some caught", st, len(keys))
			}
		})
	}
}

// TestSeenExactAtomic races workers (two Seen values, six goroutines) on
// the same new keys of an exact seen-set whose filter errs often: each key
// is reported new exactly once, none lost.
func TestSeenExactAtomic(t *testing.T) {
	checkSeenExactAtomic(t, testClient(t), SeenOptions{Filter: tinyFilter, Shards: 2, Exact: true, Salted: true, MaxBatch: 64})
}

func checkSeenExactAtomic(t *testing.T, c *Client, opts SeenOptions) {
	ctx := context.Background()
	var seens []*Seen
	for range 2 {
		s, err := OpenSeen(ctx, c, opts)
		if err != nil {
			t.Fatal(err)
		}
		seens = append(seens, s)
	}
	if seens[0].Salt() != seens[1].Salt() || seens[0].Salt() == 0 {
		t.Fatalf("salts %#x and %#x: want one non-zero salt for the crawl", seens[0].Salt(), seens[1].Salt())
	}
	keys := exactURLs(3000)
	counts, err := raceSeens(ctx, seens, keys, 6, rand.Uint64())
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range counts {
		if n != 1 {
			t.Errorf("key %q reported new %d times, want exactly 1", keys[i], n)
		}
	}
	st, err := seens[0].ExactStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d keys: %d checks, %d false positives caught", len(keys), st.Checks, st.Caught)
	if st.Caught == 0 {
		t.Errorf("exact stats %+v: the filter made no false positive, the race tests nothing", st)
	}
}

// TestSeenSalt: each new seen-set draws its own salt, every worker and a
// reopening take the stored one, two workers creating the seen-set at the
// same moment end with one salt, and a seen-set stored without a salt (an
// earlier layercrawl's) stays unsalted and filter-only.
func TestSeenSalt(t *testing.T) {
	ctx := context.Background()
	opts := SeenOptions{Filter: smallFilter, Shards: 2, Salted: true, Exact: true}
	a, err := OpenSeen(ctx, testClient(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	ca := testClient(t)
	b, err := OpenSeen(ctx, ca, opts)
	if err != nil {
		t.Fatal(err)
	}
	if a.Salt() == 0 || b.Salt() == 0 || a.Salt() == b.Salt() {
		t.Errorf("two crawls' salts %#x and %#x: want two random salts", a.Salt(), b.Salt())
	}
	again, err := OpenSeen(ctx, ca, SeenOptions{Filter: smallFilter, Shards: 2, Salted: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Salt() != b.Salt() || !again.Exact() {
		t.Errorf("reopened: salt %#x exact %v, want the stored %#x and exact", again.Salt(), again.Exact(), b.Salt())
	}
	// The same key goes to other bits under another salt.
	pa, _ := a.Layout().Probes([]string{"https://example.com", "x"}, nil)
	pb, _ := b.Layout().Probes([]string{"https://example.com", "x"}, nil)
	if fmt.Sprint(pa) == fmt.Sprint(pb) {
		t.Errorf("probes %v under both salts", pa)
	}

	// Concurrent creation: every worker ends with the winner's salt.
	cr := testClient(t)
	salts := make(chan uint64, 6)
	errs := make(chan error, 6)
	for range 6 {
		go func() {
			s, err := OpenSeen(ctx, cr, opts)
			if err != nil {
				errs <- err
				return
			}
			salts <- s.Salt()
		}()
	}
	var first uint64
	for i := range 6 {
		select {
		case err := <-errs:
			t.Fatal(err)
		case s := <-salts:
			if i == 0 {
				first = s
			} else if s != first {
				t.Errorf("concurrent workers got salts %#x and %#x", first, s)
			}
		}
	}

	// An unsalted, filter-only seen-set stays so.
	co := testClient(t)
	old, err := OpenSeen(ctx, co, SeenOptions{Filter: smallFilter, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(old.Params(), "salt=") {
		t.Fatalf("unsalted params %q", old.Params())
	}
	s, err := OpenSeen(ctx, co, opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.Salt() != 0 || s.Exact() {
		t.Errorf("opened an unsalted filter-only seen-set: salt %#x exact %v, want 0 and false", s.Salt(), s.Exact())
	}
}

// TestFingerprint: a key's fingerprint is the first 8 bytes of the SHA-256
// of its canonical URL, the segments joined by '/'.
func TestFingerprint(t *testing.T) {
	for _, u := range []string{"https://example.com", "https://example.com/", "https://example.com/a/b?c=d"} {
		seg := strings.Split(u[len("https://"):], "/")
		seg[0] = "https://" + seg[0]
		sum := sha256.Sum256([]byte(u))
		if got, want := Fingerprint(seg), binary.BigEndian.Uint64(sum[:8]); got != want {
			t.Errorf("Fingerprint(%q) = %#x, want %#x", seg, got, want)
		}
	}
}
