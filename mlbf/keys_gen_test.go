package mlbf

import (
	"strings"
	"testing"
)

// TestURLGen checks the benchmark key generator: deterministic, distinct,
// and its segments are exactly SplitURL's.
func TestURLGen(t *testing.T) {
	var a, b keyChunk
	a.fill(newURLGen(100000, 1), 5000)
	b.fill(newURLGen(100000, 1), 5000)
	seen := map[string]bool{}
	for i := range a.urls {
		u := string(a.urls[i])
		if u != string(b.urls[i]) {
			t.Fatalf("key %d differs between runs: %q vs %q", i, u, b.urls[i])
		}
		if seen[u] {
			t.Fatalf("duplicate key %q", u)
		}
		seen[u] = true
		if got, want := strings.Join(a.segs[i], "|"), strings.Join(SplitURL(u), "|"); got != want {
			t.Fatalf("segments of %q = %s, want %s", u, got, want)
		}
	}
	t.Logf("sample: %s %s %s; distinct per depth %v", a.urls[0], a.urls[1], a.urls[2], EstimateSegments(a.segs, 4))
}
