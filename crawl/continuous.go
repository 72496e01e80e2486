package crawl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/revisit"
	"github.com/layercrawl/layercrawl/storage"
)

// ContinuousOptions make a crawl continuous (Options.Continuous): it does
// not end when its queue is empty. Every URL it fetches is scheduled to be
// fetched again, after an interval the revisit Scheduler chooses from what
// the URL's earlier visits found (package revisit), and every revisit is a
// conditional request against the crawl's own capture history, archived as
// a revisit record of the earlier response when the page did not change.
// The crawl stops when Run's context ends (SIGTERM, --max-time) and resumes
// from its state like any crawl: the schedule and the per-URL records are
// in the store, written in the batch that completes each fetch. Local
// mode only.
type ContinuousOptions struct {
	// Revisit bounds the intervals (Min, default 1 minute; Max, default
	// 24 hours) and chooses how the revisit budget is spread (Policy,
	// default adaptive). Revisit.Budget, the revisits per second the
	// schedule plans for, defaults to Budget.
	Revisit revisit.Options
	// Budget caps the crawl's fetches per second, revisits and new URLs
	// together (politeness applies as well); 0: no cap.
	Budget float64
	// GoneAfter is the number of consecutive visits answered 404 or 410
	// after which a URL leaves the schedule (until a link leads to it
	// again). Default 3; negative: never.
	GoneAfter int
}

// DefaultGoneAfter is ContinuousOptions.GoneAfter's default.
const DefaultGoneAfter = 3

func (o *ContinuousOptions) ensureDefaults() {
	if o.Revisit.Budget == 0 {
		o.Revisit.Budget = o.Budget
	}
	o.Revisit.EnsureDefaults()
	if o.GoneAfter == 0 {
		o.GoneAfter = DefaultGoneAfter
	}
}

func (o *ContinuousOptions) validate() error {
	if o.Budget < 0 || math.IsNaN(o.Budget) || math.IsInf(o.Budget, 0) {
		return fmt.Errorf("Continuous.Budget %v is not a finite non-negative rate", o.Budget)
	}
	return o.Revisit.Validate()
}

// ContinuousStats describe a continuous crawl (Options.Continuous).
type ContinuousStats struct {
	Scheduled   int64   `json:"scheduled"`    // URLs in the schedule (those due and queued included)
	Changed     uint64  `json:"changed"`      // revisits that found the page changed (this run)
	Unchanged   uint64  `json:"unchanged"`    // revisits that found it unchanged: 304, or the same payload (this run)
	Dropped     uint64  `json:"dropped"`      // URLs that left the schedule: gone (404/410) GoneAfter times in a row (this run)
	PlannedRate float64 `json:"planned_rate"` // revisits per second the current intervals add up to (revisit.Scheduler.PlannedRate)
	// Aged counts the URLs the aging seen-set forgot (this run): neither
	// linked nor fetched for two to four times the longest revisit
	// interval. One that a link leads to again is queued as new.
	Aged uint64 `json:"aged"`
}

// continuous is a continuous crawl's scheduler and budget.
type continuous struct {
	opts   ContinuousOptions
	sched  *revisit.Scheduler
	budget *pace // nil without Budget

	changed, unchanged, dropped atomic.Uint64
}

// visitRecord is what the crawl keeps with a scheduled URL
// (frontier.Schedule.Record): the revisit record and the count of
// consecutive visits that found the URL gone. Encoded as a version byte,
// the count (uvarint), and revisit.Record's own encoding.
type visitRecord struct {
	rec  revisit.Record
	gone int
}

const visitRecordVersion = 1

// errVisitRecord marks a visit record that does not decode.
var errVisitRecord = errors.New("crawl: visit record")

func (v visitRecord) marshal() ([]byte, error) {
	r, err := v.rec.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b := binary.AppendUvarint([]byte{visitRecordVersion}, uint64(v.gone))
	return append(b, r...), nil
}

