package frontier

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// prefixFingerprint is the table of Options.ExactDedup: one key per URL
// ever queued, f/<fingerprint:8 big-endian>, with an empty value.
const prefixFingerprint = "f/"

// exactStripes spreads the fingerprint tables over independent locks, so
// that workers checking different URLs do not wait for each other.
const exactStripes = 64

// DefaultExactMemory is Options.ExactMemory's default: 64 MiB of
// fingerprint tables, which hold 6.7 million URLs in memory. (A bound of B
// bytes holds at least B/20 URLs: a stripe's table doubles in powers of
// two, and spills when it is 80% full and doubling would pass its share.)
const DefaultExactMemory = 64 << 20

// exactSet is the set of 64-bit URL fingerprints behind
// Options.ExactDedup. The seen-set's "new" answers are final (a Bloom
// filter has no false negatives); its "maybe seen" answers are checked
// here.
//
// The set has two copies. The durable one is in the store: a fingerprint
// is written in the batch that queues its URL (write), so the set on disk
// is exactly the set of queued URLs, with the same durability as the queue
// and the journal. The fast one is in memory: one open-addressing table of
// fingerprints per stripe (fpTable), loaded from the store when the
// frontier opens and added to when a URL is taken for new, so that a
// "maybe seen" answer costs a probe of a table rather than a store lookup.
// A profile of a 200,000-page crawl that looked every answer up in the
// store (pebble point lookups) put a quarter of the crawl's CPU time there.
//
// The tables are bounded (Options.ExactMemory, split evenly across the
// stripes). A stripe whose table would grow past its share spills: its
// table keeps what it holds and takes no more, and a "maybe seen" answer
// it does not hold is looked up in the store as before. A URL taken for
// new in a spilled stripe is pending in memory until its batch is
// committed: a second check of it (another worker's page linking to it)
// finds it pending and reports it seen, so two racing checks cannot both
// queue it. In a stripe that has not spilled the table itself plays that
// part, and the store is never read.
//
// Why not IRLbot's DRUM (sort a batch of checks, merge it with the sorted
// disk file in one sequential pass): DRUM amortizes one pass over the
// whole set across a batch of millions of URLs, and so decides a URL's
// fate minutes after its page was parsed. Here a page's links are decided,
// queued and made durable before Done returns (the checkpoint and resume
// guarantees rest on that), and a batch is one page's links, a few dozen.
// The memory tables cost 10 to 20 bytes per URL (the load factor runs
// from 0.4 to 0.8 between doublings), against the filter's 2.2 bytes per
// URL at 0.1%.
type exactSet struct {
	store   Store
	stripes [exactStripes]exactStripe
	// stripeLimit is the number of table slots one stripe may hold; 0:
	// every stripe is spilled from the start.
	stripeLimit int
	checks      atomic.Uint64 // "maybe seen" answers checked
	caught      atomic.Uint64 // of those, URLs the set did not hold: the filter's false positives
	lookups     atomic.Uint64 // of those, answers looked up in the store (spilled stripes)
	inMemory    atomic.Int64  // fingerprints in the tables

	// tagged: an aging set (Options.AgeWindow, aging.go): every
	// fingerprint carries the generation it was last seen in, and one
	// older than gen-1 counts as absent.
	tagged bool
	gen    atomic.Uint32
	aged   atomic.Uint64 // fingerprints the rotations removed
	// agedScheduled: links to scheduled URLs whose fingerprint had aged
	// out, kept as duplicates (scheduledAgedOut)
	agedScheduled atomic.Uint64
}

type exactStripe struct {
	mu    sync.Mutex // protects table and pending, and orders a URL's seen-set insert with its check
	table fpTable
	// spilled: the table is full, fingerprints past it are only in the
	// store. Set under mu and never cleared; committed reads it without
	// mu, so that a commit leader takes no stripe lock while no stripe
	// has spilled (see committed).
	spilled atomic.Bool
	pending map[uint64]struct{} // spilled: taken for new, not committed yet
}

