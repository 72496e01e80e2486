package crawl

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// workerStatePrefix names a Redis worker's own state in Options.Dir:
// state-WORKER holds the worker's capture history (so that the directory
// serves as Options.Previous of a later crawl) and the earlier crawls'
// history it imported (Options.Previous). The crawl's shared state is in
// Redis.
const workerStatePrefix = "state-"

// openWorkerState opens the Redis worker's own state, after checking the
// earlier crawls (Options.Previous) before anything is created, and
// imports their capture history into it unless a run of this worker did.
//
// Every worker reads the earlier crawls' directories itself (each state
// opened read-only, with a shared lock) and keeps its copy of their
// history, so that a fetch finds its URL's validators and earlier record
// with one local read, as in local mode, and Redis holds no history of
// them: the history of a crawl of millions of pages would need gigabytes
// of Redis memory. (A continuous crawl keeps each scheduled URL's last
// capture in Redis, with its schedule: continuous_redis.go.) The URLs to check again are queued once, by whichever workers
// get to each batch first (queuePrevious).
func (c *Crawler) openWorkerState() error {
	o := c.opts
	prev, err := checkPrevious(o.Previous, o.Dir)
	if err != nil {
		return err
	}
	defer closePrevious(prev)
	if o.Dir == "" {
		return nil // Validate refuses Previous without Dir
	}
	dir := filepath.Join(o.Dir, workerStatePrefix+o.Redis.Worker)
	st, err := storage.Open(dir, storage.Options{DeferSync: true})
	if err != nil {
		return fmt.Errorf("crawl: open worker state: %w", err)
	}
	store := StoreAdapter{st}
	h, err := openHistoryLog(store)
	if err != nil {
		st.Close()
		return err
	}
	if !h.versioned {
		// A new worker's history is complete from the start: a worker
		// that fetches nothing leaves an empty one, not a state that
		// sends a later crawl to the WARC files.
		if err := h.markVersion(); err != nil {
			st.Close()
			return err
		}
	}
	c.captures, c.history = store, h
	c.closers = append(c.closers, func() error {
		// The captures of a worker whose Run failed are kept too.
		err := errors.Join(h.flush(), st.Close())
		if err != nil {
			return fmt.Errorf("crawl: close worker state: %w", err)
		}
		return nil
	})
	if len(prev) > 0 {
		return c.openPrevious(prev)
	}
	return nil
}

// syncWorkerState writes the Redis worker's capture history's unwritten
// captures and makes its state durable.
func (c *Crawler) syncWorkerState() error {
	if c.history == nil {
		return nil
	}
	if err := c.history.flush(); err != nil {
		return err
	}
	if s, ok := c.captures.(frontier.Syncer); ok {
		if err := s.Sync(); err != nil {
			return fmt.Errorf("crawl: worker state: %w", err)
		}
	}
	return nil
}
