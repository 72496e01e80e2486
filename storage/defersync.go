package storage

import (
	"errors"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/vfs"
)

// deferSyncFS is the pebble file system of a store opened with
// Options.DeferSync. pebble still writes every committed batch to its
// write-ahead log before Commit returns, so the batch is in the operating
// system's hands and survives a crash of the process; but the fsync that
// would follow is deferred to syncAll (Store.Sync) or to the log file's
// Close, which pebble calls when it moves to a new log. Only the
// write-ahead log files are affected: tables, the manifest and directories
// are synced as pebble asks, so the store's own structure is as safe as
// ever, and after a crash of the machine pebble replays the log up to the
// last whole batch that reached the disk.
type deferSyncFS struct {
	vfs.FS

	mu   sync.Mutex             // protects live
	live map[*deferSyncFile]int // open log files; the value is unused
}

func newDeferSyncFS(base vfs.FS) *deferSyncFS {
	return &deferSyncFS{FS: base, live: map[*deferSyncFile]int{}}
}

// isLog reports whether name is one of pebble's write-ahead log files
// (NNNNNN.log).
func isLog(name string) bool { return strings.HasSuffix(name, ".log") }

func (fs *deferSyncFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isLog(name) {
		return f, err
	}
	df := &deferSyncFile{File: f, fs: fs}
	fs.mu.Lock()
	fs.live[df] = 0
	fs.mu.Unlock()
	return df, nil
}

func (fs *deferSyncFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}

func (fs *deferSyncFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(newname, f, err)
}

// syncAll makes what was written to the open log files durable.
func (fs *deferSyncFS) syncAll() error {
	fs.mu.Lock()
	files := make([]*deferSyncFile, 0, len(fs.live))
	for f := range fs.live {
		files = append(files, f)
	}
	fs.mu.Unlock()
	var err error
	for _, f := range files {
		err = errors.Join(err, f.syncNow())
	}
	return err
}

// deferSyncFile is a write-ahead log file whose syncs are deferred.
type deferSyncFile struct {
	vfs.File
	fs *deferSyncFS

	mu     sync.Mutex // protects closed; held across a real sync and Close
	closed bool
}

// Sync, SyncData and SyncTo are what pebble calls after writing a batch:
// the data is already written to the file, the disk flush is deferred.
func (f *deferSyncFile) Sync() error                             { return nil }
func (f *deferSyncFile) SyncData() error                         { return nil }
func (f *deferSyncFile) SyncTo(int64) (fullSync bool, err error) { return false, nil }

func (f *deferSyncFile) syncNow() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil // Close synced it
	}
	return f.File.SyncData()
}

// Close syncs the file before closing it: pebble closes a log when it moves
// to the next one, and only the newest log may lack a sync.
func (f *deferSyncFile) Close() error {
	f.mu.Lock()
	err := f.File.Sync()
	err = errors.Join(err, f.File.Close())
	f.closed = true
	f.mu.Unlock()
	f.fs.mu.Lock()
	delete(f.fs.live, f)
	f.fs.mu.Unlock()
	return err
}
