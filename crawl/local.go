package crawl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/storage"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// SnapshotFile is the seen-set snapshot's name in Options.StateDir.
const SnapshotFile = "seen.mlbf"

// finalCheckpointJournal is the journal length (URLs inserted since the
// last snapshot) beyond which a crawl that ends writes a snapshot: replay
// costs about a microsecond per URL, a snapshot writes the whole filter.
const finalCheckpointJournal = 100_000

// openLocal opens the state of a local crawl: the store, the seen-set
// (loaded from its snapshot when the store records a checkpoint) and the
// frontier, which replays the journal into the seen-set.
func (c *Crawler) openLocal() error {
	o := c.opts
	c.store = o.Store
	if c.store == nil {
		if o.StateDir == "" {
			return fmt.Errorf("%w: StateDir (or Dir) is required in local mode without Store", ErrInvalidOptions)
		}
		// Without SyncWrites a completed page's batch reaches the
		// operating system before the page counts as done (a kill -9
		// loses nothing) and the disk at each checkpoint: a disk flush
		// per batch held every worker in Done and stalled the crawl
		// (docs/BENCHMARKS.md).
		st, err := storage.Open(o.StateDir, storage.Options{DeferSync: !o.SyncWrites})
		if err != nil {
			return fmt.Errorf("crawl: open state: %w", err)
		}
		c.closers = append(c.closers, func() error {
			if err := st.Close(); err != nil {
				return fmt.Errorf("crawl: close state: %w", err)
			}
			return nil
		})
		c.store = StoreAdapter{st}
	}
	c.seen = o.Seen
	if c.seen == nil {
		ls, err := newLocalSeen(o)
		if err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		c.filter = ls
		c.seen = ls
	}
	if !o.NoRevisits {
		c.payloads = o.Payloads
		if c.payloads == nil {
			p, err := openStorePayloads(c.store, o.PayloadDigests)
			if err != nil {
				return err
			}
			c.payloads = p
		}
	}
	if o.Store == nil {
		h, err := openHistoryLog(c.store)
		if err != nil {
			return err
		}
		c.history = h
	}
	if o.NearDuplicateThreshold >= 0 {
		if err := c.openNearDups(nil); err != nil {
			return err
		}
	}
	if err := c.loadSnapshot(); err != nil {
		return err
	}
	exact, err := c.exactMode()
	if err != nil {
		return err
	}
	inlinks, err := c.loadInlinks()
	if err != nil {
		return err
	}
	front, err := frontier.Open(context.Background(), frontier.Options{
		Store:        c.store,
		Seen:         c.seen,
		Normalizer:   c.norm,
		Domain:       urlnorm.RegistrableDomain,
		Admission:    o.Admission,
		Politeness:   o.Politeness,
		MaxPages:     o.MaxPages,
		Order:        o.Order,
		Inlinks:      inlinks,
		ExpectedURLs: o.ExpectedURLs,
		Now:          o.Now,
		// The exact check: see Options.FilterOnly.
		ExactDedup:  exact,
		ExactMemory: o.ExactMemory,
		Continuous:  o.Continuous != nil,
		AgeWindow:   ageWindow(o, exact),
	})
	if errors.Is(err, frontier.ErrCorrupt) {
		return fmt.Errorf("%w: %s: %w", ErrCorruptState, o.StateDir, err)
	}
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	c.front, c.queue = front, front
	if o.Continuous != nil {
		if err := c.openContinuous(); err != nil {
			return err
		}
	}
	c.retries = true
	c.robots = fetch.NewRobotsCache(c.fetcher, fetch.RobotsCacheOptions{OnFetch: c.robotsFetched, ErrorMaxAge: robotsErrorMaxAge})
	if c.resumed {
		s := front.Stats()
		o.Logger.Info("crawl resuming", "state", o.StateDir, "queued", s.Queued, "pages_before", s.Pages, "journal", s.Journal)
	}
	return nil
}

