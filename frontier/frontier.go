package frontier

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layercrawl/layercrawl/countmin"
)

// Seen is the duplicate check the frontier consumes: an mlbf.Concurrent on
// one machine, a Redis-held filter in a distributed crawl. TestAndAdd
// inserts the URL's segments and reports whether they were (probably)
// present before the call, in one atomic step.
type Seen interface {
	TestAndAdd(ctx context.Context, segments []string) (bool, error)
}

// Normalizer turns discovered references into canonical URLs and the
// segments the seen-set is keyed by; *urlnorm.Normalizer implements it.
type Normalizer interface {
	Normalize(raw string) (string, error)
	Resolve(base, ref string) (string, error)
	Segments(canonical string) []string
}

// Store is the embedded key-value store the queue lives in. Write applies
// the batch built by fn atomically and durably, or not at all. Get returns
// an error matching ErrNotFound for an absent key. Ascend calls fn for the
// keys in [start, end) in byte order until fn returns false.
type Store interface {
	Get(key []byte) ([]byte, error)
	Write(fn func(w Writer) error) error
	Ascend(start, end []byte, fn func(key, value []byte) bool) error
}

// Syncer is implemented by a Store whose Write survives a crash of the
// process but reaches the disk only at Sync (storage.Options.DeferSync).
// Checkpoint calls Sync before capture, so that a seen-set snapshot never
// covers an insert the disk does not hold.
type Syncer interface {
	Sync() error
}

// Writer collects one atomic batch of a Store.
type Writer interface {
	Set(key, value []byte) error
	Delete(key []byte) error
}

// RangeDeleter is implemented by a Writer that can delete the keys in
// [start, end) in one operation (storage.Store's, on pebble). A checkpoint
// trims the journal with it when the Writer has it and it does not return
// an error wrapping errors.ErrUnsupported; otherwise key by key.
type RangeDeleter interface {
	DeleteRange(start, end []byte) error
}

var (
	// ErrNotFound is what Store.Get returns (possibly wrapped) for an
	// absent key.
	ErrNotFound = errors.New("frontier: key not found")
	// ErrExhausted is returned by Next when nothing is queued and nothing
	// is out.
	ErrExhausted = errors.New("frontier: exhausted")
	// ErrPageLimit is returned by Next when Options.MaxPages pages have
	// been fetched.
	ErrPageLimit = errors.New("frontier: page limit reached")
	// ErrNotOut is returned by Done for an entry that Next did not hand
	// out or that is already done.
	ErrNotOut = errors.New("frontier: entry is not out")
)

// Entry is one queued URL.
type Entry struct {
	URL       string // canonical URL
	Depth     int    // hops (links and redirects) from a seed
	Redirects int    // consecutive redirect hops that led here
	Via       string // the page it was found on, or the redirecting URL; empty for seeds
	// Hops is the hop path from a seed, one letter a hop (HopLink,
	// HopEmbed, HopRedirect, HopSitemap), as Heritrix writes it: "LLE" is
	// a requisite of a page two links from a seed. Empty for seeds and for
	// entries queued before hop paths were recorded; at most MaxHopPath
	// letters, the last ones.
	Hops string
	// Sitemap says the URL names a sitemap (from robots.txt or a sitemap
	// index): its body is read as one.
	Sitemap bool
	// LastMod is the <lastmod> of the sitemap entry that listed the URL,
	// zero if none.
	LastMod time.Time
	// Attempt counts the earlier fetches of this URL that failed
	// transiently and were retried: 0 for a first fetch.
	Attempt int

	host  string    // queue key: host[:port]
	seq   uint64    // position in the store, 0 until committed
	ck    uint64    // OrderInlinks, in a window: countKey(URL)
	rank  uint32    // OrderInlinks, in a window: in-links when last looked at; seedRank for a seed
	retry bool      // a retry record (r/ key), not a queue entry
	due   time.Time // retry: not handed out before
}

// Outcome is what a worker reports about an entry it was handed.
type Outcome struct {
	// Fetched is true when a request reached the host, so that the
	// politeness delay applies; false for entries skipped before any
	// request (robots.txt, bad address).
	Fetched bool
	// Failed counts the entry as an error.
	Failed bool
	// Base is the URL the page's links resolve against (after <base
	// href>); empty means the entry's URL.
	Base string
	// Links are the page's references as written (resolved here).
	Links []string
	// Embeds are the page's requisites as written (resolved against Base
	// too), queued one embed hop further (see
	// AdmissionOptions.MaxEmbedHops).
	Embeds []string
	// RobotsSitemaps are the Sitemap lines of the robots.txt of the
	// entry's site, queued as sitemaps one hop from that robots.txt (see
	// Admission.RobotsSitemap).
	RobotsSitemaps []string
	// Sitemaps are the sitemaps a sitemap index lists, queued as sitemaps
	// one sitemap hop further.
	Sitemaps []string
	// Listed are the pages a sitemap lists, queued one sitemap hop
	// further with their lastmod.
	Listed []Listed
	// Redirect is a 3xx response's Location, resolved against the entry's
	// URL; it is queued one redirect hop further.
	Redirect string
	// CrawlDelay is the host's robots.txt Crawl-delay, 0 if none.
	CrawlDelay time.Duration
	// RetryAt, when not zero, says the fetch failed transiently and the
	// URL is to be fetched again, at RetryAt or later, as Attempt+1. The
	// retry is stored with the host's queue (it survives a crash and a
	// resume) but never holds the host's other entries back. Failed,
	// Links and Redirect are then ignored: the entry is not counted in
	// Errors.
	RetryAt time.Time
	// Elapsed is how long the request took (adaptive politeness: the
	// host's delay is at least PolitenessOptions.DelayFactor times it);
	// 0 if unknown.
	Elapsed time.Duration
	// Throttled says the host asked the crawler to slow down (HTTP 429 or
	// 503): its delay doubles, up to PolitenessOptions.MaxDelay.
	Throttled bool
	// Responded says the request got an HTTP response (any status). The
	// Redis frontier counts them for the whole crawl (so that a worker
	// can tell a crawl that fetched nothing); this frontier ignores it.
	Responded bool
	// Schedule, in a continuous frontier (Options.Continuous), is when
	// the URL is to be fetched again; nil drops it from the schedule.
	// Ignored otherwise, and with RetryAt.
	Schedule *Schedule
}

