package urlnorm

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedPath returns ../shared/<rel> beside the repository (../../shared
// from this package). When it is absent the test is skipped, or fails under
// CI=true, where the data must be present.
func sharedPath(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared test data missing under CI: %v", err)
		}
		t.Skipf("shared test data not found (%v): clone ../shared beside the repository to run this test", err)
	}
	return p
}

// newExact returns a Normalizer that serializes exactly as the WHATWG
// standard (no policy), for comparing with the standard's test data.
func newExact(t testing.TB) *Normalizer {
	t.Helper()
	n, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	n.ps.exact = true
	return n
}
