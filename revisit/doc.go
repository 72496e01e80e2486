// Package revisit schedules the revisits of a continuous crawl: it
// estimates each page's change rate from what its visits saw and chooses
// the interval of its next visit so that the collection stays as fresh as
// a fetch budget allows. It is a pure library: no I/O, no clock (every
// time is passed in), no dependency on the crawler.
//
// # Basics
//
// A crawl keeps a Record per scheduled URL (MarshalBinary: 73 bytes,
// versioned and checksummed) and one Scheduler. After each fetch it calls
// Record.ObserveModified(at, changed, modified) (modified: the response's
// Last-Modified on the crawler's clock, ModifiedAt; Observe when there is
// none), passes the old and new record to Scheduler.Update, and sets
// Record.Interval from Scheduler.Interval; the page is due again at
// Record.Due.
//
// # Estimating the change rate
//
// A page is modelled as a Poisson process of unknown rate λ; a visit only
// tells whether the page changed since the last one, not how often. With n
// visits at a regular interval I of which X found a change, the maximum
// likelihood estimate is -log((n - X)/n)/I, infinite when every visit saw a
// change; Cho and Garcia-Molina ("Estimating frequency of change", ACM
// TOIT 3(3), 2003, section 4) reduce its bias with
//
//	r̂ = -log((n - X + 0.5)/(n + 0.5)) / I.
//
// The naive X/(nI) counts at most one change per interval and so
// underestimates λ by a factor (1 - e^{-λI})/(λI): 37% low at λI = 1.
//
// A continuous crawl changes a page's interval as its estimate moves, so
// the intervals are irregular. For irregular access the paper's MLE solves
// Σ_{changed i} t_i/(e^{λ t_i} - 1) = Σ_{unchanged j} t_j, which needs every
// interval t_i; a Record is fixed-size, so it keeps two sums instead: the
// time Observed by all visits and the part Changed by the visits that
// found a change. Rate treats the changed visits as if each lasted their
// mean tc = Changed/X; the MLE then has the closed form
// log(Observed/Tu)/tc with Tu = Observed - Changed the unchanged time, and
// its bias-reduced form, which is the paper's estimator exactly when the
// intervals are regular (Observed = nI, Tu = (n - X)I, tc = I), is
//
//	r̂ = log((Observed + tc/2) / (Tu + tc/2)) / tc.
//
// The approximation errs where the changed intervals differ widely from
// each other. With intervals spread uniformly over [0.2I, 1.8I] and n =
// 1000 (TestRateIrregular), its mean relative error is -0.0002, -0.013 and
// -0.056 at λI = 0.3, 1 and 2 (-0.18 at 4), where the regular formula with
// the mean interval gives -0.03, -0.10, -0.20 (-0.34) and the naive X/T
// -0.16, -0.41, -0.60.
//
// # Few visits
//
// With no change seen the estimator gives 0, after one visit as after a
// thousand; a page whose first revisit came too soon would go to Max at
// once. Rate therefore adds a prior pseudo-visit (PriorVisits, PriorChanges):
// one more visit, as long as the mean real one, that saw half a change.
// A page never seen to change gets a rate of about 1/(2(n+1)I), which
// falls as the unchanged time grows, so its interval lengthens to Max; a
// page seen to change is pulled towards that by one visit in n+1. A record
// without any revisit (Known false) has no rate: it is scheduled at the
// uniform share of the budget.
//
// # Dated changes
//
// A server that sends Last-Modified says more than whether the page
// changed: when. Cho and Garcia-Molina (TOIT 2003, section 5) estimate
// from it: a visit that found a change last made at time t before the
// visit contributes a change and t of exposure (the page stood unchanged
// for t: likelihood λe^{-λt}), an unchanged visit its interval I
// (e^{-λI}), so the MLE is X/E, the changes over the exposure, exact
// whatever the intervals and unbounded where the visits saturate. A Record
// keeps the dated changes (Dated, DatedSpan their intervals, Exposure the
// sum of their t) beside the undated ones, and the age of the version the
// first fetch found (Age, unchanged time before the first fetch; the
// change that began it is not counted, as it may have been the page's
// creation). Rate maximizes the joint likelihood λ^Xd·e^{-λE}·(1 -
// e^{-λ tc})^Xn (Xn undated changes of mean interval tc), shrunk by half
// a dated change over the mean visit's exposure: X/E in closed form
// without undated changes, else Newton's method on the score. A
// Last-Modified counts only when it makes sense: after the previous
// fetch, and a second or more before this one (a server that dates every
// response now, as many generated pages do, dates nothing); ModifiedAt
// takes the page's age by the server's own clock (Date minus
// Last-Modified), so a server clock that is off does not matter.
// TestRateDated: from λI = 0.6 to 60 the mean relative error is within
// 0.04 and the mean absolute error 0.09-0.11, where the undated estimator
// is off by 0.33 at λI = 6 and 0.93 at 60 (a lower bound only).
//
// # Saturated visits
//
// A visit that found a change after an interval in which the estimate
// expects Saturated (4) changes or more is not counted (Record.Observe):
// the MLE gives it no weight, and counting it would stretch tc.
//
// # Choosing intervals
//
// The freshness of a page of rate λ revisited at a regular frequency f is
// F(λ, f) = (f/λ)(1 - e^{-λ/f}) (Cho and Garcia-Molina, "Synchronizing a
// database to improve freshness", SIGMOD 2000, and "Effective page refresh
// policies for web crawlers", ACM TODS 28(4), 2003). Maximizing the mean
// of F over the pages subject to Σ f_i = B (the budget) sets, by
// Lagrange, ∂F/∂f = μ for every page visited. With x = λ/f,
//
//	∂F/∂f = (1 - (1 + x)e^{-x}) / λ = g(x)/λ,
//
// g increasing from 0 to 1, so f = λ / g⁻¹(μλ) when μλ < 1, and f = 0 (the
// page is not worth visiting) when μλ >= 1: pages that change faster than
// the budget can follow get less, not more. As λ → 0, f ≈ √(λ/2μ) → 0.
// Policies:
//
//   - Uniform: f = B/N for all N pages.
//   - Proportional: f = κλ with κ such that Σ f = B (the paper shows it is
//     worse than Uniform).
//   - Adaptive: the optimum above; μ such that Σ f = B.
//
// Every frequency is clamped to [1/Max, 1/Min]; a page with rate 0, and
// an Adaptive page with μλ >= 1, is visited at Max; pages without
// evidence get the uniform B/N. The multiplier (κ or μ) is solved by
// bisection on its logarithm, the planned rate being monotone in it,
// against a bounded summary of the population: a histogram of the
// estimated rates with 16 log-spaced buckets per decade from 1e-8 to 1e3
// changes per second (each bucket standing for its geometric centre, a
// 7.5% spread), plus counts of pages without evidence and of pages with
// rate 0 (and the saturated classes below). Its memory (and
// MarshalBinary, 1,580 bytes) does not depend on the number of pages. A
// page's own interval uses its own rate with the solved multiplier. The solve runs again when more than 1/64 of the
// population has been updated since the last.
//
// # Pages faster than their visits
//
// A page that changes far faster than it is visited changes before every
// visit, and the estimate of n visits that all found a change,
// log(2n + 1)/I, is only a lower bound. Adaptive would settle such a page
// where it still changes at every visit, just below the cutoff μλ = 1,
// and never learn that it is too fast to follow (measured: it kept the
// fastest 30% of the pages of the freshness experiment at about the
// uniform interval, where the optimum visits them at Max). So under
// Adaptive with a budget a saturated record (Known, every visit changed)
// (Known, every visit changed, none dated: Last-Modified makes a fast
// page's rate known) is tested instead of scheduled by its estimate: it
// is probed at μ, the
// mean change interval of a page at the cutoff (within the bounds); a
// probe that finds no change ends the test (the record has an unchanged
// visit and is estimated as usual), one that finds a change is followed
// by a wait of the probe doubled per visit of the record (up to 2^16
// probes or Max), then another probe. A page too fast for the budget thus
// ends at Max, two fetches per Max; a slower page whose first visits all
// happened to find a change is back after a probe or two. The population
// summary counts saturated records by visits (17 classes) and plans each
// at two fetches per probe plus wait, so the budget stays spent as
// planned. In the freshness experiment this took Adaptive from 1.027x to
// 1.067x Uniform's freshness (the optimum with the true rates: 1.105x).
//
// # Pages that do not change
//
// The prior makes a page never seen to change look slow, not still: its
// estimate falls like 1/T and its Adaptive interval grows only like √T.
// So under Adaptive with a budget a record that shows the page still
// (Record.Still) is visited at Max, and counted with the pages of rate 0,
// until a visit finds a change. Without a Last-Modified: its visits have
// found no change in a time of at least Max. A page of rate λ passes that
// test by chance with probability e^{-λ·Max}: 2% for a page changing
// every 6 hours at the default Max of a day, which the optimum would
// visit rarely anyway. With one: no visit found a change and the visits
// and the first version's age cover StillDated (7) times Max, so a page
// last modified months ago is visited at Max from its first fetch, and a
// slow page (a day between changes) is not taken for a still one because
// its first visits saw no change. Measured (crawler experiment
// freshness, 48 h, 5 runs): without dates the never-changing pages are
// fetched 9 times what Max allows (the first day spent learning), with
// dates 1.14 times.
//
// # Without a budget
//
// With Budget 0 there is nothing to spread: Uniform visits at Min, and
// Proportional and Adaptive once per expected change, 1/λ, within the
// bounds.
//
// # Caveats
//
// The Scheduler's methods are safe for concurrent use; a Record is a value
// that the caller serializes. The population summary is only as right as
// the Updates: Update must be given the record exactly as last passed
// (its rate decides its bucket), and Interval must see the record's
// Interval field as set at the fetch before (the probing of saturated
// pages reads it). On resume the summary can be restored
// with UnmarshalBinary or rebuilt by Updating from the zero Record with
// every stored record. The model assumes Poisson changes and that a visit
// detects every change (conditional requests with validators do); a site
// whose changes are periodic or bursty is estimated by its mean rate.
package revisit
