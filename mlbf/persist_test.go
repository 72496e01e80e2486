package mlbf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"testing"
)

type marshaler interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
	WriteTo(io.Writer) (int64, error)
	ReadFrom(io.Reader) (int64, error)
}

func sampleKeys(n int) [][]string {
	keys := make([][]string, n)
	for i := range keys {
		keys[i] = []string{fmt.Sprintf("host%d.example", i%17), "dir", fmt.Sprintf("page%d", i), "x", "y"}[:1+i%5]
	}
	return keys
}

func filledFilters(t testing.TB) map[string]marshaler {
	keys := sampleKeys(300)
	out := map[string]marshaler{}
	for _, mode := range []Mode{Improved, Paper} {
		f, err := New(Options{Mode: mode, BitsPerLayer: 999, ExpectedURLs: 500})
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewConcurrent(Options{Mode: mode, BitsPerLayer: 1000, ExpectedURLs: 400, Layers: 3, Hashes: 4})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			f.Add(k)
			c.Add(k)
		}
		out["filter-"+mode.String()] = f
		out["concurrent-"+mode.String()] = c
	}
	cl, _ := NewClassic(3001, 5)
	for _, k := range keys {
		cl.AddString(fmt.Sprint(k))
	}
	out["classic"] = cl
	return out
}

func TestPersistRoundTrip(t *testing.T) {
	keys := sampleKeys(300)
	for name, f := range filledFilters(t) {
		data, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, err := f.WriteTo(&buf)
		if err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("%s: WriteTo = %d, %v; differs from MarshalBinary (%d bytes)", name, n, err, len(data))
		}
		var g marshaler
		switch f.(type) {
		case *Filter:
			g = &Filter{}
		case *Concurrent:
			g = &Concurrent{}
		case *Classic:
			g = &Classic{}
		}
		// Trailing data must stay unread by ReadFrom.
		buf.WriteString("next")
		if n, err := g.ReadFrom(&buf); err != nil || n != int64(len(data)) {
			t.Fatalf("%s: ReadFrom = %d, %v, want %d, nil", name, n, err, len(data))
		}
		if buf.String() != "next" {
			t.Errorf("%s: ReadFrom consumed trailing bytes", name)
		}
		again, _ := g.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Errorf("%s: round trip changed the bytes", name)
		}
		for _, k := range keys {
			var ok bool
			switch g := g.(type) {
			case *Filter:
				ok = g.Test(k)
			case *Concurrent:
				ok = g.Test(k)
			case *Classic:
				ok = g.TestString(fmt.Sprint(k))
			}
			if !ok {
				t.Fatalf("%s: %q lost in the round trip", name, k)
			}
		}
		if err := g.UnmarshalBinary(append(data, 0)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: trailing byte: error %v, want ErrFormat", name, err)
		}
	}
}

// TestPersistCorrupt checks that every truncation and every single-bit flip
// of a saved filter is rejected with ErrFormat or ErrChecksum.
func TestPersistCorrupt(t *testing.T) {
	for name, f := range filledFilters(t) {
		data, _ := f.MarshalBinary()
		// Every length within the header, then a sample of the layers.
		step := max(1, len(data)/scaled(150))
		for n := 0; n < len(data); n++ {
			if n > 200 && n%step != 0 {
				continue
			}
			err := f.UnmarshalBinary(data[:n])
			if !errors.Is(err, ErrFormat) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%s: truncated to %d: error %v", name, n, err)
			}
		}
		// Every bit of the header, then a sample of the layers.
		bitStep := max(7, len(data)*8/scaled(600))
		for i := 0; i < len(data)*8; i++ {
			if i >= 200*8 && i%bitStep != 0 {
				continue
			}
			bad := bytes.Clone(data)
			bad[i/8] ^= 1 << (i % 8)
			err := f.UnmarshalBinary(bad)
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrChecksum) {
				t.Fatalf("%s: bit %d flipped: error %v", name, i, err)
			}
		}
	}
}

// TestPersistHostileHeader: a valid header claiming 17 layers of 2^40 bits
// with no data must fail fast without allocating them.
func TestPersistHostileHeader(t *testing.T) {
	hdr := append([]byte("MLBF"), 1, 0, kindFilter, byte(Paper))
	hdr = binary.LittleEndian.AppendUint32(hdr, hashIDCode)
	hdr = binary.LittleEndian.AppendUint32(hdr, MaxLayers)
	hdr = binary.LittleEndian.AppendUint32(hdr, 3)
	hdr = binary.LittleEndian.AppendUint32(hdr, MaxLayers+1)
	for i := 0; i <= MaxLayers; i++ {
		hdr = binary.LittleEndian.AppendUint64(hdr, MaxBits)
	}
	hdr = binary.LittleEndian.AppendUint32(hdr, crcOf(hdr))
	data := append(hdr, make([]byte, 1<<20)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var f Filter
	if err := f.UnmarshalBinary(data); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("hostile header: error %v, want truncation", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("hostile header made the reader allocate %d bytes for 1 MiB of data", got)
	}
}

func TestMerge(t *testing.T) {
	a, _ := New(Options{ExpectedURLs: 1000})
	b, _ := New(Options{ExpectedURLs: 1000})
	keys := sampleKeys(400)
	for i, k := range keys {
		if i%2 == 0 {
			a.Add(k)
		} else {
			b.Add(k)
		}
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !a.Test(k) {
			t.Fatalf("%q missing after merge", k)
		}
	}
	ca, _ := NewConcurrent(Options{ExpectedURLs: 1000})
	cb, _ := NewConcurrent(Options{ExpectedURLs: 1000})
	for i, k := range keys {
		if i%3 == 0 {
			ca.Add(k)
		} else {
			cb.Add(k)
		}
	}
	if err := ca.Merge(cb); err != nil {
		t.Fatal(err)
	}
	if err := ca.Merge(ca); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !ca.Test(k) {
			t.Fatalf("%q missing after concurrent merge", k)
		}
	}
	mismatch := []struct {
		name string
		o    Options
	}{
		{"size", Options{ExpectedURLs: 2000}},
		{"mode", Options{Mode: Paper}},
		{"hashes", Options{ExpectedURLs: 1000, Hashes: 4}},
		{"layers", Options{ExpectedURLs: 1000, Layers: 3}},
	}
	for _, tt := range mismatch {
		o, _ := New(tt.o)
		if err := a.Merge(o); !errors.Is(err, ErrIncompatible) {
			t.Errorf("merge with different %s: error %v, want ErrIncompatible", tt.name, err)
		}
	}
	c1, _ := NewClassic(1000, 3)
	c2, _ := NewClassic(1000, 3)
	c2.AddString("k")
	if err := c1.Merge(c2); err != nil || !c1.TestString("k") {
		t.Errorf("classic merge: %v", err)
	}
	c3, _ := NewClassic(1001, 3)
	if err := c1.Merge(c3); !errors.Is(err, ErrIncompatible) {
		t.Errorf("classic merge with different m: error %v", err)
	}
}

