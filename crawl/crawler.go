package crawl

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/storage"
	"github.com/layercrawl/layercrawl/urlnorm"
)

var (
	// ErrRunning is returned by Run when the Crawler has already run, or
	// runs.
	ErrRunning = errors.New("crawl: crawler already ran")
	// ErrNotRunning is returned by Add outside Run.
	ErrNotRunning = errors.New("crawl: crawler is not running")
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("crawl: crawler is closed")
	// ErrCorruptState is wrapped by the errors of New about a state
	// directory that cannot be resumed: a recorded snapshot missing,
	// damaged or older than the store says, or a store whose records do
	// not decode.
	ErrCorruptState = errors.New("crawl: corrupt state")
)

// queue is what the workers drive: *frontier.Frontier on one machine,
// *redisfrontier.Frontier in Redis mode.
type queue interface {
	AddSeeds(ctx context.Context, seeds []string) (int, error)
	Next(ctx context.Context) (frontier.Entry, error)
	Release(e frontier.Entry, fetched bool, crawlDelay time.Duration) error
	Done(ctx context.Context, e frontier.Entry, out frontier.Outcome) error
}

var (
	_ queue = (*frontier.Frontier)(nil)
	_ queue = (*redisfrontier.Frontier)(nil)
)

// Crawler runs one crawl. Create it with New, run it with Run, and Close
// it. Its methods are safe for concurrent use.
type Crawler struct {
	opts    Options
	norm    *urlnorm.Normalizer
	fetcher *fetch.Fetcher
	log     Log
	archive Archive
	colly   *collyBridge // nil without Options.Collector
	closers []func() error

	// Local mode.
	store   frontier.Store
	front   *frontier.Frontier
	seen    Seen
	filter  *localSeen // the default seen-set; nil when Options.Seen replaced it
	resumed bool

	// Redis mode: set up by Run.
	redis *redisMode
	// wrapSchedule, set by tests before Run, wraps a Redis continuous
	// crawl's schedule store (to count its reads).
	wrapSchedule func(scheduleStore) scheduleStore
	// retries is true when the queue keeps retries (local mode).
	retries bool

	mu      sync.Mutex // protects queue, robots, state, started, and nearDups while Run sets it
	queue   queue
	robots  *fetch.RobotsCache
	state   runState
	started time.Time

	prereq robotsPrereq // robots.txt as a prerequisite of a site's URLs
	seeds  seedOutcomes // whether the run fetched anything, and its failed seeds

	sitemaps sitemapState

	counters counters

	// payloads is the payload index; nil with Options.NoRevisits, and in
	// Redis mode until Run.
	payloads PayloadIndex
	// history is this crawl's capture history; hasPrevious says captures
	// holds the earlier crawls' (Options.Previous). captures is the store
	// of both: the state's in local mode, the worker's own in Redis mode
	// (openWorkerState); nil without either.
	history     *historyLog
	hasPrevious bool
	captures    frontier.Store
	// cont is a continuous crawl's scheduler and budget
	// (Options.Continuous); nil otherwise.
	cont *continuous
	// nearDups is the near-duplicate check; nil when it is off, and in
	// Redis mode until Run.
	nearDups *nearDups
}

type runState uint8

const (
	stateNew runState = iota
	stateRunning
	stateRan
	stateClosed
)

// counters are this process's fetch counts of this run.
type counters struct {
	fetched, fetchErrors, httpErrors  atomic.Uint64
	robotsDenied, robotsUnavailable   atomic.Uint64
	outlinksCapped, linksDropped      atomic.Uint64
	cutLength, cutTime, cutDisconnect atomic.Uint64
	pages                             atomic.Uint64
	revisits, revisitBytes            atomic.Uint64
	recrawl                           recrawlCounts
	nearDuplicates, nearDupLinks      atomic.Uint64
	nearDupNanos                      atomic.Uint64
	retried, retriesExhausted         atomic.Uint64
	permanent                         permanentCounts
	done                              latency // Frontier.Done calls
}