// Stats is a snapshot of the frontier's counters. Pages, Errors and Queued
// survive a restart; the discovery counters count this run only.
type Stats struct {
	Queued     int64  // entries in the store, including those out
	Retrying   int64  // URLs waiting for a retry (Outcome.RetryAt), including those out
	Hosts      int    // hosts with queued entries, retries, or one out
	Slowed     int    // hosts whose delay throttling raised (429, 503), now
	EverSlowed uint64 // hosts throttling slowed down, this run (counted each time a host goes from normal pace to slowed)
	Throttled  uint64 // responses that asked to slow down (Outcome.Throttled), this run
	InFlight   int    // entries out
	Pages      uint64 // completed entries that reached the host
	Errors     uint64 // completed entries that failed
	Memory     int    // entries held in memory windows
	Checkpoint uint64 // generation of the last seen-set checkpoint
	Journal    int64  // seen-set inserts not covered by a checkpoint: replayed by the next Open

	New              uint64     // discovered URLs queued
	Duplicates       uint64     // discovered URLs the seen-set already held
	CachedLinks      uint64     // duplicates known from the link cache, without resolving them
	OutOfScope       uint64     // rejected by scope
	Filtered         uint64     // rejected by Allow/Deny
	TooDeep          uint64     // rejected by MaxDepth
	TooManyRedirects uint64     // redirect targets rejected by MaxRedirects
	Invalid          uint64     // references that did not resolve or normalize
	Limits           LimitStats // refused by Options.Limits

	// SlowedHosts lists up to MaxSlowedHosts of the Slowed hosts, the
	// most slowed first.
	SlowedHosts []SlowedHost

	// With Options.ExactDedup: the seen-set's "maybe seen" answers
	// checked against the fingerprints, and those the fingerprints showed
	// to be new URLs (the filter's false positives, queued rather than
	// lost). This run only.
	ExactChecks, FalsePositives uint64
	// With Options.ExactDedup: of ExactChecks, those looked up in the
	// store because their stripe of the memory tables spilled (this run),
	// and the fingerprints the memory tables hold now.
	ExactLookups, ExactInMemory uint64

	// Scheduled is the number of URLs in the due schedule of a
	// continuous frontier (those queued again when due included).
	Scheduled int64
	// Aged counts the fingerprints the rotations of an aging set removed
	// (Options.AgeWindow; this run). A URL admitted again after its
	// fingerprint aged out counts in FalsePositives when the seen-set
	// still answered "maybe seen" (one that does not age, or a previous
	// generation's filter that outlived its tag by a generation).
	Aged uint64
	// AgedScheduled counts the links (this run) to a scheduled URL whose
	// fingerprint had aged out, its revisit late by more than a window:
	// duplicates all the same, as the URL's visit record says.
	AgedScheduled uint64
}

// MaxSlowedHosts bounds Stats.SlowedHosts.
const MaxSlowedHosts = 10

// SlowedHost is a host whose delay adaptive politeness raised after it
// answered 429 or 503.
type SlowedHost struct {
	Host  string
	Delay time.Duration // the delay its throttling asks for now
}

// Frontier is the crawl frontier. See the package documentation.
type Frontier struct {
	opts Options

	// batches tracks the batches in progress, from the first seen-set
	// insert of a batch until it is committed: Checkpoint waits for those
	// in progress when it copied the seen-set, never stopping new ones.
	batches epochs
	// commitMu is held by the leader of a group commit.
	commitMu sync.Mutex
	// ckptRun is held for the whole of a Checkpoint.
	ckptRun sync.Mutex

	adm   *Admission // scope, Allow/Deny, depth, redirects and trap limits, with their counters
	links *linkCache // raw links known to be in the seen-set
	exact *exactSet  // Options.ExactDedup; nil without
	sched *schedule  // Options.Continuous; nil without
	age   *ageClock  // Options.AgeWindow; nil without
	// counts are the in-link counts of OrderInlinks, canon the count keys
	// of the links the link cache holds; both nil with OrderFIFO.
	counts *countmin.Sketch
	canon  *canonCache

	mu       sync.Mutex // protects the fields below
	st       state
	hosts    map[string]*host
	ready    hostHeap // hosts with an entry to hand out, by ready time
	prio     prioHeap // OrderInlinks: hosts whose delay has passed, by best rank
	idle     []idleHost
	pending  []*op
	inflight int
	// completing counts fetched entries whose batch is not applied yet:
	// they count against MaxPages like those out.
	completing int
	journal    int64           // journal records (seen-set inserts) since the last checkpoint
	released   map[uint64]bool // entries released but not done: seq -> fetched
	mem        int
	served     uint64
	queued     int64
	retrying   int64 // retry records in the store, including those out
	broken     error
	waiters    []chan struct{} // Next calls waiting for a change, oldest first; see wakeLocked

	cNew, cDup, cCached atomic.Uint64
	cThrottled, cSlowed atomic.Uint64 // adaptive politeness: 429/503 responses, hosts slowed down
}

type host struct {
	name     string
	queued   int64   // entries in the store, including the one out
	window   []Entry // head of the queue, in order
	spilled  bool    // the store holds entries after the window's tail
	lastSeq  uint64  // seq of the last entry that entered the window
	inflight bool
	outRetry bool    // the entry out is a retry record
	retries  []Entry // retries waiting to be handed out, by due time
	nRetry   int     // retry records in the store, including the one out
	pending  int     // completed queue entries whose batch is not applied yet
	out      uint64  // seq of the entry out, 0 once Done claimed it
	readyAt  time.Time
	throttle time.Duration  // adaptive politeness: the delay the host's throttling asked for, 0 if none
	served   uint64         // when it was last served, to break ties round-robin
	index    int            // in the ready heap, -1 if not
	pindex   int            // in the prio heap (OrderInlinks), -1 if not
	best     uint32         // OrderInlinks: the highest rank in the window
	pos      map[uint64]int // OrderInlinks: window index by count key
}

type idleHost struct {
	name    string
	readyAt time.Time
}

// op is one batch's worth of changes, waiting for the group commit.
type op struct {
	done       *Entry // completed entry, nil for seeds
	fetched    bool   // done reached its host
	failed     bool   // done failed
	retry      *Entry // done's retry record, nil if none
	adds       []Entry
	requeue    []Entry         // failed entries queued again; their failure records go
	seeds      []string        // host names and domains, prefixed
	fps        []uint64        // fingerprints of adds (Options.ExactDedup)
	tags       []uint32        // aging (Options.AgeWindow): the generation each of fps was checked in
	journal    []string        // URLs journaled beside adds: fetched, new to an aging seen-set (touch)
	journalSeq uint64          // the journal number of journal[0]
	bumps      []hostBump      // OrderInlinks: hosts whose queued URLs gained in-links
	sched      *scheduleChange // Options.Continuous: done's new schedule
	unschedule [][]byte        // Options.Continuous: t/ keys promoted (their entries are in requeue) or stale
	err        error
	ch         chan struct{}
	committed  bool
}

