package mlbf

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Scalable is a multi-layer Bloom filter that grows, after Almeida,
// Baquero, Preguiça and Hutchison, "Scalable Bloom Filters" (2007): a
// sequence of generations, each an improved-mode filter of derived sizing.
// Generation i is sized for n0·Growth^i keys at rate p0·Tightening^i, with
// p0 = p·(1 - Tightening), so that the compound false-positive rate, at
// most the sum of the generations' rates, stays below p = FalsePositiveRate
// however many keys arrive: p0·Σ r^i = p0/(1-r) = p. Queries test every
// generation; inserts go to the newest, and a new generation is added when
// the newest has taken the keys it was sized for (counted as the keys it
// reported new), where its rate reaches its share of the target.
//
// Memory grows with the keys, and costs more than knowing the count: 10x
// the first capacity at 1% (4 generations, growth 2, tightening 0.5) took
// 23.3 bits per key, 2.35x the 9.92 of a filter sized for the final count
// (TestScalableStaysWithinTarget).
//
// A Scalable is safe for concurrent use, as a Concurrent is: each
// generation is a Concurrent, and inserts and queries share a read lock
// that only adding a generation and capturing a snapshot take exclusively.
// Of several concurrent TestAndAdd calls for the same new key exactly one
// returns false, across a growth too. WriteTo and ReadFrom persist it
// (format "MLBS": the options, then every generation in the filter format,
// each checked against the geometry the options give it); Snapshot copies
// only the newest generation, since the older ones never change again.
type Scalable struct {
	// mu is read-held by every insert and query, and held exclusively to
	// add a generation, to capture a snapshot and to replace the filter,
	// so an insert never straddles a growth.
	mu   sync.RWMutex
	o    ScalableOptions
	gens []*Concurrent // the oldest first; all but the newest are frozen
	caps []uint64      // caps[i]: the keys generation i is sized for
	// left counts the keys the newest generation may still take; an
	// insert that brings it to zero or below, or finds it there, adds a
	// generation. neverGrow after a failed growth.
	left atomic.Int64
}

// neverGrow is Scalable.left once no generation can be added: the newest
// then takes every key, and its rate climbs.
const neverGrow = math.MaxInt64

// ScalableOptions configures NewScalable.
type ScalableOptions struct {
	// ExpectedURLs is the first generation's capacity n0. Default
	// DefaultExpectedURLs.
	ExpectedURLs uint64
	// FalsePositiveRate is the compound target p. Default
	// DefaultFalsePositiveRate.
	FalsePositiveRate float64
	// Growth is the capacity ratio of a generation to the previous one.
	// Default 2 (the paper's s=2, for a filter that may grow a lot).
	Growth int
	// Tightening is the rate ratio r of a generation to the previous one,
	// in (0, 1). Default 0.5 (the paper suggests 0.8-0.9 for slow growth;
	// 0.5 costs fewer generations' worth of bits at large growth).
	Tightening float64
	// Layers is L of every generation; default DefaultLayers.
	Layers int
	// Salt is every generation's Options.Salt; default 0.
	Salt uint64
}

// MaxGenerations bounds a scalable filter's generations: capacities grow
// geometrically, so a real crawl never reaches it; it stops runaway growth.
const MaxGenerations = 48

// NewScalable returns an empty scalable filter; invalid options give an
// error wrapping ErrInvalidOptions.
func NewScalable(opts ScalableOptions) (*Scalable, error) {
	o := opts
	if err := o.ensure(); err != nil {
		return nil, err
	}
	s := &Scalable{o: o}
	if err := s.grow(); err != nil {
		return nil, err
	}
	return s, nil
}

// ensure applies the defaults and validates.
func (o *ScalableOptions) ensure() error {
	if o.ExpectedURLs == 0 {
		o.ExpectedURLs = DefaultExpectedURLs
	}
	if o.FalsePositiveRate == 0 {
		o.FalsePositiveRate = DefaultFalsePositiveRate
	}
	if o.Growth == 0 {
		o.Growth = 2
	}
	if o.Tightening == 0 {
		o.Tightening = 0.5
	}
	if o.Layers == 0 {
		o.Layers = DefaultLayers
	}
	switch {
	case o.Growth < 1:
		return fmt.Errorf("%w: growth %d below 1", ErrInvalidOptions, o.Growth)
	case !(o.Tightening > 0 && o.Tightening < 1):
		return fmt.Errorf("%w: tightening %v not in (0, 1)", ErrInvalidOptions, o.Tightening)
	case !(o.FalsePositiveRate > 0 && o.FalsePositiveRate < 1):
		return fmt.Errorf("%w: false-positive rate %v not in (0, 1)", ErrInvalidOptions, o.FalsePositiveRate)
	case o.Layers < 1 || o.Layers > MaxLayers:
		return fmt.Errorf("%w: layers %d not in [1, %d]", ErrInvalidOptions, o.Layers, MaxLayers)
	}
	return nil
}

