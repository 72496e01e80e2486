package frontier

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The aging seen-set (Options.AgeWindow): generations of the exact
// check's fingerprints, after Yoon's active/previous aging Bloom filter
// (A2, 2010). Time is cut into generations of AgeWindow; every
// fingerprint is tagged with the last generation its URL was seen in: a
// link to it checked (the link cache is cleared at every rotation, so that
// a link it absorbs was checked in this generation or the one before), or
// a fetch completed (Done with an Outcome.Schedule). A fingerprint tagged
// with this generation or the one before is in the set; an older one is
// not, so a URL neither linked nor fetched for between one and two
// windows is forgotten, and a link that leads to it again queues it as
// new. A continuous crawl fetches every scheduled URL at least every
// revisit maximum, which AgeWindow is at least: no scheduled URL is
// forgotten, and a link to one found between two fetches is a duplicate.
// A revisit late by more than a window (a budget that cannot keep up, a
// loaded machine) lets a scheduled URL's fingerprint age out all the
// same; a link to it is then still a duplicate, as its visit record says
// (scheduledAgedOut).
// URLs that left the schedule (gone) age out, and the set's size is the
// URLs seen in the last two windows, not every URL ever seen.
//
// The filter in front of the set ages with it when it implements Rotator
// (crawl's default seen-set does: a current and a previous generation's
// filter, A2 again): its "new" answers stay final, so it must hold every
// URL whose fingerprint is live. Every event that tags a fingerprint
// inserts its URL (a check does through TestAndAdd; a fetch, in touch),
// a rotation changes both generations with every stripe held, and a tag
// is the generation of its check (op.addFingerprint), so an insert and
// its tag never straddle a rotation. Its memory is then the URLs of the
// last two windows. A Seen without Rotator does not age, and grows by its
// bits per URL for every distinct URL ever seen; a forgotten URL's "maybe
// seen" answer is then decided here.
//
// Store: the tag is the value of the URL's f/ key (4 bytes big-endian;
// an empty value, written by a crawl that did not age, is read as the
// current generation), and the generation is under m/age: a version byte,
// the generation (uvarint) and when it began (Unix ns, varint). A rotation
// writes m/age, then removes the fingerprints tagged before the new
// previous generation, from memory and from the store (in chunks, each
// under the commit lock, so that a tag renewed by a concurrent batch is
// never removed). A rotation is due AgeWindow after the last one by the
// frontier's clock; a crawl stopped for longer rotates once when it
// resumes, so that a pause forgets nothing by itself.
const keyAge = "m/age"

const ageVersion = 1

// ageClock is the aging seen-set's generation clock; f.mu protects next.
type ageClock struct {
	window   time.Duration
	rotating chan struct{} // holds a token during a rotation
	next     time.Time     // when the next rotation is due
}

func encodeTag(gen uint32) []byte { return binary.BigEndian.AppendUint32(nil, gen) }

// decodeTag reads a fingerprint's generation tag; an empty value is gen.
func decodeTag(k, v []byte, gen uint32) (uint32, error) {
	switch len(v) {
	case 0:
		return gen, nil
	case 4:
		return binary.BigEndian.Uint32(v), nil
	}
	return 0, &CorruptError{Key: string(k), Reason: "malformed fingerprint generation"}
}

func encodeAge(gen uint32, began time.Time) []byte {
	b := binary.AppendUvarint([]byte{ageVersion}, uint64(gen))
	return binary.AppendVarint(b, began.UnixNano())
}

func decodeAge(v []byte) (uint32, time.Time, error) {
	bad := &CorruptError{Key: keyAge, Reason: "malformed generation record"}
	if len(v) == 0 || v[0] != ageVersion {
		return 0, time.Time{}, bad
	}
	g, n := binary.Uvarint(v[1:])
	if n <= 0 || g > 1<<31 {
		return 0, time.Time{}, bad
	}
	ns, m := binary.Varint(v[1+n:])
	if m <= 0 || 1+n+m != len(v) {
		return 0, time.Time{}, bad
	}
	return uint32(g), time.Unix(0, ns), nil
}