// New validates a copy of opts and opens the crawl's local parts: the
// output files, and in local mode the state (loading its seen-set snapshot
// and replaying the journal). Redis is not contacted until Run. On error
// New closes what it opened.
func New(opts Options) (_ *Crawler, err error) {
	opts.Seeds = slices.Clone(opts.Seeds)
	opts.Admission.Allow = slices.Clone(opts.Admission.Allow)
	opts.Admission.Deny = slices.Clone(opts.Admission.Deny)
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c := &Crawler{opts: opts}
	defer func() {
		if err != nil {
			c.closeAll()
		}
	}()
	if c.norm, err = urlnorm.New(opts.Normalize); err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	for i, s := range opts.Seeds {
		if _, err := c.norm.Normalize(s); err != nil {
			return nil, fmt.Errorf("%w: seed %d %q: %w", ErrInvalidOptions, i+1, s, err)
		}
	}
	if c.fetcher, err = fetch.New(opts.Fetch); err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	c.closers = append(c.closers, func() error { c.fetcher.Close(); return nil })
	if opts.Collector != nil {
		c.colly = newCollyBridge(opts.Collector)
	}
	if opts.Redis == nil {
		// The earlier crawls are checked before anything is created.
		prev, err := checkPrevious(opts.Previous, opts.Dir)
		if err != nil {
			return nil, err
		}
		err = c.openLocal()
		c.captures = c.store
		if err == nil && len(prev) > 0 {
			err = c.openPrevious(prev)
		}
		closePrevious(prev)
		if err != nil {
			return nil, err
		}
	} else {
		c.redis = &redisMode{}
		if err := c.openWorkerState(); err != nil {
			return nil, err
		}
	}
	if opts.Redis == nil && len(opts.Seeds) == 0 && !c.resumed && !c.hasPrevious {
		return nil, fmt.Errorf("%w: no seeds, and no crawl to resume in %s", ErrInvalidOptions, opts.StateDir)
	}
	if err := c.openOutput(); err != nil {
		return nil, err
	}
	return c, nil
}

// openOutput opens the default crawl log and WARC writer where Options did
// not give them.
func (c *Crawler) openOutput() error {
	o := c.opts
	c.log, c.archive = o.Log, o.Archive
	if c.log == nil {
		name := "crawl.log.jsonl"
		if o.Redis != nil {
			name = "crawl-" + o.Redis.Worker + ".log.jsonl"
		}
		l, err := storage.OpenCrawlLog(filepath.Join(o.Dir, name))
		if err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		c.closers = append(c.closers, func() error {
			if err := l.Close(); err != nil {
				return fmt.Errorf("crawl: close log: %w", err)
			}
			return nil
		})
		c.log = l
	}
	if c.archive == nil {
		wo := o.WARC
		if wo.Prefix == "" && o.Redis != nil {
			wo.Prefix = "layercrawl-" + o.Redis.Worker
		}
		if wo.Info == nil {
			wo.Info = map[string]string{"http-header-user-agent": o.Fetch.UserAgent, "robots": "obey"}
		}
		w, err := storage.NewWARCWriter(filepath.Join(o.Dir, "warc"), wo)
		if err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		c.closers = append(c.closers, func() error {
			if err := w.Close(); err != nil {
				return fmt.Errorf("crawl: close warc: %w", err)
			}
			return nil
		})
		c.archive = w
	}
	return nil
}

