package revisit

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"sync"
	"time"
)

// The histogram of rates: bucketsPerDecade log-spaced buckets from
// minRate to maxRate changes per second; rates outside go to the first
// or last bucket. A bucket stands for its geometric centre.
const (
	minRate          = 1e-8 // one change in about 3 years
	maxRate          = 1e3
	bucketsPerDecade = 16
	decades          = 11 // log10(maxRate / minRate)
	numBuckets       = bucketsPerDecade * decades
)

// bucketOf returns the bucket of a positive rate.
func bucketOf(rate float64) int {
	b := int(math.Floor(math.Log10(rate/minRate) * bucketsPerDecade))
	return min(max(b, 0), numBuckets-1)
}

// bucketRate returns the rate a bucket stands for.
func bucketRate(b int) float64 {
	return minRate * math.Pow(10, (float64(b)+0.5)/bucketsPerDecade)
}

// Scheduler chooses the interval of each page's next visit. It keeps a
// bounded summary of the population (a log-bucketed histogram of the
// estimated rates, a count of pages without evidence and of pages with
// rate 0) to solve the budget's Lagrange multiplier, so its memory does not
// depend on the number of pages. Its methods are safe for concurrent use.
type Scheduler struct {
	opt Options // copied at New, read-only

	mu      sync.Mutex // protects the fields below
	pop     population
	dirty   int64 // Updates since the last solve
	solved  bool
	mult    float64 // the solved multiplier: μ (Adaptive) or κ (Proportional)
	uniform float64 // the solved frequency of pages without evidence, and of all pages under Uniform
}

// population is the bounded summary of the records the Scheduler was told
// about.
type population struct {
	unknown int64 // records without evidence (Record.Known false)
	zero    int64 // records with evidence and rate 0
	// saturated counts, under Adaptive with a budget, the records whose
	// every visit found a change, by their number of visits (the last
	// class holds satClasses-1 and more): doc.go, "Pages faster than
	// their visits".
	saturated [satClasses]int64
	buckets   [numBuckets]int64
}

func (p *population) total() int64 {
	n := p.unknown + p.zero
	for _, c := range p.saturated {
		n += c
	}
	for _, c := range p.buckets {
		n += c
	}
	return n
}

// add counts r in (d = 1) or out (d = -1) of the population. A record
// with a zero Last (never fetched) is no member.
func (p *population) add(r Record, d int64, adaptive bool, maxIv time.Duration) {
	if r.Last.IsZero() {
		return
	}
	var c *int64
	switch rate := r.Rate(); {
	case adaptive && r.Still(maxIv):
		c = &p.zero
	case !r.Known():
		c = &p.unknown
	case adaptive && saturated(r):
		c = &p.saturated[min(int(r.Visits), satClasses-1)]
	case rate <= 0:
		c = &p.zero
	default:
		c = &p.buckets[bucketOf(rate)]
	}
	*c = max(*c+d, 0)
}

// New returns a Scheduler with an empty population. It copies o after
// EnsureDefaults and returns Validate's error.
func New(o Options) (*Scheduler, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Scheduler{opt: o}, nil
}

// Options returns the scheduler's options, defaults filled in.
func (s *Scheduler) Options() Options { return s.opt }

// Update tells the scheduler that a page's record changed from old to new:
// a zero old (Last zero) adds a page, a zero new removes one. The records
// must be the ones the scheduler was told about before: the population is
// a summary, so a record it never saw cannot be taken out.
func (s *Scheduler) Update(old, new Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.opt.Policy == Adaptive && s.opt.Budget > 0
	s.pop.add(old, -1, a, s.opt.Max)
	s.pop.add(new, 1, a, s.opt.Max)
	s.dirty++
}

// Len returns the number of pages in the population.
func (s *Scheduler) Len() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pop.total()
}

// Interval returns the interval to schedule after a fetch that left the
// page's record r, within [Min, Max]: for a page without evidence
// (Record.Known false), the uniform share of the budget; under Adaptive
// with a budget, for a record whose every visit found a change, a probe
// or a wait (doc.go, "Pages faster than their visits"), which depends on
// r.Interval, the interval chosen at the fetch before; otherwise the
// policy's interval for Rate().
func (s *Scheduler) Interval(r Record) time.Duration {
	s.mu.Lock()
	s.solveIfStale()
	mult, uni := s.mult, s.uniform
	s.mu.Unlock()
	if s.opt.Policy == Adaptive && s.opt.Budget > 0 && r.Still(s.opt.Max) {
		return s.opt.Max
	}
	if !r.Known() {
		return s.clampInterval(uni)
	}
	if s.opt.Policy == Adaptive && s.opt.Budget > 0 && saturated(r) {
		probe, wait := s.probe(mult, int(r.Visits))
		// A probe follows any interval but a probe (twice its length: μ
		// moves a little between solves); after a probe that saw a
		// change too, the wait.
		if r.Interval > 2*probe {
			return probe
		}
		return wait
	}
	return s.clampInterval(s.frequency(r.Rate(), mult, uni))
}

