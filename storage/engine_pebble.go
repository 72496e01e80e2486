package storage

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// pebbleEngine is the production engine; see the package documentation for
// why pebble was chosen over bbolt.
type pebbleEngine struct {
	db  *pebble.DB
	dfs *deferSyncFS // nil unless Options.DeferSync
	// readOnly: Options.ReadOnly; close does not flush.
	readOnly bool
}

// quietLogger drops pebble's informational messages (the crawler owns
// stderr for its progress line) but keeps its fatal invariant checks.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

func openPebble(dir string, opts Options, mustExist bool) (engine, error) {
	cache := pebble.NewCache(opts.CacheSize)
	po := &pebble.Options{
		Cache:            cache,
		MemTableSize:     uint64(opts.MemTableSize),
		ErrorIfNotExists: mustExist,
		ReadOnly:         opts.ReadOnly,
		Logger:           quietLogger{},
		// A crawl's state is mostly a queue: entries are written, read
		// back and deleted within minutes. Letting 8 flushed tables
		// gather in L0 before compacting (pebble's default is 4) lets
		// more of them meet their deletions in L0 instead of being
		// rewritten into the lower levels first: on the million-page web
		// (10,000 hosts, first 100,000 pages) compaction took 20% of the
		// crawler's CPU, and the crawl's CPU fell 7-16% (medians of three
		// alternating runs, 43.4 to 39.4 s and 50.3 to 42.1 s), the state
		// on disk the same. Writes stall at 32 tables in L0 (default 12),
		// so that the larger L0 does not stall inserts sooner.
		L0CompactionThreshold: 8,
		L0StopWritesThreshold: 32,
	}
	if opts.fs != nil {
		po.FS = opts.fs
	}
	if opts.ReadOnly {
		if po.FS == nil {
			po.FS = vfs.Default
		}
		po.FS = sharedLockFS{po.FS}
	}
	var dfs *deferSyncFS
	if opts.DeferSync {
		if po.FS == nil {
			po.FS = vfs.Default
		}
		dfs = newDeferSyncFS(po.FS)
		po.FS = dfs
	}
	db, err := pebble.Open(dir, po)
	cache.Unref() // the DB holds its own reference
	if err != nil {
		switch {
		case errors.Is(err, pebble.ErrDBDoesNotExist):
			return nil, fmt.Errorf("%w: %s: no pebble database (%v)", ErrForeign, dir, err)
		case pebble.IsCorruptionError(err):
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
		case mustExist && errors.Is(err, fs.ErrNotExist):
			// The store's own files name a file that is gone.
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
		}
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	return &pebbleEngine{db: db, dfs: dfs, readOnly: opts.ReadOnly}, nil
}

func (e *pebbleEngine) name() string { return "pebble" }

func (e *pebbleEngine) get(key []byte) ([]byte, error) {
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, wrapPebbleErr(err)
	}
	out := append([]byte(nil), v...)
	if err := closer.Close(); err != nil {
		return nil, wrapPebbleErr(err)
	}
	return out, nil
}

type pebbleWriter struct{ b *pebble.Batch }

func (w pebbleWriter) Set(key, value []byte) error { return w.b.Set(key, value, nil) }
func (w pebbleWriter) Delete(key []byte) error     { return w.b.Delete(key, nil) }

// DeleteRange deletes the keys in [start, end) with one range tombstone.
func (w pebbleWriter) DeleteRange(start, end []byte) error { return w.b.DeleteRange(start, end, nil) }

func (e *pebbleEngine) write(fn func(Writer) error) error {
	b := e.db.NewBatch()
	defer b.Close()
	if err := fn(pebbleWriter{b}); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return wrapPebbleErr(err)
	}
	return nil
}

func (e *pebbleEngine) sync() error {
	if e.dfs == nil {
		return nil
	}
	if err := e.dfs.syncAll(); err != nil {
		return fmt.Errorf("storage: sync: %w", err)
	}
	return nil
}

func (e *pebbleEngine) ascend(start, end []byte, fn func(key, value []byte) bool) error {
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return wrapPebbleErr(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return wrapPebbleErr(err)
	}
	if err := it.Close(); err != nil {
		return wrapPebbleErr(err)
	}
	return nil
}

func (e *pebbleEngine) close() error {
	// Flush the memtable so that after a clean shutdown every record lives
	// in checksummed table files: damage to them is reported as ErrCorrupt,
	// whereas damage to the newest write-ahead log is indistinguishable from
	// a torn tail and replay would stop there.
	if e.readOnly {
		if err := e.db.Close(); err != nil {
			return wrapPebbleErr(err)
		}
		return nil
	}
	if err := e.db.Flush(); err != nil {
		e.db.Close()
		return wrapPebbleErr(err)
	}
	if err := e.db.Close(); err != nil {
		return wrapPebbleErr(err)
	}
	return nil
}

func wrapPebbleErr(err error) error {
	if pebble.IsCorruptionError(err) {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return fmt.Errorf("storage: %w", err)
}
