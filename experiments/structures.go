package experiments

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/urlnorm"
)

// Structure names, as written in the CSV and accepted by SelectStructures.
const (
	StructBF                = "bf"
	StructMLBFPaper         = "mlbf-paper"
	StructMLBF              = "mlbf"
	StructBFEqualMemory     = "bf-equal-memory"
	StructBFEqualMemoryOptK = "bf-equal-memory-optimal-k"
	StructBFEqualProbes     = "bf-equal-probes"
)

// AllStructures lists every structure, in the order they are measured.
var AllStructures = []string{
	StructBF, StructMLBFPaper, StructMLBF, StructBFEqualMemory, StructBFEqualMemoryOptK, StructBFEqualProbes,
}

// Segmenter splits a URL into filter layers (host, then path segments),
// appending them to dst so that a measurement loop can reuse one slice.
type Segmenter func(dst []string, url string) []string

// SplitURLAppend is mlbf.SplitURL appending to dst: the paper's split (drop
// a leading "scheme://", split on '/'). It exists so that the timed loops do
// not allocate a slice per URL; FuzzSplitURLAppend checks it against
// mlbf.SplitURL.
func SplitURLAppend(dst []string, raw string) []string {
	if i := strings.Index(raw, "://"); i > 0 && schemeEnd([]byte(raw[:i+3])) == i {
		raw = raw[i+3:]
	}
	for {
		i := strings.IndexByte(raw, '/')
		if i < 0 {
			return append(dst, raw)
		}
		dst = append(dst, raw[:i])
		raw = raw[i+1:]
	}
}

// StructureOptions are the paper's parameters shared by the structures.
type StructureOptions struct {
	Layers int    // L; default mlbf.DefaultLayers (4)
	Hashes int    // k per layer; default mlbf.DefaultHashes (3)
	Bits   uint64 // m, the paper's layer size; default mlbf.DefaultBitsPerLayer (16,829,152)
	// Segment splits URLs for the multi-layer filters; default
	// SplitURLAppend, the paper's plain split (mlbf.SplitURL).
	Segment Segmenter
	// Sample sizes the improved filter's layers and the equal-probes filter
	// (see BuildStructures); normally the first URLs of the insertion
	// sequence, a uniform sample when the order is shuffled.
	Sample []string
	// MaxN is the largest checkpoint: the load the optimal-k filter and the
	// improved filter's integrity layer are sized for.
	MaxN int
}

// Validate reports options that cannot build the structures.
func (o *StructureOptions) Validate() error {
	if o.Layers < 1 || o.Layers > mlbf.MaxLayers {
		return fmt.Errorf("experiments: layers %d not in [1, %d]: %w", o.Layers, mlbf.MaxLayers, ErrInvalidOptions)
	}
	if o.Hashes < 1 || o.Hashes > mlbf.MaxHashes {
		return fmt.Errorf("experiments: hashes %d not in [1, %d]: %w", o.Hashes, mlbf.MaxHashes, ErrInvalidOptions)
	}
	if o.Bits < 1 || o.Bits > mlbf.MaxBits/uint64(o.Layers+1) {
		return fmt.Errorf("experiments: bits per layer %d out of range: %w", o.Bits, ErrInvalidOptions)
	}
	if o.MaxN < 1 {
		return fmt.Errorf("experiments: max n %d is not positive: %w", o.MaxN, ErrInvalidOptions)
	}
	return nil
}

func (o *StructureOptions) ensureDefaults() {
	if o.Layers == 0 {
		o.Layers = mlbf.DefaultLayers
	}
	if o.Hashes == 0 {
		o.Hashes = mlbf.DefaultHashes
	}
	if o.Bits == 0 {
		o.Bits = mlbf.DefaultBitsPerLayer
	}
	if o.Segment == nil {
		o.Segment = SplitURLAppend
	}
}

// SampleSize is the default number of URLs BuildStructures samples.
const SampleSize = 100_000