// openAging reads the generation (or starts the first) into x.
func (f *Frontier) openAging(x *exactSet) error {
	a := &ageClock{window: f.opts.AgeWindow, rotating: make(chan struct{}, 1)}
	now := f.opts.Now()
	v, err := f.opts.Store.Get([]byte(keyAge))
	switch {
	case err == nil:
		gen, began, err := decodeAge(v)
		if err != nil {
			return err
		}
		x.gen.Store(gen)
		a.next = began.Add(a.window)
		if now.Sub(a.next) > a.window {
			// Stopped for longer than a window: one rotation, now.
			a.next = now
		}
	case errors.Is(err, ErrNotFound):
		err = f.opts.Store.Write(func(w Writer) error { return w.Set([]byte(keyAge), encodeAge(0, now)) })
		if err != nil {
			return fmt.Errorf("frontier: aging seen-set: %w", err)
		}
		a.next = now.Add(a.window)
	default:
		return fmt.Errorf("frontier: aging seen-set: %w", err)
	}
	f.age = a
	return nil
}

// ageSweepChunk is how many fingerprint keys one step of a rotation's
// store sweep reads under the commit lock.
const ageSweepChunk = 8192

// Rotator is implemented by a Seen that ages with the exact check's set
// (Options.AgeWindow), as crawl's default seen-set does: after Yoon's A2
// filter, it answers "maybe seen" for the URLs it took in the current
// generation or the one before, and forgets the older ones, so that its
// memory follows the URLs of the last two windows rather than every URL
// ever seen.
//
// Its "new" answers are final (the exact check sees only "maybe seen"), so
// it must never forget a URL whose fingerprint is live: the frontier gives
// it every URL it tags with a generation, through TestAndAdd (a link, seed,
// redirect or sitemap URL checked, and a fetch completed with an
// Outcome.Schedule, whose URL is inserted for that alone), and moves it to
// the next generation at the same moment as the exact set, with every
// check held (the stripe locks), so that an insert and the tag it goes
// with belong to one generation. A Seen without Rotator never forgets, and
// works as before.
//
// On resume the frontier calls the rotation with the generation the store
// records, which may be ahead of a snapshot the Seen was loaded from (a
// rotation after the last checkpoint); the Seen must then keep answering
// for everything it loaded until that generation's fingerprints are
// dead, two rotations on: URLs inserted since the snapshot by a check
// that found them (not in the journal) were in what it loaded.
type Rotator interface {
	// PrepareRotation returns the function that makes gen the current
	// generation, doing beforehand what may be slow (allocating the new
	// filter). The frontier calls the function with every TestAndAdd
	// held, once per generation, in increasing order, and first at Open
	// with the store's generation. An error breaks the frontier (or
	// fails Open).
	PrepareRotation(gen uint32) (rotate func(), err error)
}

// rotate starts the next generation and removes the fingerprints it
// ages out. It returns at once when another call is rotating.
func (f *Frontier) rotate() error {
	a, x := f.age, f.exact
	select {
	case a.rotating <- struct{}{}:
	default:
		return nil
	}
	defer func() { <-a.rotating }()
	f.mu.Lock()
	due := !f.opts.Now().Before(a.next)
	f.mu.Unlock()
	if !due {
		return nil
	}
	gen := x.gen.Load() + 1
	// The seen-set's new filter is allocated before any lock is held.
	swap, err := f.prepareRotation(gen)
	if err != nil {
		f.fail(err)
		return err
	}
	f.commitMu.Lock()
	now := f.opts.Now()
	err = f.opts.Store.Write(func(w Writer) error { return w.Set([]byte(keyAge), encodeAge(gen, now)) })
	if err != nil {
		f.commitMu.Unlock()
		err = fmt.Errorf("frontier: aging seen-set: %w", err)
		f.fail(err)
		return err
	}
	// With every stripe held no check is between its seen-set insert and
	// its tag: the seen-set and the tags change generation together. (A
	// crash from here on resumes at gen with the seen-set as its last
	// snapshot left it: see Rotator.)
	for i := range x.stripes {
		x.stripes[i].mu.Lock()
	}
	x.gen.Store(gen)
	swap()
	for i := range x.stripes {
		x.stripes[i].mu.Unlock()
	}
	f.mu.Lock()
	a.next = now.Add(a.window)
	f.mu.Unlock()
	f.commitMu.Unlock()
	f.links.clear()
	keep := func(tag uint32) bool { return live(tag, gen) }
	for i := range x.stripes {
		s := &x.stripes[i]
		s.mu.Lock()
		n := s.table.retain(keep)
		s.mu.Unlock()
		x.inMemory.Add(-int64(n))
		x.aged.Add(uint64(n))
	}
	// The store: in chunks, each read and trimmed under the commit lock.
	start := []byte(prefixFingerprint)
	end := []byte(prefixFingerprint)
	end[len(end)-1]++
	// One pass over the fingerprints, whatever the caller's context: a
	// stopping crawl waits for it (about a second per 10 million keys).
	for {
		var old [][]byte
		var last []byte
		var derr error
		scanned := 0
		f.commitMu.Lock()
		err := f.opts.Store.Ascend(start, end, func(k, v []byte) bool {
			last = append(last[:0], k...)
			scanned++
			tag, err := decodeTag(k, v, gen)
			if err != nil {
				derr = err
				return false
			}
			if !keep(tag) {
				old = append(old, append([]byte(nil), k...))
				if x.stripe(binary.BigEndian.Uint64(k[len(prefixFingerprint):])).spilled.Load() {
					// Not in memory: forgotten here. (One in memory was
					// counted when the table dropped it; its store tag may
					// differ by a generation, when two batches that tagged
					// it committed out of order.)
					x.aged.Add(1)
				}
			}
			return scanned < ageSweepChunk
		})
		if err == nil {
			err = derr
		}
		if err == nil && len(old) > 0 {
			err = f.opts.Store.Write(func(w Writer) error {
				for _, k := range old {
					if err := w.Delete(k); err != nil {
						return err
					}
				}
				return nil
			})
		}
		f.commitMu.Unlock()
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				err = fmt.Errorf("frontier: aging seen-set: %w", err)
			}
			f.fail(err)
			return err
		}
		if scanned < ageSweepChunk {
			return nil
		}
		start = append(last, 0)
	}
}

