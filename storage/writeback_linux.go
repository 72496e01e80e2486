package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWritebackOS asks Linux to write f's dirty pages in [off, off+n) to
// disk (sync_file_range with SYNC_FILE_RANGE_WRITE). It does not wait for
// the writes, nor for pages already being written, and it makes nothing
// durable: the file's metadata and the disk's cache still need an fsync.
func startWritebackOS(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}); err != nil {
		return err
	}
	return serr
}
