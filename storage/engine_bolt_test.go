package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// boltEngine is the engine pebble was measured against (see the package
// documentation); it lives in a test file so that the comparison and the
// engine-agnostic store tests can be re-run without linking bbolt into the
// binary.
type boltEngine struct {
	db *bolt.DB
}

var boltBucket = []byte("kv")

const boltFile = "store.bolt"

func openBolt(dir string, _ Options, mustExist bool) (engine, error) {
	path := filepath.Join(dir, boltFile)
	if mustExist && !fileExists(path) {
		return nil, fmt.Errorf("%w: %s: no bbolt database", ErrForeign, dir)
	}
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: time.Second})
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
		}
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	return &boltEngine{db: db}, nil
}

func (e *boltEngine) name() string { return "bbolt" }

func (e *boltEngine) get(key []byte) ([]byte, error) {
	var out []byte
	err := e.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(boltBucket).Get(key)
		if v == nil {
			return errNotFound
		}
		out = append([]byte{}, v...)
		return nil
	})
	return out, err
}

type boltWriter struct{ b *bolt.Bucket }

func (w boltWriter) Set(key, value []byte) error { return w.b.Put(key, value) }
func (w boltWriter) Delete(key []byte) error     { return w.b.Delete(key) }

func (e *boltEngine) write(fn func(Writer) error) error {
	return e.db.Update(func(tx *bolt.Tx) error {
		return fn(boltWriter{tx.Bucket(boltBucket)})
	})
}

func (e *boltEngine) ascend(start, end []byte, fn func(key, value []byte) bool) error {
	return e.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(boltBucket).Cursor()
		var k, v []byte
		if start == nil {
			k, v = c.First()
		} else {
			k, v = c.Seek(start)
		}
		for ; k != nil; k, v = c.Next() {
			if end != nil && bytes.Compare(k, end) >= 0 {
				return nil
			}
			if !fn(k, v) {
				return nil
			}
		}
		return nil
	})
}

func (e *boltEngine) close() error { return e.db.Close() }

// sync has nothing to do: every bbolt transaction is synced on commit (the
// comparison runs without DeferSync).
func (e *boltEngine) sync() error { return nil }

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
