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

// exactStripes spreads the pending sets over independent locks, so that
// workers checking different URLs do not wait for each other's disk reads.
const exactStripes = 64

// exactSet is the on-disk set of 64-bit URL fingerprints behind
// Options.ExactDedup. The seen-set's "new" answers are final (a Bloom
// filter has no false negatives); its "maybe seen" answers are checked
// here. A fingerprint is written in the batch that queues its URL (commit),
// so the set on disk is exactly the set of queued URLs, with the same
// durability as the queue and the journal.
//
// Between the check and that batch, a URL taken for new is pending: a
// second check of it (another worker's page linking to it) finds it
// pending and reports it seen, so two racing checks cannot both queue it.
//
// Why point lookups rather than IRLbot's DRUM (sort a batch, merge it
// with the sorted disk file in one sequential pass): DRUM amortizes one
// pass over the whole set across a batch of millions of URLs, and so
// decides a URL's fate minutes after its page was parsed. Here a page's
// links are decided, queued and made durable before Done returns (the
// checkpoint and resume guarantees rest on that), and a batch is one
// page's links, a few dozen: a merge pass per batch would read the whole
// set for each. The store is an LSM tree (pebble) whose tables carry
// their own Bloom filters and whose blocks sit in its cache, so a lookup
// of an absent fingerprint (the false positive being rescued) usually
// touches no data block, and a present one (a true duplicate) costs a
// cached block read. Only "maybe seen" answers are looked up, and the
// link cache keeps repeated links of a page from the filter altogether.
// docs/BENCHMARKS.md ("Issue 15 §6") measures the cost.
type exactSet struct {
	store   Store
	stripes [exactStripes]struct {
		mu      sync.Mutex // protects pending and orders the lookup with it
		pending map[uint64]struct{}
	}
	checks atomic.Uint64 // "maybe seen" answers looked up
	caught atomic.Uint64 // of those, URLs the set did not hold: the filter's false positives
}

func newExactSet(s Store) *exactSet {
	x := &exactSet{store: s}
	for i := range x.stripes {
		x.stripes[i].pending = map[uint64]struct{}{}
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

// lock locks fp's stripe and returns its unlock: the caller holds it
// across its seen-set insert and check, so that the order of the inserts
// of one URL is the order of its checks.
func (x *exactSet) lock(fp uint64) (unlock func()) {
	s := &x.stripes[fp%exactStripes]
	s.mu.Lock()
	return s.mu.Unlock
}

// check decides whether the URL of fingerprint fp is seen, given the
// seen-set's answer maybe. The caller holds fp's stripe (lock). A URL it
// reports new is pending until committed (or forever, if the frontier
// breaks first).
func (x *exactSet) check(fp uint64, maybe bool) (seen bool, err error) {
	s := &x.stripes[fp%exactStripes]
	if _, ok := s.pending[fp]; ok {
		return true, nil
	}
	if maybe {
		x.checks.Add(1)
		_, err := x.store.Get(fingerprintKey(fp))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return false, err
		}
		x.caught.Add(1)
	}
	s.pending[fp] = struct{}{}
	return false, nil
}

// committed forgets the pending fingerprints of a batch the store now
// holds (and answers Get for).
func (x *exactSet) committed(ops []*op) {
	for _, p := range ops {
		for _, fp := range p.fps {
			s := &x.stripes[fp%exactStripes]
			s.mu.Lock()
			delete(s.pending, fp)
			s.mu.Unlock()
		}
	}
}

// write adds the fingerprints of a batch's new URLs to it.
func (x *exactSet) write(w Writer, ops []*op) error {
	for _, p := range ops {
		for _, fp := range p.fps {
			if err := w.Set(fingerprintKey(fp), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyExact marks a state whose every queued URL has its fingerprint.
const keyExact = "m/exact"

// openExact starts Options.ExactDedup, or ends it for good. A crawl begun
// without it lacks the fingerprints of its queued URLs, which would then
// all look new; one resumed without it stops writing them.
func (f *Frontier) openExact(resumed bool) error {
	s := f.opts.Store
	_, err := s.Get([]byte(keyExact))
	marked := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("frontier: load state: %w", err)
	}
	err = nil
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
	if f.opts.ExactDedup {
		f.exact = newExactSet(s)
	}
	return nil
}
