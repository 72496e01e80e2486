package crawl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/layercrawl/layercrawl/countmin"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// InlinksFile is the in-link counts' file in Options.StateDir with
// frontier.OrderInlinks: the count-min sketch in countmin's format,
// written at each checkpoint and when the crawl ends.
//
// The counts are a heuristic of the order, not part of the queue's
// consistency: a crash loses the links counted since the last checkpoint
// (the pages fetched since then keep their place in the queue, and their
// links' URLs a count too low), and a state without the file resumes with
// fresh counts.
const InlinksFile = "inlinks.cms"

// loadInlinks reads the in-link counts of a resumed inlinks crawl; nil if
// the order is fifo, there is no state directory or no file yet.
func (c *Crawler) loadInlinks() (*countmin.Sketch, error) {
	if c.opts.Order != frontier.OrderInlinks || c.opts.StateDir == "" {
		return nil, nil
	}
	path := filepath.Join(c.opts.StateDir, InlinksFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("crawl: in-link counts: %w", err)
	}
	s := new(countmin.Sketch)
	if err := s.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptState, path, err)
	}
	return s, nil
}

// saveInlinks writes the in-link counts, if the crawl keeps any.
func (c *Crawler) saveInlinks() error {
	s := c.front.Inlinks()
	if s == nil || c.opts.StateDir == "" {
		return nil
	}
	b, err := s.MarshalBinary()
	if err != nil {
		return err
	}
	return storage.WriteFileAtomic(filepath.Join(c.opts.StateDir, InlinksFile), func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
