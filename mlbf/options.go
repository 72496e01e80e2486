package mlbf

import (
	"errors"
	"fmt"
	"math"
)

// Mode selects the filter's algorithm.
type Mode uint8

const (
	// Improved is the default mode: salted per-layer hashes, an
	// order-sensitive integrity key, 64-bit indexes, cache-blocked layers
	// and per-layer sizing. See the package documentation.
	Improved Mode = iota
	// Paper is exactly Algorithms 1 and 2 of Cen, Xu and Sun, kept for
	// comparison.
	Paper
)

// String returns "improved" or "paper".
func (m Mode) String() string {
	switch m {
	case Improved:
		return "improved"
	case Paper:
		return "paper"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Defaults applied by Options.EnsureDefaults.
const (
	// DefaultLayers is the paper's L.
	DefaultLayers = 4
	// DefaultHashes is the paper's k: the default of paper mode and of
	// improved mode with explicit LayerBits. Improved derived sizing
	// (ExpectedURLs, FalsePositiveRate) derives k from the target instead;
	// see BlockedParameters.
	DefaultHashes = 3
	// DefaultBitsPerLayer is the paper's m (paper mode).
	DefaultBitsPerLayer = 16_829_152
	// DefaultExpectedURLs is used by improved mode when neither LayerBits
	// nor ExpectedURLs is given: the paper's largest experiment.
	DefaultExpectedURLs = 3_500_000
	// DefaultFalsePositiveRate is the improved-mode overall target.
	DefaultFalsePositiveRate = 0.01
	// DefaultLayerFalsePositiveRate is the improved-mode target of each of
	// the layers 1..L at its expected number of distinct segments. The
	// layers only filter early; the integrity layer carries the overall
	// target, so they are sized loosely (about 2.6 bits per distinct segment
	// at k=3).
	DefaultLayerFalsePositiveRate = 0.5
	// MaxBits bounds any one layer (2^40 bits = 128 GiB); ReadFrom
	// enforces it too.
	MaxBits = 1 << 40
)

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("mlbf: invalid options")

// Options configures New and NewConcurrent. The constructors copy it; the
// zero value is a valid improved-mode configuration.
type Options struct {
	// Mode: Improved (the zero value) or Paper.
	Mode Mode
	// Layers is L, the number of segment layers (the integrity layer comes
	// on top). Default 4; at most MaxLayers.
	Layers int
	// Hashes is k, the hash functions (probes) per layer; at most
	// MaxHashes. Default: in improved mode with derived sizing, the k at
	// which the integrity layer needs the fewest bits for
	// FalsePositiveRate (BlockedParameters: 4 at 5%, 6 at 1%, 8 at 0.1%,
	// 11 at 0.01%); otherwise 3, the paper's k. A layer's probes share one
	// 512-bit block, so more probes cost no extra cache miss.
	Hashes int
	// BitsPerLayer is, in paper mode, m: the size of every layer including
	// the integrity layer. Default 16,829,152. Ignored in improved mode.
	BitsPerLayer uint64
	// LayerBits sets the improved-mode layer sizes explicitly: L+1 sizes,
	// the last one the integrity layer's. Each is rounded up to whole
	// 512-bit blocks. When set, ExpectedURLs, FalsePositiveRate and
	// ExpectedSegments are ignored.
	LayerBits []uint64
	// ExpectedURLs is n for improved-mode derived sizing: the integrity
	// layer is sized for n keys at FalsePositiveRate. Default 3,500,000 when
	// LayerBits is not given.
	ExpectedURLs uint64
	// FalsePositiveRate is the improved-mode target at ExpectedURLs keys:
	// the probability that a new key is reported present. The integrity
	// layer carries it whole, because for a new URL whose segments were all
	// seen before (15.5% of the new URLs in the shared datasets) it is the
	// only layer that can answer no; its size and k are BlockedParameters.
	// Default 0.01.
	FalsePositiveRate float64
	// ExpectedSegments is the number of distinct segments expected at each
	// depth (len L; the last counts the folded tails), for improved-mode
	// derived sizing; see EstimateSegments. Each segment layer is then
	// sized for its count at LayerFalsePositiveRate, and rejects early the
	// new URLs with a segment new at its depth: it lowers the rate below
	// FalsePositiveRate by a factor that depends on the URLs, at a cost in
	// memory. Default (nil): every segment layer is one 512-bit block,
	// which fills within its first few hundred segments and then passes
	// every key, so the integrity layer alone answers and the measured
	// rate is BlockedFalsePositiveRate of the integrity layer (on the shared datasets, sizing the segment layers to filter cost
	// more bits than giving the same bits to the integrity layer, and made
	// the rate depend on the data).
	ExpectedSegments []uint64
	// LayerFalsePositiveRate is the improved-mode target of each layer
	// 1..L at its ExpectedSegments count. Default 0.5. Unused without
	// ExpectedSegments.
	LayerFalsePositiveRate float64
	// Salt is mixed into every improved-mode hash (see HashID): filters
	// with different salts put one key at unrelated positions, so that a
	// key that is a false positive in one is not in the next. A crawl
	// picks a random salt when it starts and keeps it with its filter, so
	// that no URL is unlucky in every crawl. Saved with the filter (format
	// version 2; a file without a salt reads as salt 0). Default 0:
	// unsalted. Paper mode is unsalted: a non-zero Salt is an error there.
	Salt uint64
}

// EnsureDefaults fills the zero fields with their defaults.
// In improved mode with derived sizing, a zero Hashes becomes the k
// BlockedParameters derives from ExpectedURLs and FalsePositiveRate (when
// both are valid; Validate reports them otherwise).
func (o *Options) EnsureDefaults() {
	if o.Layers == 0 {
		o.Layers = DefaultLayers
	}
	if o.Mode == Improved && len(o.LayerBits) == 0 {
		if o.ExpectedURLs == 0 {
			o.ExpectedURLs = DefaultExpectedURLs
		}
		if o.FalsePositiveRate == 0 {
			o.FalsePositiveRate = DefaultFalsePositiveRate
		}
		if o.LayerFalsePositiveRate == 0 {
			o.LayerFalsePositiveRate = DefaultLayerFalsePositiveRate
		}
		if o.Hashes == 0 && o.FalsePositiveRate > 0 && o.FalsePositiveRate < 1 {
			_, o.Hashes = BlockedParameters(o.ExpectedURLs, o.FalsePositiveRate)
		}
	}
	if o.Hashes == 0 {
		o.Hashes = DefaultHashes
	}
	if o.Mode == Paper && o.BitsPerLayer == 0 {
		o.BitsPerLayer = DefaultBitsPerLayer
	}
}

// Validate reports whether o, after EnsureDefaults, describes a filter. The
// error wraps ErrInvalidOptions.
func (o *Options) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, a...)...)
	}
	if o.Mode != Improved && o.Mode != Paper {
		return bad("unknown mode %d", o.Mode)
	}
	if o.Mode == Paper && o.Salt != 0 {
		return bad("paper mode is unsalted, salt %#x", o.Salt)
	}
	if o.Layers < 1 || o.Layers > MaxLayers {
		return bad("layers %d not in [1, %d]", o.Layers, MaxLayers)
	}
	if o.Hashes < 1 || o.Hashes > MaxHashes {
		return bad("hashes %d not in [1, %d]", o.Hashes, MaxHashes)
	}
	if o.Mode == Paper {
		if o.BitsPerLayer < 1 || o.BitsPerLayer > MaxBits {
			return bad("bits per layer %d not in [1, 2^40]", o.BitsPerLayer)
		}
		return nil
	}
	if len(o.LayerBits) > 0 {
		if len(o.LayerBits) != o.Layers+1 {
			return bad("%d layer sizes for %d layers plus integrity", len(o.LayerBits), o.Layers)
		}
		for i, b := range o.LayerBits {
			if b < 1 || b > MaxBits {
				return bad("layer %d size %d not in [1, 2^40]", i+1, b)
			}
		}
		return nil
	}
	if o.ExpectedURLs < 1 {
		return bad("expected URLs must be positive")
	}
	if !(o.FalsePositiveRate > 0 && o.FalsePositiveRate < 1) {
		return bad("false-positive rate %v not in (0, 1)", o.FalsePositiveRate)
	}
	if !(o.LayerFalsePositiveRate > 0 && o.LayerFalsePositiveRate < 1) {
		return bad("layer false-positive rate %v not in (0, 1)", o.LayerFalsePositiveRate)
	}
	if o.ExpectedSegments != nil && len(o.ExpectedSegments) != o.Layers {
		return bad("%d expected segment counts for %d layers", len(o.ExpectedSegments), o.Layers)
	}
	return nil
}