// Run crawls until the frontier is exhausted, Options.MaxPages is
// reached, ctx ends or an error stops the crawl. It returns nil when the
// crawl finished; an error matching ErrNoSeedFetched (a
// *NoSeedFetchedError) when it finished without a single response while
// the seeds it tried failed (in Redis mode: no worker of the crawl got a
// response while this one ran; the state is saved all the same, and the
// seeds are tried again when given again); and ctx's error
// (context.Cause) when ctx ended first:
// then fetches under way were given Options.StopGrace to complete, the
// state is saved, and a Crawler made again with the same options resumes
// (in Redis mode: entries this worker held go back to the other workers
// when their leases expire, or at once if it completed them). A Crawler
// runs once.
func (c *Crawler) Run(ctx context.Context) error {
	c.mu.Lock()
	switch c.state {
	case stateClosed:
		c.mu.Unlock()
		return ErrClosed
	case stateRunning, stateRan:
		c.mu.Unlock()
		return ErrRunning
	}
	c.state = stateRunning
	c.started = c.opts.Now()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.state = stateRan
		c.mu.Unlock()
	}()

	if c.redis != nil {
		if err := c.startRedis(ctx); err != nil {
			return err
		}
	}
	added, err := c.queue.AddSeeds(ctx, c.opts.Seeds)
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if c.hasPrevious {
		n, err := c.queuePrevious(ctx)
		if err != nil {
			return err
		}
		added += n
	}
	if c.opts.RetryFailed {
		var n int
		if c.front != nil {
			n, err = c.front.RetryFailed(ctx)
		} else {
			n, err = c.redis.front.RetryFailed(ctx)
		}
		if err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		c.opts.Logger.Info("failed URLs queued again", "urls", n)
	}
	var responses uint64 // the crawl's responses when this worker started (Redis mode)
	if c.redis != nil {
		if responses, err = c.redis.front.Responses(ctx); err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
	}
	c.opts.Logger.Info("crawl started", "seeds", len(c.opts.Seeds), "new_seeds", added,
		"concurrency", c.opts.Concurrency, "delay", limitString(c.opts.Politeness.Delay), "scope", c.opts.Admission.Scope.String())

	// A failed checkpoint stops the workers: the crawl cannot promise a
	// resume any more.
	wctx, stopWorkers := context.WithCancelCause(ctx)
	defer stopWorkers(nil)
	aux := newAuxTasks()
	if c.redis == nil {
		c.startCheckpoints(aux, stopWorkers)
	} else {
		c.startRedisStats(ctx, aux)
		c.startHeartbeat(ctx, aux)
		if c.cont != nil {
			c.startSchedulerRebuilds(ctx, aux, c.cont)
		}
	}
	interrupted, err := c.runWorkers(ctx, wctx, aux)
	if err != nil {
		return err
	}
	if c.redis == nil {
		if err := c.finalCheckpoint(); err != nil {
			return err
		}
	} else if err := c.finishRedis(ctx); err != nil {
		return err
	}
	if interrupted {
		return context.Cause(ctx)
	}
	err = c.seeds.err()
	if err != nil && c.redis != nil {
		// This worker's seeds failed and it got no response; the crawl
		// fetched nothing only if no other worker got one either since
		// this one started. Every response is counted in the Done that
		// completes its entry, before the frontier can run out.
		n, rerr := c.redis.front.Responses(context.WithoutCancel(ctx))
		if rerr != nil {
			return fmt.Errorf("crawl: %w", rerr)
		}
		if n > responses {
			return nil
		}
	}
	return err
}

// Add queues URLs while the crawl runs, as seeds: they widen the scope
// (their hosts or domains become part of it) and skip the depth and trap
// limits; those already seen are not queued again. It returns how many
// were queued.
func (c *Crawler) Add(ctx context.Context, urls ...string) (int, error) {
	c.mu.Lock()
	q, state := c.queue, c.state
	c.mu.Unlock()
	if state != stateRunning || q == nil {
		return 0, ErrNotRunning
	}
	n, err := q.AddSeeds(ctx, urls)
	if err != nil {
		return n, fmt.Errorf("crawl: %w", err)
	}
	return n, nil
}

// Close releases what New opened: the state, the default crawl log and
// WARC writer, connections. It returns the first error. Close after Run,
// or instead of it; Close during Run is not allowed.
func (c *Crawler) Close() error {
	c.mu.Lock()
	if c.state == stateRunning {
		c.mu.Unlock()
		return errors.New("crawl: Close called while Run runs")
	}
	if c.state == stateClosed {
		c.mu.Unlock()
		return nil
	}
	c.state = stateClosed
	c.mu.Unlock()
	return c.closeAll()
}

