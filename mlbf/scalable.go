package mlbf

import (
	"fmt"
	"math"
	"sync"
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
// A Scalable is safe for concurrent use: calls are serialized by one
// mutex, so of several concurrent TestAndAdd calls for the same new key
// exactly one returns false. WriteTo and ReadFrom persist it (format
// "MLBS": the options, then every generation in the filter format, each
// checked against the geometry the options give it); it cannot be merged
// yet, and the crawler does not use it.
type Scalable struct {
	mu   sync.Mutex // guards everything below
	o    ScalableOptions
	gens []*Filter
	caps []uint64 // caps[i]: the keys generation i is sized for
	left uint64   // keys the newest generation may still take
}

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
}

// maxGenerations bounds the generations (capacities grow geometrically, so
// this is never reached by a real crawl; it stops runaway growth).
const maxGenerations = 48

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
	if i < 0 || i >= maxGenerations {
		return Options{}, fmt.Errorf("%w: generation %d not in [0, %d)", ErrInvalidOptions, i, maxGenerations)
	}
	return o.generationOptions(i), nil
}

// MaxGenerations bounds a scalable filter's generations: capacities grow
// geometrically, so a real crawl never reaches it; it stops runaway growth.
const MaxGenerations = maxGenerations

// generationOptions returns the options of generation i.
func (o *ScalableOptions) generationOptions(i int) Options {
	p0 := o.FalsePositiveRate * (1 - o.Tightening)
	return Options{
		Layers:            o.Layers,
		ExpectedURLs:      uint64(float64(o.ExpectedURLs) * math.Pow(float64(o.Growth), float64(i))),
		FalsePositiveRate: p0 * math.Pow(o.Tightening, float64(i)),
	}
}

// grow adds a generation. The caller holds mu (or owns s).
func (s *Scalable) grow() error {
	if len(s.gens) == maxGenerations {
		return fmt.Errorf("%w: %d generations", ErrInvalidOptions, maxGenerations)
	}
	go1 := s.o.generationOptions(len(s.gens))
	f, err := New(go1)
	if err != nil {
		return err
	}
	s.gens = append(s.gens, f)
	s.caps = append(s.caps, go1.ExpectedURLs)
	s.left = go1.ExpectedURLs
	return nil
}

// TestAndAdd inserts the key and reports whether it was (probably) present
// before the call: in any generation.
func (s *Scalable) TestAndAdd(seg []string) bool {
	var kh keyHash
	s.mu.Lock()
	defer s.mu.Unlock()
	last := len(s.gens) - 1
	// Every generation of the same L hashes a key the same way.
	s.gens[last].c.hash(seg, &kh)
	for _, g := range s.gens[:last] {
		if g.c.test(&kh) {
			return true
		}
	}
	if s.gens[last].c.testAndAdd(&kh) {
		return true
	}
	s.left--
	if s.left == 0 {
		// A failed growth (only at maxGenerations) keeps inserting into
		// the newest generation, whose rate then climbs.
		if s.grow() != nil {
			s.left = math.MaxUint64
		}
	}
	return false
}

// Add inserts the key.
func (s *Scalable) Add(seg []string) { s.TestAndAdd(seg) }

// Test reports whether the key is (probably) present in any generation.
func (s *Scalable) Test(seg []string) bool {
	var kh keyHash
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gens[0].c.hash(seg, &kh)
	for _, g := range s.gens {
		if g.c.test(&kh) {
			return true
		}
	}
	return false
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
}

// Stats describes the filter's generations.
func (s *Scalable) Stats() ScalableStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ScalableStats{Capacities: append([]uint64(nil), s.caps...)}
	pass := 1.0
	for _, g := range s.gens {
		gs := g.Stats()
		st.Generations = append(st.Generations, gs)
		st.TotalBits += g.TotalBits()
		pass *= 1 - gs.FalsePositiveRate
	}
	st.FalsePositiveRate = 1 - pass
	return st
}