// Generation returns the options of generation i (0 is the first) of a
// scalable filter made with o, its defaults applied: capacity
// ExpectedURLs·Growth^i at rate FalsePositiveRate·(1-Tightening)·Tightening^i.
// A filter kept elsewhere (the crawler's in Redis) sizes its generations
// with it. Invalid options give an error wrapping ErrInvalidOptions.
func (o ScalableOptions) Generation(i int) (Options, error) {
	if err := o.ensure(); err != nil {
		return Options{}, err
	}
	if i < 0 || i >= MaxGenerations {
		return Options{}, fmt.Errorf("%w: generation %d not in [0, %d)", ErrInvalidOptions, i, MaxGenerations)
	}
	return o.generationOptions(i), nil
}

// generationOptions returns the options of generation i.
func (o *ScalableOptions) generationOptions(i int) Options {
	p0 := o.FalsePositiveRate * (1 - o.Tightening)
	return Options{
		Layers:            o.Layers,
		ExpectedURLs:      uint64(float64(o.ExpectedURLs) * math.Pow(float64(o.Growth), float64(i))),
		FalsePositiveRate: p0 * math.Pow(o.Tightening, float64(i)),
		Salt:              o.Salt,
	}
}

// grow adds a generation. The caller holds mu exclusively (or owns s).
func (s *Scalable) grow() error {
	if len(s.gens) == MaxGenerations {
		return fmt.Errorf("%w: %d generations", ErrInvalidOptions, MaxGenerations)
	}
	go1 := s.o.generationOptions(len(s.gens))
	f, err := NewConcurrent(go1)
	if err != nil {
		return err
	}
	s.gens = append(s.gens, f)
	s.caps = append(s.caps, go1.ExpectedURLs)
	s.left.Store(int64(min(go1.ExpectedURLs, neverGrow-1)))
	return nil
}

// growIfDue adds a generation if the newest has taken its keys. A failed
// growth (only at MaxGenerations) keeps inserting into the newest. The
// caller holds mu exclusively.
func (s *Scalable) growIfDue() {
	if s.left.Load() > 0 {
		return
	}
	if s.grow() != nil {
		s.left.Store(neverGrow)
	}
}

// growIfDueLocking is growIfDue for a caller that holds no lock.
func (s *Scalable) growIfDueLocking() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.growIfDue()
}

// TestAndAdd inserts the key and reports whether it was (probably) present
// before the call: in any generation.
func (s *Scalable) TestAndAdd(seg []string) bool {
	var kh keyHash
	s.mu.RLock()
	for s.left.Load() <= 0 {
		// The newest generation is full, and the insert that filled it
		// has not added the next yet: it may be waiting for a CPU, while
		// inserts that went on into the full generation would saturate
		// it, and a frozen saturated generation reports every later key
		// present (TestScalableConcurrentExactlyOnce under -race: 1,927
		// of 4,000 keys). So grow first. A generation takes at most one
		// key more than its capacity per insert under way.
		s.mu.RUnlock()
		s.growIfDueLocking()
		s.mu.RLock()
	}
	gens := s.gens
	last := gens[len(gens)-1]
	// Every generation of the same L hashes a key the same way.
	last.c.hash(seg, &kh)
	present := false
	for _, g := range gens[:len(gens)-1] {
		if g.c.test(&kh) {
			present = true
			break
		}
	}
	if !present {
		present = last.testAndAdd(&kh)
	}
	due := !present && s.left.Add(-1) <= 0
	s.mu.RUnlock()
	if due {
		s.growIfDueLocking()
	}
	return present
}

// Add inserts the key.
func (s *Scalable) Add(seg []string) { s.TestAndAdd(seg) }

