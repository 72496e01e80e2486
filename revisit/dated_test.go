package revisit

import (
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

// lastChange returns the time of the page's latest change at or before t
// (seconds; the Poisson process started at -inf, so before 0 it draws
// one gap back), consuming the changes up to t, and whether it changed
// in (since, t].
func (p *poisson) lastChange(since, t float64, prev *float64) (float64, bool) {
	changed := false
	for p.next <= t {
		*prev = p.next
		changed = changed || p.next > since
		p.next += p.gap()
	}
	return *prev, changed
}

// visitDated is visit with the server's Last-Modified: every revisit
// passes the time of the latest change (dated to the second, as an HTTP
// date is) to ObserveModified, and the first fetch the age of the version
// it found (the process ran before the first fetch). dates false passes
// none, as a server without Last-Modified.
func visitDated(lambda float64, n int, rng *rand.Rand, interval func(i int) float64, dates bool) Record {
	p := newPoisson(lambda, rng)
	prev := -p.gap() // memoryless: the change before 0
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var r Record
	first := time.Time{}
	if dates {
		first = at(prev).Truncate(time.Second)
	}
	r.ObserveModified(t0, false, first)
	t := 0.0
	for i := range n {
		last := t
		t += interval(i)
		lc, changed := p.lastChange(last, t, &prev)
		var modified time.Time
		if dates {
			modified = at(lc).Truncate(time.Second)
		}
		r.ObserveModified(at(t), changed, modified)
	}
	return r
}

// TestRateDated checks the last-modified estimator against known rates:
// unbiased within 5% and tight from λI = 0.6 on, and three times tighter
// than the undated estimator where the visits alone saturate (λI = 6 and
// 60: nearly every visit finds a change, so they tell only a lower bound).
func TestRateDated(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 5))
	const interval, visits, pages = 600.0, 100, 60
	regular := func(int) float64 { return interval }
	for _, lambda := range []float64{1e-4, 1e-3, 1e-2, 1e-1} {
		var dated, undated []float64
		for range pages {
			dated = append(dated, visitDated(lambda, visits, rng, regular, true).Rate()/lambda-1)
			undated = append(undated, visitDated(lambda, visits, rng, regular, false).Rate()/lambda-1)
		}
		bias, spread := meanAbs(dated)
		ubias, uspread := meanAbs(undated)
		t.Logf("λI = %g: dated relative error mean %+.3f (mean |e| %.3f), undated %+.3f (%.3f)", lambda*interval, bias, spread, ubias, uspread)
		// With λI = 0.06 the visits see about 6 changes: the prior's half
		// change (+8%) and the first version's age (an exponential draw
		// added to the exposure) weigh; the estimate is as a Poisson count
		// of 6 allows (relative deviation 1/√6 = 0.4).
		wantBias, wantSpread := 0.05, 0.15
		if lambda*interval < 0.1 {
			wantBias, wantSpread = 0.15, 0.5
		}
		if math.Abs(bias) > wantBias || spread > wantSpread {
			t.Errorf("λI = %g: dated estimate relative error mean %+.3f, mean |e| %.3f: want within %g and %g", lambda*interval, bias, spread, wantBias, wantSpread)
		}
		if lambda*interval >= 1 && spread > uspread/3 {
			t.Errorf("λI = %g: dated estimate mean |e| %.3f, want under a third of the undated %.3f", lambda*interval, spread, uspread)
		}
	}
}

func meanAbs(errs []float64) (mean, abs float64) {
	for _, e := range errs {
		mean += e
		abs += math.Abs(e)
	}
	return mean / float64(len(errs)), abs / float64(len(errs))
}

// TestObserveModified checks which Last-Modified values date a change.
func TestObserveModified(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	first := func(modified time.Time) Record {
		var r Record
		r.ObserveModified(t0, false, modified)
		return r
	}
	if r := first(t0.Add(-48 * time.Hour)); r.Age != 48*time.Hour || r.Known() {
		t.Errorf("first fetch of a version two days old: %+v, want Age 48h and no visit evidence yet", r)
	}
	for name, m := range map[string]time.Time{"none": {}, "now": t0, "half a second": t0.Add(-500 * time.Millisecond), "future": t0.Add(time.Hour)} {
		if r := first(m); r.Age != 0 {
			t.Errorf("first fetch, Last-Modified %s: Age %v, want 0", name, r.Age)
		}
	}
	base := first(time.Time{})
	at := t0.Add(time.Hour)
	tests := []struct {
		name     string
		changed  bool
		modified time.Time
		dated    bool
	}{
		{"within the interval", true, at.Add(-10 * time.Minute), true},
		{"at the previous fetch", true, t0, false},
		{"before the previous fetch", true, t0.Add(-time.Minute), false},
		{"at the fetch (dated every response)", true, at, false},
		{"after the fetch", true, at.Add(time.Minute), false},
		{"unchanged", false, at.Add(-10 * time.Minute), false},
	}
	for _, tc := range tests {
		r := base
		r.ObserveModified(at, tc.changed, tc.modified)
		if got := r.Dated == 1; got != tc.dated || r.Visits != 1 {
			t.Errorf("%s: %+v, want dated %v and one visit", tc.name, r, tc.dated)
		}
		if tc.dated && r.Exposure != 10*time.Minute {
			t.Errorf("%s: Exposure %v, want 10m", tc.name, r.Exposure)
		}
	}
	// A dated change is counted however long the interval: it says when the
	// page changed, not only that it did (Observe's saturation rule).
	r := Record{Visits: 10, Changes: 10, Observed: 10 * time.Minute, Changed: 10 * time.Minute, Last: t0}
	far := t0.Add(24 * time.Hour)
	undated, dated := r, r
	undated.ObserveModified(far, true, time.Time{})
	dated.ObserveModified(far, true, far.Add(-5*time.Second))
	if undated.Visits != 10 || dated.Visits != 11 || dated.Dated != 1 {
		t.Errorf("after a day: undated %d visits (want 10, not counted), dated %d visits %d dated (want 11, 1)", undated.Visits, dated.Visits, dated.Dated)
	}
}