func newExactSet(s Store, memory int64, tagged bool) *exactSet {
	x := &exactSet{store: s, tagged: tagged}
	if memory > 0 {
		x.stripeLimit = int(memory / 8 / exactStripes)
	}
	for i := range x.stripes {
		st := &x.stripes[i]
		st.pending = map[uint64]struct{}{}
		st.table.tagged = tagged
		if x.stripeLimit < fpTableMin {
			st.spilled.Store(true)
		}
	}
	return x
}

// fingerprint is the first 8 bytes of the canonical URL's SHA-256: a
// cryptographic hash, so that a hostile site cannot make its URLs collide
// with others it wants hidden, and collisions between honest URLs follow
// the birthday bound (docs/DESIGN.md, "Exact dedup").
func fingerprint(canonical string) uint64 {
	sum := sha256.Sum256([]byte(canonical))
	return binary.BigEndian.Uint64(sum[:8])
}

func fingerprintKey(fp uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefixFingerprint), fp)
}

func (x *exactSet) stripe(fp uint64) *exactStripe { return &x.stripes[fp%exactStripes] }

// lock locks fp's stripe and returns its unlock: the caller holds it
// across its seen-set insert and check, so that the order of the inserts
// of one URL is the order of its checks.
func (x *exactSet) lock(fp uint64) (unlock func()) {
	s := x.stripe(fp)
	s.mu.Lock()
	return s.mu.Unlock
}

// remember adds fp to its stripe's table, or spills the stripe when the
// table is full; it reports whether the table holds fp. The caller holds
// the stripe's lock.
func (x *exactSet) remember(s *exactStripe, fp uint64, gen uint32) bool {
	if s.spilled.Load() {
		return false
	}
	if s.table.full() && s.table.slots()*2 > x.stripeLimit {
		s.spilled.Store(true)
		return false
	}
	var added bool
	if x.tagged {
		added = s.table.setTag(fp, gen)
	} else {
		added = s.table.add(fp)
	}
	if added {
		x.inMemory.Add(1)
	}
	return true
}

// live reports whether a fingerprint tagged tag is still in the set at
// generation gen: seen in this generation or the one before.
func live(tag, gen uint32) bool { return tag+1 >= gen }

// check decides whether the URL of fingerprint fp is seen, given the
// seen-set's answer maybe. The caller holds fp's stripe (lock). A URL it
// reports new is in the table, or pending until committed (or forever, if
// the frontier breaks first).
//
// A "new" answer is final and is not checked: so two URLs whose
// fingerprints collide lose one of them only if the filter also answers
// "maybe seen" for it (docs/DESIGN.md, "Exact dedup").
//
// In an aging set a fingerprint older than the previous generation counts
// as absent (the URL is admitted again, counted in caught),
// and a seen one tagged with the previous generation is tagged with this
// one: touch says so, and the caller writes fp in its batch (op.fps).
func (x *exactSet) check(fp uint64, maybe bool) (seen, touch bool, err error) {
	s := x.stripe(fp)
	gen := x.gen.Load()
	if maybe {
		x.checks.Add(1)
		found, tag := false, gen
		if x.tagged {
			tag, found = s.table.tag(fp)
		} else {
			found = s.table.has(fp)
		}
		if !found {
			if _, ok := s.pending[fp]; ok {
				return true, false, nil
			}
		}
		if !found && s.spilled.Load() {
			x.lookups.Add(1)
			v, err := x.store.Get(fingerprintKey(fp))
			switch {
			case err == nil:
				found = true
				if x.tagged {
					if tag, err = decodeTag(fingerprintKey(fp), v, gen); err != nil {
						return false, false, err
					}
				}
			case !errors.Is(err, ErrNotFound):
				return false, false, err
			}
		}
		switch {
		case found && live(tag, gen):
			if tag != gen {
				x.remember(s, fp, gen)
				return true, true, nil
			}
			return true, false, nil
		default:
			// A false positive of the filter, or (aging) a URL whose
			// fingerprint aged out: the two are one to the filter.
			x.caught.Add(1)
		}
	}
	if !x.remember(s, fp, gen) {
		s.pending[fp] = struct{}{}
	}
	return false, false, nil
}