// addFingerprint adds a fingerprint the batch writes, tagged gen in an
// aging set. The caller holds fp's stripe, so that gen is the generation
// of the check (a rotation holds every stripe), and so of the seen-set's
// insert: the tag written at the commit is the check's, even when a
// rotation came between (a newer one would outlive the seen-set's
// insert).
func (o *op) addFingerprint(fp uint64, gen uint32) {
	o.fps = append(o.fps, fp)
	o.tags = append(o.tags, gen)
}

// Open returns a frontier over the store's state, replaying the journal of
// seen-set inserts that the last checkpoint does not cover into opts.Seen.
// The caller loads that checkpoint into the seen-set first (see
// CheckpointGeneration).
func Open(ctx context.Context, opts Options) (*Frontier, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	adm, err := NewAdmission(opts.Normalizer, opts.Domain, opts.Admission)
	if err != nil {
		return nil, err
	}
	f := &Frontier{
		opts:     opts,
		adm:      adm,
		links:    newLinkCache(linkCacheBits),
		hosts:    map[string]*host{},
		released: map[uint64]bool{},
		st:       state{nextSeq: 1},
	}
	st, err := readState(opts.Store)
	if err != nil {
		return nil, err
	}
	if st != nil {
		f.st = *st
	}
	if err := f.openExact(st != nil); err != nil {
		return nil, err
	}
	if f.age != nil {
		// The seen-set learns the store's generation before the journal
		// is replayed into it (Rotator).
		swap, err := f.prepareRotation(f.exact.gen.Load())
		if err != nil {
			return nil, err
		}
		swap()
	}
	if opts.Continuous {
		if err := f.loadSchedule(); err != nil {
			return nil, err
		}
	}
	if opts.Order == OrderInlinks {
		f.counts = opts.Inlinks
		if f.counts == nil {
			rows, width := InlinksSketchShape(opts.ExpectedURLs, opts.MaxPages)
			if f.counts, err = countmin.New(countmin.Options{Rows: rows, Width: width}); err != nil {
				return nil, fmt.Errorf("frontier: %w", err)
			}
		}
		f.canon = newCanonCache(canonCacheBits)
	}
	if err := f.load(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// CheckpointGeneration returns the generation of the last seen-set
// checkpoint recorded in the store, 0 if there is none: when it is not 0,
// the caller must load a snapshot of at least that generation into the
// seen-set before Open, or the state is incomplete.
func CheckpointGeneration(s Store) (uint64, error) {
	st, err := readState(s)
	if err != nil || st == nil {
		return 0, err
	}
	return st.checkpoint, nil
}

// StateExists reports whether the store holds a frontier's state, that is
// whether Open resumes a crawl.
func StateExists(s Store) (bool, error) {
	st, err := readState(s)
	return st != nil, err
}

func readState(s Store) (*state, error) {
	b, err := s.Get([]byte(keyState))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("frontier: read state: %w", err)
	}
	st, err := decodeState(b)
	if err != nil {
		return nil, err
	}
	if st.nextSeq == 0 {
		return nil, &CorruptError{Key: keyState, Reason: "zero sequence"}
	}
	return &st, nil
}

// load reads the scope, replays the journal and builds the host records.
func (f *Frontier) load(ctx context.Context) error {
	s := f.opts.Store
	var derr error
	scan := func(prefix string, fn func(k, v []byte) error) error {
		end := []byte(prefix)
		end[len(end)-1]++
		err := s.Ascend([]byte(prefix), end, func(k, v []byte) bool {
			derr = fn(k, v)
			return derr == nil
		})
		if err == nil {
			err = derr
		}
		return err
	}
	var seedHosts, seedDoms []string
	err := scan(prefixSeed, func(k, _ []byte) error {
		seedHosts = append(seedHosts, string(k[len(prefixSeed):]))
		return nil
	})
	if err == nil {
		err = scan(prefixDomain, func(k, _ []byte) error {
			seedDoms = append(seedDoms, string(k[len(prefixDomain):]))
			return nil
		})
	}
	f.adm.SetScope(seedHosts, seedDoms)
	if err == nil {
		err = scan(prefixJournal, func(k, v []byte) error {
			if len(k) != len(prefixJournal)+8 || len(v) == 0 {
				return &CorruptError{Key: string(k), Reason: "malformed journal record"}
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			f.journal++
			_, err := f.opts.Seen.TestAndAdd(ctx, f.opts.Normalizer.Segments(string(v)))
			return err
		})
	}
	if err == nil {
		err = scan(prefixRetry, f.loadRetry)
	}
	if err == nil {
		err = scan(prefixHost, func(k, v []byte) error {
			n, err := decodeCount(k, v)
			if err != nil {
				return err
			}
			if n == 0 {
				return &CorruptError{Key: string(k), Reason: "zero host count"}
			}
			h := f.hostLocked(string(k[len(prefixHost):]))
			h.queued = n
			h.spilled = true
			f.queued += n
			f.scheduleLocked(h)
			return nil
		})
	}
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("frontier: load state: %w", err)
	}
	return nil
}

// hostLocked returns the record of a host, creating it.
func (f *Frontier) hostLocked(name string) *host {
	h := f.hosts[name]
	if h == nil {
		// A new host queues behind those already waiting with the same
		// ready time: ties are served in order of discovery.
		f.served++
		h = &host{name: name, index: -1, pindex: -1, served: f.served}
		f.hosts[name] = h
	}
	return h
}

// AddSeeds queues the seeds that the seen-set does not hold yet, and those
// it holds whose last attempt failed (a failure record: see RetryFailed),
// recording their host names and domains as the crawl's scope. It returns
// how many were queued. A seed that does not normalize is an error.
func (f *Frontier) AddSeeds(ctx context.Context, seeds []string) (int, error) {
	defer f.batches.exit(f.batches.enter())
	o := &op{ch: make(chan struct{})}
	canon := make([]string, 0, len(seeds))
	for _, raw := range seeds {
		sd, err := f.adm.ParseSeed(raw)
		if err != nil {
			return 0, err
		}
		hosts, doms := f.adm.AddScope([]string{sd.Host}, []string{sd.Domain})
		for _, h := range hosts {
			o.seeds = append(o.seeds, prefixSeed+h)
		}
		for _, d := range doms {
			o.seeds = append(o.seeds, prefixDomain+d)
		}
		canon = append(canon, sd.URL)
	}
	for _, c := range canon {
		cand, r := f.adm.CheckSeed(c)
		n := len(o.adds)
		checked, err := f.consider(ctx, o, cand, r)
		if err != nil {
			return 0, err
		}
		if !checked || len(o.adds) > n || slices.ContainsFunc(o.requeue, func(e Entry) bool { return e.URL == cand.URL }) {
			continue
		}
		// Seen before: queued again if its last attempt failed.
		e, failed, err := f.loadFailed(cand.Host, cand.URL)
		if err != nil {
			return 0, err
		}
		if failed {
			o.requeue = append(o.requeue, e)
		}
	}
	if err := f.commit(o); err != nil {
		return 0, err
	}
	return len(o.adds) + len(o.requeue), nil
}

// consider adds an admitted candidate to o when the seen-set reports it
// new; it ignores a refused one (Admission counted it). checked reports
// whether the candidate went through the seen-set, and so is in it now.
func (f *Frontier) consider(ctx context.Context, o *op, c Candidate, r Refusal) (checked bool, err error) {
	if r != Admitted {
		return false, nil
	}
	var fp uint64
	if f.exact != nil {
		// The seen-set's answer and the fingerprint check happen under
		// one lock of the fingerprint's stripe: otherwise the worker
		// whose insert made the filter answer "maybe seen" to another
		// could check after that other one committed the URL as a caught
		// false positive, and queue it a second time.
		fp = fingerprint(c.URL)
		unlock := f.exact.lock(fp)
		defer unlock()
	}
	seen, err := f.opts.Seen.TestAndAdd(ctx, c.Segments)
	if err != nil {
		return false, fmt.Errorf("frontier: seen-set: %w", err)
	}
	if f.exact != nil {
		maybe := seen
		var touch bool
		if seen, touch, err = f.exact.check(fp, seen); err != nil {
			return false, fmt.Errorf("frontier: exact dedup: %w", err)
		}
		if touch {
			o.addFingerprint(fp, f.exact.gen.Load()) // tagged with this generation
		}
		if !seen && f.age != nil {
			if seen, err = f.scheduledAgedOut(o, fp, c.URL, maybe); err != nil {
				return false, err
			}
		}
	}
	if seen {
		f.cDup.Add(1)
		return true, nil
	}
	f.adm.Added(c)
	o.adds = append(o.adds, c.entry())
	if f.exact != nil {
		o.addFingerprint(fp, f.exact.gen.Load())
	}
	return true, nil
}

// considerLinks checks the links of e's page and adds the new ones to o. A
// link the link cache knows is a duplicate without any work; the others
// are resolved against the page's base, parsed once.
func (f *Frontier) considerLinks(ctx context.Context, o *op, e Entry, out Outcome) error {
	base := out.Base
	if base == "" {
		base = e.URL
	}
	keys := newPageKeys(base)
	links := f.adm.Links(e, base)
	var page pageCounts
	for i, refs := range [2][]string{out.Links, out.Embeds} {
		check := links.Link
		if i == 1 {
			check = links.Embed
		}
		for _, ref := range refs {
			k := keys.key(ref)
			if f.links.has(k) {
				f.cDup.Add(1)
				f.cCached.Add(1)
				if f.counts != nil {
					if ck, host, ok := f.canon.get(k); ok {
						page.add(ck, host)
					} else if u, err := f.opts.Normalizer.Resolve(base, ref); err == nil {
						page.add(countKey(u), "")
					}
				}
				continue
			}
			c, r := check(ref)
			if f.counts != nil && r == Admitted {
				ck := countKey(c.URL)
				page.add(ck, c.Host)
				f.canon.put(k, ck, c.Host)
			}
			checked, err := f.consider(ctx, o, c, r)
			if err != nil {
				return err
			}
			if checked {
				f.links.add(k)
			}
		}
	}
	if f.counts != nil {
		o.bumps = f.countLinks(&page)
	}
	return nil
}

// considerSitemaps checks the sitemap URLs of an outcome and adds the new
// ones to o.
func (f *Frontier) considerSitemaps(ctx context.Context, o *op, e Entry, out Outcome) error {
	return SitemapCandidates(f.adm, e, out, func(c Candidate, r Refusal) error {
		_, err := f.consider(ctx, o, c, r)
		return err
	})
}

// Next hands out the next entry of the host that has waited longest among
// those whose politeness delay has passed, blocking until there is one. It
// returns ErrExhausted when nothing is queued or out, ErrPageLimit when
// Options.MaxPages is reached and nothing is out, or the context's error.
// Every entry handed out must be reported to Done.
func (f *Frontier) Next(ctx context.Context) (Entry, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	wake := make(chan struct{}, 1) // this call's place in f.waiters
	for {
		if err := ctx.Err(); err != nil {
			f.mu.Lock()
			f.leaveLocked(wake)
			// A wake-up this call may have taken is not its to drop: pass
			// one on (a spare one only makes a waiter look again).
			f.wakeLocked()
			f.mu.Unlock()
			return Entry{}, err
		}
		f.mu.Lock()
		f.leaveLocked(wake)
		if f.age != nil && f.broken == nil && !f.opts.Now().Before(f.age.next) {
			// A new generation of the aging seen-set first.
			f.mu.Unlock()
			if err := f.rotate(); err != nil {
				return Entry{}, err
			}
			f.mu.Lock()
		}
		if f.sched != nil && f.broken == nil && f.sched.dueLocked(f.opts.Now()) {
			// Due URLs join their hosts' queues first.
			f.mu.Unlock()
			if err := f.promote(ctx); err != nil {
				return Entry{}, err
			}
			f.mu.Lock()
		}
		e, wait, done, err := f.nextLocked()
		if !done && f.sched != nil {
			if d := f.sched.waitLocked(f.opts.Now()); d >= 0 && (wait < 0 || d < wait) {
				wait = d
			}
		}
		if done {
			// Pass the wake on while others may have something to do:
			// an entry to take or a delay to time, or the same end to
			// return.
			if err != nil || f.readyCount() > 0 {
				f.wakeLocked()
			}
			f.mu.Unlock()
			return e, err
		}
		f.waiters = append(f.waiters, wake)
		f.mu.Unlock()
		var tc <-chan time.Time
		if wait >= 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			tc = timer.C
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-tc:
		}
	}
}

