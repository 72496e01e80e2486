package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/vfs"
)

// Errors returned by the store. They are matched with errors.Is; the
// returned errors wrap them with the path and the engine's own message.
var (
	// ErrNotFound is returned by Get when the key is absent.
	ErrNotFound = errors.New("storage: key not found")
	// ErrCorrupt means the data on disk failed a consistency check (a bad
	// checksum, a torn manifest, a file that does not parse). The store or
	// file was left as it was found; nothing was started afresh.
	ErrCorrupt = errors.New("storage: corrupt data")
	// ErrForeign means the directory is not empty and does not hold a
	// layercrawl store (another program's files, or a store written by a
	// different engine).
	ErrForeign = errors.New("storage: not a layercrawl store")
	// ErrVersion means the store was written by a newer, unknown format.
	ErrVersion = errors.New("storage: unsupported store format version")
	// ErrClosed is returned by calls on a closed Store.
	ErrClosed = errors.New("storage: store closed")
)

// errNotFound is what engines return for an absent key; Get wraps it with
// the key.
var errNotFound = ErrNotFound

// FormatVersion is the version of the key layout that Store writes into its
// format record. Open refuses stores with a higher version.
const FormatVersion = 1

const formatMagic = "layercrawl-storage"

// Key namespaces inside the engine: user keys live under userPrefix, the
// store's own records (the format record) under metaPrefix, so Ascend over
// the whole user key space never sees them.
const (
	metaPrefix = 'm'
	userPrefix = 'u'
)

var formatKey = []byte{metaPrefix, 'f', 'o', 'r', 'm', 'a', 't'}

// Options configures Open. The zero value is valid: every field documents
// its default.
type Options struct {
	// CacheSize is the block cache in bytes. Default 8 MiB.
	CacheSize int64
	// MemTableSize is the size in bytes of the in-memory write buffer
	// before it is flushed to a table file. Default 4 MiB.
	MemTableSize int64
	// DeferSync makes Write return once its batch is written to the
	// operating system, without waiting for the disk: the batch then
	// survives a crash of the process (kill -9 included) but a crash of the
	// machine only after the next Sync (or Close). The store stays
	// consistent either way: after a crash of the machine it reopens with
	// the batches that reached the disk, a prefix of those written, each
	// whole or absent. Default false: every Write is synced.
	DeferSync bool
	// DiskReserve is the free space in bytes that Write leaves on the
	// store's file system: a Write that finds less fails with ErrDiskFull
	// (matching syscall.ENOSPC) and the store stays whole and open, where
	// a write reaching a full disk would make the engine stop the process.
	// The file system is asked at every Write, or every 100 ms while more
	// than 4 GiB above the reserve are free.
	// Default 3 × MemTableSize + 1 MiB (13 MiB); negative: no check.
	DiskReserve int64
	// ReadOnly opens an existing store for reading only: nothing in its
	// directory is changed (a crawl reads an earlier crawl's state so),
	// Write fails, and a directory without a store fails with ErrForeign.
	// Default false.
	ReadOnly bool

	// engine selects the engine; nil means pebble. Only the tests and
	// benchmarks that compare engines set it.
	engine func(dir string, opts Options, mustExist bool) (engine, error)
	// fs is the file system under DeferSync's wrapper; nil means the
	// operating system's. Tests set it to count syncs.
	fs vfs.FS
}

// EnsureDefaults fills zero fields with their documented defaults.
func (o *Options) EnsureDefaults() {
	if o.CacheSize == 0 {
		o.CacheSize = 8 << 20
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 4 << 20
	}
	if o.DiskReserve == 0 {
		o.DiskReserve = defaultDiskReserve(o.MemTableSize)
	}
	if o.engine == nil {
		o.engine = openPebble
	}
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	if o.CacheSize < 0 {
		return fmt.Errorf("storage: negative CacheSize %d", o.CacheSize)
	}
	if o.MemTableSize < 0 {
		return fmt.Errorf("storage: negative MemTableSize %d", o.MemTableSize)
	}
	if o.MemTableSize != 0 && o.MemTableSize < 64<<10 {
		return fmt.Errorf("storage: MemTableSize %d below 64 KiB", o.MemTableSize)
	}
	return nil
}

// Writer receives the changes of one atomic batch in Store.Write. It is only
// valid during the call of the function given to Write. Keys and values are
// copied; the caller may reuse them after Set returns.
type Writer interface {
	Set(key, value []byte) error
	Delete(key []byte) error
}

// Store is an ordered, durable key-value store in one directory. It is safe
// for concurrent use.
type Store struct {
	mu     sync.RWMutex // protects eng and closed against Close
	eng    engine
	closed bool
	dir    string
	guard  *diskGuard
}

// Open opens the store in dir, creating it when dir does not exist or is
// empty. A directory that holds anything else fails with ErrForeign; a store
// that fails the engine's checks fails with ErrCorrupt; a store of a newer
// format fails with ErrVersion. Open never starts afresh over existing data.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.EnsureDefaults()
	fresh, err := isEmptyDir(dir)
	if err != nil {
		return nil, err
	}
	if fresh && opts.ReadOnly {
		return nil, fmt.Errorf("%w: %s: no store (read-only open)", ErrForeign, dir)
	}
	if fresh {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("storage: create %s: %w", dir, err)
		}
	}
	eng, err := opts.engine(dir, opts, !fresh)
	if err != nil {
		return nil, err
	}
	s := &Store{eng: eng, dir: dir, guard: newDiskGuard(opts.fs, dir, opts.DiskReserve)}
	if err := s.checkFormat(); err != nil {
		eng.close()
		return nil, err
	}
	return s, nil
}

