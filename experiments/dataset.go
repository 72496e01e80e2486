package experiments

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// SourceStats is what one source of a Dataset contributed.
type SourceStats struct {
	Path     string
	Read     ReadStats
	Distinct int64 // URLs that were new when this source was read
}

// Dataset is the distinct URLs of one or more sources, in first-seen order.
type Dataset struct {
	URLs    []string      // distinct exact strings, first-seen order
	Sources []SourceStats // one per source, in the order given
	Total   ReadStats     // sums over the sources
}

// Duplicates is the number of accepted URLs dropped as repeats.
func (d *Dataset) Duplicates() int64 { return d.Total.URLs - int64(len(d.URLs)) }

// LoadDataset reads the sources once, in order (as if concatenated), and
// keeps each distinct URL once. URLs are compared by their 128-bit xxh3
// hash, which keeps the dedup map free of pointers (cheap for the garbage
// collector at millions of URLs); two distinct URLs among 1.5 million share
// a hash with probability about 10^-26, so this is exact string comparison
// in all but name. Bad lines are counted, never fatal; an unreadable source
// is an error.
func LoadDataset(ctx context.Context, sources []Source, opts ReadOptions) (*Dataset, error) {
	if len(sources) == 0 {
		return nil, fmt.Errorf("experiments: no sources: %w", ErrInvalidOptions)
	}
	d := &Dataset{}
	seen := make(map[xxh3.Uint128]struct{})
	var arena stringArena
	for _, src := range sources {
		before := len(d.URLs)
		st, err := readSource(ctx, src, opts, func(u []byte) error {
			h := xxh3.Hash128(u)
			if _, ok := seen[h]; ok {
				return nil
			}
			seen[h] = struct{}{}
			d.URLs = append(d.URLs, arena.add(u))
			return nil
		})
		if err != nil {
			return nil, err
		}
		d.Sources = append(d.Sources, SourceStats{Path: src.Path, Read: st, Distinct: int64(len(d.URLs) - before)})
		d.Total.add(st)
	}
	return d, nil
}

// arenaBlock is the size of the blocks stringArena carves strings from.
const arenaBlock = 4 << 20

// stringArena hands out strings carved from large blocks, so that a million
// URLs are a few hundred allocations for the garbage collector to mark
// instead of a million. A block's bytes are never written again once a
// string covers them (append only writes past the end), which is what makes
// the unsafe.String views immutable strings.
type stringArena struct {
	block []byte
}

func (a *stringArena) add(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaBlock/8 {
		return string(b) // long lines get their own allocation
	}
	if cap(a.block)-len(a.block) < len(b) {
		a.block = make([]byte, 0, arenaBlock)
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	return unsafe.String(&a.block[start], len(b))
}