// BuildStructures returns the named structures (AllStructures when names is
// empty), with a note per structure on how it is sized:
//
//   - bf: classic, m bits, k hashes (the paper's baseline).
//   - mlbf-paper: the paper's Algorithms 1 and 2, L+1 layers of m bits.
//   - mlbf: the improved filter at the paper filter's total memory (L+1)·m,
//     split across the layers in proportion to the distinct keys each will
//     hold at MaxN (distinct segments per depth for layers 1..L, MaxN URLs
//     for the integrity layer), so that every layer has the same bits per
//     key. The counts come from the sample, extrapolated to MaxN with a power
//     law fitted on the sample and its first half (host names saturate,
//     deep segments do not).
//   - bf-equal-memory: classic with (L+1)·m bits and k hashes.
//   - bf-equal-memory-optimal-k: classic with (L+1)·m bits and formula (2)'s
//     k for MaxN URLs (capped at mlbf.MaxHashes), fixed for the whole run
//     because one insertion pass serves every checkpoint.
//   - bf-equal-probes: classic with (L+1)·m bits and as many hashes as the
//     paper filter sets bits per insertion on the sample (it uses one layer
//     per segment up to L, plus the integrity layer), so that both do the
//     same number of memory probes.
func BuildStructures(names []string, o StructureOptions) ([]Structure, map[string]string, error) {
	o.ensureDefaults()
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		names = AllStructures
	}
	L, k, m := o.Layers, o.Hashes, o.Bits
	M := uint64(L+1) * m
	sample := o.Sample
	if len(sample) == 0 {
		return nil, nil, fmt.Errorf("experiments: no sample URLs to size the structures: %w", ErrNoData)
	}
	segs := make([][]string, len(sample))
	var layersUsed int
	for i, u := range sample {
		segs[i] = o.Segment(nil, u)
		layersUsed += min(len(segs[i]), L)
	}
	// Bits the paper filter sets per insertion: k per used layer, plus k
	// in the integrity layer.
	paperProbes := float64(k) * (float64(layersUsed)/float64(len(sample)) + 1)

	var out []Structure
	notes := make(map[string]string)
	for _, name := range names {
		var s Structure
		switch name {
		case StructBF:
			s = classic(name, m, k)
			notes[name] = "classic Bloom filter, m bits, k hashes: the paper's baseline; theory = formula (1)"
		case StructBFEqualMemory:
			s = classic(name, M, k)
			notes[name] = "classic, (L+1)·m bits (the paper MLBF's total), k hashes; theory = formula (1)"
		case StructBFEqualMemoryOptK:
			kk := min(mlbf.OptimalHashes(M, uint64(o.MaxN)), mlbf.MaxHashes)
			s = classic(name, M, kk)
			notes[name] = fmt.Sprintf("classic, (L+1)·m bits, k = %d from formula (2) at n = %d (capped at %d), fixed for the run; theory = formula (1)", kk, o.MaxN, mlbf.MaxHashes)
		case StructBFEqualProbes:
			kk := min(max(1, int(math.Round(paperProbes))), mlbf.MaxHashes)
			s = classic(name, M, kk)
			notes[name] = fmt.Sprintf("classic, (L+1)·m bits, k = %d = the mean bits mlbf-paper sets per insertion on the sample (%.2f); theory = formula (1)", kk, paperProbes)
		case StructMLBFPaper:
			opts := mlbf.Options{Mode: mlbf.Paper, Layers: L, Hashes: k, BitsPerLayer: m}
			var err error
			if s, _, err = multiLayer(name, opts, o.Segment); err != nil {
				return nil, nil, err
			}
			s.ProbesPerInsert = paperProbes
			s.Theory = func(n uint64) float64 { return mlbf.PaperFalsePositiveRate(L, k, m, n) }
			notes[name] = fmt.Sprintf("paper mode (Algorithms 1 and 2), L+1 layers of m bits; %.2f bits set per insertion on the sample; theory = formula (4), f^L", paperProbes)
		case StructMLBF:
			sizes, counts := improvedSizes(segs, L, M, o.MaxN)
			opts := mlbf.Options{Mode: mlbf.Improved, Layers: L, Hashes: k, LayerBits: sizes}
			var f *mlbf.Filter
			var err error
			if s, f, err = multiLayer(name, opts, o.Segment); err != nil {
				return nil, nil, err
			}
			integrity := f.LayerBits()[L]
			s.ProbesPerInsert = paperProbes // one layer per segment up to L, plus integrity, k each
			s.Theory = func(n uint64) float64 { return mlbf.BlockedFalsePositiveRate(k, integrity, n) }
			notes[name] = fmt.Sprintf("improved mode at mlbf-paper's total memory; layer bits %v in proportion to the distinct keys expected per layer at n = %d (%v, extrapolated from a %d-URL sample); theory = the blocked rate of the integrity layer alone (formula (4) does not describe this filter), an upper bound when the layers are independent", f.LayerBits(), o.MaxN, counts, len(sample))
		default:
			return nil, nil, fmt.Errorf("experiments: unknown structure %q (want one of %v): %w", name, AllStructures, ErrInvalidOptions)
		}
		out = append(out, s)
	}
	return out, notes, nil
}

// ParseStructures splits a comma-separated list, checking each name.
func ParseStructures(list []string) ([]string, error) {
	for _, n := range list {
		if !slices.Contains(AllStructures, n) {
			return nil, fmt.Errorf("experiments: unknown structure %q (want one of %v): %w", n, AllStructures, ErrInvalidOptions)
		}
	}
	return list, nil
}

