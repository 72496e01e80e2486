package revisit

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// skewed returns n records of a skewed population, as visits leave them:
// 20% of the pages never change, the others change at mean intervals
// drawn log-uniformly from 5 seconds to a day, each visited 30 times at
// an interval drawn log-uniformly from 1 to 30 minutes. It returns the
// true rates too.
func skewed(n int, seed uint64) ([]Record, []float64) {
	rng := rand.New(rand.NewPCG(seed, 35))
	recs, rates := make([]Record, n), make([]float64, n)
	for i := range recs {
		if rng.Float64() >= 0.2 {
			rates[i] = 1 / math.Exp(math.Log(5)+rng.Float64()*math.Log(86400/5.0))
		}
		iv := math.Exp(math.Log(60) + rng.Float64()*math.Log(30))
		recs[i] = visit(rates[i], 30, rng, func(int) float64 { return iv })
	}
	return recs, rates
}

// popSize is n, or 500 under the race detector, whose 20-fold slowdown
// on this arithmetic would make the population tests take seconds each
// (CI runs them once more without it, at full size).
// Callers pass raceEnabled, so that internal/tools/racetests finds them.
func popSize(n int, race bool) int {
	if race {
		return min(n, 500)
	}
	return n
}

func newScheduler(t testing.TB, o Options, recs []Record) *Scheduler {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		s.Update(Record{}, r)
	}
	return s
}

// meanFreshness is the expected freshness of the collection, each page at
// its scheduled interval, against the rates given.
func meanFreshness(s *Scheduler, recs []Record, rates []float64) (fresh, planned float64) {
	for i, r := range recs {
		f := frequency(s, r)
		planned += f
		fresh += Freshness(rates[i], f)
	}
	return fresh / float64(len(recs)), planned
}

// frequency is the mean visit frequency the schedule gives r: 1/Interval,
// but for a saturated record under Adaptive, whose probe-and-wait cycle
// (doc.go) makes two visits per probe plus wait.
func frequency(s *Scheduler, r Record) float64 {
	if s.opt.Policy == Adaptive && saturated(r) {
		s.mu.Lock()
		mult := s.mult
		s.mu.Unlock()
		probe, wait := s.probe(mult, int(r.Visits))
		return 2 / (probe + wait).Seconds()
	}
	return 1 / s.Interval(r).Seconds()
}

// TestBudgetSpent: each policy plans the budget, from its summary and
// summed over the pages' own intervals, within the bounds.
func TestBudgetSpent(t *testing.T) {
	const seed = 1
	recs, _ := skewed(popSize(5000, raceEnabled), seed)
	n := float64(len(recs))
	for _, budget := range []float64{n / 10000, n / 1000, n / 100} { // every page every 2.8 hours, 17 and 1.7 minutes
		for _, p := range []Policy{Uniform, Proportional, Adaptive} {
			o := Options{Min: 10 * time.Second, Max: 24 * time.Hour, Budget: budget, Policy: p}
			s := newScheduler(t, o, recs)
			var sum float64
			for _, r := range recs {
				iv := s.Interval(r)
				if iv < o.Min || iv > o.Max {
					t.Fatalf("%v: interval %v outside [%v, %v]", p, iv, o.Min, o.Max)
				}
				sum += frequency(s, r)
			}
			if got := s.PlannedRate(); math.Abs(got/budget-1) > 1e-6 {
				t.Errorf("%v, budget %g: planned rate %g (seed %d)", p, budget, got, seed)
			}
			// The pages' own rates differ from their buckets' centres by
			// up to 7.5%, so their sum can stray a little.
			if math.Abs(sum/budget-1) > 0.03 {
				t.Errorf("%v, budget %g: the pages' intervals sum to %g per second (seed %d)", p, budget, sum, seed)
			}
		}
	}
}

