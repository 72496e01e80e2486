package storage

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// freeFS reports free bytes from a counter instead of the file system.
type freeFS struct {
	vfs.FS
	free *atomic.Int64
}

func (f freeFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	return vfs.DiskUsage{AvailBytes: uint64(f.free.Load()), TotalBytes: 1 << 40}, nil
}

// Below Options.DiskReserve a Write is refused with ErrDiskFull, naming
// the directory, and writes nothing; with room again the store goes on.
func TestDiskReserve(t *testing.T) {
	dir := t.TempDir()
	var free atomic.Int64
	free.Store(1 << 30)
	s, err := Open(dir, Options{fs: freeFS{vfs.Default, &free}, DiskReserve: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	set := func(k string) error {
		return s.Write(func(w Writer) error { return w.Set([]byte(k), []byte("v")) })
	}
	if err := set("a"); err != nil {
		t.Fatal(err)
	}
	free.Store(1<<20 - 1)
	err = set("b")
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Write below the reserve: %v; want ErrDiskFull, ENOSPC and %s", err, dir)
	}
	if _, err := s.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
		t.Errorf("refused batch written: Get = %v", err)
	}
	free.Store(1 << 20)
	if err := set("b"); err != nil {
		t.Errorf("Write with room again: %v", err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := s.Get([]byte(k)); err != nil {
			t.Errorf("Get %s: %v", k, err)
		}
	}
}

// A negative reserve turns the check off.
func TestDiskReserveOff(t *testing.T) {
	var free atomic.Int64
	s, err := Open(t.TempDir(), Options{fs: freeFS{vfs.Default, &free}, DiskReserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(func(w Writer) error { return w.Set([]byte("a"), nil) }); err != nil {
		t.Errorf("Write with the check off: %v", err)
	}
}
