package revisit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"net/http"
	"time"
)

// ErrCorrupt is wrapped by every error of the decoders (Record and
// Scheduler UnmarshalBinary): the bytes are not an encoding this package
// wrote, or were damaged.
var ErrCorrupt = errors.New("revisit: corrupt encoding")

// Record is what a crawl keeps per scheduled URL: the evidence of its
// change rate and the time of its next visit. Its zero value is a URL
// never fetched. It is a value type; callers serialize access to it.
type Record struct {
	// Visits counts the revisits with a definite answer (changed or
	// unchanged) after the first capture, but for the saturated ones
	// (Observe).
	Visits uint32
	// Changes counts the visits of Visits that found the page changed.
	Changes uint32
	// Observed is the total time covered by the visits: the sum of the
	// intervals between each visit and the fetch before it.
	Observed time.Duration
	// Changed is the part of Observed covered by the visits that found a
	// change: the sum of their intervals. It lets Rate treat irregular
	// intervals (see doc.go).
	Changed time.Duration
	// Last is the time of the last fetch; zero before the first.
	Last time.Time
	// Interval is the interval chosen at the last fetch: the next visit
	// is due at Last + Interval.
	Interval time.Duration
	// Dated counts the changes of Changes whose time the server's
	// Last-Modified told (ObserveModified); DatedSpan is the part of
	// Changed covered by their visits.
	Dated     uint32
	DatedSpan time.Duration
	// Exposure is, summed over the dated changes, the time from the
	// change to the visit that found it: time the page stood unchanged
	// beyond what the visits' answers say. With dated changes the estimate
	// is the last-modified estimator of Cho and Garcia-Molina (doc.go,
	// "Dated changes").
	Exposure time.Duration
	// Age is the age of the version the first fetch found, by its
	// Last-Modified (0 when the server did not date it): unchanged time
	// before the first fetch, for the rate and for Still.
	Age time.Duration
}

// Observe records a fetch at time at. The first fetch (Last is zero) only
// sets Last; every later one is a revisit that found the page changed or
// not, covering the interval since Last. A fetch at or before Last (a
// clock that went backwards) counts as a visit of zero length, which adds
// evidence of nothing but the answer.
//
// A revisit that found a change after an interval in which the current
// estimate expects at least Saturated changes is not counted (only Last
// moves): it tells nothing about the rate (its term t/(e^{λt} - 1) in the
// maximum-likelihood equation of doc.go vanishes), while counting it would
// stretch the mean changed interval and pull the estimate down, so that a
// page sent to a long interval because it changes too fast would look
// slow again.
func (r *Record) Observe(at time.Time, changed bool) {
	r.ObserveModified(at, changed, time.Time{})
}

// ObserveModified is Observe with the time the server says the page it
// answered was last modified (its Last-Modified, on the crawler's clock:
// ModifiedAt), or the zero time when it said none. At the first fetch a
// modification time a second or more before at is the age of the version
// found, time the page stood unchanged (Age). At a revisit that found
// a change, a modification time after the previous fetch and a second or
// more before at dates the change: the page changed then and not since,
// which the estimate uses in full (no saturation: such a visit is counted
// whatever the interval). A modification time outside that window (a
// server whose Last-Modified does not follow its content, one that dates
// every response now, a clock far off) is ignored, and the visit counts as
// an undated change. An unchanged visit ignores it.
func (r *Record) ObserveModified(at time.Time, changed bool, modified time.Time) {
	if r.Last.IsZero() {
		if !modified.IsZero() && at.Sub(modified) >= dateResolution {
			r.Age = at.Sub(modified)
		}
		r.Last = at
		return
	}
	d := at.Sub(r.Last)
	if d < 0 {
		d = 0
	}
	dated := changed && !modified.IsZero() && modified.After(r.Last) && at.Sub(modified) >= dateResolution
	if changed && !dated && r.Rate()*d.Seconds() >= Saturated {
		r.Last = at
		return
	}
	if r.Visits < math.MaxUint32 {
		r.Visits++
		r.Observed = satAdd(r.Observed, d)
		if changed {
			r.Changes++
			r.Changed = satAdd(r.Changed, d)
		}
		if dated {
			r.Dated++
			r.DatedSpan = satAdd(r.DatedSpan, d)
			r.Exposure = satAdd(r.Exposure, at.Sub(modified))
		}
	}
	r.Last = at
}

