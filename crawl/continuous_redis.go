package crawl

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
)

// A continuous crawl in Redis mode. The schedule and the per-URL records
// are the workers' shared ones in Redis (redisfrontier, schedule.go):
// whichever worker fetches a URL, its Done stores the URL's next due time
// and record there in the script that completes the lease. The worker
// that fetches a URL next may not be the one that fetched it last, so the
// capture a revisit is conditional on (validators, payload digest, WARC
// record id and date) is kept with the record, in the same hash value; a
// WARC revisit record may then refer to a response in another worker's
// WARC file, by WARC-Refers-To-Target-URI, -Date and record id, as WARC
// allows. The budget is the whole crawl's, paced in Redis by the server's
// clock. Each worker's revisit Scheduler summary is built from the shared
// records at start, updated with its own fetches, and rebuilt from the
// shared records every rebuildEvery (rebuildScheduler).

// redisSchedule is the shared schedule in Redis. The frontier's record
// of a URL (frontier.Schedule.Record) is the visit record, length first
// (uvarint), then the URL's last capture (encodeCapture's JSON; empty if
// it has none).
type redisSchedule struct{ f *redisfrontier.Frontier }

// maxCaptureRecord bounds the capture kept with a schedule, so that the
// whole stays within the frontier's 64 KiB; a larger capture (one with
// enormous validators) is not kept, and the URL's next fetch is
// unconditional.
const maxCaptureRecord = 60 << 10

func (r redisSchedule) visit(ctx context.Context, url string) ([]byte, *Capture, bool, error) {
	_, b, ok, err := r.f.ScheduleRecord(ctx, url)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	rec, cp, err := decodeSharedRecord(url, b, true)
	if err != nil {
		return nil, nil, false, err
	}
	return rec, cp, true, nil
}

func (r redisSchedule) visits(ctx context.Context, fn func(string, []byte) bool) error {
	var derr error
	err := r.f.ScheduleRecords(ctx, func(url string, _ time.Time, b []byte) bool {
		rec, _, err := decodeSharedRecord(url, b, false)
		if err != nil {
			derr = err
			return false
		}
		return fn(url, rec)
	})
	if err != nil {
		return err
	}
	return derr
}

// decodeSharedRecord splits the shared record b of url into the visit
// record and, with capture, the last capture (nil if none). Errors wrap
// ErrCorruptState.
func decodeSharedRecord(url string, b []byte, capture bool) ([]byte, *Capture, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("%w: schedule of %s: bad visit record length", ErrCorruptState, url)
	}
	rec, rest := b[k:k+int(n)], b[k+int(n):]
	if !capture || len(rest) == 0 {
		return rec, nil, nil
	}
	cp, err := decodeCapture(rest)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: schedule of %s: %w", ErrCorruptState, url, err)
	}
	return rec, &cp, nil
}

func (redisSchedule) schedule(due time.Time, rec []byte, last, cp *Capture) (*frontier.Schedule, error) {
	if cp == nil {
		cp = last
	}
	var enc []byte
	if cp != nil {
		enc = encodeCapture(cp)
		if len(enc) > maxCaptureRecord {
			enc = nil
		}
	}
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(rec)+len(enc)), uint64(len(rec)))
	b = append(append(b, rec...), enc...)
	return &frontier.Schedule{Due: due, Record: b}, nil
}

// redisPace is the crawl-wide budget of a Redis crawl: one slot sequence
// in Redis for all the workers (redisfrontier.Frontier.Pace).
type redisPace struct {
	f     *redisfrontier.Frontier
	every time.Duration
}

func (p redisPace) wait(ctx context.Context) error { return p.f.Pace(ctx, p.every) }

// openRedisContinuous makes a Redis worker's scheduler, its summary built
// from the crawl's shared records, and its share of the crawl's budget.
func (c *Crawler) openRedisContinuous(ctx context.Context, front *redisfrontier.Frontier) (*continuous, error) {
	o := *c.opts.Continuous
	var budget pacer
	if o.Budget > 0 {
		budget = redisPace{f: front, every: time.Duration(float64(time.Second) / o.Budget)}
	}
	var store scheduleStore = redisSchedule{front}
	if c.wrapSchedule != nil {
		store = c.wrapSchedule(store)
	}
	return newContinuous(ctx, o, store, budget)
}

// rebuildEvery is how often a Redis worker rebuilds its Scheduler's
// summary from the shared records: the longer of Revisit.Min and a
// minute.
func rebuildEvery(o ContinuousOptions) time.Duration {
	return max(o.Revisit.Min, time.Minute)
}

// rebuildScheduler replaces the worker's Scheduler by one whose summary
// is built from the crawl's shared records (one HSCAN of them, off the
// fetch path), so that the other workers' fetches reach it. Between two
// rebuilds a summary lacks the other workers' updates of up to
// rebuildEvery (plus the scan's own time), and a record this worker
// updates while the scan runs may be counted as it was or as it is, until
// the next rebuild. That does not matter for the solve: the summary is a
// histogram of the population's estimated change rates, which moves
// slowly (a Scheduler itself re-solves only when more than 1/64 of the
// population changed since its last solve), and the intervals it yields
// are clamped to [Min, Max] and recomputed at every fetch. A rebuild that
// fails (Redis away) keeps the current summary and is logged.
func (c *Crawler) rebuildScheduler(ctx context.Context, k *continuous) error {
	s, err := k.buildScheduler(ctx)
	if err != nil {
		return err
	}
	k.sched.Store(s)
	return nil
}

// startSchedulerRebuilds rebuilds the worker's Scheduler summary every
// rebuildEvery while the workers run.
func (c *Crawler) startSchedulerRebuilds(ctx context.Context, aux *auxTasks, k *continuous) {
	aux.every(rebuildEvery(k.opts), func() {
		if err := c.rebuildScheduler(ctx, k); err != nil && ctx.Err() == nil {
			c.opts.Logger.Warn("the revisit scheduler's summary was not rebuilt from the shared records", "err", err)
		}
	})
}