// nextLocked is one look of Next: done with an entry or an error, or not
// done and the time until the first ready host's delay passes (-1 for no
// such host).
func (f *Frontier) nextLocked() (e Entry, wait time.Duration, done bool, err error) {
	if f.broken != nil {
		return Entry{}, 0, true, f.broken
	}
	maxPages := pageLimit(f.opts.MaxPages)
	limited := maxPages > 0 && f.st.pages+uint64(f.inflight+f.completing) >= maxPages
	switch {
	case limited && f.inflight == 0 && f.completing == 0:
		return Entry{}, 0, true, ErrPageLimit
	case f.queued == 0 && f.retrying == 0 && f.inflight == 0 && f.completing == 0 && (f.sched == nil || f.sched.urls == 0):
		// A continuous frontier whose schedule is empty too has nothing
		// it will ever hand out (every URL failed for good or left as
		// gone): it ends as any other, rather than wait for ever.
		return Entry{}, 0, true, ErrExhausted
	case !limited && f.counts != nil:
		return f.nextInlinksLocked(f.opts.Now())
	case !limited && len(f.ready) > 0:
		h := f.ready[0]
		now := f.opts.Now()
		if at := h.at(); !at.After(now) {
			e, err := f.popLocked(h, now)
			return e, 0, true, err
		}
		return Entry{}, h.at().Sub(now), false, nil
	}
	return Entry{}, -1, false, nil
}