// FuzzReadFrom feeds arbitrary bytes to every reader: no panic, no huge
// allocation, and whatever is accepted writes back to the same bytes and
// answers queries.
func FuzzReadFrom(f *testing.F) {
	for _, m := range filledFilters(f) {
		data, _ := m.MarshalBinary()
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	small, _ := New(Options{Layers: 1, Hashes: 1, LayerBits: []uint64{512, 512}})
	small.Add([]string{"a"})
	data, _ := small.MarshalBinary()
	f.Add(data)
	salted, _ := New(Options{Layers: 2, Hashes: 2, LayerBits: []uint64{512, 512, 1024}, Salt: 0x5eed})
	salted.Add([]string{"a", "b"})
	data, _ = salted.MarshalBinary()
	f.Add(data)
	f.Add([]byte("MLBF"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range []marshaler{&Filter{}, &Concurrent{}, &Classic{}} {
			if err := m.UnmarshalBinary(data); err != nil {
				if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrChecksum) {
					t.Fatalf("%T: error %v wraps neither ErrFormat nor ErrChecksum", m, err)
				}
				continue
			}
			again, err := m.MarshalBinary()
			if err != nil || !bytes.Equal(again, data) {
				t.Fatalf("%T: accepted data does not round-trip", m)
			}
			switch m := m.(type) {
			case *Filter:
				m.TestAndAdd([]string{"a", "b", "c", "d", "e", "f"})
				_ = m.Stats()
			case *Concurrent:
				m.TestAndAdd([]string{"a"})
				m.TestAndAddBatch([][]string{{"x"}, {}}, make([]bool, 2))
			case *Classic:
				m.TestAndAddString("a")
			}
		}
	})
}

func crcOf(b []byte) uint32 {
	return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
}

// A Snapshot holds the filter as it was when taken: inserts after it are
// not in what it writes, and what it writes is what WriteTo wrote then.
func TestSnapshotIsPointInTime(t *testing.T) {
	t.Run("Snapshot", func(t *testing.T) { testSnapshotIsPointInTime(t, false) })
	// A snapshot prepared before the first inserts holds what Capture saw.
	t.Run("PrepareSnapshot", func(t *testing.T) { testSnapshotIsPointInTime(t, true) })
}

func testSnapshotIsPointInTime(t *testing.T, prepare bool) {
	c, err := NewConcurrent(Options{ExpectedURLs: 2000})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([][]string, 2000)
	for i := range keys {
		keys[i] = []string{fmt.Sprintf("h%d.example", i%23), "docs", fmt.Sprintf("p%d.html", i)}
	}
	var prepared *Snapshot
	if prepare {
		prepared = c.PrepareSnapshot()
		if _, err := prepared.WriteTo(io.Discard); err == nil {
			t.Error("a prepared snapshot wrote before Capture")
		}
	}
	for _, k := range keys[:1000] {
		c.Add(k)
	}
	var then bytes.Buffer
	if _, err := c.WriteTo(&then); err != nil {
		t.Fatal(err)
	}
	snap := prepared
	if prepare {
		snap.Capture()
	} else {
		snap = c.Snapshot()
	}
	for _, k := range keys[1000:] {
		c.Add(k)
	}
	var got bytes.Buffer
	if _, err := snap.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), then.Bytes()) {
		t.Fatal("the snapshot wrote something other than the filter when it was taken")
	}
	var back Concurrent
	if _, err := back.ReadFrom(&got); err != nil {
		t.Fatal(err)
	}
	later := 0
	for _, k := range keys[1000:] {
		if back.Test(k) {
			later++
		}
	}
	if later > 100 {
		t.Errorf("%d of 1000 keys inserted after the snapshot test present in it", later)
	}
	for _, k := range keys[:1000] {
		if !back.Test(k) {
			t.Fatalf("%v, inserted before the snapshot, is missing", k)
		}
	}
}

// Taking and writing a snapshot allocates one copy of the filter (plus a
// bounded write buffer), not two: the checkpoint's memory is the filter
// and one copy.
func TestSnapshotCopiesOnce(t *testing.T) {
	c, err := NewConcurrent(Options{ExpectedURLs: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	size := c.TotalBits() / 8
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := c.Snapshot().WriteTo(io.Discard); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > size+size/4+1<<20 {
		t.Errorf("a snapshot of a %d-byte filter allocated %d bytes; want one copy", size, got)
	}
}
