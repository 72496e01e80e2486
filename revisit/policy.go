package revisit

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidOptions is wrapped by every error of Options.Validate and of
// ParsePolicy.
var ErrInvalidOptions = errors.New("revisit: invalid options")

// Policy is how a Scheduler spreads its budget over the pages.
type Policy int

const (
	// Adaptive maximizes the expected average freshness of the collection
	// under the budget (Cho and Garcia-Molina 2003): pages that change
	// faster than the budget can follow are visited less, not more. It is
	// the zero value and the default.
	Adaptive Policy = iota
	// Uniform visits every page at the same interval.
	Uniform
	// Proportional visits every page at a frequency proportional to its
	// estimated change rate.
	Proportional
)

var policyNames = [...]string{Adaptive: "adaptive", Uniform: "uniform", Proportional: "proportional"}

// String returns the policy's name, as ParsePolicy reads it.
func (p Policy) String() string {
	if p >= 0 && int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy reads "adaptive", "uniform" or "proportional".
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if s == n {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown policy %q (want adaptive, uniform or proportional)", ErrInvalidOptions, s)
}

// Defaults of Options.
const (
	DefaultMin = time.Minute
	DefaultMax = 24 * time.Hour
)

// Options configure a Scheduler. Zero fields take the default their
// comment documents.
type Options struct {
	// Min and Max bound every interval the Scheduler returns. Defaults
	// DefaultMin (1 minute: no page is refetched more often, whatever its
	// rate) and DefaultMax (24 hours: even a page never seen to change is
	// checked daily).
	Min, Max time.Duration
	// Budget is the total rate of revisits, in fetches per second, that
	// the schedule plans for over the whole population. 0 means no
	// budget: each page's interval follows from its own rate and the
	// bounds (doc.go, "Without a budget").
	Budget float64
	// Policy chooses how the budget is spread. Default Adaptive.
	Policy Policy
}

// EnsureDefaults sets the zero fields of o to their documented defaults.
func (o *Options) EnsureDefaults() {
	if o.Min == 0 {
		o.Min = DefaultMin
	}
	if o.Max == 0 {
		o.Max = DefaultMax
	}
}

// Validate reports the first invalid field, wrapping ErrInvalidOptions. It
// expects EnsureDefaults to have run.
func (o Options) Validate() error {
	switch {
	case o.Min <= 0:
		return fmt.Errorf("%w: Min %v is not positive", ErrInvalidOptions, o.Min)
	case o.Max < o.Min:
		return fmt.Errorf("%w: Max %v is below Min %v", ErrInvalidOptions, o.Max, o.Min)
	case o.Budget < 0 || math.IsNaN(o.Budget) || math.IsInf(o.Budget, 0):
		return fmt.Errorf("%w: Budget %v is not a finite non-negative rate", ErrInvalidOptions, o.Budget)
	case o.Policy < 0 || int(o.Policy) >= len(policyNames):
		return fmt.Errorf("%w: unknown %v", ErrInvalidOptions, o.Policy)
	}
	return nil
}

// Freshness is the expected freshness of a page changing as a Poisson
// process of rate lambda (per second) visited at regular frequency f (per
// second): the share of time its copy equals the live page,
// (f/λ)(1 - e^{-λ/f}) (Cho and Garcia-Molina 2003, eq. 4). It is 1 for
// λ = 0 and 0 for f = 0 < λ.
func Freshness(lambda, f float64) float64 {
	switch {
	case lambda <= 0:
		return 1
	case f <= 0:
		return 0
	}
	x := lambda / f
	if x < 1e-8 {
		return 1 - x/2
	}
	return -math.Expm1(-x) / x
}

// Age is the expected age of such a page: the average time by which its
// copy is out of date (0 while fresh), 1/f·(1/2 - 1/x + (1 - e^{-x})/x²)
// with x = λ/f (Cho and Garcia-Molina 2003). In seconds; +Inf for f = 0 <
// λ.
func Age(lambda, f float64) float64 {
	switch {
	case lambda <= 0:
		return 0
	case f <= 0:
		return math.Inf(1)
	}
	x := lambda / f
	if x < 1e-4 {
		return x / 6 / f // series: x/6 - x²/24 + ...
	}
	return (0.5 - 1/x + (-math.Expm1(-x))/(x*x)) / f
}

// marginal is g(x) = 1 - (1+x)e^{-x}, so that the derivative of Freshness
// with respect to f is g(λ/f)/λ. It increases from 0 to 1.
func marginal(x float64) float64 {
	if x < 1e-4 {
		return x * x / 2 * (1 - 2*x/3)
	}
	return -math.Expm1(-x) - x*math.Exp(-x)
}

// marginalInverse solves g(x) = y for y in (0, 1) by safeguarded Newton
// iteration (g' = x e^{-x}).
func marginalInverse(y float64) float64 {
	if y <= 0 {
		return 0
	}
	if y >= 1 {
		return math.Inf(1)
	}
	lo, hi := 0.0, 800.0
	x := math.Sqrt(2 * y)
	if y > 0.5 {
		x = -math.Log1p(-y) + math.Log1p(-math.Log1p(-y))
	}
	for range 100 {
		gx := marginal(x) - y
		if gx > 0 {
			hi = x
		} else {
			lo = x
		}
		d := x * math.Exp(-x)
		nx := x - gx/d
		if !(nx > lo && nx < hi) || d == 0 {
			nx = (lo + hi) / 2
		}
		if math.Abs(nx-x) <= 1e-13*x {
			return nx
		}
		x = nx
	}
	return x
}