func (v *visitRecord) unmarshal(b []byte) error {
	if len(b) == 0 || b[0] != visitRecordVersion {
		return fmt.Errorf("%w: unknown version", errVisitRecord)
	}
	g, n := binary.Uvarint(b[1:])
	if n <= 0 || g > math.MaxInt32 {
		return fmt.Errorf("%w: bad gone count", errVisitRecord)
	}
	if err := v.rec.UnmarshalBinary(b[1+n:]); err != nil {
		return fmt.Errorf("%w: %w", errVisitRecord, err)
	}
	v.gone = int(g)
	return nil
}

// ageWindow is the frontier's AgeWindow: in a continuous crawl with the
// exact check, twice the longest revisit interval, so that a scheduled URL
// whose revisit is late by up to one more interval (a budget that cannot
// keep up) is still in the seen-set when it is fetched; 0 otherwise (the
// filter alone cannot forget).
func ageWindow(o Options, exact bool) time.Duration {
	if o.Continuous == nil || !exact {
		return 0
	}
	return 2 * o.Continuous.Revisit.Max
}

// openContinuous makes the scheduler and rebuilds its summary of the
// collection from the records in the store (a resume), so that the
// summary is never out of step with the records.
func (c *Crawler) openContinuous() error {
	o := *c.opts.Continuous
	s, err := revisit.New(o.Revisit)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	k := &continuous{opts: o, sched: s}
	if o.Budget > 0 {
		k.budget = newPace(o.Budget)
	}
	var derr error
	err = c.front.ScheduleRecords(func(url string, _ time.Time, b []byte) bool {
		var v visitRecord
		if err := v.unmarshal(b); err != nil {
			derr = fmt.Errorf("%w: schedule of %s: %w", ErrCorruptState, url, err)
			return false
		}
		s.Update(revisit.Record{}, v.rec)
		return true
	})
	if err == nil {
		err = derr
	}
	if errors.Is(err, frontier.ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorruptState, err)
	}
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	c.cont = k
	return nil
}

// revisitCapture returns the capture a request for url is conditional on:
// in a continuous crawl this crawl's own last capture of it, if any, else
// the earlier crawls' (Options.Previous).
func (c *Crawler) revisitCapture(url string) (*Capture, error) {
	if c.cont != nil && c.history != nil {
		// This crawl's capture is the later one.
		if cp, err := c.history.get(url); cp != nil || err != nil {
			return cp, err
		}
	}
	return c.previousCapture(url)
}

// get returns the capture of url that this crawl recorded last (written or
// not yet), nil if none.
func (h *historyLog) get(url string) (*Capture, error) {
	key := historyPrefix + url
	h.mu.Lock()
	v, ok := h.pending[key]
	h.mu.Unlock()
	if !ok {
		var err error
		v, err = h.store.Get([]byte(key))
		if errors.Is(err, frontier.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("crawl: capture history: %w", err)
		}
	}
	cp, err := decodeCapture(v)
	if err != nil {
		return nil, fmt.Errorf("%w: capture history of %s: %w", ErrCorruptState, url, err)
	}
	return &cp, nil
}