// Test reports whether the key is (probably) present in any generation.
func (s *Scalable) Test(seg []string) bool {
	var kh keyHash
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.gens[0].c.hash(seg, &kh)
	for _, g := range s.gens {
		if g.c.test(&kh) {
			return true
		}
	}
	return false
}

// Generations returns the number of generations.
func (s *Scalable) Generations() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.gens)
}

// TotalBits returns the memory of all generations' bits.
func (s *Scalable) TotalBits() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var n uint64
	for _, g := range s.gens {
		n += g.TotalBits()
	}
	return n
}

// Options returns the options of the filter, its defaults applied.
func (s *Scalable) Options() ScalableOptions {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.o
}

// Merge ORs a consistent snapshot of other into s, generation by
// generation, so that s then holds the keys of both; generations only
// other has are copied. It fails with an error wrapping ErrIncompatible
// unless both have the same options. Merging a filter into itself is a
// no-op.
//
// As for Concurrent.Merge, a generation that both filters filled holds up
// to twice the keys it was sized for, and its rate climbs accordingly
// (Stats shows it). The newest generation's remaining capacity is then
// estimated from its fill, no longer counted, and a generation is added
// at once if it is full.
func (s *Scalable) Merge(other *Scalable) error {
	if other == s {
		return nil
	}
	// The snapshot is taken before s is locked, so that two filters
	// merged into each other at once cannot deadlock.
	snap := other.Snapshot()
	words := make([][]uint64, 0, len(snap.frozen)+1)
	for _, g := range snap.frozen {
		words = append(words, g.c.words) // frozen: read without a lock
	}
	words = append(words, snap.words)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o != snap.o {
		return fmt.Errorf("%w: scalable options %+v and %+v", ErrIncompatible, s.o, snap.o)
	}
	for i, src := range words {
		if i == len(s.gens) {
			// A generation only other has: a copy of its bits.
			if err := s.grow(); err != nil {
				return err
			}
		}
		// The exclusive lock holds every insert: plain ORs suffice.
		w := s.gens[i].c.words
		for j, v := range src {
			w[j] |= v
		}
	}
	last := len(s.gens) - 1
	est := s.gens[last].c.stats(s.gens[last].c.words, false).EstimatedURLs
	left := float64(s.caps[last]) - est
	s.left.Store(int64(max(0, min(left, float64(neverGrow-1)))))
	s.growIfDue()
	return nil
}

// ScalableStats describes a scalable filter.
type ScalableStats struct {
	// Generations holds each generation's Stats, the oldest first.
	Generations []Stats
	// Capacities holds the keys each generation is sized for.
	Capacities []uint64
	// TotalBits is the memory of all generations.
	TotalBits uint64
	// FalsePositiveRate estimates the current compound rate for a new key:
	// 1 - Π(1 - f_i) over the generations' Stats.FalsePositiveRate.
	FalsePositiveRate float64
	// EstimatedURLs sums the generations' Stats.EstimatedURLs: the
	// distinct keys inserted, estimated from the fill.
	EstimatedURLs float64
	// ExpectedFalsePositives estimates the new keys reported present so
	// far (Stats.ExpectedFalsePositives): a key inserted into generation
	// i met the older generations, frozen at their final rate P, and
	// generation i as it filled, so generation i contributes
	// n_i·P + (1-P)·E_i, with n_i and E_i its Stats.EstimatedURLs and
	// Stats.ExpectedFalsePositives.
	ExpectedFalsePositives float64
}

// Stats describes the filter's generations. Under concurrent inserts it is
// approximate.
func (s *Scalable) Stats() ScalableStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := ScalableStats{Capacities: append([]uint64(nil), s.caps...)}
	pass := 1.0
	for _, g := range s.gens {
		gs := g.Stats()
		st.Generations = append(st.Generations, gs)
		st.TotalBits += g.TotalBits()
		st.ExpectedFalsePositives += gs.EstimatedURLs*(1-pass) + pass*gs.ExpectedFalsePositives
		pass *= 1 - gs.FalsePositiveRate
		st.EstimatedURLs += gs.EstimatedURLs
	}
	st.FalsePositiveRate = 1 - pass
	return st
}

// Salt returns the filter's ScalableOptions.Salt (that of a filter read
// by ReadFrom, after it).
func (s *Scalable) Salt() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.o.Salt
}
