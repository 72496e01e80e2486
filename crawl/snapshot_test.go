package crawl

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/layercrawl/layercrawl/mlbf"
)

// newTestFilter returns the default seen-set, growing unless fixed.
func newTestFilter(t testing.TB, fixed bool) *localSeen {
	t.Helper()
	s, err := newLocalSeen(Options{ExpectedURLs: 1000, FalsePositiveRate: 0.01, FixedFilter: fixed})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *localSeen) add(seg []string) { s.TestAndAdd(context.Background(), seg) }

// test reports whether any of the set's filters holds seg.
func (s *localSeen) test(seg []string) bool {
	st := s.state.Load()
	had := st.cur().Test(seg)
	for _, o := range st.older {
		had = had || o.f.Test(seg)
	}
	return had
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, fixed := range []bool{true, false} {
		t.Run(map[bool]string{true: "fixed", false: "growing"}[fixed], func(t *testing.T) { testSnapshotRoundTrip(t, fixed) })
	}
}

func testSnapshotRoundTrip(t *testing.T, fixed bool) {
	src := newTestFilter(t, fixed)
	keys := [][]string{{"http://a.test", "x"}, {"http://b.test", "y", "z"}}
	for _, k := range keys {
		src.add(k)
	}
	copy, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// An insert after the copy is not in it.
	late := []string{"http://c.test", "late"}
	src.add(late)
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, 42, copy); err != nil {
		t.Fatal(err)
	}
	// The snapshot's kind wins over the reader's: a resumed crawl keeps
	// its filter.
	dst := newTestFilter(t, !fixed)
	gen, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), dst)
	if err != nil || gen != 42 {
		t.Fatalf("ReadSnapshot = %d, %v; want 42, nil", gen, err)
	}
	if got := dst.state.Load(); (got.fixed != nil) != fixed || (got.grow != nil) == fixed {
		t.Fatalf("read back as fixed %v, growing %v; want the snapshot's kind (fixed %v)", got.fixed != nil, got.grow != nil, fixed)
	}
	// Each new filter has its own salt, and the snapshot's comes back.
	if src.salt() == 0 || src.salt() == newTestFilter(t, fixed).salt() {
		t.Errorf("salt %#x: not random", src.salt())
	}
	if dst.salt() != src.salt() {
		t.Errorf("salt read back %#x, want %#x", dst.salt(), src.salt())
	}
	for _, k := range keys {
		if !dst.test(k) {
			t.Errorf("%v missing after the round trip", k)
		}
	}
	if dst.test(late) {
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
		{"short magic", buf.Bytes()[:18], io.ErrUnexpectedEOF},
		{"damaged filter", flip(buf.Bytes(), 40), mlbf.ErrChecksum},
		{"not a filter", append(buf.Bytes()[:16:16], "JUNKJUNKJUNK"...), mlbf.ErrFormat},
	} {
		to := newTestFilter(t, fixed)
		if _, err := ReadSnapshot(bytes.NewReader(tc.data), to); !errors.Is(err, tc.want) {
			t.Errorf("%s: ReadSnapshot error %v, want %v", tc.name, err, tc.want)
		}
		if (to.state.Load().fixed != nil) != fixed {
			t.Errorf("%s: a failed read changed the filter's kind", tc.name)
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
	for _, fixed := range []bool{true, false} {
		src := newTestFilter(f, fixed)
		src.add([]string{"http://a.test", "x"})
		var buf bytes.Buffer
		copy, _ := src.Snapshot()
		if err := WriteSnapshot(&buf, 7, copy); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte("LCSEEN01\x00\x00\x00\x00\x00\x00\x00\x01"))
	// One filter for every input: ReadFrom replaces it whole or not at
	// all, and building one sizes it (milliseconds, most of an exec).
	dst := newTestFilter(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		gen, err := ReadSnapshot(bytes.NewReader(data), dst)
		if err == nil && !bytes.HasPrefix(data, []byte(snapshotMagic)) {
			t.Fatalf("accepted a snapshot without the magic (generation %d)", gen)
		}
	})
}
