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
	"sync/atomic"
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
	if ls := c.filter; ls != nil && (ls.state.Load().grow != nil) == c.opts.FixedFilter {
		kind := map[bool]string{true: "a fixed-size filter", false: "a filter that grows"}[ls.state.Load().grow == nil]
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
//
// In a continuous crawl it ages with the frontier's exact set
// (frontier.Rotator, seenage.go): one filter per generation, the current
// one taking the inserts and the previous one answering tests only.
type localSeen struct {
	state atomic.Pointer[seenState] // replaced whole: by ReadFrom and by a rotation
	// expected and rate size a new generation's fixed filter (a growing
	// one copies its options).
	expected uint64
	rate     float64
}

// seenState is a localSeen's filters; only the current filter's bits
// change.
type seenState struct {
	fixed *mlbf.Concurrent // the current filter: exactly one of fixed and grow is set
	grow  *mlbf.Scalable
	// aging: the frontier rotates the set (PrepareRotation); its
	// snapshots hold every filter and the generation (seenage.go).
	aging bool
	gen   uint32        // aging: the current filter's generation
	older []olderFilter // aging: earlier generations' filters, newest first; tested, never added to
	// loaded: read from a snapshot and given no generation since, so the
	// next rotation keeps what it holds answering (frontier.Rotator).
	loaded bool
}

// A new filter gets a random salt (mlbf.Options.Salt), saved with it in
// every snapshot and so kept by a resumed crawl (one resumed before its
// first snapshot rebuilds its filter from the journal, under a new salt):
// the URLs the filter takes for seen though new differ from crawl to
// crawl, so that in filter-only mode no URL is lost by every crawl.
func newLocalSeen(o Options) (*localSeen, error) {
	salt := rand.Uint64() | 1 // never 0, the unsalted filter
	s := &localSeen{expected: o.ExpectedURLs, rate: o.FalsePositiveRate}
	st := new(seenState)
	var err error
	if o.FixedFilter {
		st.fixed, err = mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: o.ExpectedURLs, FalsePositiveRate: o.FalsePositiveRate, Salt: salt})
	} else {
		st.grow, err = mlbf.NewScalable(mlbf.ScalableOptions{ExpectedURLs: o.ExpectedURLs, FalsePositiveRate: o.FalsePositiveRate, Salt: salt})
	}
	s.state.Store(st)
	return s, err
}

// cur returns the current filter.
func (st *seenState) cur() seenFilter {
	if st.grow != nil {
		return st.grow
	}
	return st.fixed
}

// salt returns the filter's hash salt.
func (s *localSeen) salt() uint64 { return s.state.Load().cur().Salt() }

// TestAndAdd inserts the URL into the current filter and reports it seen
// if that or an older generation's filter held it (A2's test: a URL found
// only in the previous generation moves to the current one).
func (s *localSeen) TestAndAdd(_ context.Context, seg []string) (bool, error) {
	st := s.state.Load()
	var had bool
	if st.grow != nil {
		had = st.grow.TestAndAdd(seg)
	} else {
		had = st.fixed.TestAndAdd(seg)
	}
	for i := 0; !had && i < len(st.older); i++ {
		had = st.older[i].f.Test(seg)
	}
	return had, nil
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
	prepared := s.state.Load()
	capture := prepareCapture(prepared)
	return func() (io.WriterTo, error) {
		st := s.state.Load()
		if st != prepared {
			// A rotation or a load since the preparation.
			capture = prepareCapture(st)
		}
		copy := capture()
		if !st.aging {
			return copy, nil // the plain filter format, as before aging
		}
		return &agingSnapshot{gen: st.gen, cur: copy, older: st.older}, nil
	}
}

// prepareCapture prepares the snapshot of st's current filter and returns
// its capture.
func prepareCapture(st *seenState) func() io.WriterTo {
	if st.grow != nil {
		p := st.grow.PrepareSnapshot()
		return func() io.WriterTo { return p.Capture() }
	}
	p := st.fixed.PrepareSnapshot()
	return func() io.WriterTo { return p.Capture() }
}

// ReadFrom replaces the filters with those in r, of the kind r holds:
// mlbf's format tells a fixed filter ("MLBF") from a growing one
// ("MLBS"), and the aging format ("LCAG", seenage.go) holds several.
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
	var st *seenState
	var m int64
	if string(magic[:]) == agingMagic {
		st, m, err = readAging(rest)
	} else {
		var f seenFilter
		f, m, err = readFilter(rest)
		if err == nil {
			st = &seenState{}
			st.setCur(f)
		}
	}
	if err != nil {
		return m, err
	}
	st.loaded = true
	s.state.Store(st)
	return m, nil
}

// readFilter reads one filter of the kind r holds.
func readFilter(r io.Reader) (seenFilter, int64, error) {
	var magic [4]byte
	n, err := io.ReadFull(r, magic[:])
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, int64(n), fmt.Errorf("%w: duplicate filter: %w", mlbf.ErrFormat, err)
	}
	rest := io.MultiReader(bytes.NewReader(magic[:]), r)
	if string(magic[:]) == "MLBS" {
		g := new(mlbf.Scalable)
		m, err := g.ReadFrom(rest)
		return g, m, err
	}
	f := new(mlbf.Concurrent)
	m, err := f.ReadFrom(rest)
	return f, m, err
}

// setCur makes f the current filter.
func (st *seenState) setCur(f seenFilter) {
	st.fixed, st.grow = nil, nil
	switch f := f.(type) {
	case *mlbf.Scalable:
		st.grow = f
	case *mlbf.Concurrent:
		st.fixed = f
	}
}

// stats describes the filter; the caller adds the options. Of an aging
// set, Bytes counts every generation's filter, the rest the current one.
func (s *localSeen) stats() FilterStats {
	st := s.state.Load()
	var fs FilterStats
	if st.grow != nil {
		gs := st.grow.Stats()
		fs = FilterStats{Bytes: gs.TotalBits / 8, EstimatedURLs: gs.EstimatedURLs,
			FalsePositiveRate: gs.FalsePositiveRate, ExpectedFalsePositives: gs.ExpectedFalsePositives,
			Generations: len(gs.Generations)}
		for _, c := range gs.Capacities {
			fs.Capacity += c
		}
		if l := gs.Generations[len(gs.Generations)-1].Layers; len(l) > 0 {
			fs.Fill = l[len(l)-1].FillRatio
		}
	} else {
		cs := st.fixed.Stats()
		fs = FilterStats{Bytes: st.fixed.TotalBits() / 8, EstimatedURLs: cs.EstimatedURLs, FalsePositiveRate: cs.FalsePositiveRate,
			ExpectedFalsePositives: cs.ExpectedFalsePositives}
		if n := len(cs.Layers); n > 0 {
			fs.Fill = cs.Layers[n-1].FillRatio
		}
	}
	for _, o := range st.older {
		fs.Bytes += o.f.TotalBits() / 8
	}
	return fs
}