// layerSizes returns the bit size of every layer (L+1 entries) for valid,
// defaulted options. Improved-mode sizes are whole blocks.
func (o *Options) layerSizes() ([]uint64, error) {
	L := o.Layers
	sizes := make([]uint64, L+1)
	switch {
	case o.Mode == Paper:
		for i := range sizes {
			sizes[i] = o.BitsPerLayer
		}
	case len(o.LayerBits) > 0:
		for i, b := range o.LayerBits {
			sizes[i] = roundBlocks(b)
		}
	default:
		for i := 0; i < L; i++ {
			// Without ExpectedSegments a segment layer is one block:
			// see Options.ExpectedSegments.
			sizes[i] = blockBits
			if o.ExpectedSegments != nil {
				sizes[i] = blockedBitsFor(o.Hashes, o.ExpectedSegments[i], o.LayerFalsePositiveRate)
			}
		}
		sizes[L] = blockedBitsFor(o.Hashes, o.ExpectedURLs, o.FalsePositiveRate)
	}
	for i, s := range sizes {
		if s > MaxBits {
			return nil, fmt.Errorf("%w: layer %d needs %d bits, more than 2^40", ErrInvalidOptions, i+1, s)
		}
	}
	return sizes, nil
}

func roundBlocks(b uint64) uint64 {
	return (b + blockBits - 1) / blockBits * blockBits
}

// blockedBitsFor is the smallest whole-block size at which a blocked Bloom
// filter with k probes per key holds n keys at false-positive rate at most p
// (BlockedFalsePositiveRate). At least one block.
func blockedBitsFor(k int, n uint64, p float64) uint64 {
	if n == 0 {
		return blockBits
	}
	// The blocked filter needs more than the classic one; start there and
	// search upwards by doubling, then bisect.
	m := estimateBits(n, p, k)
	lo := m / blockBits
	if lo < 1 {
		lo = 1
	}
	hi := lo
	for BlockedFalsePositiveRate(k, hi*blockBits, n) > p {
		lo = hi
		hi *= 2
		if hi*blockBits > 2*MaxBits {
			return hi * blockBits
		}
	}
	if BlockedFalsePositiveRate(k, lo*blockBits, n) <= p {
		return lo * blockBits
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if BlockedFalsePositiveRate(k, mid*blockBits, n) <= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi * blockBits
}

// estimateBits is the classic size for n keys at rate p with k probes,
// inverting formula (1): m = -kn / ln(1 - p^(1/k)).
func estimateBits(n uint64, p float64, k int) uint64 {
	r := -float64(k) / math.Log1p(-math.Pow(p, 1/float64(k)))
	return uint64(math.Ceil(r * float64(n)))
}
