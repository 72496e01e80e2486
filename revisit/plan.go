package revisit

import (
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
		if o.Policy != Uniform {
			mult = solveMultiplier(o.Policy, o.Budget, 0, sum)
		}
	}
	out := make([]time.Duration, len(rates))
	for i, r := range rates {
		out[i] = s.clampInterval(s.frequency(r, mult, uni))
	}
	return out, nil
}
