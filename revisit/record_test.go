package revisit

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// poisson is a page changing as a Poisson process of rate lambda (per
// second), its changes drawn as exponential gaps.
type poisson struct {
	lambda float64
	rng    *rand.Rand
	next   float64 // time of the next change, seconds
}

func newPoisson(lambda float64, rng *rand.Rand) *poisson {
	p := &poisson{lambda: lambda, rng: rng}
	p.next = p.gap()
	return p
}

func (p *poisson) gap() float64 {
	if p.lambda <= 0 {
		return math.Inf(1)
	}
	return p.rng.ExpFloat64() / p.lambda
}

// changedBy reports whether the page changed in (last visit, t], consuming
// the changes up to t.
func (p *poisson) changedBy(t float64) bool {
	changed := false
	for p.next <= t {
		changed = true
		p.next += p.gap()
	}
	return changed
}

// visit simulates n visits of a page of rate lambda at the intervals
// interval(i) returns (seconds) and returns the record they leave.
func visit(lambda float64, n int, rng *rand.Rand, interval func(i int) float64) Record {
	p := newPoisson(lambda, rng)
	t0 := time.Unix(1_700_000_000, 0)
	var r Record
	r.Observe(t0, false)
	t := 0.0
	for i := range n {
		t += interval(i)
		r.Observe(t0.Add(time.Duration(t*float64(time.Second))), p.changedBy(t))
	}
	return r
}

// TestRateConverges checks the estimator against known rates at regular
// intervals: the relative error of the mean over replications (the bias)
// is small, far smaller than the naive X/T's where λI is not small, and
// the spread shrinks like 1/√n, within twice the MLE's asymptotic standard
// deviation √(e^{λI} - 1)/(λI√n) at the 90th percentile.
func TestRateConverges(t *testing.T) {
	const reps = 300
	for _, tc := range []struct {
		x       float64 // λI
		n       int
		maxBias float64
	}{
		{0.1, 200, 0.05},
		{0.5, 50, 0.06},
		{0.5, 1000, 0.02},
		{1, 50, 0.08},
		{1, 200, 0.03},
		{1, 1000, 0.02},
		{2, 200, 0.04},
		{2, 1000, 0.02},
	} {
		if raceEnabled && tc.n > 200 {
			continue // 20 times slower: CI runs it once more without -race
		}
		seed := uint64(tc.n)*1000 + uint64(tc.x*100)
		t.Run(fmt.Sprintf("x=%g/n=%d", tc.x, tc.n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 35))
			const lambda = 1.0 / 600 // one change in 10 minutes
			interval := tc.x / lambda
			var errs []float64
			var sumCGM, sumNaive float64
			for range reps {
				r := visit(lambda, tc.n, rng, func(int) float64 { return interval })
				est := r.Rate()
				naive := RateNaive(int(r.Visits), int(r.Changes), r.Observed.Seconds())
				sumCGM += est
				sumNaive += naive
				errs = append(errs, math.Abs(est/lambda-1))
			}
			bias := sumCGM/reps/lambda - 1
			naiveBias := sumNaive/reps/lambda - 1
			slices.Sort(errs)
			p90 := errs[reps*9/10]
			sd := math.Sqrt(math.Expm1(tc.x)) / (tc.x * math.Sqrt(float64(tc.n)))
			t.Logf("seed %d: bias %+.4f (naive %+.4f), p90 relative error %.4f (asymptotic sd %.4f)", seed, bias, naiveBias, p90, sd)
			if math.Abs(bias) > tc.maxBias {
				t.Errorf("bias %+.4f, want within ±%g (seed %d)", bias, tc.maxBias, seed)
			}
			if tc.x >= 0.5 && math.Abs(bias) >= math.Abs(naiveBias)/3 {
				t.Errorf("bias %+.4f is not a third of the naive estimator's %+.4f (seed %d)", bias, naiveBias, seed)
			}
			if p90 > 2*sd+math.Abs(bias) {
				t.Errorf("90th percentile relative error %.4f, want <= 2 sd %.4f + bias (seed %d)", p90, 2*sd, seed)
			}
		})
	}
}

