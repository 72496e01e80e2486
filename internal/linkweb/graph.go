package linkweb

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// ErrInvalidOptions is wrapped by every error of Options.Validate.
var ErrInvalidOptions = errors.New("linkweb: invalid options")

// Defaults of Options.
const (
	DefaultPages          = 100_000
	DefaultHosts          = 200
	DefaultMinLinks       = 6
	DefaultMaxLinks       = 18
	DefaultSameHost       = 0.75
	DefaultTargetExponent = 1.0
	// MaxHosts is the most hosts the loopback numbering reaches.
	MaxHosts = 250 * 254
	// Damping is PageRank's damping factor.
	Damping = 0.85
)

// Options describe a graph. Zero fields take the default their comment
// documents, except HostExponent, whose zero value means equal hosts.
type Options struct {
	// Seed makes the graph: the same Options give the same graph.
	Seed uint64
	// Pages is the number of pages over all hosts. Default DefaultPages.
	Pages int
	// Hosts is the number of hosts; at most MaxHosts and at most Pages.
	// Default DefaultHosts.
	Hosts int
	// HostExponent is the Zipf exponent of host sizes: host i holds a
	// share of the pages proportional to 1/(i+1)^HostExponent. 0 gives
	// hosts of equal size (to one page).
	HostExponent float64
	// MinLinks and MaxLinks bound the extra links of a page (besides its
	// tree links), drawn uniformly. Defaults DefaultMinLinks and
	// DefaultMaxLinks.
	MinLinks, MaxLinks int
	// SameHost is the probability that an extra link stays on its page's
	// host. Default DefaultSameHost; negative: every extra link goes to
	// another host (when there is one).
	SameHost float64
	// TargetExponent is the Zipf exponent of a link target's popularity
	// rank within its host (rank 0 is the root, the others are shuffled).
	// Default DefaultTargetExponent.
	TargetExponent float64
}

// EnsureDefaults sets the zero fields of o to their documented defaults.
func (o *Options) EnsureDefaults() {
	if o.Pages == 0 {
		o.Pages = DefaultPages
	}
	if o.Hosts == 0 {
		o.Hosts = DefaultHosts
	}
	if o.MinLinks == 0 {
		o.MinLinks = DefaultMinLinks
	}
	if o.MaxLinks == 0 {
		o.MaxLinks = DefaultMaxLinks
	}
	if o.SameHost == 0 {
		o.SameHost = DefaultSameHost
	}
	if o.TargetExponent == 0 {
		o.TargetExponent = DefaultTargetExponent
	}
}

// Validate reports the first invalid field; it expects EnsureDefaults to
// have run.
func (o *Options) Validate() error {
	switch {
	case o.Hosts < 1 || o.Hosts > MaxHosts:
		return fmt.Errorf("%w: Hosts %d not in [1, %d]", ErrInvalidOptions, o.Hosts, MaxHosts)
	case o.Pages < o.Hosts || o.Pages > math.MaxInt32:
		return fmt.Errorf("%w: Pages %d below Hosts %d or above %d", ErrInvalidOptions, o.Pages, o.Hosts, math.MaxInt32)
	case !(o.HostExponent >= 0 && o.HostExponent <= 10):
		return fmt.Errorf("%w: HostExponent %v not in [0, 10]", ErrInvalidOptions, o.HostExponent)
	case o.MinLinks < 0 || o.MaxLinks < o.MinLinks || o.MaxLinks > 1000:
		return fmt.Errorf("%w: links per page [%d, %d] not within [0, 1000]", ErrInvalidOptions, o.MinLinks, o.MaxLinks)
	case !(o.SameHost <= 1):
		return fmt.Errorf("%w: SameHost %v above 1", ErrInvalidOptions, o.SameHost)
	case !(o.TargetExponent > 0 && o.TargetExponent <= 10):
		return fmt.Errorf("%w: TargetExponent %v not in (0, 10]", ErrInvalidOptions, o.TargetExponent)
	}
	return nil
}