// exactMode decides whether the frontier checks the filter's "maybe seen"
// answers exactly: by default yes, unless FilterOnly is set or the crawl
// resumed was begun filter-only (its queued URLs have no fingerprints).
func (c *Crawler) exactMode() (bool, error) {
	if c.opts.FilterOnly || !c.resumed {
		return !c.opts.FilterOnly, nil
	}
	marked, err := frontier.ExactDedupState(c.store)
	if err != nil {
		return false, fmt.Errorf("crawl: state %s: %w", c.opts.StateDir, err)
	}
	if !marked {
		c.opts.Logger.Warn("the resumed crawl was begun filter-only and stays so: a false positive of the duplicate filter drops its URL (start a new crawl for the exact check)",
			"state", c.opts.StateDir)
	}
	return marked, nil
}

// loadSnapshot loads the seen-set from its snapshot when the store records
// a checkpoint, and notes whether the store holds a crawl to resume. A
// missing or stale snapshot is an error: the journal it covered is gone.
func (c *Crawler) loadSnapshot() error {
	gen, err := frontier.CheckpointGeneration(c.store)
	if err != nil {
		return fmt.Errorf("crawl: state %s: %w", c.opts.StateDir, err)
	}
	if c.resumed, err = frontier.StateExists(c.store); err != nil {
		return fmt.Errorf("crawl: state %s: %w", c.opts.StateDir, err)
	}
	if gen == 0 {
		return nil
	}
	snap, ok := c.seen.(Snapshotter)
	if !ok {
		return fmt.Errorf("%w: %s records seen-set checkpoint %d but Options.Seen cannot load snapshots", ErrCorruptState, c.opts.StateDir, gen)
	}
	path := filepath.Join(c.opts.StateDir, SnapshotFile)
	var fileGen uint64
	err = storage.ReadFileAtomic(path, func(r io.Reader) error {
		var err error
		fileGen, err = ReadSnapshot(r, snap)
		return err
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s records checkpoint %d but %s is missing", ErrCorruptState, c.opts.StateDir, gen, SnapshotFile)
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrCorruptState, c.opts.StateDir, err)
	case fileGen < gen:
		return fmt.Errorf("%w: %s: %s holds checkpoint %d, the store records %d", ErrCorruptState, c.opts.StateDir, SnapshotFile, fileGen, gen)
	}
	if ls := c.filter; ls != nil && (ls.grow != nil) == c.opts.FixedFilter {
		kind := map[bool]string{true: "a fixed-size filter", false: "a filter that grows"}[ls.grow == nil]
		c.opts.Logger.Warn("the resumed crawl keeps its duplicate filter: FixedFilter (--filter-growth) applies to new crawls",
			"state", c.opts.StateDir, "filter", kind)
	}
	return nil
}

