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
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/revisit"
	"github.com/layercrawl/layercrawl/storage"
)

// ContinuousOptions make a crawl continuous (Options.Continuous): it does
// not end when its queue is empty. Every URL it fetches is scheduled to be
// fetched again, after an interval the revisit Scheduler chooses from what
// the URL's earlier visits found (package revisit), and every revisit is a
// conditional request against the crawl's own capture history, archived as
// a revisit record of the earlier response when the page did not change.
// The crawl stops when Run's context ends (SIGTERM, --max-time), or when
// nothing is queued, out or scheduled (every URL failed for good or left
// as gone: Run then returns as a plain crawl's does, ErrNoSeedFetched if
// no seed was fetched), and resumes
// from its state like any crawl: the schedule and the per-URL records are
// in the store, written in the batch that completes each fetch; in Redis
// mode they are in Redis, shared by the workers (continuous_redis.go),
// written by the script that completes each fetch, with the URL's last
// capture, and Budget is the whole crawl's, all workers together.
type ContinuousOptions struct {
	// Revisit bounds the intervals (Min, default 1 minute; Max, default
	// 24 hours) and chooses how the revisit budget is spread (Policy,
	// default adaptive). Revisit.Budget, the revisits per second the
	// schedule plans for, defaults to Budget.
	Revisit revisit.Options
	// Budget caps the crawl's fetches per second, revisits and new URLs
	// together (politeness applies as well); 0: no cap. In Redis mode it
	// caps the fetches of all the workers together.
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
	opts ContinuousOptions
	// sched is the revisit Scheduler; in Redis mode a fresh one, rebuilt
	// from the shared records, replaces it now and then
	// (rebuildScheduler).
	sched  atomic.Pointer[revisit.Scheduler]
	store  scheduleStore
	budget pacer // nil without Budget

	changed, unchanged, dropped atomic.Uint64
}

// pacer spaces a crawl's fetches (ContinuousOptions.Budget): *pace in
// local mode, redisPace in Redis mode. wait returns nil at the caller's
// slot, or an error (ctx's when it ended first).
type pacer interface {
	wait(ctx context.Context) error
}

// scheduleStore is where a continuous crawl's per-URL visit records live:
// the local frontier's store (localSchedule) or Redis, shared by the
// workers, with each URL's last capture (redisSchedule).
type scheduleStore interface {
	// visit returns url's visit record (visitRecord's encoding) and, in
	// Redis mode, its last capture (nil if none); ok is false for a URL
	// not in the schedule.
	visit(ctx context.Context, url string) (rec []byte, last *Capture, ok bool, err error)
	// visits calls fn with every scheduled URL's visit record until fn
	// returns false.
	visits(ctx context.Context, fn func(url string, rec []byte) bool) error
	// schedule returns the frontier's Schedule of a URL due at due with
	// the visit record rec and the capture cp (nil: the URL's last one,
	// last, stays).
	schedule(due time.Time, rec []byte, last, cp *Capture) (*frontier.Schedule, error)
}

// localSchedule is the local frontier's schedule.
type localSchedule struct{ f *frontier.Frontier }

func (l localSchedule) visit(_ context.Context, url string) ([]byte, *Capture, bool, error) {
	_, b, ok, err := l.f.ScheduleRecord(url)
	return b, nil, ok, err
}

func (l localSchedule) visits(_ context.Context, fn func(string, []byte) bool) error {
	return l.f.ScheduleRecords(func(url string, _ time.Time, b []byte) bool { return fn(url, b) })
}