// Graph is a generated link graph. Pages are numbered 0..Pages-1, host by
// host: host h holds pages HostStart(h) to HostStart(h+1)-1, its root
// first. It is read-only and safe for concurrent use.
type Graph struct {
	opts      Options
	hostStart []int32   // first page of each host, and Pages at the end
	hostOf    []int32   // host of each page
	out       [][]int32 // distinct link targets of each page
	inDegree  []int32
	pageRank  []float64
	links     int
}

// Generate builds the graph opts describe (after EnsureDefaults) and
// computes its in-degrees and PageRank.
func Generate(opts Options) (*Graph, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	g := &Graph{opts: opts}
	g.hostStart = hostSizes(opts.Pages, opts.Hosts, opts.HostExponent)
	g.hostOf = make([]int32, opts.Pages)
	for h := range opts.Hosts {
		for p := g.hostStart[h]; p < g.hostStart[h+1]; p++ {
			g.hostOf[p] = int32(h)
		}
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6c696e6b776562)) // "linkweb"

	// Zipf's law within each host: the cumulative weights of ranks
	// 0..size-1, shared by every host (a host of size s uses the first s).
	largest := 0
	for h := range opts.Hosts {
		largest = max(largest, g.hostSize(h))
	}
	cum := make([]float64, largest)
	sum := 0.0
	for r := range cum {
		sum += math.Pow(float64(r+1), -opts.TargetExponent)
		cum[r] = sum
	}
	// Other hosts are drawn in proportion to their size.
	hostCum := make([]float64, opts.Hosts)
	for h := range opts.Hosts {
		hostCum[h] = float64(g.hostStart[h+1])
	}

	// The popularity ranks of each host's pages: the root is rank 0, the
	// other pages get ranks 1..size-1 in a seeded random order, so that a
	// page's popularity does not follow from its place in the tree.
	rankPage := make([]int32, opts.Pages)
	for h := range opts.Hosts {
		s, size := g.hostStart[h], g.hostSize(h)
		ranks := rankPage[s : int(s)+size]
		for i := range ranks {
			ranks[i] = s + int32(i)
		}
		if size > 2 {
			rng.Shuffle(size-1, func(i, j int) { ranks[1+i], ranks[1+j] = ranks[1+j], ranks[1+i] })
		}
	}

	g.out = make([][]int32, opts.Pages)
	// The tree: page k of a host is linked from a uniform earlier page.
	for h := range opts.Hosts {
		s := g.hostStart[h]
		for k := int32(1); k < int32(g.hostSize(h)); k++ {
			parent := s + int32(rng.IntN(int(k)))
			g.out[parent] = append(g.out[parent], s+k)
		}
	}
	for p := range g.out {
		h := int(g.hostOf[p])
		n := opts.MinLinks + rng.IntN(opts.MaxLinks-opts.MinLinks+1)
		for range n {
			th := h
			if opts.Hosts > 1 && rng.Float64() >= opts.SameHost {
				for th == h {
					th = sort.SearchFloat64s(hostCum, rng.Float64()*hostCum[len(hostCum)-1])
				}
			}
			size := g.hostSize(th)
			r := sort.SearchFloat64s(cum[:size], rng.Float64()*cum[size-1])
			t := rankPage[int(g.hostStart[th])+min(r, size-1)]
			if int(t) != p && !slices.Contains(g.out[p], t) {
				g.out[p] = append(g.out[p], t)
			}
		}
	}
	g.inDegree = make([]int32, opts.Pages)
	for _, ts := range g.out {
		g.links += len(ts)
		for _, t := range ts {
			g.inDegree[t]++
		}
	}
	g.pageRank = PageRank(g.out, Damping)
	return g, nil
}