// TestRateIrregular checks the estimator with intervals spread uniformly
// over [0.2I, 1.8I] (a factor of 9), as an adaptive schedule makes them.
func TestRateIrregular(t *testing.T) {
	const n, seed = 1000, 7
	reps := 300
	if raceEnabled {
		reps = 100 // CI runs it once more without -race
	}
	rng := rand.New(rand.NewPCG(seed, 35))
	for _, tc := range []struct{ x, maxBias float64 }{{0.3, 0.02}, {1, 0.03}, {2, 0.08}} {
		x := tc.x
		const lambda = 1.0 / 60
		mean := x / lambda
		var sum, sumNaive float64
		for range reps {
			r := visit(lambda, n, rng, func(int) float64 { return mean * (0.2 + 1.6*rng.Float64()) })
			sum += r.Rate()
			sumNaive += RateNaive(int(r.Visits), int(r.Changes), r.Observed.Seconds())
		}
		bias, naiveBias := sum/float64(reps)/lambda-1, sumNaive/float64(reps)/lambda-1
		t.Logf("seed %d, λI %g: bias %+.4f (naive %+.4f)", seed, x, bias, naiveBias)
		if math.Abs(bias) > tc.maxBias || math.Abs(bias) > math.Abs(naiveBias)/5 {
			t.Errorf("λI %g: bias %+.4f, want within ±%g and a fifth of the naive %+.4f (seed %d)", x, bias, tc.maxBias, naiveBias, seed)
		}
	}
}

// TestRatePrior: without a change seen, the estimate falls as the
// unchanged time grows; with no evidence it is 0; every change raises it.
func TestRatePrior(t *testing.T) {
	if got := EstimateRate(0, 0, 0, 0); got != 0 {
		t.Errorf("no visits: rate %g, want 0", got)
	}
	prev := math.Inf(1)
	for n := 1; n <= 1000; n *= 10 {
		r := EstimateRate(n, 0, float64(n)*60, 0)
		want := 1 / (2 * float64(n+1) * 60)
		if !(r > 0 && r < prev) || math.Abs(r/want-1) > 0.25 {
			t.Errorf("n %d unchanged visits of 60s: rate %g, want positive, below %g and near %g", n, r, prev, want)
		}
		prev = r
	}
	for x := 1; x <= 10; x++ {
		lo, hi := EstimateRate(10, x-1, 600, float64(x-1)*60), EstimateRate(10, x, 600, float64(x)*60)
		if !(hi > lo) || math.IsInf(hi, 0) {
			t.Errorf("10 visits: rate with %d changes %g, with %d %g: want finite and increasing", x-1, lo, x, hi)
		}
	}
}