// checkpoint makes the log and archive durable, then the frontier's
// state, and snapshots the seen-set: the copy is taken while inserts wait
// (a memory copy) and written after they resume.
func (c *Crawler) checkpoint(ctx context.Context) error {
	// Log lines and WARC records of completed entries reach the disk
	// before the snapshot that marks their links seen.
	if err := c.log.Sync(); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	if err := c.archive.Sync(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	// The payload index's batch, after the records it names.
	if err := c.flushPayloads(); err != nil {
		return err
	}
	if err := c.flushHistory(); err != nil {
		return err
	}
	snap, ok := c.seen.(Snapshotter)
	if !ok {
		// Nothing to snapshot: the journal stays whole, and is replayed
		// into the seen-set on resume. Only the store needs syncing.
		if s, ok := c.store.(frontier.Syncer); ok {
			if err := s.Sync(); err != nil {
				return err
			}
		}
		return c.saveInlinks()
	}
	path := filepath.Join(c.opts.StateDir, SnapshotFile)
	capture := snap.Snapshot
	if p, ok := snap.(snapshotPreparer); ok {
		capture = p.prepareSnapshot()
	}
	start := c.opts.Now()
	var captured time.Duration
	err := c.front.Checkpoint(ctx, func(gen uint64) (func(context.Context) error, error) {
		copy, err := capture()
		if err != nil {
			return nil, err
		}
		captured = c.opts.Now().Sub(start)
		return func(context.Context) error {
			return storage.WriteFileAtomic(path, func(w io.Writer) error {
				return WriteSnapshot(w, gen, copy)
			})
		}, nil
	})
	if err != nil {
		return err
	}
	if err := c.saveNearDups(); err != nil {
		return fmt.Errorf("near-duplicate index: %w", err)
	}
	if err := c.saveInlinks(); err != nil {
		return fmt.Errorf("in-link counts: %w", err)
	}
	took := c.opts.Now().Sub(start)
	c.opts.Logger.Debug("checkpoint", "inserts_blocked", captured, "duration", took)
	if c.opts.Observer != nil {
		c.opts.Observer.Checkpointed(CheckpointEvent{Generation: c.front.Stats().Checkpoint, Duration: took, Blocked: captured})
	}
	return nil
}

// startCheckpoints runs a checkpoint every CheckpointInterval beside the
// workers; a failure stops them.
func (c *Crawler) startCheckpoints(aux *auxTasks, stopWorkers context.CancelCauseFunc) {
	// The interval runs from the end of one checkpoint to the start of
	// the next, so a slow disk cannot make checkpoints back to back.
	aux.spaced(c.opts.CheckpointInterval, func() error {
		if err := c.checkpoint(context.Background()); err != nil {
			err = fmt.Errorf("crawl: checkpoint: %w", err)
			stopWorkers(err)
			return err
		}
		return nil
	})
}

// finalCheckpoint saves the seen-set when the journal a resume would
// replay is long; otherwise it only makes the log, archive and store
// durable.
func (c *Crawler) finalCheckpoint() error {
	if c.front.Exact() {
		s := c.front.Stats()
		c.opts.Logger.Info("exact dedup", "false_positives_caught", s.FalsePositives, "checks", s.ExactChecks,
			"store_lookups", s.ExactLookups, "fingerprints_in_memory", s.ExactInMemory)
	}
	if _, ok := c.seen.(Snapshotter); ok && c.front.Stats().Journal > finalCheckpointJournal {
		if err := c.checkpoint(context.Background()); err != nil { // saves the near-duplicate index too
			return fmt.Errorf("crawl: final checkpoint: %w", err)
		}
		return nil
	}
	err := errors.Join(c.log.Sync(), c.archive.Sync(), c.saveNearDups(), c.saveInlinks())
	if err == nil {
		err = errors.Join(c.flushPayloads(), c.flushHistory())
	}
	if s, ok := c.store.(frontier.Syncer); ok {
		err = errors.Join(err, s.Sync())
	}
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	return nil
}

// StoreAdapter adapts a storage.Store to frontier.Store (the two Writer
// types differ) and frontier.Syncer.
type StoreAdapter struct{ S *storage.Store }

// Get returns the value of key; an absent key's error matches both
// frontier.ErrNotFound and storage.ErrNotFound.
func (a StoreAdapter) Get(key []byte) ([]byte, error) {
	v, err := a.S.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", frontier.ErrNotFound, err)
	}
	return v, err
}

// Write applies the batch fn builds, atomically.
func (a StoreAdapter) Write(fn func(frontier.Writer) error) error {
	return a.S.Write(func(w storage.Writer) error { return fn(w) })
}

// Ascend calls fn for the keys in [start, end) in order until it returns
// false.
func (a StoreAdapter) Ascend(start, end []byte, fn func(key, value []byte) bool) error {
	return a.S.Ascend(start, end, fn)
}

// Sync makes every returned Write durable.
func (a StoreAdapter) Sync() error { return a.S.Sync() }

// localSeen is the default seen-set of a local crawl, a Seen and
// Snapshotter: an mlbf.Scalable that adds generations past ExpectedURLs
// so that its false-positive rate stays within FalsePositiveRate, or with
// Options.FixedFilter an mlbf.Concurrent sized once for ExpectedURLs. A
// resumed crawl keeps the kind its snapshot holds (ReadFrom).
type localSeen struct {
	fixed *mlbf.Concurrent // exactly one of fixed and grow is set
	grow  *mlbf.Scalable
}

