package mlbf

import (
	"fmt"

	"github.com/zeebo/xxh3"
)

// Classic is a classic Bloom filter (the paper's baseline): m bits, k probes
// anywhere in the array by Kirsch–Mitzenmacher double hashing of one 128-bit
// xxh3 hash, 64-bit indexes. It is not safe for concurrent use.
type Classic struct {
	m     uint64
	k     int
	words []uint64
}

// NewClassic returns an empty classic filter of m bits and k hash
// functions; m in [1, MaxBits], k in [1, MaxHashes].
func NewClassic(m uint64, k int) (*Classic, error) {
	if m < 1 || m > MaxBits {
		return nil, fmt.Errorf("%w: classic size %d not in [1, 2^40]", ErrInvalidOptions, m)
	}
	if k < 1 || k > MaxHashes {
		return nil, fmt.Errorf("%w: classic hashes %d not in [1, %d]", ErrInvalidOptions, k, MaxHashes)
	}
	return &Classic{m: m, k: k, words: make([]uint64, (m+63)/64)}, nil
}

// NewClassicFor returns an empty classic filter sized by EstimateParameters
// for n keys at false-positive rate p in (0, 1).
func NewClassicFor(n uint64, p float64) (*Classic, error) {
	if !(p > 0 && p < 1) {
		return nil, fmt.Errorf("%w: false-positive rate %v not in (0, 1)", ErrInvalidOptions, p)
	}
	m, k := EstimateParameters(n, p)
	return NewClassic(m, k)
}

func (c *Classic) testAndAdd(lo, hi uint64, add bool) bool {
	present := true
	for j := 0; j < c.k; j++ {
		pos := classicPos(lo, hi, j, c.m)
		p := &c.words[pos>>6]
		bit := uint64(1) << (pos & 63)
		if *p&bit == 0 {
			if !add {
				return false
			}
			present = false
			*p |= bit
		}
	}
	return present
}

func classicHash(key []byte) (uint64, uint64) {
	h := xxh3.Hash128(key)
	return h.Lo, h.Hi
}

func classicHashString(key string) (uint64, uint64) {
	h := xxh3.HashString128(key)
	return h.Lo, h.Hi
}

// Add inserts key.
func (c *Classic) Add(key []byte) { lo, hi := classicHash(key); c.testAndAdd(lo, hi, true) }

// Test reports whether key is (probably) present.
func (c *Classic) Test(key []byte) bool {
	lo, hi := classicHash(key)
	return c.testAndAdd(lo, hi, false)
}

// TestAndAdd inserts key and reports whether it was (probably) present.
func (c *Classic) TestAndAdd(key []byte) bool {
	lo, hi := classicHash(key)
	return c.testAndAdd(lo, hi, true)
}

// AddString inserts key.
func (c *Classic) AddString(key string) { lo, hi := classicHashString(key); c.testAndAdd(lo, hi, true) }

// TestString reports whether key is (probably) present.
func (c *Classic) TestString(key string) bool {
	lo, hi := classicHashString(key)
	return c.testAndAdd(lo, hi, false)
}

// TestAndAddString inserts key and reports whether it was (probably)
// present.
func (c *Classic) TestAndAddString(key string) bool {
	lo, hi := classicHashString(key)
	return c.testAndAdd(lo, hi, true)
}

// Bits returns m; Hashes returns k.
func (c *Classic) Bits() uint64 { return c.m }

// Hashes returns k.
func (c *Classic) Hashes() int { return c.k }

// Stats describes the filter as one layer.
func (c *Classic) Stats() Stats {
	cc := c.asCore()
	s := cc.stats(c.words, false)
	s.Layers = s.Layers[:1]
	return s
}

// asCore views the classic filter as a one-layer core (L = 0) for stats and
// persistence.
func (c *Classic) asCore() *core {
	return &core{mode: Paper, L: 0, k: c.k, layers: []layer{{bits: c.m}}, words: c.words}
}

// Merge ORs other into c; both must have the same m and k.
func (c *Classic) Merge(other *Classic) error {
	if c.m != other.m || c.k != other.k {
		return fmt.Errorf("%w: classic %d bits/%d hashes vs %d/%d", ErrIncompatible, c.m, c.k, other.m, other.k)
	}
	for i, w := range other.words {
		c.words[i] |= w
	}
	return nil
}