// wakeLocked wakes the Next call that has waited longest, if any. One
// change wakes one waiter, which passes the wake on when it leaves work
// behind (see Next), rather than every idle worker at once: with many
// workers and few hosts, waking them all on every change filled the run
// queues with goroutines that found nothing to do, ahead of the one that
// had a fetch to make.
func (f *Frontier) wakeLocked() {
	if len(f.waiters) == 0 {
		return
	}
	w := f.waiters[0]
	f.waiters[0] = nil
	f.waiters = f.waiters[1:]
	w <- struct{}{} // never blocks: a channel is in f.waiters at most once, and empty there
}

// leaveLocked takes wake out of f.waiters, or, if a change has already
// taken it out, consumes that change's wake-up: the caller looks again.
func (f *Frontier) leaveLocked(wake chan struct{}) {
	for i, w := range f.waiters {
		if w == wake {
			f.waiters = slices.Delete(f.waiters, i, i+1)
			return
		}
	}
	select {
	case <-wake:
	default:
	}
}

// popLocked takes a due retry of h, or else the head of h's queue, loading
// the window from the store when it is empty.
func (f *Frontier) popLocked(h *host, now time.Time) (Entry, error) {
	if len(h.retries) > 0 && !h.retries[0].due.After(now) {
		return f.popRetryLocked(h), nil
	}
	if len(h.window) == 0 {
		if err := f.refillLocked(h); err != nil {
			f.broken = err
			return Entry{}, err
		}
		if len(h.window) == 0 {
			err := &CorruptError{Key: prefixHost + h.name, Reason: fmt.Sprintf("count %d but no entries in the store", h.queued)}
			f.broken = err
			return Entry{}, err
		}
	}
	var e Entry
	if f.counts != nil {
		e = f.takeBestLocked(h)
		if h.spilled && len(h.window) <= topUpLevel(f.opts.HostWindow) {
			// Top the window up with the next part of the queue, ranked
			// now, so that the host's best rank is known while it waits:
			// refilled only once empty, a window handed out all of its
			// least-linked entries before any later one became a
			// candidate, and ranked the host among the others by its
			// leftovers (issue 34: 0.88 of the top 1% against 0.99).
			if err := f.refillLocked(h); err != nil {
				f.broken = err
				return Entry{}, err
			}
		}
	} else {
		e = h.window[0]
		h.window[0] = Entry{}
		h.window = h.window[1:]
		if len(h.window) == 0 {
			h.window = nil
		}
	}
	f.mem--
	h.inflight = true
	h.outRetry = false
	h.out = e.seq
	f.inflight++
	f.unreadyLocked(h)
	return e, nil
}

// refillLocked reads the entries that follow h's window in the store
// into it, up to HostWindow in the window (at least one) and
// MemoryWindow in all.
func (f *Frontier) refillLocked(h *host) error {
	limit := min(max(f.opts.HostWindow-len(h.window), 1), max(f.opts.MemoryWindow-f.mem, 1))
	start, end := queueRange(h.name, h.lastSeq+1)
	var derr error
	n := 0
	err := f.opts.Store.Ascend(start, end, func(k, v []byte) bool {
		seq, err := parseQueueKey(k, h.name)
		if err != nil {
			derr = err
			return false
		}
		if seq >= f.st.nextSeq {
			// Written by a batch that is being committed but not yet
			// applied: applyLocked appends it to the window, which is
			// complete up to here.
			return false
		}
		e, err := decodeEntry(k, v)
		if err != nil {
			derr = err
			return false
		}
		e.host, e.seq = h.name, seq
		if f.counts != nil {
			f.rankLocked(h, &e)
		}
		h.window = append(h.window, e)
		h.lastSeq = seq
		n++
		return n < limit
	})
	if err != nil {
		return fmt.Errorf("frontier: read queue of %s: %w", h.name, err)
	}
	if derr != nil {
		return derr
	}
	f.mem += n
	if n < limit {
		h.spilled = false
	}
	return nil
}

// Release ends the request for e, which Next handed out: the host's
// politeness delay starts now and its next entry may be handed out while
// the caller is still archiving e and reading its links. fetched and
// crawlDelay mean what Outcome.Fetched and Outcome.CrawlDelay mean, and
// take their place in the Done that must follow. Release is optional: Done
// releases an entry that was not. The entry leaves the queue only at Done,
// so a crash in between repeats it.
func (f *Frontier) Release(e Entry, fetched bool, crawlDelay time.Duration) error {
	return f.ReleaseOutcome(e, Outcome{Fetched: fetched, CrawlDelay: crawlDelay})
}

// ReleaseOutcome is Release with the parts of the outcome known when the
// request is over: Fetched, CrawlDelay, and for adaptive politeness
// Elapsed and Throttled (see PolitenessOptions). They take their place in
// the Done that must follow.
func (f *Frontier) ReleaseOutcome(e Entry, out Outcome) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return f.broken
	}
	h := f.hosts[e.host]
	if e.seq == 0 || h == nil || !h.inflight || h.out != e.seq {
		return fmt.Errorf("%w: %s", ErrNotOut, e.URL)
	}
	f.releaseLocked(h, e.seq, out)
	return nil
}

