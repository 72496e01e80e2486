package fetch

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// fetch, httptest server and idle connection must be shut down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
