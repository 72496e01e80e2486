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
	// bits; +Inf when the layer is full (as the one-block segment layers
	// of the default sizing are soon after the start: see
	// Options.ExpectedSegments).
	EstimatedItems float64
	// FalsePositiveRate is the probability that the layer passes an entry
	// it does not hold: in improved mode the mean over its 512-bit blocks
	// of (block fill)^k, since an entry's k probes fall in one block (the
	// layer-wide fill^k would understate it: blocks fill unevenly); in
	// paper mode fill^k.
	FalsePositiveRate float64
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
	// layer can reject it) is reported present: the integrity layer's
	// FalsePositiveRate. With the default sizing the segment layers are
	// full and pass every key, so it is the rate of every new key; at
	// ExpectedURLs keys it is close to Options.FalsePositiveRate.
	FalsePositiveRate float64
	// IndependentFalsePositiveRate is the probability for a key of random
	// segments, the product of every layer's FalsePositiveRate (the paper's
	// independence assumption behind formula (4)).
	IndependentFalsePositiveRate float64
	// ExpectedFalsePositives estimates how many of the EstimatedURLs keys
	// inserted so far were new keys reported present when they were
	// tested (the keys a crawler without another check lost), by the same
	// worst case as FalsePositiveRate: the integral over the inserts of the
	// integrity layer's rate at the fill each met
	// (BlockedExpectedFalsePositives; ExpectedFalsePositives in paper
	// mode), scaled by FalsePositiveRate over the model's rate at
	// EstimatedURLs, so that it agrees with the measured fill. It is not
	// EstimatedURLs × FalsePositiveRate, which charges every key the final
	// rate: k+1 times too much at low fill (k probes), about 6x for a
	// filter of k=8 taken 1.3 times past its capacity. +Inf when the
	// integrity layer is full.
	ExpectedFalsePositives float64
}

func (c *core) stats(words []uint64, useAtomic bool) Stats {
	s := Stats{Mode: c.mode, Layers: make([]LayerStats, len(c.layers))}
	s.IndependentFalsePositiveRate = 1
	load := func(p *uint64) uint64 {
		if useAtomic {
			return atomic.LoadUint64(p)
		}
		return *p
	}
	// pow[i] = (i/512)^k: a block's rate by its set bits.
	var pow []float64
	if c.mode == Improved {
		pow = make([]float64, blockBits+1)
		for i := range pow {
			pow[i] = math.Pow(float64(i)/blockBits, float64(c.k))
		}
	}
	for i, l := range c.layers {
		var set uint64
		var fp float64
		ws := words[l.off : l.off+(l.bits+63)/64]
		if pow != nil {
			for b := 0; b < len(ws); b += blockWords {
				var ones int
				for j := b; j < b+blockWords; j++ {
					ones += bits.OnesCount64(load(&ws[j]))
				}
				set += uint64(ones)
				fp += pow[ones]
			}
			fp /= float64(len(ws) / blockWords)
		} else {
			for j := range ws {
				set += uint64(bits.OnesCount64(load(&ws[j])))
			}
		}
		fill := float64(set) / float64(l.bits)
		if pow == nil {
			fp = math.Pow(fill, float64(c.k))
		}
		ls := LayerStats{Bits: l.bits, SetBits: set, FillRatio: fill, FalsePositiveRate: fp,
			EstimatedItems: -float64(l.bits) / float64(c.k) * math.Log1p(-fill)}
		s.Layers[i] = ls
		s.IndependentFalsePositiveRate *= fp
		if i == c.L {
			s.FalsePositiveRate = fp
			s.EstimatedURLs = ls.EstimatedItems
			s.ExpectedFalsePositives = c.expectedFalsePositives(l.bits, ls.EstimatedItems, fp)
		}
	}
	return s
}

// expectedFalsePositives is Stats.ExpectedFalsePositives for an integrity
// layer of m bits holding about n keys whose measured rate is now fp.
func (c *core) expectedFalsePositives(m uint64, n, fp float64) float64 {
	if math.IsInf(n, 1) || n >= math.MaxUint64 {
		return math.Inf(1)
	}
	keys := uint64(math.Round(n))
	var sum, end float64
	if c.mode == Improved {
		sum = BlockedExpectedFalsePositives(c.k, m, keys)
		end = BlockedFalsePositiveRate(c.k, m, keys)
	} else {
		sum = ExpectedFalsePositives(c.k, m, keys)
		end = FalsePositiveRate(c.k, m, keys)
	}
	if end > 0 {
		sum *= fp / end
	}
	return sum
}
