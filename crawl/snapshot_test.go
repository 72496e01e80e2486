package crawl

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/layercrawl/layercrawl/mlbf"
)

func newTestFilter(t testing.TB) filterSeen {
	t.Helper()
	f, err := mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: 1000, FalsePositiveRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	return filterSeen{f}
}

func TestSnapshotRoundTrip(t *testing.T) {
	src := newTestFilter(t)
	keys := [][]string{{"http://a.test", "x"}, {"http://b.test", "y", "z"}}
	for _, k := range keys {
		src.f.Add(k)
	}
	copy, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// An insert after the copy is not in it.
	late := []string{"http://c.test", "late"}
	src.f.Add(late)
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, 42, copy); err != nil {
		t.Fatal(err)
	}
	dst := newTestFilter(t)
	gen, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), dst)
	if err != nil || gen != 42 {
		t.Fatalf("ReadSnapshot = %d, %v; want 42, nil", gen, err)
	}
	for _, k := range keys {
		if !dst.f.Test(k) {
			t.Errorf("%v missing after the round trip", k)
		}
	}
	if dst.f.Test(late) {
		t.Errorf("%v, added after the snapshot, is in it", late)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, io.ErrUnexpectedEOF},
		{"short header", []byte("LCSEEN"), io.ErrUnexpectedEOF},
		{"foreign", []byte("GIF89a..........."), ErrSnapshot},
		{"header only", buf.Bytes()[:16], io.ErrUnexpectedEOF},
		{"damaged filter", flip(buf.Bytes(), 40), mlbf.ErrChecksum},
	} {
		if _, err := ReadSnapshot(bytes.NewReader(tc.data), newTestFilter(t)); !errors.Is(err, tc.want) {
			t.Errorf("%s: ReadSnapshot error %v, want %v", tc.name, err, tc.want)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0xff
	return c
}

// FuzzReadSnapshot feeds arbitrary bytes to the snapshot reader: it must
// return an error or a filter, never panic or allocate without bound.
func FuzzReadSnapshot(f *testing.F) {
	src := newTestFilter(f)
	src.f.Add([]string{"http://a.test", "x"})
	var buf bytes.Buffer
	copy, _ := src.Snapshot()
	if err := WriteSnapshot(&buf, 7, copy); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("LCSEEN01\x00\x00\x00\x00\x00\x00\x00\x01"))
	// One filter for every input: ReadFrom replaces it whole or not at
	// all, and building one sizes it (milliseconds, most of an exec).
	dst := newTestFilter(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		gen, err := ReadSnapshot(bytes.NewReader(data), dst)
		if err == nil && !bytes.HasPrefix(data, []byte(snapshotMagic)) {
			t.Fatalf("accepted a snapshot without the magic (generation %d)", gen)
		}
	})
}