// prepareRotation returns the seen-set's rotation to gen, or a no-op for
// a seen-set that does not age.
func (f *Frontier) prepareRotation(gen uint32) (func(), error) {
	if r, ok := f.opts.Seen.(Rotator); ok {
		swap, err := r.PrepareRotation(gen)
		if err != nil {
			return nil, fmt.Errorf("frontier: seen-set rotation: %w", err)
		}
		return swap, nil
	}
	return func() {}, nil
}

// touch tags the fingerprint of a URL just fetched with this generation,
// and adds it to o's batch: a scheduled URL stays in the set as long as
// it is fetched. A seen-set that ages (Rotator) takes the URL into its
// current generation under the same stripe lock; if it did not hold the
// URL (aged out while queued), the URL goes in the journal, which a
// resume replays into the seen-set.
func (f *Frontier) touch(ctx context.Context, o *op, url string) error {
	x := f.exact
	fp := fingerprint(url)
	s := x.stripe(fp)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := f.opts.Seen.(Rotator); ok {
		had, err := f.opts.Seen.TestAndAdd(ctx, f.opts.Normalizer.Segments(url))
		if err != nil {
			return fmt.Errorf("frontier: seen-set: %w", err)
		}
		if !had {
			o.journal = append(o.journal, url)
		}
	}
	gen := x.gen.Load()
	x.remember(s, fp, gen)
	o.addFingerprint(fp, gen)
	return nil
}

// clear empties the cache.
func (c *linkCache) clear() {
	for i := range c.slots {
		c.slots[i].Store(0)
	}
}

// scheduledAgedOut reports whether url, which the aging seen-set has just
// answered new, is in fact scheduled (it has a visit record): a revisit
// late by more than a window (a budget that cannot keep up, a loaded
// machine, a long stop) lets a scheduled URL's fingerprint age out, and a
// link to it would then queue it a second time beside its schedule, to be
// fetched twice within its interval. Such a URL is a duplicate; its
// fingerprint, which check has put back in the table with this
// generation, goes in o's batch as for a new URL, so that it is live
// again. One store read for each URL answered new in an aging frontier,
// where new URLs are few after the first pass. maybe is the filter's
// answer: a "maybe seen" answer check counted as a caught false positive,
// which this was not.
func (f *Frontier) scheduledAgedOut(o *op, fp uint64, url string, maybe bool) (bool, error) {
	_, err := f.opts.Store.Get(visitKey(url))
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("frontier: schedule: %w", err)
	}
	if maybe {
		f.exact.caught.Add(^uint64(0))
	}
	f.exact.agedScheduled.Add(1)
	o.addFingerprint(fp, f.exact.gen.Load())
	return true, nil
}