// satClasses is the number of classes of saturated records by visits.
const satClasses = 17

// probe returns, for a saturated page with the given visits, the probe
// interval (μ, the mean change interval of a page at the cutoff) and the
// wait after a probe that found a change: the probe doubled per visit, up
// to 2^16 probes or Max.
func (s *Scheduler) probe(mult float64, visits int) (probe, wait time.Duration) {
	probe = min(max(time.Duration(mult*float64(time.Second)), s.opt.Min), s.opt.Max)
	k := min(visits, satClasses-1)
	return probe, min(s.opt.Max, probe<<k)
}

// IntervalForRate returns the interval the policy gives a page of the
// given rate (changes per second) in the current population.
func (s *Scheduler) IntervalForRate(rate float64) time.Duration {
	s.mu.Lock()
	s.solveIfStale()
	mult, uni := s.mult, s.uniform
	s.mu.Unlock()
	return s.clampInterval(s.frequency(rate, mult, uni))
}

// PlannedRate returns the total fetch rate (per second) the schedule
// plans over the population, from its summary: each bucket at the
// frequency of the rate it stands for. With a budget it equals Budget
// unless the bounds prevent it (every page at Min or at Max).
func (s *Scheduler) PlannedRate() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.solveIfStale()
	return s.planned(s.mult)
}

// saturated reports whether every visit of a record with evidence found a
// change that Last-Modified did not date: its rate estimate is then only a
// lower bound.
func saturated(r Record) bool { return r.Known() && r.Changes == r.Visits && r.Dated == 0 }

// clampInterval turns a frequency into an interval within [Min, Max].
func (s *Scheduler) clampInterval(f float64) time.Duration {
	if !(f > 0) {
		return s.opt.Max
	}
	sec := 1 / f
	if sec >= s.opt.Max.Seconds() {
		return s.opt.Max
	}
	d := time.Duration(sec * float64(time.Second))
	return min(max(d, s.opt.Min), s.opt.Max)
}

// clampFreq bounds a frequency to [1/Max, 1/Min].
func (s *Scheduler) clampFreq(f float64) float64 {
	return min(max(f, 1/s.opt.Max.Seconds()), 1/s.opt.Min.Seconds())
}

// frequency is the policy's frequency, within the bounds, for a page of
// rate lambda given the solved multiplier and uniform frequency.
func (s *Scheduler) frequency(lambda, mult, uni float64) float64 {
	if s.opt.Policy == Uniform {
		return uni
	}
	if !(lambda > 0) {
		return 1 / s.opt.Max.Seconds()
	}
	if s.opt.Budget == 0 {
		// No budget: one visit per expected change.
		return s.clampFreq(lambda)
	}
	switch s.opt.Policy {
	case Proportional:
		return s.clampFreq(mult * lambda)
	case Adaptive:
		// ∂F/∂f = g(λ/f)/λ = μ (doc.go). A page with μλ >= 1 is one the
		// optimum does not visit at all; the bounds visit it at Max.
		y := mult * lambda
		if y >= 1 {
			return 1 / s.opt.Max.Seconds()
		}
		return s.clampFreq(lambda / marginalInverse(y))
	}
	return uni
}

// planned sums the frequencies over the population at the multiplier.
func (s *Scheduler) planned(mult float64) float64 {
	p := &s.pop
	if s.opt.Policy == Uniform {
		return float64(p.total()) * s.uniform
	}
	sum := float64(p.unknown)*s.uniform + float64(p.zero)/s.opt.Max.Seconds()
	for n, c := range p.saturated {
		if c > 0 { // a probe and a wait per cycle
			probe, wait := s.probe(mult, n)
			sum += float64(c) * 2 / (probe + wait).Seconds()
		}
	}
	for b, c := range p.buckets {
		if c > 0 {
			sum += float64(c) * s.frequency(bucketRate(b), mult, s.uniform)
		}
	}
	return sum
}

// solveIfStale solves the multiplier again when the population changed by
// more than 1/64 of its size since the last solve (or was never solved),
// so that a stream of Updates costs a solve per 64th of turnover.
func (s *Scheduler) solveIfStale() {
	n := s.pop.total()
	if s.solved && s.dirty*64 <= n {
		return
	}
	s.solve()
}

// solve finds the multiplier that spends the budget: the frequencies are
// monotone in it (increasing in κ, decreasing in μ), so bisection on its
// logarithm converges; it starts around the last solution, which a
// population that changed by a 64th has hardly moved.
func (s *Scheduler) solve() {
	s.solved, s.dirty = true, 0
	n := s.pop.total()
	if s.opt.Budget == 0 {
		s.uniform = 1 / s.opt.Min.Seconds()
		return
	}
	s.uniform = s.clampFreq(s.opt.Budget / float64(max(n, 1)))
	if s.opt.Policy != Uniform {
		s.mult = solveMultiplier(s.opt.Policy, s.opt.Budget, s.mult, s.planned)
	}
}