// dateResolution is an HTTP date's: a version dated less than this before
// the fetch may be one a server dates at every request (Last-Modified
// the time of the response, as many generated pages send), so it dates
// nothing.
const dateResolution = time.Second

// ModifiedFromHeader is ModifiedAt on a response's header fields: its
// Last-Modified and Date as HTTP dates; one that does not parse counts as
// absent.
func ModifiedFromHeader(fetched time.Time, h http.Header) time.Time {
	lm, err := http.ParseTime(h.Get("Last-Modified"))
	if err != nil {
		return time.Time{}
	}
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		date = time.Time{}
	}
	return ModifiedAt(fetched, date, lm)
}

// ModifiedAt converts a response's Last-Modified to the crawler's clock:
// fetched minus the page's age by the server's own clock (its Date header,
// serverDate, less lastModified), so that a server whose clock is off
// still dates its changes right. Without a Date (zero) or with one before
// Last-Modified it returns lastModified as it is. A zero lastModified
// gives the zero time.
func ModifiedAt(fetched, serverDate, lastModified time.Time) time.Time {
	if lastModified.IsZero() {
		return time.Time{}
	}
	if serverDate.IsZero() || serverDate.Before(lastModified) {
		return lastModified
	}
	return fetched.Add(-serverDate.Sub(lastModified))
}

// Saturated is the number of changes the estimate expects in an interval
// beyond which a visit that found a change is not counted by Observe: a
// page of the estimated rate stays unchanged that long with probability
// e^-4 < 2%.
const Saturated = 4.0

func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Due returns the time the next visit is due: Last + Interval.
func (r Record) Due() time.Time { return r.Last.Add(r.Interval) }

// Known reports whether the record holds any evidence of the page's
// change rate: at least one revisit covering a positive time.
func (r Record) Known() bool { return r.Visits > 0 && r.Observed > 0 }

// Still reports whether the record shows the page unchanged for long
// enough to be visited at d (Max) as one of rate 0 (doc.go, "Pages that
// do not change"): no visit found a change, and either the visits cover d
// or, when the server dated the version the first fetch found
// (Last-Modified), the visits and that version's age cover StillDated
// times d.
func (r Record) Still(d time.Duration) bool {
	if r.Changes != 0 {
		return false
	}
	if r.Age > 0 {
		return satAdd(r.Observed, r.Age) >= StillDated*d
	}
	return r.Known() && r.Observed >= d
}

// StillDated is how many Max a dated page must have stood unchanged to be
// visited at Max (Record.Still).
const StillDated = 7

// Rate returns the estimated change rate of the page, in changes per
// second: the bias-reduced estimator of Cho and Garcia-Molina (2003) for a
// Poisson process, generalized to irregular intervals and shrunk by one
// prior pseudo-visit (doc.go has the formula and why). It is 0 for a
// record without evidence (Known is false) and positive otherwise.
func (r Record) Rate() float64 {
	if !r.Known() {
		return 0
	}
	if r.Dated == 0 && r.Age == 0 {
		return EstimateRate(int(r.Visits), int(r.Changes), r.Observed.Seconds(), r.Changed.Seconds())
	}
	return estimateDated(r)
}

