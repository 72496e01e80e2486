package storage

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// countFS counts GetDiskUsage calls.
type countFS struct {
	freeFS
	calls *atomic.Int64
}

func (f countFS) GetDiskUsage(dir string) (vfs.DiskUsage, error) {
	f.calls.Add(1)
	return f.freeFS.GetDiskUsage(dir)
}

// With more than diskGuardSlack above the reserve, the guard asks the file
// system again only diskGuardInterval later; closer to the reserve it asks
// at every write, as TestDiskReserve needs.
func TestDiskReserveRoomy(t *testing.T) {
	const reserve = 1 << 20
	for _, tc := range []struct {
		name     string
		free     int64
		skipping bool
	}{
		{"slack", reserve + diskGuardSlack + 1, true},
		{"at the slack", reserve + diskGuardSlack, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var free, calls atomic.Int64
			free.Store(tc.free)
			s, err := Open(t.TempDir(), Options{fs: countFS{freeFS{vfs.Default, &free}, &calls}, DiskReserve: reserve})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var clock atomic.Int64
			s.guard.elapsed = func() time.Duration { return time.Duration(clock.Load()) }
			set := func(k string) error {
				return s.Write(func(w Writer) error { return w.Set([]byte(k), []byte("v")) })
			}
			if err := set("a"); err != nil {
				t.Fatal(err)
			}
			calls.Store(0)
			for i := range 100 {
				clock.Add(int64(diskGuardInterval / 50)) // 50 writes per interval
				if err := set(fmt.Sprint("k", i)); err != nil {
					t.Fatal(err)
				}
			}
			if n := calls.Load(); tc.skipping && n != 2 || !tc.skipping && n != 100 {
				t.Errorf("100 writes over two intervals asked for the free space %d times", n)
			}
			// The disk fills: refused at once without the slack, after
			// the interval with it.
			free.Store(0)
			clock.Add(int64(diskGuardInterval / 200))
			err = set("b")
			if tc.skipping {
				if err != nil {
					t.Fatalf("write within the interval after a roomy check: %v", err)
				}
				clock.Add(int64(diskGuardInterval))
				err = set("c")
			}
			if !errors.Is(err, ErrDiskFull) {
				t.Errorf("write on a full disk: %v, want ErrDiskFull", err)
			}
		})
	}
}