// TestAdaptiveBeatsUniform: on the skewed population, at the same budget,
// Adaptive's expected freshness (analytic, eq. 4 of Cho and
// Garcia-Molina) is at least Uniform's and Proportional's. Saturated
// records (every visit changed) are left out: Adaptive tests them by
// probing, which only a simulation measures (TestSaturatedPages, and
// crawler experiment freshness).
func TestAdaptiveBeatsUniform(t *testing.T) {
	const seed = 2
	all, allRates := skewed(popSize(5000, raceEnabled), seed)
	var recs []Record
	var rates []float64
	for i, r := range all {
		if !saturated(r) {
			recs, rates = append(recs, r), append(rates, allRates[i])
		}
	}
	for _, budget := range []float64{0.5, 5, 50} {
		fresh := map[Policy]float64{}
		for _, p := range []Policy{Uniform, Proportional, Adaptive} {
			s := newScheduler(t, Options{Min: time.Second, Max: 7 * 24 * time.Hour, Budget: budget, Policy: p}, recs)
			fresh[p], _ = meanFreshness(s, recs, rates)
		}
		t.Logf("budget %g/s, seed %d: freshness uniform %.4f, proportional %.4f, adaptive %.4f (%.2fx uniform)",
			budget, seed, fresh[Uniform], fresh[Proportional], fresh[Adaptive], fresh[Adaptive]/fresh[Uniform])
		if fresh[Adaptive] < fresh[Uniform] || fresh[Adaptive] < fresh[Proportional] {
			t.Errorf("budget %g: freshness uniform %.4f, proportional %.4f, adaptive %.4f: want adaptive >= both (seed %d)",
				budget, fresh[Uniform], fresh[Proportional], fresh[Adaptive], seed)
		}
	}
}

// TestAdaptiveOptimal: no small transfer of budget between two pages
// improves Adaptive's freshness: the marginal gains ∂F/∂f are equal for
// the pages within the bounds.
func TestAdaptiveOptimal(t *testing.T) {
	recs, _ := skewed(popSize(2000, raceEnabled), 3)
	o := Options{Min: time.Second, Max: 30 * 24 * time.Hour, Budget: 2, Policy: Adaptive}
	s := newScheduler(t, o, recs)
	var mus []float64
	for _, r := range recs {
		iv := s.Interval(r)
		if iv <= o.Min || iv >= o.Max || saturated(r) {
			continue
		}
		lambda, f := r.Rate(), 1/iv.Seconds()
		mus = append(mus, marginal(lambda/f)/lambda)
	}
	if len(mus) < len(recs)/2 {
		t.Fatalf("only %d of %d pages within the bounds", len(mus), len(recs))
	}
	for _, m := range mus {
		if math.Abs(m/mus[0]-1) > 1e-6 {
			t.Fatalf("marginal gains %g and %g differ", mus[0], m)
		}
	}
}

// TestTooFastGetsLess: under Adaptive a page changing far faster than the
// budget can follow is visited less often than a slower one.
func TestTooFastGetsLess(t *testing.T) {
	recs, _ := skewed(popSize(2000, raceEnabled), 4)
	s := newScheduler(t, Options{Min: time.Second, Max: 24 * time.Hour, Budget: 0.2, Policy: Adaptive}, recs)
	slow, fast := s.IntervalForRate(1.0/3600), s.IntervalForRate(1.0/5)
	if fast <= slow {
		t.Errorf("a page changing every 5s gets %v, one changing hourly %v: want the fast one visited less", fast, slow)
	}
}

// TestSaturatedPages follows two pages through Adaptive's schedule in a
// skewed population: one changing every 5 seconds, far faster than the
// budget can follow, ends in the probe-and-wait cycle at Max (a wait of
// Max and a probe: at most 4 visits a day); one changing every 20 minutes
// is visited as its rate asks.
func TestSaturatedPages(t *testing.T) {
	const seed = 12
	recs, _ := skewed(popSize(2000, raceEnabled), seed)
	o := Options{Min: time.Minute, Max: 24 * time.Hour, Budget: float64(len(recs)) / 1800, Policy: Adaptive}
	s := newScheduler(t, o, recs)
	rng := rand.New(rand.NewPCG(seed, 1))
	t0 := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		lambda  float64
		wantMax bool
	}{{1.0 / 5, true}, {1.0 / 1200, false}} {
		p := newPoisson(tc.lambda, rng)
		var r Record
		r.Observe(t0, false)
		s.Update(Record{}, r)
		r.Interval = s.Interval(r)
		at, visits := 0.0, 0
		for at < 7*86400 {
			at += r.Interval.Seconds()
			old := r
			r.Observe(t0.Add(time.Duration(at*float64(time.Second))), p.changedBy(at))
			s.Update(old, r)
			r.Interval = s.Interval(r)
			if at > 6*86400 {
				visits++
			}
		}
		t.Logf("λ = 1/%gs: interval %v at the end, %d visits on the last day (seed %d)", 1/tc.lambda, r.Interval, visits, seed)
		if tc.wantMax && visits > 4 {
			t.Errorf("λ = 1/%gs: %d visits on the last day, want at most 4 (seed %d)", 1/tc.lambda, visits, seed)
		}
		if !tc.wantMax && (r.Interval >= time.Hour || visits < 24) {
			t.Errorf("λ = 1/%gs: interval %v, %d visits on the last day; want under an hour, 24 or more (seed %d)", 1/tc.lambda, r.Interval, visits, seed)
		}
		s.Update(r, Record{})
	}
}