// estimateDated is Rate for a record with dated evidence: the maximum of
// the likelihood of Cho and Garcia-Molina's last-modified estimator
// (TOIT 2003, section 5), λ^Xd·e^{-λE}, times that of the undated
// changes, (1 - e^{-λ tc})^Xn with tc their mean interval, shrunk by the
// prior pseudo-visit: half a dated change and the mean visit's exposure.
// It solves Xn·tc/(e^{λ tc} - 1) + Xd/λ = E by Newton's method.
func estimateDated(r Record) float64 {
	n := float64(r.Visits)
	xd := float64(r.Dated) + PriorChanges
	xn := float64(r.Changes - r.Dated)
	// The first version's age is unchanged time too (leaving out the
	// change that began it: it may have been the page's creation).
	e := r.Observed.Seconds() - r.Changed.Seconds() + r.Exposure.Seconds() + r.Age.Seconds()
	// The pseudo-visit's exposure is the mean real visit's: the first
	// fetch's age counts as one.
	e += PriorVisits * e / (n + 1)
	e = max(e, dateResolution.Seconds()) // a decoded record may hold no exposure
	if xn == 0 {
		return xd / e
	}
	tc := (r.Changed - r.DatedSpan).Seconds() / xn
	if !(tc > 0) {
		return xd / e
	}
	// f falls and is convex in λ, so Newton's method from a point where
	// f > 0 climbs to the root without overshooting it: from the dated
	// changes' own estimate with the undated intervals as exposure.
	l := xd / (e + xn*tc)
	for range 100 {
		x := l * tc
		em := math.Expm1(x)
		f := xn*tc/em + xd/l - e
		df := -xn*tc*tc*(em+1)/(em*em) - xd/(l*l)
		step := -f / df
		if !(step > 0) || math.IsInf(em, 1) {
			break
		}
		l += step
		if step < 1e-12*l {
			break
		}
	}
	return l
}

// PriorVisits and PriorChanges are the pseudo-observation EstimateRate
// adds: one visit as long as the mean real one that found half a change.
const (
	PriorVisits  = 1.0
	PriorChanges = 0.5
)

// EstimateRate is Record.Rate on plain numbers: n visits covering
// observed seconds, x of them (covering changed seconds) finding a change.
// It returns 0 when n or observed is not positive.
func EstimateRate(n, x int, observed, changed float64) float64 {
	if n <= 0 || !(observed > 0) {
		return 0
	}
	if x > n {
		x = n
	}
	if x < 0 {
		x = 0
	}
	if changed > observed {
		changed = observed
	}
	if changed < 0 {
		changed = 0
	}
	mean := observed / float64(n)
	// The prior pseudo-visit (doc.go, "Few visits").
	xp := float64(x) + PriorChanges
	obs := observed + PriorVisits*mean
	chg := changed + PriorChanges*mean
	tc := chg / xp // mean interval of the visits that found a change
	tu := obs - chg
	// Cho and Garcia-Molina's bias-reduced estimator,
	// -log((n - X + 0.5)/(n + 0.5)) / I, written with times:
	// n·I = obs, (n - X)·I = tu, and I = tc.
	return math.Log((obs+0.5*tc)/(tu+0.5*tc)) / tc
}

// RateNaive is the naive estimator X/T: changes detected per second
// observed. It ignores the changes a visit cannot see (two changes between
// visits count as one), so it underestimates a rate that is not small
// against the visit frequency; kept for comparison in tests and
// experiments.
func RateNaive(n, x int, observed float64) float64 {
	if n <= 0 || !(observed > 0) {
		return 0
	}
	return float64(x) / observed
}

// recordVersion is the first byte of an encoded Record; records of
// version 1 (RecordSizeV1 bytes, before Dated, DatedSpan, Exposure and
// Age)
// still decode, with those zero.
const (
	recordVersion   = 2
	recordVersionV1 = 1
)

