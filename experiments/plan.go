package experiments

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/zeebo/xxh3"
)

// Order says in which order the distinct URLs are inserted.
type Order uint8

const (
	// OrderShuffle inserts the URLs in a permutation drawn from the seed.
	// The default: the shared datasets are sorted and concatenated by
	// file, so their first n lines are one file's alphabetical head, not a
	// sample of the set.
	OrderShuffle Order = iota
	// OrderInput inserts the URLs in first-seen input order, as the paper
	// did with its log.
	OrderInput
)

func (o Order) String() string {
	switch o {
	case OrderShuffle:
		return "shuffle"
	case OrderInput:
		return "input"
	}
	return fmt.Sprintf("Order(%d)", uint8(o))
}

// ParseOrder returns the Order named s ("shuffle" or "input").
func ParseOrder(s string) (Order, error) {
	switch s {
	case "shuffle":
		return OrderShuffle, nil
	case "input":
		return OrderInput, nil
	}
	return 0, fmt.Errorf("experiments: unknown order %q (want shuffle or input): %w", s, ErrInvalidOptions)
}

// DefaultHoldout is the default number of URLs held out of insertion and
// queried by the holdout workload.
const DefaultHoldout = 100_000

// Plan is the deterministic split of a Dataset into the insertion sequence
// and the holdout queries, with the checkpoints at which the workloads are
// measured.
type Plan struct {
	// Insert is the insertion sequence; the structures hold Insert[:n] at
	// checkpoint n.
	Insert []string
	// Holdout is disjoint from Insert, drawn from the same sources, and
	// queried at every checkpoint by the holdout workload.
	Holdout []string
	// Checkpoints are the distinct n values, ascending, all <= len(Insert).
	Checkpoints []int
	// Dropped are the requested n values above len(Insert): the sources do
	// not hold that many URLs, and they are not padded.
	Dropped []int
	// SweepN is the n of the memory sweep (see SweepOptions): the
	// structures of the sweep hold Insert[:SweepN]. It is at most
	// len(Insert).
	SweepN int
	// SweepNDropped is the requested sweep n when it was above len(Insert)
	// (SweepN is then all the data), else 0.
	SweepNDropped int
	// IDQueries[i] is Insert[i] with its unique ID (i+1, in decimal)
	// appended: the url+id workload's query for the i-th inserted URL. It
	// covers the larger of the last checkpoint and SweepN.
	IDQueries []string
}

// extent is the number of inserted URLs some measurement needs: the larger
// of the last checkpoint and SweepN.
func (p *Plan) extent() int {
	return max(p.Checkpoints[len(p.Checkpoints)-1], p.SweepN)
}

// AtSweepN returns a view of p with the single checkpoint SweepN, sharing
// p's slices: the plan of the memory sweep.
func (p *Plan) AtSweepN() *Plan {
	q := *p
	q.Checkpoints = []int{p.SweepN}
	q.Dropped = nil
	return &q
}

// Membership is the ground truth of the queries under one notion of key
// equality: a query whose key equals the key of an inserted URL is a true
// member, not a candidate false positive, once that URL is inserted.
type Membership struct {
	// ID[i] is the smallest insertion index whose URL has the key of
	// IDQueries[i], or -1.
	ID []int32
	// Holdout[i] is the smallest insertion index whose URL has the key of
	// Holdout[i], or -1. With exact strings it is always -1.
	Holdout []int32
}

// Membership computes the ground truth for the key function key (nil for
// exact strings), over the URLs inserted up to the last checkpoint or
// SweepN, whichever is larger.
func (p *Plan) Membership(key func(string) string) *Membership {
	if key == nil {
		key = func(s string) string { return s }
	}
	// Keys are compared by 128-bit hash (see LoadDataset): a pointer-free
	// map, and the key strings become garbage at once.
	last := p.extent()
	index := make(map[xxh3.Uint128]int32, last)
	for i, u := range p.Insert[:last] {
		k := xxh3.HashString128(key(u))
		if _, ok := index[k]; !ok {
			index[k] = int32(i)
		}
	}
	lookup := func(qs []string) []int32 {
		out := make([]int32, len(qs))
		for i, q := range qs {
			if j, ok := index[xxh3.HashString128(key(q))]; ok {
				out[i] = j
			} else {
				out[i] = -1
			}
		}
		return out
	}
	return &Membership{ID: lookup(p.IDQueries), Holdout: lookup(p.Holdout)}
}

// Members counts the queries of qs (a Membership slice) that are true
// members at checkpoint n.
func Members(qs []int32, n int) int64 {
	var c int64
	for _, m := range qs {
		if m >= 0 && int(m) < n {
			c++
		}
	}
	return c
}

