//go:build unix

package storage

import (
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/vfs"
	"golang.org/x/sys/unix"
)

// lockShared takes a shared lock on the lock file name, which must exist
// (an existing store's).
func lockShared(_ vfs.FS, name string) (io.Closer, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("storage: lock %s: %w", name, err)
	}
	spec := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &spec); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: lock %s (is a process writing the store?): %w", name, err)
	}
	return f, nil
}