// committed forgets the pending fingerprints of a batch the store now
// holds (and answers Get for). The commit leader calls it holding
// commitMu, so it locks only spilled stripes: a stripe's lock may be held
// by a worker waiting in the seen-set's insert (behind a checkpoint's
// copy of the filter), and waiting for it here would hold every frontier
// update behind that copy. A fingerprint is pending only if its stripe had
// spilled when it was checked, before its op reached a commit: the load of
// spilled then sees it set.
func (x *exactSet) committed(ops []*op) {
	for _, p := range ops {
		for _, fp := range p.fps {
			s := x.stripe(fp)
			if !s.spilled.Load() {
				continue
			}
			s.mu.Lock()
			delete(s.pending, fp)
			s.mu.Unlock()
		}
	}
}

// write adds the fingerprints of a batch's new URLs to it, in an aging
// set with the generation each was checked in (op.addFingerprint). A tag
// may so be written over a newer one a later check committed first: the
// fingerprint is then forgotten a generation early, which the seen-set in
// front allows (it forgets no earlier).
func (x *exactSet) write(w Writer, ops []*op) error {
	for _, p := range ops {
		for i, fp := range p.fps {
			var v []byte
			if x.tagged {
				v = encodeTag(p.tags[i])
			}
			if err := w.Set(fingerprintKey(fp), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// load fills the tables from the fingerprints in the store, until they
// spill.
func (x *exactSet) load() error {
	end := []byte(prefixFingerprint)
	end[len(end)-1]++
	var derr error
	gen := x.gen.Load()
	err := x.store.Ascend([]byte(prefixFingerprint), end, func(k, v []byte) bool {
		if len(k) != len(prefixFingerprint)+8 {
			derr = &CorruptError{Key: string(k), Reason: "malformed fingerprint key"}
			return false
		}
		tag := gen
		if x.tagged {
			if tag, derr = decodeTag(k, v, gen); derr != nil {
				return false
			}
		}
		fp := binary.BigEndian.Uint64(k[len(prefixFingerprint):])
		s := x.stripe(fp)
		s.mu.Lock()
		x.remember(s, fp, tag)
		s.mu.Unlock()
		return true
	})
	if err == nil {
		err = derr
	}
	return err
}

// keyExact marks a state whose every queued URL has its fingerprint.
const keyExact = "m/exact"

// ExactDedupState reports whether the store holds a crawl begun with
// Options.ExactDedup and never resumed without it: such a crawl can be
// resumed with it.
func ExactDedupState(s Store) (bool, error) {
	_, err := s.Get([]byte(keyExact))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("frontier: load state: %w", err)
	}
	return true, nil
}

// openExact starts Options.ExactDedup, or ends it for good. A crawl begun
// without it lacks the fingerprints of its queued URLs, which would then
// all look new; one resumed without it stops writing them.
func (f *Frontier) openExact(resumed bool) error {
	s := f.opts.Store
	marked, err := ExactDedupState(s)
	if err != nil {
		return err
	}
	switch {
	case f.opts.ExactDedup && !marked && resumed:
		return fmt.Errorf("%w: ExactDedup on a crawl begun without it (its queued URLs have no fingerprints)", ErrInvalidOptions)
	case f.opts.ExactDedup && !marked:
		err = s.Write(func(w Writer) error { return w.Set([]byte(keyExact), nil) })
	case !f.opts.ExactDedup && marked:
		err = s.Write(func(w Writer) error { return w.Delete([]byte(keyExact)) })
	}
	if err != nil {
		return fmt.Errorf("frontier: exact dedup: %w", err)
	}
	if !f.opts.ExactDedup {
		return nil
	}
	x := newExactSet(s, f.opts.ExactMemory, f.opts.AgeWindow > 0)
	if x.tagged {
		if err := f.openAging(x); err != nil {
			return err
		}
	}
	if resumed {
		if err := x.load(); err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				return err
			}
			return fmt.Errorf("frontier: load fingerprints: %w", err)
		}
	}
	f.exact = x
	return nil
}

// Exact reports whether the frontier checks the seen-set's "maybe seen"
// answers exactly (Options.ExactDedup).
func (f *Frontier) Exact() bool { return f.exact != nil }