// TestQuiet: under Adaptive a page whose visits found no change in Max or
// more is visited at Max, and planned so; one watched for less, or with a
// change, is not.
func TestQuiet(t *testing.T) {
	recs, _ := skewed(popSize(1000, raceEnabled), 13)
	o := Options{Min: time.Minute, Max: 6 * time.Hour, Budget: float64(len(recs)) / 1800, Policy: Adaptive}
	s := newScheduler(t, o, recs)
	quietRec := Record{Visits: 12, Observed: 6 * time.Hour, Last: time.Unix(1, 0), Interval: 30 * time.Minute}
	if got := s.Interval(quietRec); got != o.Max {
		t.Errorf("unchanged for Max: %v, want Max", got)
	}
	young := quietRec
	young.Observed = 5 * time.Hour
	if got := s.Interval(young); got >= o.Max {
		t.Errorf("unchanged for less than Max: %v, want less than Max", got)
	}
	changed := quietRec
	changed.Changes, changed.Changed = 1, 30*time.Minute
	if got := s.Interval(changed); got >= o.Max {
		t.Errorf("one change in 12 visits of 30 minutes: %v, want less than Max", got)
	}
	// The summary counts it with the pages of rate 0, planned at Max.
	zero := s.pop.zero
	s.Update(Record{}, quietRec)
	if s.pop.zero != zero+1 {
		t.Errorf("the quiet page is not counted with the pages of rate 0")
	}
}

// TestBounds: rate 0 gets Max; intervals stay within the bounds at any
// rate and budget; pages without evidence get the uniform share.
func TestBounds(t *testing.T) {
	recs, _ := skewed(popSize(1000, raceEnabled), 5)
	for _, p := range []Policy{Proportional, Adaptive} {
		for _, budget := range []float64{0, 1e-6, 1, 1e6} {
			o := Options{Min: time.Minute, Max: time.Hour, Budget: budget, Policy: p}
			s := newScheduler(t, o, recs)
			if got := s.IntervalForRate(0); got != o.Max {
				t.Errorf("%v, budget %g: rate 0 gets %v, want Max %v", p, budget, got, o.Max)
			}
			for _, rate := range []float64{1e-12, 1e-4, 1, 1e6, math.Inf(1)} {
				if got := s.IntervalForRate(rate); got < o.Min || got > o.Max {
					t.Errorf("%v, budget %g: rate %g gets %v outside [%v, %v]", p, budget, rate, got, o.Min, o.Max)
				}
			}
			unknown := Record{Last: time.Unix(1, 0)}
			want := o.Min
			if budget > 0 {
				want = min(max(time.Duration(float64(len(recs))/budget*float64(time.Second)), o.Min), o.Max)
			}
			if got := s.Interval(unknown); got != want {
				t.Errorf("%v, budget %g: a page without evidence gets %v, want %v", p, budget, got, want)
			}
		}
	}
	// A page never seen to change drifts to Max as its unchanged time grows.
	s := newScheduler(t, Options{Min: time.Minute, Max: 6 * time.Hour, Budget: 1, Policy: Adaptive}, recs)
	prev := time.Duration(0)
	for _, n := range []uint32{1, 10, 100, 1000, 10000, 100000} {
		r := Record{Visits: n, Observed: time.Duration(n) * 10 * time.Minute, Last: time.Unix(1, 0)}
		got := s.Interval(r)
		if got < prev {
			t.Errorf("%d unchanged visits of 10 minutes: %v, shorter than with fewer (%v)", n, got, prev)
		}
		prev = got
	}
	if prev != 6*time.Hour {
		t.Errorf("a page unchanged for 100,000 visits of 10 minutes gets %v, want Max", prev)
	}
}

