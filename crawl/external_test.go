package crawl

import (
	"os"
	"os/exec"
	"testing"
)

// TestExternalModule runs the tests of examples/embed, a module outside
// this one (it imports layercrawl through a replace directive) whose
// program crawls through package crawl only: they check that it fetches
// and archives exactly what "crawler crawl" does on the same site.
func TestExternalModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a second module; skipped in -short mode")
	}
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = "../examples/embed"
	// The outer test's flags (-race, a -run pattern) are not the inner
	// module's.
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in examples/embed: %v\n%s\n(after a dependency change, run go mod tidy in examples/embed)", err, out)
	}
	t.Logf("%s", out)
}
