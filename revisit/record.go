package revisit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
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
	if r.Last.IsZero() {
		r.Last = at
		return
	}
	d := at.Sub(r.Last)
	if d < 0 {
		d = 0
	}
	if changed && r.Rate()*d.Seconds() >= Saturated {
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
	}
	r.Last = at
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

// Rate returns the estimated change rate of the page, in changes per
// second: the bias-reduced estimator of Cho and Garcia-Molina (2003) for a
// Poisson process, generalized to irregular intervals and shrunk by one
// prior pseudo-visit (doc.go has the formula and why). It is 0 for a
// record without evidence (Known is false) and positive otherwise.
func (r Record) Rate() float64 {
	if !r.Known() {
		return 0
	}
	return EstimateRate(int(r.Visits), int(r.Changes), r.Observed.Seconds(), r.Changed.Seconds())
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

// recordVersion is the first byte of an encoded Record.
const recordVersion = 1

// RecordSize is the length of an encoded Record: a version byte, Visits,
// Changes, Observed, Changed, Last (Unix nanoseconds, 0 for the zero
// time), Interval, and a CRC-32C of the bytes before it, all big-endian.
const RecordSize = 1 + 4 + 4 + 8 + 8 + 8 + 8 + 4

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
	binary.BigEndian.PutUint32(b[41:], crc32.Checksum(b[:41], castagnoli))
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote. Errors wrap
// ErrCorrupt; on error r is unchanged.
func (r *Record) UnmarshalBinary(b []byte) error {
	if len(b) != RecordSize {
		return fmt.Errorf("%w: record is %d bytes, want %d", ErrCorrupt, len(b), RecordSize)
	}
	if b[0] != recordVersion {
		return fmt.Errorf("%w: record version %d, want %d", ErrCorrupt, b[0], recordVersion)
	}
	if got, want := binary.BigEndian.Uint32(b[41:]), crc32.Checksum(b[:41], castagnoli); got != want {
		return fmt.Errorf("%w: record checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	v := Record{
		Visits:   binary.BigEndian.Uint32(b[1:]),
		Changes:  binary.BigEndian.Uint32(b[5:]),
		Observed: time.Duration(binary.BigEndian.Uint64(b[9:])),
		Changed:  time.Duration(binary.BigEndian.Uint64(b[17:])),
		Interval: time.Duration(binary.BigEndian.Uint64(b[33:])),
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
	}
	*r = v
	return nil
}