func TestObserve(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var r Record
	r.Observe(t0, true) // the first capture is no visit
	if r.Visits != 0 || r.Known() || !r.Last.Equal(t0) || r.Rate() != 0 {
		t.Fatalf("after the first fetch: %+v", r)
	}
	r.Observe(t0.Add(time.Minute), true)
	r.Observe(t0.Add(3*time.Minute), false)
	r.Observe(t0.Add(2*time.Minute), false) // the clock went back
	want := Record{Visits: 3, Changes: 1, Observed: 3 * time.Minute, Changed: time.Minute, Last: t0.Add(2 * time.Minute)}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	r.Interval = time.Hour
	if !r.Due().Equal(t0.Add(62 * time.Minute)) {
		t.Errorf("Due %v, want Last + Interval", r.Due())
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []Record{
		{},
		{Visits: 3, Changes: 1, Observed: time.Hour, Changed: time.Minute, Last: time.Unix(1_700_000_000, 123), Interval: 90 * time.Second},
		{Visits: math.MaxUint32, Changes: math.MaxUint32, Observed: math.MaxInt64, Changed: math.MaxInt64, Last: time.Unix(0, -5), Interval: math.MaxInt64},
		{Visits: 4, Changes: 3, Observed: 4 * time.Hour, Changed: 3 * time.Hour, Dated: 2, DatedSpan: 2 * time.Hour, Exposure: 40 * time.Minute, Last: time.Unix(1_700_000_000, 0)},
		{Visits: math.MaxUint32, Changes: math.MaxUint32, Observed: math.MaxInt64, Changed: math.MaxInt64, Dated: math.MaxUint32, DatedSpan: math.MaxInt64, Exposure: math.MaxInt64, Age: math.MaxInt64, Last: time.Unix(7, 0)},
	} {
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != RecordSize {
			t.Errorf("encoded in %d bytes, want %d", len(b), RecordSize)
		}
		var got Record
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !got.Last.Equal(r.Last) || got.Last.IsZero() != r.Last.IsZero() {
			t.Errorf("Last %v, want %v", got.Last, r.Last)
		}
		got.Last = r.Last
		if got != r {
			t.Errorf("got %+v, want %+v", got, r)
		}
	}
	if _, err := (Record{Last: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}).MarshalBinary(); err == nil {
		t.Error("a time past 2262 was encoded")
	}
}

func TestRecordCorrupt(t *testing.T) {
	good, _ := Record{Visits: 2, Changes: 1, Observed: 2, Changed: 1, Last: time.Unix(5, 0)}.MarshalBinary()
	reseal := func(b []byte) []byte {
		// The checksum is recomputed so that the field checks are reached.
		b = bytes.Clone(b)
		n := len(b) - 4
		sum := crc(b[:n])
		b[n], b[n+1], b[n+2], b[n+3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
		return b
	}
	v1 := reseal(append([]byte{1}, good[1:RecordSizeV1]...))
	tests := map[string][]byte{
		"short":        good[:RecordSize-1],
		"version":      reseal(append([]byte{9}, good[1:]...)),
		"checksum":     append(bytes.Clone(good[:RecordSize-1]), good[RecordSize-1]^1),
		"changes":      reseal(func() []byte { b := bytes.Clone(good); b[8] = 3; return b }()),
		"changed time": reseal(func() []byte { b := bytes.Clone(good); b[24] = 9; return b }()),
		"interval":     reseal(func() []byte { b := bytes.Clone(good); b[33] = 0x80; return b }()),
		"dated":        reseal(func() []byte { b := bytes.Clone(good); b[44] = 2; return b }()),
		"dated span":   reseal(func() []byte { b := bytes.Clone(good); b[52] = 9; return b }()),
		"exposure":     reseal(func() []byte { b := bytes.Clone(good); b[53] = 0x80; return b }()),
		"age":          reseal(func() []byte { b := bytes.Clone(good); b[61] = 0x80; return b }()),
		"v1 length":    reseal(append(bytes.Clone(v1[:RecordSizeV1-4]), good[RecordSizeV1-4:]...)),
		"v2 length":    reseal(append([]byte{2}, v1[1:]...)),
	}
	var r1 Record
	if err := r1.UnmarshalBinary(v1); err != nil {
		t.Fatalf("version 1 record: %v", err)
	}
	if want := (Record{Visits: 2, Changes: 1, Observed: 2, Changed: 1, Last: time.Unix(5, 0)}); r1.Visits != want.Visits || r1.Changed != want.Changed || !r1.Last.Equal(want.Last) || r1.Dated != 0 || r1.Exposure != 0 {
		t.Errorf("version 1 record decoded to %+v, want %+v", r1, want)
	}
	for name, b := range tests {
		r := Record{Visits: 42}
		err := r.UnmarshalBinary(b)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: error %v, want ErrCorrupt", name, err)
		}
		if r.Visits != 42 {
			t.Errorf("%s: the record changed on error", name)
		}
	}
}

// FuzzRecord: any bytes decode to an error wrapping ErrCorrupt or to a
// record that encodes back to the same bytes and has a finite rate.
func FuzzRecord(f *testing.F) {
	b, _ := Record{Visits: 2, Changes: 1, Observed: time.Hour, Changed: time.Minute, Last: time.Unix(5, 0), Interval: time.Second}.MarshalBinary()
	f.Add(b)
	b, _ = Record{Visits: 3, Changes: 2, Observed: time.Hour, Changed: 40 * time.Minute, Dated: 1, DatedSpan: 20 * time.Minute, Exposure: time.Minute, Age: time.Hour, Last: time.Unix(5, 0)}.MarshalBinary()
	f.Add(b)
	f.Add(append([]byte{1}, b[1:RecordSizeV1]...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		if err := r.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		out, err := r.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", r, err)
		}
		if b[0] == 1 {
			// Version 1 is re-encoded as the current version, same fields.
			var again Record
			if err := again.UnmarshalBinary(out); err != nil || !again.Last.Equal(r.Last) || again.Visits != r.Visits || again.Observed != r.Observed || again.Changed != r.Changed || again.Interval != r.Interval {
				t.Fatalf("version 1 record %+v re-encoded to %+v (%v)", r, again, err)
			}
		} else if !bytes.Equal(out, b) {
			t.Fatalf("re-encoded %x, decoded from %x", out, b)
		}
		if rate := r.Rate(); math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
			t.Fatalf("%+v: rate %g", r, rate)
		}
	})
}
