package experiments

import (
	"fmt"
	"math"
	"slices"
	"strconv"
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
	b, err := newBuilder(o)
	if err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		names = AllStructures
	}
	L, m := b.o.Layers, b.o.Bits
	g := geometry{classic: m, layer: m, total: uint64(L+1) * m, n: b.o.MaxN}
	var out []Structure
	notes := make(map[string]string)
	for _, name := range names {
		s, info, err := b.build(name, g)
		if err != nil {
			return nil, nil, err
		}
		switch name {
		case StructBF:
			notes[name] = "classic Bloom filter, m bits, k hashes: the paper's baseline; theory = formula (1)"
		case StructBFEqualMemory:
			notes[name] = "classic, (L+1)·m bits (the paper MLBF's total), k hashes; theory = formula (1)"
		case StructBFEqualMemoryOptK:
			notes[name] = fmt.Sprintf("classic, (L+1)·m bits, k = %d from formula (2) at n = %d (capped at %d), fixed for the run; theory = formula (1)", s.Hashes, b.o.MaxN, mlbf.MaxHashes)
		case StructBFEqualProbes:
			notes[name] = fmt.Sprintf("classic, (L+1)·m bits, k = %d = the mean bits mlbf-paper sets per insertion on the sample (%.2f); theory = formula (1)", s.Hashes, b.paperProbes)
		case StructMLBFPaper:
			notes[name] = fmt.Sprintf("paper mode (Algorithms 1 and 2), L+1 layers of m bits; %.2f bits set per insertion on the sample; theory = formula (4), f^L", b.paperProbes)
		case StructMLBF:
			notes[name] = fmt.Sprintf("improved mode at mlbf-paper's total memory; layer bits %v in proportion to the distinct keys expected per layer at n = %d (%v, extrapolated from a %d-URL sample); theory = the blocked rate of the integrity layer alone (formula (4) does not describe this filter), an upper bound when the layers are independent", info.layerBits, b.o.MaxN, info.counts, len(b.segs))
		}
		out = append(out, s)
	}
	return out, notes, nil
}

