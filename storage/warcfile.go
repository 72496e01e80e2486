package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ReadWARCFile calls fn with every record of the WARC file at path, in file
// order. It stops at the first error fn returns and returns it; an error
// reading the file is returned wrapped with the path (ErrTruncated and
// ErrCorrupt still match with errors.Is), after fn has seen every whole
// record before it.
func ReadWARCFile(path string, fn func(*WARCRecord) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := NewWARCReader(f)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("storage: %s: %w", path, err)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}
