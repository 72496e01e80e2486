package revisit

import (
	"math"
	"time"
)

// Plan returns the interval each page of a population of known rates
// (changes per second, one per page) gets under o: the policy solved
// exactly over the rates themselves, not over the Scheduler's histogram.
// It is the reference the Scheduler approximates, and the schedule a
// crawler that knew the true rates would follow.
func Plan(rates []float64, o Options) ([]time.Duration, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{opt: o}
	uni := 1 / o.Min.Seconds()
	var mult float64
	if o.Budget > 0 {
		uni = s.clampFreq(o.Budget / float64(max(len(rates), 1)))
		sum := func(m float64) float64 {
			t := 0.0
			for _, r := range rates {
				t += s.frequency(r, m, uni)
			}
			return t
		}
		lo, hi, increasing := -20.0, 30.0, false
		if o.Policy == Proportional {
			lo, hi, increasing = -30, 30, true
		}
		if o.Policy != Uniform {
			for range 80 {
				mid := (lo + hi) / 2
				if (sum(math.Exp(mid)) > o.Budget) == increasing {
					hi = mid
				} else {
					lo = mid
				}
			}
			mult = math.Exp((lo + hi) / 2)
		}
	}
	out := make([]time.Duration, len(rates))
	for i, r := range rates {
		out[i] = s.clampInterval(s.frequency(r, mult, uni))
	}
	return out, nil
}