func (c *Crawler) closeAll() error {
	var err error
	for i := len(c.closers) - 1; i >= 0; i-- {
		if cerr := c.closers[i](); cerr != nil && err == nil {
			err = cerr
		}
	}
	c.closers = nil
	return err
}

// Options returns the options in effect, defaults applied.
func (c *Crawler) Options() Options { return c.opts }

// Resumed reports whether New found a crawl's state to resume (local mode).
func (c *Crawler) Resumed() bool { return c.resumed }

// auxTasks are the tasks that run beside a crawl's workers (checkpoints,
// the stop grace, stats) until the workers have stopped.
type auxTasks struct {
	stop chan struct{} // closed when the workers have stopped
	wg   sync.WaitGroup
	mu   sync.Mutex // protects err
	err  error
}

func newAuxTasks() *auxTasks { return &auxTasks{stop: make(chan struct{})} }

// Go runs fn beside the workers; its error, if any, is returned by wait.
func (a *auxTasks) Go(fn func() error) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := fn(); err != nil {
			a.mu.Lock()
			if a.err == nil {
				a.err = err
			}
			a.mu.Unlock()
		}
	}()
}

// every calls tick every d (measured from the end of one call to the start
// of the next) until the workers stop.
func (a *auxTasks) every(d time.Duration, tick func()) {
	a.spaced(d, func() error { tick(); return nil })
}

// spaced calls tick d after the end of its previous call (d after the
// start for the first), so that a slow tick is never followed at once by
// the next, until the workers stop or tick returns an error, which ends
// the task and is what finish returns.
func (a *auxTasks) spaced(d time.Duration, tick func() error) {
	a.Go(func() error {
		t := time.NewTimer(d)
		defer t.Stop()
		for {
			select {
			case <-a.stop:
				return nil
			case <-t.C:
				if err := tick(); err != nil {
					return err
				}
				t.Reset(d)
			}
		}
	})
}

// finish stops the tasks and waits for them.
func (a *auxTasks) finish() error {
	close(a.stop)
	a.wg.Wait()
	return a.err
}

// runWorkers runs Concurrency workers under wctx until the frontier is
// exhausted or wctx ends, then stops the aux tasks and waits for them.
// Fetches under way when the crawl is stopped may finish for up to
// StopGrace, so that their entries are completed: a clean stop leaves none
// to repeat on resume, and in a distributed crawl none to expire and be
// fetched again by another worker. interrupted reports whether ctx, the
// crawl's own context, ended; a worker error that is only that ending is
// not an error.
func (c *Crawler) runWorkers(ctx, wctx context.Context, aux *auxTasks) (interrupted bool, err error) {
	gctx, cancel := context.WithCancelCause(wctx)
	defer cancel(nil)
	fctx, cancelFetches := context.WithCancel(context.WithoutCancel(gctx))
	defer cancelFetches()
	aux.Go(func() error {
		select {
		case <-aux.stop:
			return nil
		case <-gctx.Done():
		}
		if c.opts.StopGrace < 0 {
			cancelFetches()
			return nil
		}
		t := time.NewTimer(c.opts.StopGrace)
		defer t.Stop()
		select {
		case <-aux.stop:
		case <-t.C:
			cancelFetches()
		}
		return nil
	})
	var wg sync.WaitGroup
	var once sync.Once
	var werr error
	for range c.opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.work(gctx, fctx); err != nil {
				once.Do(func() { werr = err })
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if aerr := aux.finish(); aerr != nil {
		return false, aerr
	}
	interrupted = ctx.Err() != nil
	if werr != nil && !(interrupted && errors.Is(werr, ctx.Err())) {
		return interrupted, werr
	}
	if cause := context.Cause(wctx); werr == nil && cause != nil && !interrupted {
		// A checkpoint failed and stopped the workers.
		return false, cause
	}
	return interrupted, nil
}

// limitString prints a duration limit, "none" when it is off.
func limitString(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return d.String()
}