func TestModifiedAt(t *testing.T) {
	fetched := time.Unix(1_700_000_000, 0)
	lm := time.Unix(1_000_000, 0)
	if got := ModifiedAt(fetched, time.Time{}, time.Time{}); !got.IsZero() {
		t.Errorf("no Last-Modified: %v, want zero", got)
	}
	if got := ModifiedAt(fetched, time.Time{}, lm); !got.Equal(lm) {
		t.Errorf("no Date: %v, want Last-Modified as it is", got)
	}
	// A server clock an hour behind: the age by its own clock counts.
	date := fetched.Add(-time.Hour)
	if got, want := ModifiedAt(fetched, date, date.Add(-10*time.Minute)), fetched.Add(-10*time.Minute); !got.Equal(want) {
		t.Errorf("server clock an hour behind: %v, want %v", got, want)
	}
	if got := ModifiedAt(fetched, lm.Add(-time.Second), lm); !got.Equal(lm) {
		t.Errorf("Date before Last-Modified: %v, want Last-Modified as it is", got)
	}
	h := http.Header{}
	h.Set("Date", date.UTC().Format(http.TimeFormat))
	h.Set("Last-Modified", date.Add(-10*time.Minute).UTC().Format(http.TimeFormat))
	if got, want := ModifiedFromHeader(fetched, h), fetched.Add(-10*time.Minute); !got.Equal(want) {
		t.Errorf("ModifiedFromHeader with Date an hour behind: %v, want %v", got, want)
	}
	h.Set("Last-Modified", "yesterday")
	if got := ModifiedFromHeader(fetched, h); !got.IsZero() {
		t.Errorf("ModifiedFromHeader with a Last-Modified that does not parse: %v, want zero", got)
	}
}