// solveMultiplier returns the multiplier (κ for Proportional, μ for
// Adaptive) at which planned, the total frequency as a function of it,
// meets the budget, or the bound of its range nearest to doing so. prev,
// when positive, is a guess to start from.
func solveMultiplier(p Policy, budget, prev float64, planned func(float64) float64) float64 {
	lo, hi, increasing := -20.0, 30.0, false // μ in seconds: e^-20 to e^30
	if p == Proportional {
		lo, hi, increasing = -30, 30, true // κ, dimensionless
	}
	// over reports whether the budget is overspent at e^x.
	over := func(x float64) bool { return planned(math.Exp(x)) > budget }
	// tooHigh reports whether the root lies below e^x.
	tooHigh := func(x float64) bool { return over(x) == increasing }
	if prev > 0 {
		// Bracket the root around the guess, doubling the step.
		x := math.Log(prev)
		for step := 0.5; ; step *= 2 {
			a, b := max(x-step, lo), min(x+step, hi)
			if (a == lo || !tooHigh(a)) && (b == hi || tooHigh(b)) {
				lo, hi = a, b
				break
			}
		}
	}
	for hi-lo > 1e-9 {
		mid := (lo + hi) / 2
		if tooHigh(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Exp((lo + hi) / 2)
}

// schedulerMagic and schedulerVersion open an encoded Scheduler.
const (
	schedulerMagic   = "RVSC"
	schedulerVersion = 2
)

// MarshalBinary encodes the population summary (not the Options: a
// resumed crawl may change its budget or bounds; but the saturated classes
// are kept only under Adaptive with a budget, so a state saved under
// another policy, or restored into one, is better rebuilt from the
// records). The format: "RVSC", a version byte, the bucket layout
// (buckets per decade, decades, saturated classes, minimum rate as
// float64 bits), the unknown and zero counts, the saturated classes'
// counts, every bucket's count, and a CRC-32C of all that, big-endian: 4 +
// 4 + 8 + 16 + 8·17 + 8·176 + 4 = 1,580 bytes.
func (s *Scheduler) MarshalBinary() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := make([]byte, 0, schedulerSize)
	b = append(b, schedulerMagic...)
	b = append(b, schedulerVersion, bucketsPerDecade, decades, satClasses)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(minRate))
	b = binary.BigEndian.AppendUint64(b, uint64(s.pop.unknown))
	b = binary.BigEndian.AppendUint64(b, uint64(s.pop.zero))
	for _, c := range s.pop.saturated {
		b = binary.BigEndian.AppendUint64(b, uint64(c))
	}
	for _, c := range s.pop.buckets {
		b = binary.BigEndian.AppendUint64(b, uint64(c))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

const schedulerSize = 4 + 4 + 8 + 8 + 8 + 8*satClasses + 8*numBuckets + 4

// UnmarshalBinary replaces the population summary with one MarshalBinary
// wrote; the options stay the receiver's. Errors wrap ErrCorrupt; on error
// the scheduler is unchanged.
func (s *Scheduler) UnmarshalBinary(b []byte) error {
	if len(b) != schedulerSize {
		return fmt.Errorf("%w: scheduler state is %d bytes, want %d", ErrCorrupt, len(b), schedulerSize)
	}
	if string(b[:4]) != schedulerMagic {
		return fmt.Errorf("%w: scheduler state does not start with %q", ErrCorrupt, schedulerMagic)
	}
	if b[4] != schedulerVersion || b[5] != bucketsPerDecade || b[6] != decades || b[7] != satClasses ||
		binary.BigEndian.Uint64(b[8:]) != math.Float64bits(minRate) {
		return fmt.Errorf("%w: scheduler state version %d with layout %d/%d/%d/%x, want %d with %d/%d/%d/%x",
			ErrCorrupt, b[4], b[5], b[6], b[7], binary.BigEndian.Uint64(b[8:]), schedulerVersion, bucketsPerDecade, decades, satClasses, math.Float64bits(minRate))
	}
	end := len(b) - 4
	if got, want := binary.BigEndian.Uint32(b[end:]), crc32.Checksum(b[:end], castagnoli); got != want {
		return fmt.Errorf("%w: scheduler state checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	var p population
	counts := make([]int64, 0, 2+satClasses+numBuckets)
	for off := 16; off < end; off += 8 {
		c := int64(binary.BigEndian.Uint64(b[off:]))
		if c < 0 {
			return fmt.Errorf("%w: scheduler state has a negative count", ErrCorrupt)
		}
		counts = append(counts, c)
	}
	p.unknown, p.zero = counts[0], counts[1]
	copy(p.saturated[:], counts[2:])
	copy(p.buckets[:], counts[2+satClasses:])
	var sum int64
	for _, c := range counts {
		if sum += c; sum < 0 {
			return fmt.Errorf("%w: scheduler state counts overflow", ErrCorrupt)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pop, s.solved, s.dirty = p, false, 0
	return nil
}
