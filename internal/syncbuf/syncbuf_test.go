package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				if _, err := b.Write([]byte("x\n")); err != nil {
					t.Error(err)
				}
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got, want := strings.Count(b.String(), "x\n"), 800; got != want {
		t.Fatalf("got %d lines, want %d", got, want)
	}
}
