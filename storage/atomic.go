package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The steps of WriteFileAtomic, in order, as named to a faultHook.
const (
	stepCreate  = "create"
	stepWrite   = "write"
	stepSync    = "sync"
	stepClose   = "close"
	stepRename  = "rename"
	stepSyncDir = "syncdir"
)

// faultHook is called before each step of WriteFileAtomic; a non-nil error
// makes the step fail with it. Tests use it to simulate failures at every
// point; production passes nil.
type faultHook func(step string) error

func (h faultHook) before(step string) error {
	if h == nil {
		return nil
	}
	return h(step)
}

// tempPattern is the pattern of WriteFileAtomic's temporary files. A crash
// can leave one behind; it is never read, and a later successful write of
// the same path does not depend on it.
const tempPattern = ".tmp-*"

// WriteFileAtomic replaces the file at path with what fn writes, so that
// after any crash the path holds either the complete old content (or
// nothing, if there was no file) or the complete new content, never a mix.
// It writes a temporary file in the same directory, fsyncs it, renames it
// over path and fsyncs the directory. If fn or any step fails, the temporary
// file is removed, path is untouched and the error is returned (fn's error
// as is, others wrapped). The new file has mode 0644.
func WriteFileAtomic(path string, fn func(io.Writer) error) error {
	return writeFileAtomic(path, fn, nil)
}

func writeFileAtomic(path string, fn func(io.Writer) error, hook faultHook) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := hook.before(stepCreate); err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, base+tempPattern)
	if err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	if err := hook.before(stepWrite); err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	if err := fn(f); err != nil {
		return err
	}
	if err := hook.before(stepSync); err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("storage: atomic write %s: sync: %w", path, err)
	}
	if err := hook.before(stepClose); err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: atomic write %s: close: %w", path, err)
	}
	if err := hook.before(stepRename); err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	// From here the new content is in place; a failure to sync the
	// directory means it may not survive a machine crash, so it is still
	// reported, but the temporary file no longer exists to be removed.
	if err := hook.before(stepSyncDir); err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("storage: atomic write %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("sync dir: %w", err)
	}
	return d.Close()
}

// ReadFileAtomic opens the file at path and passes it to decode, telling a
// missing file from a damaged one: a missing file gives an error matching
// fs.ErrNotExist (a first run: start fresh); a decode failure gives an error
// matching ErrCorrupt that wraps decode's error (do not start fresh: report
// it); an I/O failure while reading is returned wrapped, matching neither.
func ReadFileAtomic(path string, decode func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("storage: read %s: %w", path, err)
	}
	defer f.Close()
	r := &errReader{r: f}
	if err := decode(r); err != nil {
		if r.err != nil {
			return fmt.Errorf("storage: read %s: %w", path, r.err)
		}
		return &CorruptError{Path: path, Err: err}
	}
	if r.err != nil {
		return fmt.Errorf("storage: read %s: %w", path, r.err)
	}
	return nil
}

// CorruptError reports a file that exists but does not decode. It matches
// ErrCorrupt with errors.Is and unwraps to the decoder's error.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return "storage: corrupt file " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the decoder's error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// errReader remembers the first error of the underlying reader other than
// io.EOF, so that a decoder's failure can be told apart from an I/O failure.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && e.err == nil {
		e.err = err
	}
	return n, err
}
