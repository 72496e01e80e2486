//go:build !unix

package storage

import (
	"io"

	"github.com/cockroachdb/pebble/vfs"
)

// lockShared takes the lock file exclusive, as pebble does: shared locks
// are implemented on Unix only.
func lockShared(fs vfs.FS, name string) (io.Closer, error) { return fs.Lock(name) }