// hostSizes splits pages over hosts in proportion to 1/(i+1)^a, every
// host at least one page, the sizes adding up to exactly pages (largest
// remainders), and returns the first page of each host and pages.
func hostSizes(pages, hosts int, a float64) []int32 {
	w := make([]float64, hosts)
	total := 0.0
	for i := range w {
		w[i] = math.Pow(float64(i+1), -a)
		total += w[i]
	}
	spare := pages - hosts // one page each first
	sizes := make([]int, hosts)
	type rem struct {
		i int
		r float64
	}
	rems := make([]rem, hosts)
	left := spare
	for i := range w {
		x := float64(spare) * w[i] / total
		sizes[i] = 1 + int(x)
		left -= int(x)
		rems[i] = rem{i, x - math.Floor(x)}
	}
	slices.SortStableFunc(rems, func(x, y rem) int { return cmp.Compare(y.r, x.r) })
	for j := 0; left > 0; j, left = j+1, left-1 {
		sizes[rems[j%hosts].i]++
	}
	start := make([]int32, hosts+1)
	for i, s := range sizes {
		start[i+1] = start[i] + int32(s)
	}
	return start
}

// PageRank returns the PageRank of every node of the graph whose links
// out[i] lists (targets in [0, len(out)); duplicates count as one link
// each, so pass distinct targets): damping d, uniform teleport, and the
// rank of a node without links spread uniformly over all nodes (Page et
// al. 1998; Langville and Meyer's dangling-node fix). Power iteration
// stops when the L1 change is below 1e-12 or after 1,000 iterations. The
// ranks add up to 1.
func PageRank(out [][]int32, d float64) []float64 {
	n := len(out)
	if n == 0 {
		return nil
	}
	pr := make([]float64, n)
	next := make([]float64, n)
	for i := range pr {
		pr[i] = 1 / float64(n)
	}
	for range 1000 {
		dangling := 0.0
		for i := range next {
			next[i] = 0
		}
		for i, ts := range out {
			if len(ts) == 0 {
				dangling += pr[i]
				continue
			}
			share := pr[i] / float64(len(ts))
			for _, t := range ts {
				next[t] += share
			}
		}
		base := (1-d)/float64(n) + d*dangling/float64(n)
		delta, sum := 0.0, 0.0
		for i := range next {
			next[i] = base + d*next[i]
			sum += next[i]
		}
		for i := range next {
			next[i] /= sum // keeps rounding from drifting the total
			delta += math.Abs(next[i] - pr[i])
		}
		pr, next = next, pr
		if delta < 1e-12 {
			break
		}
	}
	return pr
}

// Options returns the options the graph was generated with, defaults
// filled in.
func (g *Graph) Options() Options { return g.opts }

// Pages returns the number of pages.
func (g *Graph) Pages() int { return len(g.out) }

// Hosts returns the number of hosts.
func (g *Graph) Hosts() int { return len(g.hostStart) - 1 }

// Links returns the number of links (distinct per page) in the graph.
func (g *Graph) Links() int { return g.links }

// HostStart returns the first page of host h; HostStart(Hosts()) is Pages().
func (g *Graph) HostStart(h int) int { return int(g.hostStart[h]) }

func (g *Graph) hostSize(h int) int { return int(g.hostStart[h+1] - g.hostStart[h]) }

// HostOf returns the host of page p.
func (g *Graph) HostOf(p int) int { return int(g.hostOf[p]) }

// Out returns the distinct link targets of page p, tree links first. The
// slice must not be modified.
func (g *Graph) Out(p int) []int32 { return g.out[p] }

// InDegree returns the number of distinct pages linking to page p.
func (g *Graph) InDegree(p int) int { return int(g.inDegree[p]) }

// PageRank returns the PageRank of page p in the whole graph; the ranks of
// all pages add up to 1.
func (g *Graph) PageRank(p int) float64 { return g.pageRank[p] }

// TopByInDegree returns the ceil(share·Pages) pages of highest in-degree,
// ties broken by the lower page number, in that order.
func (g *Graph) TopByInDegree(share float64) []int {
	k := min(len(g.out), int(math.Ceil(share*float64(len(g.out)))))
	ids := make([]int, len(g.out))
	for i := range ids {
		ids[i] = i
	}
	slices.SortFunc(ids, func(a, b int) int {
		if c := cmp.Compare(g.inDegree[b], g.inDegree[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return ids[:k]
}
