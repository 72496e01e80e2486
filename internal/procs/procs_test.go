package procs

import (
	"errors"
	"testing"
	"time"
)

func TestCPUTime(t *testing.T) {
	a, err := CPUTime()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the count moves (its resolution is a clock tick at
	// worst), for at most a second of wall time.
	x := uint64(1)
	for start := time.Now(); time.Since(start) < time.Second; {
		for i := 0; i < 1_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		b, err := CPUTime()
		if err != nil {
			t.Fatal(err)
		}
		if b > a {
			return
		}
	}
	t.Errorf("CPU time stayed at %v after a second of spinning (%d)", a, x)
}
