package storage

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// ErrDiskFull is returned (wrapped, with the directory) by Store.Write
// when the file system holding the store has less free space than
// Options.DiskReserve. It matches syscall.ENOSPC too, like the file
// writes that a full disk fails.
var ErrDiskFull = fmt.Errorf("storage: disk full: %w", syscall.ENOSPC)

// defaultDiskReserve is Options.DiskReserve's default for a memtable of
// memTable bytes: room to flush it and a second one being filled (a
// table file is at most about its memtable's size), to write the
// write-ahead log of the batch that arrives meanwhile, and a MiB of slack.
func defaultDiskReserve(memTable int64) int64 { return 3*memTable + 1<<20 }

// diskGuard refuses writes once the store's file system is nearly full.
// pebble treats a failed write-ahead log write as fatal (db.go: "fatal
// commit error", Logger.Fatalf, which exits the process), so a store
// that let a write reach a full disk would kill the crawl with no chance
// to stop cleanly; refusing the write first leaves the store whole and
// open, ready to be closed and resumed once there is room. A concurrent
// writer to the same file system (the crawl's WARC files, for one) can
// still take the reserve between the check and the write; the reserve is
// sized so that it takes more than a few records.
//
// A check asks the file system (statfs) unless the last answer, less than
// diskGuardInterval ago, left more than diskGuardSlack above the reserve:
// a crawl writes a batch per fetch, and one statfs each was 1% of a
// crawl's CPU (docs/BENCHMARKS.md). Filling 4 GiB in 100 ms
// takes 40 GB/s; below that slack every write checks.
type diskGuard struct {
	fs      vfs.FS
	dir     string
	reserve int64 // bytes; negative: no check
	// elapsed is the monotonic time since the guard was made (a test's
	// clock when set).
	elapsed func() time.Duration
	// roomyUntil is the elapsed time in nanoseconds before which a check
	// may skip statfs.
	roomyUntil atomic.Int64
}

const (
	diskGuardSlack    = 4 << 30
	diskGuardInterval = 100 * time.Millisecond
)

// newDiskGuard returns a guard of dir's file system (fs, or the operating
// system's when nil) that keeps reserve bytes free.
func newDiskGuard(fs vfs.FS, dir string, reserve int64) *diskGuard {
	if fs == nil {
		fs = vfs.Default
	}
	start := time.Now()
	return &diskGuard{fs: fs, dir: dir, reserve: reserve, elapsed: func() time.Duration { return time.Since(start) }}
}

func (g *diskGuard) check() error {
	if g.reserve < 0 {
		return nil
	}
	now := g.elapsed()
	if int64(now) < g.roomyUntil.Load() {
		return nil
	}
	u, err := g.fs.GetDiskUsage(g.dir)
	if err != nil {
		return fmt.Errorf("storage: %s: free space: %w", g.dir, err)
	}
	if u.AvailBytes < uint64(g.reserve) {
		return fmt.Errorf("storage: write %s: %w (%d bytes free, below the %d bytes the store keeps in reserve for its log and flushes)",
			g.dir, ErrDiskFull, u.AvailBytes, g.reserve)
	}
	if u.AvailBytes-uint64(g.reserve) > diskGuardSlack {
		g.roomyUntil.Store(int64(now + diskGuardInterval))
	}
	return nil
}