// releaseLocked ends the request of h's entry seq. The entry stays in the
// store (and counted in h.queued, as pending) until its Done batch is
// durable; Done's wait for that batch still bounds the fetches a crash
// can repeat to one per worker.
func (f *Frontier) releaseLocked(h *host, seq uint64, out Outcome) {
	fetched := out.Fetched
	delay := f.paceLocked(h, out)
	h.out = 0
	h.inflight = false
	f.inflight--
	if !h.outRetry {
		h.pending++
	}
	if fetched {
		f.completing++
		h.readyAt = f.opts.Now().Add(delay)
	}
	f.released[seq] = fetched
	f.served++
	h.served = f.served
	f.scheduleLocked(h)
	f.wakeLocked()
}

// Done records the outcome of an entry handed out by Next: the entry leaves
// the queue, its links and redirect target are checked and the new ones
// queued, all in one durable batch; the host becomes ready again after its
// politeness delay. Done returns after the batch is durable.
func (f *Frontier) Done(ctx context.Context, e Entry, out Outcome) error {
	defer f.batches.exit(f.batches.enter())
	f.mu.Lock()
	if f.broken != nil {
		err := f.broken
		f.mu.Unlock()
		return err
	}
	fetched, released := f.released[e.seq]
	if !released {
		h := f.hosts[e.host]
		if e.seq == 0 || h == nil || !h.inflight || h.out != e.seq {
			f.mu.Unlock()
			return fmt.Errorf("%w: %s", ErrNotOut, e.URL)
		}
		// Release the host now rather than after the commit, so that its
		// next fetch overlaps this batch's write.
		f.releaseLocked(h, e.seq, out)
		fetched = out.Fetched
	}
	delete(f.released, e.seq)
	f.mu.Unlock()

	o := &op{done: &e, fetched: fetched, failed: out.Failed, ch: make(chan struct{})}
	if !out.RetryAt.IsZero() {
		r := e
		r.Attempt++
		r.due, r.retry, r.seq = out.RetryAt, true, 0
		o.retry, o.failed = &r, false
		return f.commit(o)
	}
	if err := f.prepareSchedule(ctx, o, e, out); err != nil {
		f.fail(err)
		return err
	}
	if out.Redirect != "" {
		c, r := f.adm.Redirect(e, out.Redirect)
		if _, err := f.consider(ctx, o, c, r); err != nil {
			f.fail(err)
			return err
		}
	}
	if len(out.Links) > 0 || len(out.Embeds) > 0 {
		if err := f.considerLinks(ctx, o, e, out); err != nil {
			f.fail(err)
			return err
		}
	}
	if err := f.considerSitemaps(ctx, o, e, out); err != nil {
		f.fail(err)
		return err
	}
	return f.commit(o)
}

// fail breaks the frontier: the seen-set may hold URLs the store does not.
func (f *Frontier) fail(err error) {
	f.mu.Lock()
	if f.broken == nil {
		f.broken = err
	}
	f.mu.Unlock()
	f.notify()
}

func (f *Frontier) notify() {
	f.mu.Lock()
	f.wakeLocked()
	f.mu.Unlock()
}

// commit makes o durable together with every other pending op (group
// commit) and applies them to memory.
func (f *Frontier) commit(o *op) error {
	f.mu.Lock()
	f.pending = append(f.pending, o)
	f.mu.Unlock()

	f.commitMu.Lock()
	defer f.commitMu.Unlock()
	f.mu.Lock()
	if o.committed {
		f.mu.Unlock()
		return o.err
	}
	if f.broken != nil {
		err := f.broken
		for _, p := range f.pending {
			p.err, p.committed = err, true
		}
		f.pending = nil
		f.mu.Unlock()
		return err
	}
	ops := f.pending
	f.pending = nil
	// Assign sequence numbers and compute the new counts; only the commit
	// leader changes them, so they stay valid while the lock is released.
	st := f.st
	counts := map[string]int64{}
	count := func(name string) int64 {
		if n, ok := counts[name]; ok {
			return n
		}
		if h := f.hosts[name]; h != nil {
			return h.queued
		}
		return 0
	}
	for _, p := range ops {
		if p.retry != nil {
			p.retry.seq = st.nextSeq
			st.nextSeq++
		}
		if p.done != nil {
			if !p.done.retry {
				counts[p.done.host] = count(p.done.host) - 1
			}
			if p.fetched {
				st.pages++
			}
			if p.failed {
				st.errors++
			}
		}
		for _, list := range [2][]Entry{p.adds, p.requeue} {
			for i := range list {
				a := &list[i]
				a.seq = st.nextSeq
				st.nextSeq++
				counts[a.host] = count(a.host) + 1
			}
		}
		p.journalSeq = st.nextSeq
		st.nextSeq += uint64(len(p.journal))
	}
	f.mu.Unlock()

	err := f.opts.Store.Write(func(w Writer) error {
		for _, p := range ops {
			if p.done != nil {
				key := queueKey(p.done.host, p.done.seq)
				if p.done.retry {
					key = retryKey(p.done.host, p.done.seq)
				}
				if err := w.Delete(key); err != nil {
					return err
				}
				if p.failed && p.retry == nil {
					if err := w.Set(failedKey(p.done.host, p.done.URL), failedRecord(p.done)); err != nil {
						return err
					}
				}
			}
			for i := range p.requeue {
				a := &p.requeue[i]
				if err := w.Set(queueKey(a.host, a.seq), encodeEntry(a)); err != nil {
					return err
				}
				if err := w.Delete(failedKey(a.host, a.URL)); err != nil {
					return err
				}
			}
			if r := p.retry; r != nil {
				if err := w.Set(retryKey(r.host, r.seq), encodeEntry(r)); err != nil {
					return err
				}
			}
			for i := range p.adds {
				a := &p.adds[i]
				if err := w.Set(queueKey(a.host, a.seq), encodeEntry(a)); err != nil {
					return err
				}
				if err := w.Set(journalKey(a.seq), []byte(a.URL)); err != nil {
					return err
				}
			}
			for _, k := range p.seeds {
				if err := w.Set([]byte(k), nil); err != nil {
					return err
				}
			}
			for i, u := range p.journal {
				if err := w.Set(journalKey(p.journalSeq+uint64(i)), []byte(u)); err != nil {
					return err
				}
			}
		}
		for name, n := range counts {
			k := []byte(prefixHost + name)
			var err error
			if n == 0 {
				err = w.Delete(k)
			} else {
				err = w.Set(k, encodeCount(n))
			}
			if err != nil {
				return err
			}
		}
		if f.exact != nil {
			if err := f.exact.write(w, ops); err != nil {
				return err
			}
		}
		if f.sched != nil {
			if err := writeSchedule(w, ops); err != nil {
				return err
			}
		}
		return w.Set([]byte(keyState), encodeState(&st))
	})
	if err == nil && f.exact != nil {
		f.exact.committed(ops)
	}

	f.mu.Lock()
	if err != nil {
		err = fmt.Errorf("frontier: store write: %w", err)
		f.broken = err
	} else {
		f.applyLocked(ops, st)
		f.applyScheduleLocked(ops)
	}
	for _, p := range ops {
		p.err, p.committed = err, true
	}
	f.wakeLocked()
	f.mu.Unlock()
	return o.err
}