// TestUpdateRemoves: adding and removing every record empties the
// summary; the removal of a record never added does not go negative.
func TestUpdateRemoves(t *testing.T) {
	recs, _ := skewed(popSize(500, raceEnabled), 6)
	s := newScheduler(t, Options{Budget: 1}, recs)
	if got := s.Len(); got != int64(len(recs)) {
		t.Fatalf("Len %d, want %d", got, len(recs))
	}
	for _, r := range recs {
		s.Update(r, Record{})
	}
	s.Update(recs[0], Record{})
	if got := s.Len(); got != 0 {
		t.Errorf("Len %d after removing everything, want 0", got)
	}
	empty, _ := New(Options{Budget: 1})
	a, _ := s.MarshalBinary()
	b, _ := empty.MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Error("the emptied summary differs from a new one")
	}
}

func TestSchedulerRoundTrip(t *testing.T) {
	recs, _ := skewed(popSize(1000, raceEnabled), 7)
	s := newScheduler(t, Options{Budget: 1}, recs)
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != schedulerSize {
		t.Errorf("encoded in %d bytes, want %d", len(b), schedulerSize)
	}
	r, _ := New(Options{Budget: 1})
	if err := r.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs[:50] {
		if got, want := r.Interval(rec), s.Interval(rec); got != want {
			t.Errorf("restored interval %v, want %v", got, want)
		}
	}
	// Rebuilt from the records, the same.
	rebuilt := newScheduler(t, Options{Budget: 1}, recs)
	c, _ := rebuilt.MarshalBinary()
	if !bytes.Equal(b, c) {
		t.Error("a scheduler rebuilt from the records encodes differently")
	}
}

func TestSchedulerCorrupt(t *testing.T) {
	recs, _ := skewed(popSize(100, raceEnabled), 8)
	good, _ := newScheduler(t, Options{Budget: 1}, recs).MarshalBinary()
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	for name, b := range map[string][]byte{
		"empty":    nil,
		"short":    good[:len(good)-1],
		"magic":    flip(0),
		"version":  flip(4),
		"layout":   flip(5),
		"checksum": flip(len(good) - 1),
		"count":    flip(40),
	} {
		s := newScheduler(t, Options{Budget: 1}, recs[:3])
		if err := s.UnmarshalBinary(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: error %v, want ErrCorrupt", name, err)
		}
		if s.Len() != 3 {
			t.Errorf("%s: the scheduler changed on error", name)
		}
	}
}

// FuzzScheduler: any bytes decode to an error wrapping ErrCorrupt or to a
// summary that encodes back to the same bytes and gives intervals within
// the bounds.
func FuzzScheduler(f *testing.F) {
	recs, _ := skewed(popSize(50, raceEnabled), 9)
	s, _ := New(Options{Budget: 1})
	for _, r := range recs {
		s.Update(Record{}, r)
	}
	b, _ := s.MarshalBinary()
	f.Add(b)
	f.Add([]byte("RVSC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, _ := New(Options{Budget: 1, Min: time.Second, Max: time.Hour})
		if err := s.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		out, _ := s.MarshalBinary()
		if !bytes.Equal(out, b) {
			t.Fatal("re-encoded differently")
		}
		if iv := s.IntervalForRate(0.01); iv < time.Second || iv > time.Hour {
			t.Fatalf("interval %v outside the bounds", iv)
		}
	})
}