// BuildSweepStructures returns the structures of the memory sweep: each
// named structure (AllStructures when names is empty) rebuilt at every
// bits per URL b of bitsPerURL for o.MaxN URLs, in structure order, then b
// order. Every structure gets the same total memory B = round(b·MaxN) bits
// (the multi-layer ones slightly less, see below), and keeps the
// definition it has in BuildStructures:
//
//   - bf: classic, B bits, k hashes.
//   - bf-equal-memory: classic with the paper filter's total memory and k
//     hashes: at equal memory that is bf, the same filter giving the same
//     answers, so it is left out when bf is measured (the notes say so).
//   - bf-equal-memory-optimal-k: classic, B bits, formula (2)'s k for MaxN
//     URLs in B bits, round(ln 2 · b), capped at mlbf.MaxHashes: k grows
//     with b.
//   - bf-equal-probes: classic, B bits, as many hashes as the paper filter
//     sets bits per insertion on the sample (the same k at every b).
//   - mlbf-paper: L+1 equal layers of floor(B/(L+1)) bits.
//   - mlbf: improved mode, B bits split across the layers in proportion to
//     the distinct keys each holds at MaxN, as in BuildStructures, in whole
//     512-bit blocks rounded down.
//
// The notes describe the rule per structure. A point at which a
// multi-layer structure cannot be built (less than one bit per layer for
// mlbf-paper, one 512-bit block per layer for mlbf) is left out and listed
// in Skipped; a b that gives no bit at all, or more than mlbf.MaxBits, is an
// error.
func BuildSweepStructures(names []string, o StructureOptions, bitsPerURL []float64) ([]Structure, SweepSizing, error) {
	var sizing SweepSizing
	b, err := newBuilder(o)
	if err != nil {
		return nil, sizing, err
	}
	if len(bitsPerURL) == 0 {
		return nil, sizing, fmt.Errorf("experiments: memory sweep: no bits per URL: %w", ErrInvalidOptions)
	}
	if len(names) == 0 {
		names = AllStructures
	}
	n := b.o.MaxN
	L := b.o.Layers
	notes := make(map[string]string)
	sizing.Notes = notes
	var out []Structure
	for _, name := range names {
		if name == StructBFEqualMemory && slices.Contains(names, StructBF) {
			notes[name] = "not measured: at equal memory it is bf (same b·n bits, same k, same hashes), whose rows stand for both"
			continue
		}
		var ks []string
		var layerBits [][]uint64
		var counts []uint64
		for _, bpu := range bitsPerURL {
			total, err := sweepBits(bpu, n)
			if err != nil {
				return nil, sizing, err
			}
			if need, why := minSweepBits(name, L); total < need {
				// Too small a filter to build at this n: leave the point
				// out and say so, rather than give it more memory than
				// the others.
				sizing.Skipped = append(sizing.Skipped, fmt.Sprintf("%s at %v bits per URL: %d bits at n = %d, fewer than the %d it needs (%s)", name, bpu, total, n, need, why))
				continue
			}
			g := geometry{classic: total, layer: total / uint64(L+1), total: total, n: n}
			s, info, err := b.build(name, g)
			if err != nil {
				return nil, sizing, err
			}
			ks = append(ks, strconv.Itoa(s.Hashes))
			layerBits = append(layerBits, info.layerBits)
			counts = info.counts
			out = append(out, s)
		}
		if len(ks) == 0 {
			notes[name] = "not measured: every size is too small for it at this n (see the points left out)"
			continue
		}
		switch name {
		case StructBF, StructBFEqualMemory:
			notes[name] = "classic, m = b·n bits (rounded to a whole bit), k hashes; theory = formula (1)"
		case StructBFEqualMemoryOptK:
			notes[name] = fmt.Sprintf("classic, b·n bits, k = round(ln 2 · b) from formula (2) at n = %d (capped at %d), so k grows with b: k = %s for b = %s; theory = formula (1)", n, mlbf.MaxHashes, strings.Join(ks, ", "), FormatBitsPerURL(bitsPerURL, ", "))
		case StructBFEqualProbes:
			notes[name] = fmt.Sprintf("classic, b·n bits, k = %s at every b = the mean bits mlbf-paper sets per insertion on the sample (%.2f), which does not depend on the memory; theory = formula (1)", ks[0], b.paperProbes)
		case StructMLBFPaper:
			notes[name] = "paper mode, L+1 equal layers of floor(b·n/(L+1)) bits (the paper's geometry with its total memory set to b·n); theory = formula (4), f^L with m = floor(b·n/(L+1))"
		case StructMLBF:
			notes[name] = fmt.Sprintf("improved mode, b·n bits split across the layers in proportion to the distinct keys expected per layer at n = %d (%v, as in the n sweep when n is its largest checkpoint), in whole 512-bit blocks rounded down (layer bits at the smallest b measured: %v; at the largest: %v); theory = the blocked rate of the integrity layer alone", n, counts, layerBits[0], layerBits[len(layerBits)-1])
		}
	}
	return out, sizing, nil
}

// SweepSizing says how BuildSweepStructures scaled the structures.
type SweepSizing struct {
	// Notes says, per structure name, how it is scaled with the bits per
	// URL, or why it is not measured.
	Notes map[string]string
	// Skipped lists the points (structure, bits per URL) left out because
	// the memory is too small to build that structure at that n.
	Skipped []string
}

// minSweepBits is the least total memory the structure can be built with
// at the same memory as the others, and why.
func minSweepBits(name string, L int) (bits uint64, why string) {
	switch name {
	case StructMLBFPaper:
		return uint64(L + 1), "one bit per layer"
	case StructMLBF:
		return uint64(L+1) * mlbf.BlockBits, "one 512-bit block per layer"
	}
	return 1, "one bit per layer"
}

// sweepBits is the total memory of the memory sweep at bpu bits per URL
// for n URLs.
func sweepBits(bpu float64, n int) (uint64, error) {
	if !(bpu > 0) || math.IsInf(bpu, 0) {
		return 0, fmt.Errorf("experiments: memory sweep: bits per URL %v is not a positive number: %w", bpu, ErrInvalidOptions)
	}
	total := math.Round(bpu * float64(n))
	if total < 1 || total > mlbf.MaxBits {
		return 0, fmt.Errorf("experiments: memory sweep: %v bits per URL at n = %d is %.0f bits, not in [1, 2^40]: %w", bpu, n, total, ErrInvalidOptions)
	}
	return uint64(total), nil
}