func (localSchedule) schedule(due time.Time, rec []byte, _, _ *Capture) (*frontier.Schedule, error) {
	return &frontier.Schedule{Due: due, Record: rec}, nil
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

// newContinuous makes a continuous crawl's scheduler over store and
// builds its summary of the collection from the records there (a resume,
// or in Redis mode the whole crawl's), so that the summary starts in step
// with the records. budget is the crawl's pace, nil for none.
func newContinuous(ctx context.Context, o ContinuousOptions, store scheduleStore, budget pacer) (*continuous, error) {
	k := &continuous{opts: o, store: store, budget: budget}
	s, err := k.buildScheduler(ctx)
	if err != nil {
		return nil, err
	}
	k.sched.Store(s)
	return k, nil
}

// buildScheduler returns a fresh Scheduler whose summary holds every
// record of the store.
func (k *continuous) buildScheduler(ctx context.Context) (*revisit.Scheduler, error) {
	s, err := revisit.New(k.opts.Revisit)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	var derr error
	err = k.store.visits(ctx, func(url string, b []byte) bool {
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
	if err := scheduleErr(err); err != nil {
		return nil, err
	}
	return s, nil
}

// scheduleErr is err, from a read of the schedule, marked as corrupt
// state when the frontier found a record that does not decode.
func scheduleErr(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrCorruptState):
		return err
	case errors.Is(err, frontier.ErrCorrupt), errors.Is(err, redisfrontier.ErrCorrupt):
		return fmt.Errorf("%w: %w", ErrCorruptState, err)
	}
	return fmt.Errorf("crawl: %w", err)
}

// openContinuous makes the local crawl's scheduler and rebuilds its
// summary of the collection from the records in the store (a resume), so
// that the summary is never out of step with the records.
func (c *Crawler) openContinuous() error {
	o := *c.opts.Continuous
	var budget pacer
	if o.Budget > 0 {
		budget = newPace(o.Budget)
	}
	k, err := newContinuous(context.Background(), o, localSchedule{c.front}, budget)
	if err != nil {
		return err
	}
	c.cont = k
	return nil
}

// storedVisit is a URL's entry in the schedule as a fetch found it
// (scheduleStore.visit): read before the request in Redis mode, for the
// last capture, and used again after it for the visit record. The URL is
// leased to this worker in between, so no other worker's Done can have
// replaced it (one whose lease had expired would fail on the lease's
// token).
type storedVisit struct {
	rec  []byte
	last *Capture
	ok   bool
}

// revisitCapture returns the capture a request for url is conditional on:
// in a continuous crawl this crawl's own last capture of it, if any (in
// Redis mode the one kept with the URL's schedule, whichever worker made
// it), else the earlier crawls' (Options.Previous). In Redis mode it also
// returns the URL's entry in the schedule it read (scheduleRevisit's
// input); nil otherwise.
func (c *Crawler) revisitCapture(ctx context.Context, url string) (*Capture, *storedVisit, error) {
	var sv *storedVisit
	if c.cont != nil && c.redis != nil {
		rec, cp, ok, err := c.cont.store.visit(ctx, url)
		if err != nil {
			return nil, nil, scheduleErr(err)
		}
		sv = &storedVisit{rec: rec, last: cp, ok: ok}
		if cp != nil {
			return cp, sv, nil
		}
	}
	if c.cont != nil && c.history != nil && c.redis == nil {
		// This crawl's capture is the later one.
		if cp, err := c.history.get(url); cp != nil || err != nil {
			return cp, nil, err
		}
	}
	cp, err := c.previousCapture(url)
	return cp, sv, err
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
// the URL is to be fetched again, or nil when it leaves the schedule. cp
// is the capture this fetch recorded (nil if none), kept with the
// schedule in Redis mode. sv is the URL's entry in the schedule as read
// before the request (revisitCapture), nil to read it now.
func (c *Crawler) scheduleRevisit(ctx context.Context, ent frontier.Entry, res *fetch.Result, prev, cp *Capture, sv *storedVisit, at time.Time, le *storage.Entry, out *frontier.Outcome) error {
	k := c.cont
	sched := k.sched.Load()
	if sv == nil {
		b, last, ok, err := k.store.visit(ctx, ent.URL)
		if err := scheduleErr(err); err != nil {
			return err
		}
		sv = &storedVisit{rec: b, last: last, ok: ok}
	}
	b, last, ok := sv.rec, sv.last, sv.ok
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
		sched.Update(old, revisit.Record{})
		k.dropped.Add(1)
		out.Schedule = nil
		return nil
	}
	// Update before Interval, as revisit's contract says: the solve that
	// Interval may run then counts this record as it now is. The summary
	// does not read Interval, so the record it holds stays right after the
	// interval is set.
	sched.Update(old, v.rec)
	v.rec.Interval = sched.Interval(v.rec)
	rec, err := v.marshal()
	if err != nil {
		return fmt.Errorf("crawl: schedule of %s: %w", ent.URL, err)
	}
	out.Schedule, err = k.store.schedule(v.rec.Due(), rec, last, cp)
	if err != nil {
		return fmt.Errorf("crawl: schedule of %s: %w", ent.URL, err)
	}
	return nil
}

// continuousStats returns k's counters, with the count of scheduled URLs
// and of those the seen-set aged; zero when k is nil (not a continuous
// crawl).
func continuousStats(k *continuous, scheduled int64, aged uint64) ContinuousStats {
	if k == nil {
		return ContinuousStats{}
	}
	return ContinuousStats{Scheduled: scheduled, Changed: k.changed.Load(), Unchanged: k.unchanged.Load(),
		Dropped: k.dropped.Load(), PlannedRate: k.sched.Load().PlannedRate(), Aged: aged}
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

// wait blocks until the caller's slot; ctx's error when ctx ended first
// (the slot is not given back: a stopping crawl needs none).
func (p *pace) wait(ctx context.Context) error {
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
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