func encodeCount(n int64) []byte { return binary.AppendUvarint(nil, uint64(n)) }

// applyLocked brings memory in line with a committed batch.
func (f *Frontier) applyLocked(ops []*op, st state) {
	now := f.opts.Now()
	f.st = st
	touched := map[*host]bool{}
	for _, p := range ops {
		if p.done != nil {
			h := f.hosts[p.done.host]
			if p.done.retry {
				h.nRetry--
				f.retrying--
			} else {
				h.queued--
				f.queued--
				h.pending--
			}
			if p.retry != nil {
				f.addRetryLocked(h, *p.retry)
			}
			if p.fetched {
				f.completing--
			}
			touched[h] = true
		}
		for _, a := range slices.Concat(p.adds, p.requeue) {
			h := f.hostLocked(a.host)
			h.queued++
			f.queued++
			if a.seq <= h.lastSeq {
				// Already in the window: a refill read it from the store
				// (defensive; refillLocked stops at unapplied entries).
			} else if !h.spilled && len(h.window) < f.opts.HostWindow && f.mem < f.opts.MemoryWindow {
				if f.counts != nil {
					f.rankLocked(h, &a)
				}
				h.window = append(h.window, a)
				h.lastSeq = a.seq
				f.mem++
			} else {
				h.spilled = true
			}
			touched[h] = true
		}
		for _, b := range p.bumps {
			if h := f.hosts[b.host]; h != nil {
				f.bumpLocked(h, b.key, b.count)
			}
		}
		f.cNew.Add(uint64(len(p.adds)))
		f.journal += int64(len(p.adds) + len(p.journal))
	}
	for h := range touched {
		f.scheduleLocked(h)
		if h.idle() {
			if !h.readyAt.After(now) {
				delete(f.hosts, h.name)
			} else {
				f.idle = append(f.idle, idleHost{h.name, h.readyAt})
			}
		}
	}
	// Forget idle hosts whose delay has passed; the list is roughly in
	// ready-time order, which is enough to keep it short.
	for len(f.idle) > 0 && !f.idle[0].readyAt.After(now) {
		ih := f.idle[0]
		f.idle = f.idle[1:]
		if h := f.hosts[ih.name]; h != nil && h.idle() && h.readyAt.Equal(ih.readyAt) {
			delete(f.hosts, ih.name)
		}
	}
}

// capture notes the journal's next number, runs fn (the copy of the
// seen-set) beside inserts, then waits until every batch in progress at the
// copy is committed.
func (f *Frontier) capture(ctx context.Context, fn func(uint64) (func(context.Context) error, error)) (gen, upto uint64, persist func(context.Context) error, err error) {
	// Every batch numbered below upto was committed, its inserts made,
	// before the copy starts: the copy holds them, and the journal up to
	// upto can go once the copy is saved.
	f.mu.Lock()
	err = f.broken
	gen = f.st.checkpoint + 1
	upto = f.st.nextSeq
	f.mu.Unlock()
	if err != nil {
		return 0, 0, nil, err
	}
	if persist, err = fn(gen); err != nil {
		return 0, 0, nil, fmt.Errorf("frontier: checkpoint %d: %w", gen, err)
	}
	// The copy may hold inserts of batches still in progress, numbered
	// upto or above when they commit (so their journal stays). They must
	// be durable before a checkpoint that marks their URLs seen is
	// recorded: wait for the batches in progress now, while new ones run.
	if err := f.batches.drain(ctx); err != nil {
		return 0, 0, nil, fmt.Errorf("frontier: checkpoint %d: %w", gen, err)
	}
	f.mu.Lock()
	err = f.broken
	f.mu.Unlock()
	if err != nil {
		return 0, 0, nil, err
	}
	return gen, upto, persist, nil
}

// epochs counts the batches in progress by epoch, so that a checkpoint can
// wait for the batches of the epoch it closes while later ones start and
// run: a grace period, not a barrier.
type epochs struct {
	mu  sync.Mutex
	cur *sync.WaitGroup // the open epoch's batches; nil until the first
}

// enter counts a batch in the open epoch; the caller passes the result to
// exit when the batch is committed or failed.
func (e *epochs) enter() *sync.WaitGroup {
	e.mu.Lock()
	if e.cur == nil {
		e.cur = new(sync.WaitGroup)
	}
	wg := e.cur
	wg.Add(1)
	e.mu.Unlock()
	return wg
}

func (e *epochs) exit(wg *sync.WaitGroup) { wg.Done() }