// A new filter gets a random salt (mlbf.Options.Salt), saved with it in
// every snapshot and so kept by a resumed crawl (one resumed before its
// first snapshot rebuilds its filter from the journal, under a new salt):
// the URLs the filter takes for seen though new differ from crawl to
// crawl, so that in filter-only mode no URL is lost by every crawl.
func newLocalSeen(o Options) (*localSeen, error) {
	salt := rand.Uint64() | 1 // never 0, the unsalted filter
	if o.FixedFilter {
		f, err := mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: o.ExpectedURLs, FalsePositiveRate: o.FalsePositiveRate, Salt: salt})
		return &localSeen{fixed: f}, err
	}
	s, err := mlbf.NewScalable(mlbf.ScalableOptions{ExpectedURLs: o.ExpectedURLs, FalsePositiveRate: o.FalsePositiveRate, Salt: salt})
	return &localSeen{grow: s}, err
}

// salt returns the filter's hash salt.
func (s *localSeen) salt() uint64 {
	if s.grow != nil {
		return s.grow.Salt()
	}
	return s.fixed.Salt()
}

func (s *localSeen) TestAndAdd(_ context.Context, seg []string) (bool, error) {
	if s.grow != nil {
		return s.grow.TestAndAdd(seg), nil
	}
	return s.fixed.TestAndAdd(seg), nil
}

// Snapshot copies the filter's bits (of a growing filter, its newest
// generation's: the older ones never change) once, in memory, holding
// inserts for the copy alone; the write that follows runs beside them.
func (s *localSeen) Snapshot() (io.WriterTo, error) { return s.prepareSnapshot()() }

// snapshotPreparer is a Snapshotter that allocates its copy before the
// checkpoint captures it, so that inserts wait for the copy alone: the
// first writes to a fresh 20 MB allocation took 88-170 ms on this
// project's VM, the copy 1.4-5.7 ms.
type snapshotPreparer interface {
	prepareSnapshot() (capture func() (io.WriterTo, error))
}

func (s *localSeen) prepareSnapshot() func() (io.WriterTo, error) {
	if s.grow != nil {
		p := s.grow.PrepareSnapshot()
		return func() (io.WriterTo, error) { return p.Capture(), nil }
	}
	p := s.fixed.PrepareSnapshot()
	return func() (io.WriterTo, error) { return p.Capture(), nil }
}

// ReadFrom replaces the filter with the one in r, of the kind r holds:
// mlbf's format tells a fixed filter ("MLBF") from a growing one
// ("MLBS").
func (s *localSeen) ReadFrom(r io.Reader) (int64, error) {
	var magic [4]byte
	n, err := io.ReadFull(r, magic[:])
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return int64(n), fmt.Errorf("%w: duplicate filter: %w", mlbf.ErrFormat, err)
	}
	rest := io.MultiReader(bytes.NewReader(magic[:]), r)
	if string(magic[:]) == "MLBS" {
		g := s.grow
		if g == nil {
			g = new(mlbf.Scalable)
		}
		m, err := g.ReadFrom(rest)
		if err == nil {
			s.grow, s.fixed = g, nil
		}
		return m, err
	}
	f := s.fixed
	if f == nil {
		f = new(mlbf.Concurrent)
	}
	m, err := f.ReadFrom(rest)
	if err == nil {
		s.fixed, s.grow = f, nil
	}
	return m, err
}

// stats describes the filter; the caller adds the options.
func (s *localSeen) stats() FilterStats {
	if s.grow != nil {
		st := s.grow.Stats()
		fs := FilterStats{Bytes: st.TotalBits / 8, EstimatedURLs: st.EstimatedURLs,
			FalsePositiveRate: st.FalsePositiveRate, ExpectedFalsePositives: st.ExpectedFalsePositives,
			Generations: len(st.Generations)}
		for _, c := range st.Capacities {
			fs.Capacity += c
		}
		if l := st.Generations[len(st.Generations)-1].Layers; len(l) > 0 {
			fs.Fill = l[len(l)-1].FillRatio
		}
		return fs
	}
	st := s.fixed.Stats()
	fs := FilterStats{Bytes: s.fixed.TotalBits() / 8, EstimatedURLs: st.EstimatedURLs, FalsePositiveRate: st.FalsePositiveRate,
		ExpectedFalsePositives: st.ExpectedFalsePositives}
	if n := len(st.Layers); n > 0 {
		fs.Fill = st.Layers[n-1].FillRatio
	}
	return fs
}