// TestStill checks when a page counts as one that does not change.
func TestStill(t *testing.T) {
	const max = 24 * time.Hour
	tests := []struct {
		name string
		r    Record
		want bool
	}{
		{"never fetched twice", Record{Last: time.Unix(1, 0)}, false},
		{"undated, unchanged over Max", Record{Visits: 5, Observed: max}, true},
		{"undated, unchanged under Max", Record{Visits: 5, Observed: max - time.Second}, false},
		{"undated, a change", Record{Visits: 5, Changes: 1, Observed: 10 * max, Changed: time.Hour}, false},
		{"dated a year old, first fetch", Record{Age: 365 * max}, true},
		{"dated a day old, visited a day", Record{Visits: 5, Observed: max, Age: max}, false},
		{"dated a day old, visited six", Record{Visits: 5, Observed: 6 * max, Age: max}, true},
		{"dated, a change", Record{Visits: 5, Changes: 1, Dated: 1, Observed: 10 * max, Changed: time.Hour, DatedSpan: time.Hour, Exposure: time.Minute, Age: 100 * max}, false},
	}
	for _, tc := range tests {
		if got := tc.r.Still(max); got != tc.want {
			t.Errorf("%s: Still %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSchedulerDated: under Adaptive with a budget, a page whose first
// fetch found a version far older than StillDated·Max goes to Max at
// once, and a page whose every visit found a change is not probed as
// saturated when the changes were dated: its rate is known.
func TestSchedulerDated(t *testing.T) {
	s, err := New(Options{Budget: 1, Max: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	var old Record
	old.ObserveModified(t0, false, t0.Add(-30*24*time.Hour))
	s.Update(Record{}, old)
	if got := s.Interval(old); got != 24*time.Hour {
		t.Errorf("a version a month old: interval %v, want Max", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fast := visitDated(1.0/120, 30, rng, func(int) float64 { return 600 }, true)
	if fast.Changes != fast.Visits || fast.Dated == 0 {
		t.Fatalf("setup: want every visit changed, some dated: %+v", fast)
	}
	if saturated(fast) {
		t.Errorf("a record with dated changes counts as saturated: %+v", fast)
	}
	if got := fast.Rate() * 120; got < 0.7 || got > 1.4 {
		t.Errorf("dated rate of a page changing every 2 minutes, visited every 10: %.2f of the true rate", got)
	}
}

// BenchmarkRate: the estimate of an undated record (closed form), of a
// dated one (closed form) and of one with both kinds of change
// (bisection).
func BenchmarkRate(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 5))
	regular := func(int) float64 { return 600 }
	mixed := visitDated(1.0/300, 50, rng, regular, true)
	mixed.Changes += 3
	mixed.Visits += 3
	mixed.Changed += 30 * time.Minute
	mixed.Observed += 30 * time.Minute
	for _, c := range []struct {
		name string
		r    Record
	}{
		{"undated", visitDated(1.0/300, 50, rng, regular, false)},
		{"dated", visitDated(1.0/300, 50, rng, regular, true)},
		{"mixed", mixed},
	} {
		b.Run(c.name, func(b *testing.B) {
			var sum float64
			for b.Loop() {
				sum += c.r.Rate()
			}
			if !(sum > 0) {
				b.Fatal("no rate")
			}
		})
	}
}

// TestRateMixedMaximizesLikelihood: with dated and undated changes, Rate
// is the maximum of the (prior-shrunk) likelihood, checked against a
// search over a fine grid of rates.
func TestRateMixedMaximizesLikelihood(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 13))
	for i := range 200 {
		n := 1 + rng.IntN(50)
		x := rng.IntN(n + 1)
		d := rng.IntN(x + 1)
		iv := 10 + rng.Float64()*1000
		r := Record{Visits: uint32(n), Changes: uint32(x), Dated: uint32(d),
			Observed:  time.Duration(float64(n) * iv * float64(time.Second)),
			Changed:   time.Duration(float64(x) * iv * float64(time.Second)),
			DatedSpan: time.Duration(float64(d) * iv * float64(time.Second)),
			Exposure:  time.Duration(float64(d) * iv * rng.Float64() * float64(time.Second)),
			Age:       time.Duration(rng.Float64() * 1e4 * float64(time.Second))}
		if d == 0 && r.Age == 0 {
			continue
		}
		got := r.Rate()
		// The likelihood Rate maximizes (record.go, estimateDated).
		xd, xn := float64(d)+PriorChanges, float64(x-d)
		e := r.Observed.Seconds() - r.Changed.Seconds() + r.Exposure.Seconds() + r.Age.Seconds()
		e = max(e+PriorVisits*e/float64(n+1), 1)
		tc := 0.0
		if xn > 0 {
			tc = (r.Changed - r.DatedSpan).Seconds() / xn
		}
		ll := func(l float64) float64 {
			v := xd*math.Log(l) - l*e
			if xn > 0 {
				v += xn * math.Log(-math.Expm1(-l*tc))
			}
			return v
		}
		best, bestL := math.Inf(-1), 0.0
		for k := -12000; k <= 3000; k++ {
			l := math.Pow(10, float64(k)/1000)
			if v := ll(l); v > best {
				best, bestL = v, l
			}
		}
		if math.Abs(got/bestL-1) > 0.005 {
			t.Errorf("record %d %+v: Rate %g, the likelihood's maximum on the grid %g", i, r, got, bestL)
		}
	}
}

// FuzzObserveModified: any sequence of fetches, answers and Last-Modified
// times (clocks going backwards, dates in the future or far past) leaves
// a record that encodes, decodes to itself and has a finite, non-negative
// rate, with its dated parts within its totals.
func FuzzObserveModified(f *testing.F) {
	f.Add([]byte{10, 1, 3, 200, 0, 0, 5, 1, 250})
	f.Add([]byte{0, 0, 0, 255, 1, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		at := time.Unix(1_700_000_000, 0)
		var r Record
		for len(b) >= 3 {
			// Steps of up to 255 minutes, back by a minute when odd; a
			// modification time from 127 minutes before to 128 after.
			step := time.Duration(b[0]) * time.Minute
			if b[0]%2 == 1 {
				step = -time.Minute
			}
			at = at.Add(step)
			modified := time.Time{}
			if b[2] != 0 {
				modified = at.Add(time.Duration(int(b[2])-127) * time.Minute)
			}
			r.ObserveModified(at, b[1]%2 == 1, modified)
			b = b[3:]
		}
		if r.Dated > r.Changes || r.DatedSpan > r.Changed || r.Changed > r.Observed || r.Exposure < 0 || r.Age < 0 {
			t.Fatalf("inconsistent record %+v", r)
		}
		if rate := r.Rate(); math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
			t.Fatalf("%+v: rate %g", r, rate)
		}
		enc, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back Record
		if err := back.UnmarshalBinary(enc); err != nil {
			t.Fatalf("%+v does not decode: %v", r, err)
		}
		if !back.Last.Equal(r.Last) {
			t.Fatalf("Last %v, want %v", back.Last, r.Last)
		}
		back.Last = r.Last
		if back != r {
			t.Fatalf("decoded %+v, want %+v", back, r)
		}
	})
}