func (s *Store) formatValue() []byte {
	return []byte(formatMagic + " v" + strconv.Itoa(FormatVersion) + " " + s.eng.name())
}

// checkFormat verifies the format record, writing it into a store that has
// no keys at all (new, or a crash struck between creating the engine's files
// and the first write).
func (s *Store) checkFormat() error {
	v, err := s.eng.get(formatKey)
	if errors.Is(err, errNotFound) {
		empty := true
		if err := s.eng.ascend(nil, nil, func(_, _ []byte) bool {
			empty = false
			return false
		}); err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: %s: data without a format record", ErrForeign, s.dir)
		}
		return s.eng.write(func(w Writer) error { return w.Set(formatKey, s.formatValue()) })
	}
	if err != nil {
		return err
	}
	return parseFormat(string(v), s.eng.name(), s.dir)
}

func parseFormat(v, engine, dir string) error {
	fields := strings.Fields(v)
	if len(fields) != 3 || fields[0] != formatMagic || !strings.HasPrefix(fields[1], "v") {
		return fmt.Errorf("%w: %s: bad format record %q", ErrCorrupt, dir, v)
	}
	n, err := strconv.Atoi(fields[1][1:])
	if err != nil || n < 1 {
		return fmt.Errorf("%w: %s: bad format record %q", ErrCorrupt, dir, v)
	}
	if n > FormatVersion {
		return fmt.Errorf("%w: %s: version %d, this build reads up to %d", ErrVersion, dir, n, FormatVersion)
	}
	if fields[2] != engine {
		return fmt.Errorf("%w: %s: written by engine %q, opened with %q", ErrForeign, dir, fields[2], engine)
	}
	return nil
}

// Get returns a copy of the value stored under key, or an error matching
// ErrNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	v, err := s.eng.get(userKey(key))
	if errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	return v, err
}

// Write applies the Sets and Deletes that fn makes as one atomic batch and
// syncs it to stable storage before returning: after Write returns nil, a
// crash (even of the machine) keeps all of them; before, it keeps none. If
// fn returns an error nothing is written and that error is returned as is.
// On a file system with less than Options.DiskReserve free, Write writes
// nothing and returns an error matching ErrDiskFull.
// With Options.DeferSync, a returned batch survives a crash of the process,
// and of the machine once Sync has returned.
func (s *Store) Write(fn func(w Writer) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.guard.check(); err != nil {
		return err
	}
	return s.eng.write(func(w Writer) error { return fn(prefixWriter{w}) })
}

// Ascend calls fn for every key in [start, end) in byte order, until fn
// returns false. A nil start means the first key, a nil end means past the
// last. key and value are only valid during the call; fn must not call
// Close. Ascend reads a consistent snapshot taken when it starts: batches
// written while it runs (fn may call Write) are not seen.
func (s *Store) Ascend(start, end []byte, fn func(key, value []byte) bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	lo := userKey(start)
	var hi []byte
	if end == nil {
		hi = []byte{userPrefix + 1}
	} else {
		hi = userKey(end)
	}
	if bytes.Compare(lo, hi) >= 0 {
		return nil
	}
	return s.eng.ascend(lo, hi, func(k, v []byte) bool { return fn(k[1:], v) })
}

// Sync makes every batch Write has returned durable. It only has work to do
// with Options.DeferSync: otherwise each Write was synced already.
func (s *Store) Sync() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.eng.sync()
}

// Close closes the store, syncing what was written. Calls after Close
// return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	return s.eng.close()
}

func userKey(k []byte) []byte {
	out := make([]byte, 1+len(k))
	out[0] = userPrefix
	copy(out[1:], k)
	return out
}

type prefixWriter struct{ w Writer }

func (p prefixWriter) Set(key, value []byte) error { return p.w.Set(userKey(key), value) }
func (p prefixWriter) Delete(key []byte) error     { return p.w.Delete(userKey(key)) }

// RangeDeleter is implemented by the Writer a Store's Write passes when
// its engine can delete a key range in one operation (pebble's range
// tombstone: constant work however many keys the range holds).
type RangeDeleter interface {
	DeleteRange(start, end []byte) error
}

// DeleteRange deletes the keys in [start, end); errors.ErrUnsupported if
// the engine cannot, in which case the caller deletes key by key.
func (p prefixWriter) DeleteRange(start, end []byte) error {
	rd, ok := p.w.(RangeDeleter)
	if !ok {
		return fmt.Errorf("storage: %w: range deletion", errors.ErrUnsupported)
	}
	return rd.DeleteRange(userKey(start), userKey(end))
}

// isEmptyDir reports whether dir is absent or has no entries.
func isEmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return false, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("storage: read %s: %w", dir, err)
	}
	return true, nil
}