// RecordSize is the length of an encoded Record: a version byte, Visits,
// Changes, Observed, Changed, Last (Unix nanoseconds, 0 for the zero
// time), Interval, Dated, DatedSpan, Exposure, Age, and a CRC-32C of the bytes
// before it, all big-endian. RecordSizeV1 is version 1's, without Dated,
// DatedSpan, Exposure and Age.
const (
	RecordSize   = 1 + 4 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 8 + 8 + 4
	RecordSizeV1 = 1 + 4 + 4 + 8 + 8 + 8 + 8 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalBinary encodes r in RecordSize bytes. The time zone and the
// monotonic reading of Last are not kept; Last before 1678 or after 2262
// (outside Unix nanoseconds) is an error.
func (r Record) MarshalBinary() ([]byte, error) {
	var last int64
	if !r.Last.IsZero() {
		last = r.Last.UnixNano()
		if !time.Unix(0, last).Equal(r.Last) || last == 0 {
			return nil, fmt.Errorf("revisit: record time %v cannot be encoded", r.Last)
		}
	}
	b := make([]byte, RecordSize)
	b[0] = recordVersion
	binary.BigEndian.PutUint32(b[1:], r.Visits)
	binary.BigEndian.PutUint32(b[5:], r.Changes)
	binary.BigEndian.PutUint64(b[9:], uint64(r.Observed))
	binary.BigEndian.PutUint64(b[17:], uint64(r.Changed))
	binary.BigEndian.PutUint64(b[25:], uint64(last))
	binary.BigEndian.PutUint64(b[33:], uint64(r.Interval))
	binary.BigEndian.PutUint32(b[41:], r.Dated)
	binary.BigEndian.PutUint64(b[45:], uint64(r.DatedSpan))
	binary.BigEndian.PutUint64(b[53:], uint64(r.Exposure))
	binary.BigEndian.PutUint64(b[61:], uint64(r.Age))
	binary.BigEndian.PutUint32(b[69:], crc32.Checksum(b[:69], castagnoli))
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote, of this version or
// version 1. Errors wrap ErrCorrupt; on error r is unchanged.
func (r *Record) UnmarshalBinary(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty record", ErrCorrupt)
	}
	size := RecordSize
	switch b[0] {
	case recordVersion:
	case recordVersionV1:
		size = RecordSizeV1
	default:
		return fmt.Errorf("%w: record version %d, want %d or %d", ErrCorrupt, b[0], recordVersionV1, recordVersion)
	}
	if len(b) != size {
		return fmt.Errorf("%w: record of version %d is %d bytes, want %d", ErrCorrupt, b[0], len(b), size)
	}
	if got, want := binary.BigEndian.Uint32(b[size-4:]), crc32.Checksum(b[:size-4], castagnoli); got != want {
		return fmt.Errorf("%w: record checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	v := Record{
		Visits:   binary.BigEndian.Uint32(b[1:]),
		Changes:  binary.BigEndian.Uint32(b[5:]),
		Observed: time.Duration(binary.BigEndian.Uint64(b[9:])),
		Changed:  time.Duration(binary.BigEndian.Uint64(b[17:])),
		Interval: time.Duration(binary.BigEndian.Uint64(b[33:])),
	}
	if size == RecordSize {
		v.Dated = binary.BigEndian.Uint32(b[41:])
		v.DatedSpan = time.Duration(binary.BigEndian.Uint64(b[45:]))
		v.Exposure = time.Duration(binary.BigEndian.Uint64(b[53:]))
		v.Age = time.Duration(binary.BigEndian.Uint64(b[61:]))
	}
	if last := int64(binary.BigEndian.Uint64(b[25:])); last != 0 {
		v.Last = time.Unix(0, last)
	}
	switch {
	case v.Changes > v.Visits:
		return fmt.Errorf("%w: record has %d changes in %d visits", ErrCorrupt, v.Changes, v.Visits)
	case v.Observed < 0 || v.Changed < 0 || v.Changed > v.Observed:
		return fmt.Errorf("%w: record times %v changed of %v observed", ErrCorrupt, v.Changed, v.Observed)
	case v.Interval < 0:
		return fmt.Errorf("%w: record interval %v is negative", ErrCorrupt, v.Interval)
	case v.Dated > v.Changes || v.DatedSpan < 0 || v.DatedSpan > v.Changed:
		return fmt.Errorf("%w: record has %d dated changes over %v of %d changes over %v", ErrCorrupt, v.Dated, v.DatedSpan, v.Changes, v.Changed)
	case v.Exposure < 0 || v.Age < 0:
		return fmt.Errorf("%w: record exposure %v or age %v is negative", ErrCorrupt, v.Exposure, v.Age)
	}
	*r = v
	return nil
}
