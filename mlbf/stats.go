package mlbf

import (
	"errors"
	"math"
	"math/bits"
	"sync/atomic"
)

// ErrIncompatible is wrapped by the error Merge returns for filters whose
// parameters differ.
var ErrIncompatible = errors.New("mlbf: incompatible filters")

// LayerStats describes one layer.
type LayerStats struct {
	Bits      uint64  // size m
	SetBits   uint64  // bits set to 1
	FillRatio float64 // SetBits / Bits
	// EstimatedItems is the Swamidass–Baldi estimate of the distinct
	// entries inserted into the layer, n* = -(m/k)·ln(1 - X/m) for X set
	// bits; +Inf when the layer is full.
	EstimatedItems float64
}

// Stats describes a filter's current state.
type Stats struct {
	Mode   Mode
	Layers []LayerStats // L+1, the integrity layer last
	// EstimatedURLs is the integrity layer's EstimatedItems: every key sets
	// the integrity layer, so it estimates the distinct keys inserted.
	EstimatedURLs float64
	// FalsePositiveRate is the current probability that a new key whose
	// segments were all seen before (the worst case: only the integrity
	// layer can reject it) is reported present: the integrity fill ratio to
	// the power k. New keys with unseen segments are rejected more often.
	FalsePositiveRate float64
	// IndependentFalsePositiveRate is the probability for a key of random
	// segments, the product of every layer's fill^k (the paper's
	// independence assumption behind formula (4)).
	IndependentFalsePositiveRate float64
}

func (c *core) stats(words []uint64, useAtomic bool) Stats {
	s := Stats{Mode: c.mode, Layers: make([]LayerStats, len(c.layers))}
	s.IndependentFalsePositiveRate = 1
	for i, l := range c.layers {
		var set uint64
		ws := words[l.off : l.off+(l.bits+63)/64]
		for j := range ws {
			var w uint64
			if useAtomic {
				w = atomic.LoadUint64(&ws[j])
			} else {
				w = ws[j]
			}
			set += uint64(bits.OnesCount64(w))
		}
		fill := float64(set) / float64(l.bits)
		ls := LayerStats{Bits: l.bits, SetBits: set, FillRatio: fill,
			EstimatedItems: -float64(l.bits) / float64(c.k) * math.Log1p(-fill)}
		s.Layers[i] = ls
		f := math.Pow(fill, float64(c.k))
		s.IndependentFalsePositiveRate *= f
		if i == c.L {
			s.FalsePositiveRate = f
			s.EstimatedURLs = ls.EstimatedItems
		}
	}
	return s
}