// scheduleRevisit decides, for a continuous crawl, what the final attempt
// of ent (fetched at at; res nil when no response came) found, says it in
// the log line (le.Recrawl: new, changed, unchanged, gone), updates the
// URL's revisit record and the scheduler, and sets out.Schedule: when
// the URL is to be fetched again, or nil when it leaves the schedule.
func (c *Crawler) scheduleRevisit(ent frontier.Entry, res *fetch.Result, prev *Capture, at time.Time, le *storage.Entry, out *frontier.Outcome) error {
	k := c.cont
	_, b, ok, err := c.front.ScheduleRecord(ent.URL)
	if err != nil {
		if errors.Is(err, frontier.ErrCorrupt) {
			return fmt.Errorf("%w: %w", ErrCorruptState, err)
		}
		return fmt.Errorf("crawl: %w", err)
	}
	var v visitRecord
	if ok {
		if err := v.unmarshal(b); err != nil {
			return fmt.Errorf("%w: schedule of %s: %w", ErrCorruptState, ent.URL, err)
		}
	}
	old := v.rec
	gone := res != nil && (res.Status == http.StatusNotFound || res.Status == http.StatusGone)
	switch {
	case gone:
		v.gone++
	case res != nil:
		v.gone = 0
	}
	ok2xx := res != nil && res.Status >= 200 && res.Status < 300
	definite := prev != nil && prev.hasPayload() && res != nil && (ok2xx || res.Status == http.StatusNotModified)
	unchanged := le.Recrawl == recrawlUnchanged || definite && res.Status == http.StatusNotModified
	switch {
	case definite:
		v.rec.ObserveModified(at, !unchanged, revisit.ModifiedFromHeader(at, res.Header))
		if unchanged {
			k.unchanged.Add(1)
			le.Recrawl = recrawlUnchanged
		} else {
			k.changed.Add(1)
			le.Recrawl = recrawlChanged
		}
	case old.Last.IsZero():
		// The first fetch: the clock starts; the age of the version found,
		// when the server dates it, is the first evidence.
		var modified time.Time
		if ok2xx {
			modified = revisit.ModifiedFromHeader(at, res.Header)
		}
		v.rec.ObserveModified(at, false, modified)
		if le.Recrawl == "" && res != nil && res.Status < 400 {
			le.Recrawl = recrawlNew
		}
	default:
		// An answer that says nothing of a change (an error, a 4xx, a
		// page whose earlier capture holds no payload): the interval
		// runs from now, the evidence is unchanged.
		v.rec.Last = at
		if le.Recrawl == "" && gone {
			le.Recrawl = recrawlGone
		}
	}
	if k.opts.GoneAfter > 0 && v.gone >= k.opts.GoneAfter {
		k.sched.Update(old, revisit.Record{})
		k.dropped.Add(1)
		out.Schedule = nil
		return nil
	}
	// Update before Interval, as revisit's contract says: the solve that
	// Interval may run then counts this record as it now is. The summary
	// does not read Interval, so the record it holds stays right after the
	// interval is set.
	k.sched.Update(old, v.rec)
	v.rec.Interval = k.sched.Interval(v.rec)
	rec, err := v.marshal()
	if err != nil {
		return fmt.Errorf("crawl: schedule of %s: %w", ent.URL, err)
	}
	out.Schedule = &frontier.Schedule{Due: v.rec.Due(), Record: rec}
	return nil
}

// continuousStats returns the continuous crawl's counters; zero when it is
// not one.
func (c *Crawler) continuousStats(f frontier.Stats) ContinuousStats {
	k := c.cont
	if k == nil {
		return ContinuousStats{}
	}
	return ContinuousStats{Scheduled: f.Scheduled, Changed: k.changed.Load(), Unchanged: k.unchanged.Load(),
		Dropped: k.dropped.Load(), PlannedRate: k.sched.PlannedRate(), Aged: f.Aged}
}

// pace spaces events at most rate a second: each wait takes the next free
// slot, so that any window of d seconds holds at most rate·d + 1 of them.
type pace struct {
	every time.Duration

	mu   sync.Mutex // protects next
	next time.Time  // the next free slot
}

func newPace(rate float64) *pace {
	return &pace{every: time.Duration(float64(time.Second) / rate)}
}

// wait blocks until the caller's slot; false when ctx ended first (the
// slot is not given back: a stopping crawl needs none).
func (p *pace) wait(ctx context.Context) bool {
	now := time.Now()
	p.mu.Lock()
	slot := p.next
	if slot.Before(now) {
		slot = now
	}
	p.next = slot.Add(p.every)
	p.mu.Unlock()
	d := slot.Sub(now)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