// PlanOptions configures NewPlan.
type PlanOptions struct {
	Seed    uint64
	Order   Order
	Holdout int   // URLs held out; default min(DefaultHoldout, len/10); -1 for none
	N       []int // requested n values; default five evenly spaced up to all
	// SweepN is the n of the memory sweep; default (0) the largest
	// checkpoint. Above the data it stops at what exists, like N.
	SweepN int
}

// NewPlan splits d deterministically for opts.Seed. The holdout set is the
// last Holdout URLs of a seeded permutation; with OrderShuffle the
// insertion sequence is the rest of that permutation, with OrderInput it is
// the rest in input order.
func NewPlan(d *Dataset, opts PlanOptions) (*Plan, error) {
	total := len(d.URLs)
	if total == 0 {
		return nil, fmt.Errorf("experiments: the sources hold no URL: %w", ErrNoData)
	}
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("experiments: %d URLs exceed the %d a plan indexes: %w", total, math.MaxInt32, ErrInvalidOptions)
	}
	h := opts.Holdout
	switch {
	case h == 0:
		h = min(DefaultHoldout, total/10)
	case h < 0:
		h = 0
	case h >= total:
		return nil, fmt.Errorf("experiments: holdout %d leaves no URL to insert out of %d: %w", h, total, ErrInvalidOptions)
	}
	perm := permutation(total, opts.Seed)
	p := &Plan{}
	p.Holdout = make([]string, h)
	for i, j := range perm[total-h:] {
		p.Holdout[i] = d.URLs[j]
	}
	p.Insert = make([]string, 0, total-h)
	switch opts.Order {
	case OrderShuffle:
		for _, j := range perm[:total-h] {
			p.Insert = append(p.Insert, d.URLs[j])
		}
	case OrderInput:
		held := make([]bool, total)
		for _, j := range perm[total-h:] {
			held[j] = true
		}
		for j, u := range d.URLs {
			if !held[j] {
				p.Insert = append(p.Insert, u)
			}
		}
	default:
		return nil, fmt.Errorf("experiments: order %v: %w", opts.Order, ErrInvalidOptions)
	}
	if err := p.setCheckpoints(opts.N); err != nil {
		return nil, err
	}
	switch {
	case opts.SweepN < 0:
		return nil, fmt.Errorf("experiments: sweep n = %d is negative: %w", opts.SweepN, ErrInvalidOptions)
	case opts.SweepN == 0:
		p.SweepN = p.Checkpoints[len(p.Checkpoints)-1]
	case opts.SweepN > len(p.Insert):
		p.SweepN, p.SweepNDropped = len(p.Insert), opts.SweepN
	default:
		p.SweepN = opts.SweepN
	}
	p.buildIDQueries()
	return p, nil
}

// ErrNoData is returned when the sources hold no usable URL.
var ErrNoData = errors.New("experiments: no data")

func (p *Plan) setCheckpoints(req []int) error {
	avail := len(p.Insert)
	if len(req) == 0 {
		for i := 1; i <= 5; i++ {
			n := avail * i / 5
			if avail >= 5000 && i < 5 {
				n -= n % 1000 // round numbers, the last point is everything
			}
			if n > 0 {
				req = append(req, n)
			}
		}
	}
	var ns []int
	for _, n := range req {
		if n <= 0 {
			return fmt.Errorf("experiments: n = %d is not positive: %w", n, ErrInvalidOptions)
		}
		if n > avail {
			p.Dropped = append(p.Dropped, n)
			continue
		}
		ns = append(ns, n)
	}
	if len(p.Dropped) > 0 {
		// Stop at what exists: measure everything there is once, never pad.
		ns = append(ns, avail)
	}
	slices.Sort(ns)
	p.Checkpoints = slices.Compact(ns)
	slices.Sort(p.Dropped)
	p.Dropped = slices.Compact(p.Dropped)
	return nil
}

func (p *Plan) buildIDQueries() {
	last := p.extent()
	p.IDQueries = make([]string, last)
	var buf []byte
	var arena stringArena
	for i, u := range p.Insert[:last] {
		buf = strconv.AppendInt(append(buf[:0], u...), int64(i+1), 10)
		p.IDQueries[i] = arena.add(buf)
	}
}

// permutation returns a permutation of [0, n) drawn from seed by a
// Fisher-Yates shuffle over SplitMix64, written out here so that a seed
// gives the same permutation whatever the Go version.
func permutation(n int, seed uint64) []int32 {
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	state := seed
	for i := n - 1; i > 0; i-- {
		j := boundedRand(&state, uint64(i+1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm
}

func splitMix64(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// boundedRand returns a uniform value in [0, bound) by rejection, so the
// permutation is unbiased.
func boundedRand(state *uint64, bound uint64) uint64 {
	limit := -bound % bound // (2^64 - bound) mod bound: values below are rejected
	for {
		v := splitMix64(state)
		if v >= limit {
			return v % bound
		}
	}
}