type classicFilter struct{ c *mlbf.Classic }

func (f classicFilter) Add(u string)       { f.c.AddString(u) }
func (f classicFilter) Test(u string) bool { return f.c.TestString(u) }

func classic(name string, m uint64, k int) Structure {
	return Structure{
		Name: name, Hashes: k, BitsTotal: m, ProbesPerInsert: float64(k),
		New: func() (Filter, error) {
			c, err := mlbf.NewClassic(m, k)
			if err != nil {
				return nil, err
			}
			return classicFilter{c}, nil
		},
		Theory: func(n uint64) float64 { return mlbf.FalsePositiveRate(k, m, n) },
	}
}

// layeredFilter splits into buf, reused across calls: like the filter, it
// is not safe for concurrent use.
type layeredFilter struct {
	f   *mlbf.Filter
	seg Segmenter
	buf []string
}

func (f *layeredFilter) Add(u string) {
	f.buf = f.seg(f.buf[:0], u)
	f.f.Add(f.buf)
}

func (f *layeredFilter) Test(u string) bool {
	f.buf = f.seg(f.buf[:0], u)
	return f.f.Test(f.buf)
}

// multiLayer returns the structure and one empty filter built from opts, to
// read its geometry.
func multiLayer(name string, opts mlbf.Options, seg Segmenter) (Structure, *mlbf.Filter, error) {
	f, err := mlbf.New(opts)
	if err != nil {
		return Structure{}, nil, fmt.Errorf("experiments: %s: %w", name, err)
	}
	return Structure{
		Name: name, Layers: opts.Layers, Hashes: opts.Hashes, BitsTotal: f.TotalBits(),
		// Segments never hold '/', so joining them is injective: two URLs
		// have the same key exactly when they have the same segments.
		Key:     func(u string) string { return strings.Join(seg(nil, u), "/") },
		KeyName: "segments",
		New: func() (Filter, error) {
			f, err := mlbf.New(opts)
			if err != nil {
				return nil, err
			}
			return &layeredFilter{f: f, seg: seg}, nil
		},
	}, f, nil
}

// improvedSizes splits total bits across L+1 layers in proportion to the
// distinct keys each layer is expected to hold at n URLs, extrapolating the
// sample's per-depth distinct segment counts with a power law d(n) =
// d(S)·(n/S)^a, a fitted between the sample's first half and all of it.
func improvedSizes(segs [][]string, L int, total uint64, n int) (sizes, counts []uint64) {
	S := len(segs)
	full := mlbf.EstimateSegments(segs, L)
	half := mlbf.EstimateSegments(segs[:max(1, S/2)], L)
	counts = make([]uint64, L+1)
	var sum float64
	for i := 0; i < L; i++ {
		d := float64(full[i])
		if S >= 2 && half[i] > 0 && full[i] > half[i] && n > S {
			a := math.Log(float64(full[i])/float64(half[i])) / math.Log(float64(S)/float64(S/2))
			d *= math.Pow(float64(n)/float64(S), min(a, 1))
		} else if n < S {
			d = d * float64(n) / float64(S)
		}
		counts[i] = uint64(math.Max(1, math.Round(d)))
		sum += float64(counts[i])
	}
	counts[L] = uint64(n)
	sum += float64(n)
	// mlbf rounds improved layers up to whole 512-bit blocks: allot whole
	// blocks here, rounding down, at least one per layer, and take any
	// excess from the largest layer, so the total never exceeds the budget.
	const block = 512
	budget := total / block
	blocks := make([]uint64, L+1)
	var used uint64
	for i, c := range counts {
		blocks[i] = max(1, uint64(float64(budget)*float64(c)/sum))
		used += blocks[i]
	}
	for used > budget {
		i := slices.Index(blocks, slices.Max(blocks))
		if blocks[i] == 1 {
			break // fewer blocks than layers: one each is the least mlbf takes
		}
		blocks[i]--
		used--
	}
	sizes = make([]uint64, L+1)
	for i, b := range blocks {
		sizes[i] = b * block
	}
	return sizes, counts
}

// NormalizedSegmenter returns a Segmenter that normalizes each URL with n
// and splits the canonical form with n.Segments, as the crawler does. A URL
// n cannot normalize is split as given (n.Segments of the raw string), so
// every input keeps a key; the time to normalize is part of the measured
// insert and query times.
func NormalizedSegmenter(n *urlnorm.Normalizer) Segmenter {
	return func(dst []string, u string) []string {
		if c, err := n.Normalize(u); err == nil {
			u = c
		}
		return n.AppendSegments(dst, u)
	}
}