// drain opens a new epoch and waits until every batch of the previous
// one has exited, or ctx ends.
func (e *epochs) drain(ctx context.Context) error {
	e.mu.Lock()
	old := e.cur
	e.cur = new(sync.WaitGroup)
	e.mu.Unlock()
	if old == nil {
		return nil
	}
	done := make(chan struct{})
	go func() { old.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// scheduleLocked puts h in the ready heap when it has an entry to hand out
// (queued and not completing) and none out, and takes it out otherwise.
func (f *Frontier) scheduleLocked(h *host) {
	waiting := (h.queued-int64(h.pending) > 0 || len(h.retries) > 0) && !h.inflight
	switch {
	case waiting && h.pindex >= 0:
		heap.Fix(&f.prio, h.pindex)
	case waiting && h.index < 0:
		heap.Push(&f.ready, h)
	case waiting:
		heap.Fix(&f.ready, h.index)
	default:
		f.unreadyLocked(h)
	}
}

// Checkpoint lets the caller persist the seen-set. It calls capture with
// the new checkpoint generation: capture takes a consistent copy of the
// seen-set (mlbf's Concurrent.Snapshot, for example), holding inserts
// only for the copy if at all, and returns the function that writes it
// out. Checkpoint never stops inserts itself: it then waits for the
// batches in progress at the copy to be written to the store, while new
// ones run, syncs the store (if it is a Syncer) and runs persist. Once
// persist has succeeded, Checkpoint records the generation and trims the
// journal that the copy covers. If capture or persist fails, nothing is
// trimmed. Checkpoints run one at a time.
func (f *Frontier) Checkpoint(ctx context.Context, capture func(generation uint64) (persist func(context.Context) error, err error)) error {
	f.ckptRun.Lock()
	defer f.ckptRun.Unlock()
	gen, upto, persist, err := f.capture(ctx, capture)
	if err != nil {
		return err
	}
	// Every batch of the inserts the copy holds was written to the store
	// when capture returned; a sync now makes them durable before the
	// snapshot that marks their URLs seen, without holding inserts for the
	// disk flush (it made the barrier 50-100 ms,
	// docs/BENCHMARKS.md). Log files pebble closed meanwhile were synced
	// when it closed them.
	if s, ok := f.opts.Store.(Syncer); ok {
		if err := s.Sync(); err != nil {
			return fmt.Errorf("frontier: checkpoint %d: sync store: %w", gen, err)
		}
	}
	if err := persist(ctx); err != nil {
		return fmt.Errorf("frontier: checkpoint %d: %w", gen, err)
	}
	// Record the generation: from here on a snapshot must exist. Holding
	// commitMu keeps commit leaders from writing an older state over it.
	f.commitMu.Lock()
	f.mu.Lock()
	st := f.st
	st.checkpoint = gen
	f.mu.Unlock()
	err = f.opts.Store.Write(func(w Writer) error {
		return w.Set([]byte(keyState), encodeState(&st))
	})
	if err == nil {
		f.mu.Lock()
		f.st.checkpoint = gen
		f.journal = int64(f.st.nextSeq - upto)
		f.mu.Unlock()
	}
	f.commitMu.Unlock()
	if err != nil {
		err = fmt.Errorf("frontier: checkpoint %d: %w", gen, err)
		f.fail(err)
		return err
	}
	// One range tombstone where the store can: deleting the journal key
	// by key wrote batches of thousands of deletions whose tombstones
	// filled memtables faster than pebble flushed them, and every
	// frontier update waited behind the flushes: 28-99 updates over 50 ms
	// just after checkpoints, none without the trim (docs/BENCHMARKS.md).
	err = f.opts.Store.Write(func(w Writer) error {
		rd, ok := w.(RangeDeleter)
		if !ok {
			return errors.ErrUnsupported
		}
		return rd.DeleteRange(journalKey(0), journalKey(upto))
	})
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, errors.ErrUnsupported):
		err = fmt.Errorf("frontier: checkpoint %d: trim journal: %w", gen, err)
		f.fail(err)
		return err
	}
	const chunk = 8192
	from := uint64(0)
	for {
		if err := ctx.Err(); err != nil {
			return err // the rest of the journal is replayed harmlessly
		}
		keys := make([][]byte, 0, chunk)
		if err := f.opts.Store.Ascend(journalKey(from), journalKey(upto), func(k, _ []byte) bool {
			keys = append(keys, append([]byte(nil), k...))
			return len(keys) < chunk
		}); err != nil {
			return fmt.Errorf("frontier: checkpoint %d: trim journal: %w", gen, err)
		}
		if len(keys) == 0 {
			return nil
		}
		if err := f.opts.Store.Write(func(w Writer) error {
			for _, k := range keys {
				if err := w.Delete(k); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			err = fmt.Errorf("frontier: checkpoint %d: trim journal: %w", gen, err)
			f.fail(err)
			return err
		}
		if len(keys) < chunk {
			return nil
		}
		from = binary.BigEndian.Uint64(keys[len(keys)-1][len(prefixJournal):]) + 1
	}
}

// Stats returns the frontier's counters.
func (f *Frontier) Stats() Stats {
	f.mu.Lock()
	s := Stats{
		Queued:     f.queued,
		Retrying:   f.retrying,
		InFlight:   f.inflight,
		Pages:      f.st.pages,
		Errors:     f.st.errors,
		Memory:     f.mem,
		Checkpoint: f.st.checkpoint,
		Journal:    f.journal,
	}
	if f.sched != nil {
		s.Scheduled = f.sched.urls
	}
	for _, h := range f.hosts {
		if h.queued > 0 || h.nRetry > 0 || h.inflight {
			s.Hosts++
		}
		if h.throttle > 0 {
			s.Slowed++
			s.SlowedHosts = topSlowed(s.SlowedHosts, SlowedHost{Host: h.name, Delay: h.throttle})
		}
	}
	f.mu.Unlock()
	s.New = f.cNew.Load()
	s.Throttled = f.cThrottled.Load()
	s.EverSlowed = f.cSlowed.Load()
	s.Duplicates = f.cDup.Load()
	s.CachedLinks = f.cCached.Load()
	if f.exact != nil {
		s.ExactChecks = f.exact.checks.Load()
		s.FalsePositives = f.exact.caught.Load()
		s.ExactLookups = f.exact.lookups.Load()
		s.ExactInMemory = uint64(f.exact.inMemory.Load())
		s.Aged = f.exact.aged.Load()
		s.AgedScheduled = f.exact.agedScheduled.Load()
	}
	a := f.adm.Stats()
	s.OutOfScope = a.OutOfScope
	s.Filtered = a.Filtered
	s.TooDeep = a.TooDeep
	s.TooManyRedirects = a.TooManyRedirects
	s.Invalid = a.Invalid
	s.Limits = a.Limits
	return s
}

// hostHeap orders hosts by ready time, then by when they were last served.
type hostHeap []*host

func (q hostHeap) Len() int { return len(q) }
func (q hostHeap) Less(i, j int) bool {
	if a, b := q[i].at(), q[j].at(); !a.Equal(b) {
		return a.Before(b)
	}
	return q[i].served < q[j].served
}
func (q hostHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}
func (q *hostHeap) Push(x any) {
	h := x.(*host)
	h.index = len(*q)
	*q = append(*q, h)
}
func (q *hostHeap) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	h.index = -1
	*q = old[:len(old)-1]
	return h
}

// topSlowed adds h to top, the most slowed hosts in order (ties by name),
// keeping at most MaxSlowedHosts.
func topSlowed(top []SlowedHost, h SlowedHost) []SlowedHost {
	less := func(a, b SlowedHost) bool { return a.Delay > b.Delay || a.Delay == b.Delay && a.Host < b.Host }
	i := len(top)
	for i > 0 && less(h, top[i-1]) {
		i--
	}
	if i >= MaxSlowedHosts {
		return top
	}
	if len(top) < MaxSlowedHosts {
		top = append(top, SlowedHost{})
	}
	copy(top[i+1:], top[i:])
	top[i] = h
	return top
}
