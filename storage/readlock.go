package storage

import (
	"io"

	"github.com/cockroachdb/pebble/vfs"
)

// sharedLockFS is the file system of a store opened ReadOnly: its Lock
// takes the store's lock file shared, where pebble takes it exclusive
// even to read, so that the workers of a distributed crawl, in one
// process or several, read one earlier crawl's state at once
// (crawl.Options.Previous), while a process writing the store still
// keeps them out and they keep it out.
//
// The lock is a POSIX record lock, held per process: when one of two
// readers of a store in one process closes, the process's lock goes and a
// writer in another process could open the store under the other.
type sharedLockFS struct{ vfs.FS }

func (fs sharedLockFS) Lock(name string) (io.Closer, error) { return lockShared(fs.FS, name) }