func TestPolicyAndOptions(t *testing.T) {
	for _, p := range []Policy{Adaptive, Uniform, Proportional} {
		got, err := ParsePolicy(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePolicy(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParsePolicy("fifo"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ParsePolicy(fifo): %v, want ErrInvalidOptions", err)
	}
	var o Options
	o.EnsureDefaults()
	if o.Min != DefaultMin || o.Max != DefaultMax || o.Policy != Adaptive {
		t.Errorf("defaults %+v", o)
	}
	for i, bad := range []Options{
		{Min: -1},
		{Min: time.Hour, Max: time.Minute},
		{Budget: -1},
		{Budget: math.NaN()},
		{Budget: math.Inf(1)},
		{Policy: 7},
	} {
		if _, err := New(bad); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%d: New(%+v): %v, want ErrInvalidOptions", i, bad, err)
		}
	}
}

// TestFreshnessFormulas checks Freshness and Age against a simulation of
// a Poisson page visited at a regular interval.
func TestFreshnessFormulas(t *testing.T) {
	const seed = 10
	rng := rand.New(rand.NewPCG(seed, 35))
	for _, x := range []float64{0.1, 1, 5} {
		const lambda, visits = 1.0, 20000
		interval := x / lambda
		var fresh, age float64
		p := newPoisson(lambda, rng)
		for i := range visits {
			start := float64(i) * interval
			p.changedBy(start) // the visit at start captures the page
			if first := p.next; first < start+interval {
				fresh += first - start
				age += (start + interval - first) * (start + interval - first) / 2
			} else {
				fresh += interval
			}
		}
		T := visits * interval
		if got, want := fresh/T, Freshness(lambda, 1/interval); math.Abs(got-want) > 0.01 {
			t.Errorf("λ/f %g: simulated freshness %.4f, formula %.4f (seed %d)", x, got, want, seed)
		}
		if got, want := age/T, Age(lambda, 1/interval); math.Abs(got/want-1) > 0.03 {
			t.Errorf("λ/f %g: simulated age %.4f, formula %.4f (seed %d)", x, got, want, seed)
		}
	}
	if math.Abs(marginalInverse(marginal(2.5))-2.5) > 1e-9 || math.Abs(marginalInverse(marginal(1e-3))-1e-3) > 1e-12 {
		t.Error("marginalInverse does not invert marginal")
	}
}

func ExampleScheduler() {
	s, _ := New(Options{Min: time.Minute, Max: 24 * time.Hour, Budget: 1, Policy: Adaptive})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var r Record
	r.Observe(t0, false) // the first capture
	s.Update(Record{}, r)
	old := r
	r.Observe(t0.Add(time.Hour), true) // the page had changed
	s.Update(old, r)
	r.Interval = s.Interval(r)
	fmt.Println(r.Visits, r.Changes, r.Interval >= time.Minute && r.Interval <= 24*time.Hour)
	// Output: 1 1 true
}

// TestSchedulerMatchesPlan: the Scheduler's intervals, solved over its
// histogram, are within a few percent of Plan's, solved exactly over the
// same estimated rates.
func TestSchedulerMatchesPlan(t *testing.T) {
	all, _ := skewed(popSize(3000, raceEnabled), 11)
	var recs []Record // Plan knows no saturated records
	for _, r := range all {
		if !saturated(r) {
			recs = append(recs, r)
		}
	}
	rates := make([]float64, len(recs))
	for i, r := range recs {
		rates[i] = r.Rate()
	}
	for _, p := range []Policy{Uniform, Proportional, Adaptive} {
		o := Options{Min: 10 * time.Second, Max: 24 * time.Hour, Budget: 3, Policy: p}
		s := newScheduler(t, o, recs)
		want, err := Plan(rates, o)
		if err != nil {
			t.Fatal(err)
		}
		// Near the cutoff μλ = 1 the interval is steep in μ, so single
		// pages can differ more; the mean difference and the expected
		// freshness must agree.
		var diff, fs, fp float64
		for i, r := range recs {
			iv := s.Interval(r)
			diff += math.Abs(iv.Seconds()/want[i].Seconds() - 1)
			fs += Freshness(rates[i], 1/iv.Seconds())
			fp += Freshness(rates[i], 1/want[i].Seconds())
		}
		diff /= float64(len(recs))
		t.Logf("%v: mean interval difference %.2f%%, freshness %.4f vs exact %.4f", p, 100*diff, fs/float64(len(recs)), fp/float64(len(recs)))
		if diff > 0.02 || math.Abs(fs/fp-1) > 0.002 {
			t.Errorf("%v: intervals differ from the exact plan's by %.2f%% on average, freshness %.4f vs %.4f", p, 100*diff, fs, fp)
		}
	}
}
