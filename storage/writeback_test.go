package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWritebackRanges(t *testing.T) {
	var wb writeback
	type step struct{ size, off, n int64 }
	for i, s := range []step{
		{100, 0, 0},
		{writebackChunk - 1, 0, 0},
		{writebackChunk, 0, writebackChunk},
		{writebackChunk + 10, 0, 0},
		{3*writebackChunk + 5, writebackChunk, 2*writebackChunk + 5},
		{2 * writebackChunk, 0, 0}, // cut back after a failed write
		{3 * writebackChunk, 2 * writebackChunk, writebackChunk},
	} {
		if off, n := wb.wrote(s.size); off != s.off || n != s.n {
			t.Errorf("step %d: wrote(%d) = %d, %d; want %d, %d", i, s.size, off, n, s.off, s.n)
		}
	}
}

// recordWritebacks replaces startWriteback for the test and returns what
// it was asked, per file name.
func recordWritebacks(t *testing.T) func() map[string][][2]int64 {
	t.Helper()
	var mu sync.Mutex
	got := map[string][][2]int64{}
	orig := startWriteback
	startWriteback = func(f *os.File, off, n int64) error {
		mu.Lock()
		defer mu.Unlock()
		name := filepath.Base(f.Name())
		got[name] = append(got[name], [2]int64{off, n})
		return orig(f, off, n)
	}
	t.Cleanup(func() { startWriteback = orig })
	return func() map[string][][2]int64 {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// checkWritebacks checks that ranges are contiguous from 0, each at least
// writebackChunk, and leave less than writebackChunk of size unwritten.
func checkWritebacks(t *testing.T, name string, ranges [][2]int64, from, size int64) {
	t.Helper()
	at := from
	for _, r := range ranges {
		if r[0] != at || r[1] < writebackChunk {
			t.Errorf("%s: writeback of [%d, +%d) after %d; ranges %v", name, r[0], r[1], at, ranges)
			return
		}
		at += r[1]
	}
	if at > size || size-at >= writebackChunk {
		t.Errorf("%s: writeback started up to %d of %d bytes; ranges %v", name, at, size, ranges)
	}
}

func TestWARCWriteback(t *testing.T) {
	got := recordWritebacks(t)
	dir := t.TempDir()
	const max = 5 << 20
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "wb", MaxFileSize: max})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	body := make([]byte, 100<<10)
	for i := range 120 { // 12 MB that gzip cannot shrink: three files
		for j := range body {
			body[j] = byte(rng.UintN(256))
		}
		ex := &Exchange{TargetURI: fmt.Sprintf("http://wb.example/%d", i), RequestHead: []byte("GET / HTTP/1.1\r\n"),
			ResponseHead: ResponseHead("", 200, nil, len(body)), Body: body}
		if _, err := w.Write(ex); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := readWARCDir(t, dir)
	if len(files) < 3 {
		t.Fatalf("%d files, want 3 or more", len(files))
	}
	for _, wf := range files {
		checkWARCFile(t, wf)
		fi, err := os.Stat(filepath.Join(dir, wf.name))
		if err != nil {
			t.Fatal(err)
		}
		checkWritebacks(t, wf.name, got()[wf.name], 0, fi.Size())
	}
}

func TestCrawlLogWriteback(t *testing.T) {
	got := recordWritebacks(t)
	path := filepath.Join(t.TempDir(), "crawl.log.jsonl")
	// The log is appended to: the writeback starts where it was opened.
	const old = "{\"url\":\"http://old.example/\"}\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := OpenCrawlLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30000 { // about 3 MB
		if err := l.Write(Entry{URL: fmt.Sprintf("http://log.example/%d/%0100d", i, i), Status: 200}); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ranges := got()[filepath.Base(path)]
	if len(ranges) < 2 {
		t.Fatalf("%d writebacks of a %d-byte log", len(ranges), fi.Size())
	}
	checkWritebacks(t, "log", ranges, int64(len(old)), fi.Size())
	lines, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(lines, []byte("\n")); n != 30001 {
		t.Errorf("%d lines, want 30001", n)
	}
}