// ParseBitsPerURL parses a comma-separated list of bits per URL (positive
// decimal numbers, "_" allowed as a digit separator) for the memory sweep,
// sorted ascending with repeats removed.
func ParseBitsPerURL(list string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(list, ",") {
		t := strings.ReplaceAll(strings.TrimSpace(f), "_", "")
		v, err := strconv.ParseFloat(t, 64)
		if t == "" || err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("experiments: bits per URL %q is not a positive number: %w", f, ErrInvalidOptions)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatBitsPerURL formats a memory sweep's sizes joined by sep: with ","
// it is the list ParseBitsPerURL reads.
func FormatBitsPerURL(bs []float64, sep string) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = strconv.FormatFloat(b, 'g', -1, 64)
	}
	return strings.Join(s, sep)
}

// builder holds what sizing the structures needs from the sample.
type builder struct {
	o           StructureOptions
	segs        [][]string
	paperProbes float64 // mean bits the paper filter sets per insertion
}

func newBuilder(o StructureOptions) (*builder, error) {
	o.ensureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(o.Sample) == 0 {
		return nil, fmt.Errorf("experiments: no sample URLs to size the structures: %w", ErrNoData)
	}
	b := &builder{o: o, segs: make([][]string, len(o.Sample))}
	var layersUsed int
	for i, u := range o.Sample {
		b.segs[i] = o.Segment(nil, u)
		layersUsed += min(len(b.segs[i]), o.Layers)
	}
	// Bits the paper filter sets per insertion: k per used layer, plus k
	// in the integrity layer.
	b.paperProbes = float64(o.Hashes) * (float64(layersUsed)/float64(len(o.Sample)) + 1)
	return b, nil
}

// geometry is the memory given to the structures.
type geometry struct {
	classic uint64 // bf's m
	layer   uint64 // each of mlbf-paper's L+1 layers
	total   uint64 // the equal-memory classic filters and mlbf
	n       int    // the load that sizes optimal k and mlbf's layers
}

// buildInfo is what a multi-layer build reports about its sizing.
type buildInfo struct {
	layerBits []uint64 // mlbf: the layer sizes
	counts    []uint64 // mlbf: the distinct keys expected per layer
}

func (b *builder) build(name string, g geometry) (Structure, buildInfo, error) {
	L, k := b.o.Layers, b.o.Hashes
	var info buildInfo
	switch name {
	case StructBF:
		return classic(name, g.classic, k), info, nil
	case StructBFEqualMemory:
		return classic(name, g.total, k), info, nil
	case StructBFEqualMemoryOptK:
		return classic(name, g.total, min(mlbf.OptimalHashes(g.total, uint64(g.n)), mlbf.MaxHashes)), info, nil
	case StructBFEqualProbes:
		return classic(name, g.total, min(max(1, int(math.Round(b.paperProbes))), mlbf.MaxHashes)), info, nil
	case StructMLBFPaper:
		m := g.layer
		opts := mlbf.Options{Mode: mlbf.Paper, Layers: L, Hashes: k, BitsPerLayer: m}
		s, _, err := multiLayer(name, opts, b.o.Segment)
		if err != nil {
			return Structure{}, info, err
		}
		s.ProbesPerInsert = b.paperProbes
		s.Theory = func(n uint64) float64 { return mlbf.PaperFalsePositiveRate(L, k, m, n) }
		return s, info, nil
	case StructMLBF:
		sizes, counts := improvedSizes(b.segs, L, g.total, g.n)
		opts := mlbf.Options{Mode: mlbf.Improved, Layers: L, Hashes: k, LayerBits: sizes}
		s, f, err := multiLayer(name, opts, b.o.Segment)
		if err != nil {
			return Structure{}, info, err
		}
		integrity := f.LayerBits()[L]
		s.ProbesPerInsert = b.paperProbes // one layer per segment up to L, plus integrity, k each
		s.Theory = func(n uint64) float64 { return mlbf.BlockedFalsePositiveRate(k, integrity, n) }
		info.layerBits, info.counts = f.LayerBits(), counts
		return s, info, nil
	}
	return Structure{}, info, fmt.Errorf("experiments: unknown structure %q (want one of %v): %w", name, AllStructures, ErrInvalidOptions)
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
	const block = mlbf.BlockBits
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
