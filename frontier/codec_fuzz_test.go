package frontier

import (
	"bytes"
	"errors"
	"testing"
)

// The crawl state's remaining decoders; FuzzDecodeEntry and
// FuzzDecodeState in codec_test.go cover the others. See docs/FUZZING.md
// for running them longer.

func FuzzDecodeCount(f *testing.F) {
	f.Add(encodeCount(1))
	f.Add(encodeCount(1 << 40))
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeCount([]byte("h/x"), b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("negative count %d", n)
		}
		if again, err := decodeCount(nil, encodeCount(n)); err != nil || again != n {
			t.Fatalf("re-encoding %d gave %d, %v", n, again, err)
		}
	})
}

func FuzzParseQueueKey(f *testing.F) {
	f.Add(queueKey("a.test:8080", 42), "a.test:8080")
	f.Add(queueKey("a.test", 1), "a.test.evil")
	f.Add([]byte("q/"), "")
	f.Add([]byte("q/x\x00\x00\x00"), "x")
	f.Fuzz(func(t *testing.T, key []byte, host string) {
		seq, err := parseQueueKey(key, host)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if !bytes.Equal(queueKey(host, seq), key) {
			t.Fatalf("key %q parsed as %q/%d, which encodes differently", key, host, seq)
		}
		// A key the parser accepts lies in its host's range.
		start, end := queueRange(host, 0)
		if bytes.Compare(key, start) < 0 || bytes.Compare(key, end) >= 0 {
			t.Fatalf("key %q outside the range of host %q", key, host)
		}
	})
}
