package redisfrontier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier"
)

// Continuous crawling (Options.Continuous), as frontier.Frontier does it
// on one machine (frontier/schedule.go), with the schedule in Redis under
// the frontier's hash tag (one Cluster slot):
//
//	{tag}:due    sorted set: URL -> the time it is due (Unix ms)
//	{tag}:sched  hash: URL -> its visit record (encodeVisit: host, entry,
//	             due, the caller's record)
//
// Done with an Outcome.Schedule writes both in the script call that
// completes the lease (doneScript), so a worker killed at any point leaves
// the URL either still leased (the lease's expiry queues it again) or
// scheduled, never lost and never twice; a nil Schedule deletes both. Next
// moves due URLs (promoteBatch per script call) from {tag}:due into their
// hosts' queues, as a put-back entry is queued, under the hosts' politeness
// and leases; the record stays in {tag}:sched, so that a URL is scheduled
// (counted in Stats.Scheduled) from its first Done until one drops it.
// Every scheduled URL is in one place: {tag}:due until it is due, then its
// host's queue or a lease until its Done schedules it again. A URL has one
// member in the sorted set, so a URL queued twice (a seed given again) is
// due once, at the time its last Done chose.
//
// Next learns the earliest due time from every reply of its script (one
// ZRANGE 0 0 there, no extra round trip) and from this worker's Dones, and
// calls the promotion script only when that time has come: not once per
// Next when nothing is due. It never reports the crawl exhausted while the
// frontier is continuous: with nothing queued it waits, until the
// earliest due time or Options.Poll, whichever is first.

// promoteBatch bounds the URLs one promotion script call moves into the
// queues.
const promoteBatch = 256

// maxVisitRecord bounds a caller's record, as frontier's.
const maxVisitRecord = 1 << 16

// visitPrefix starts a {tag}:sched value: the format's version.
const visitPrefix = "s1\n"

// encodeVisit returns a {tag}:sched value: the version line, the host,
// the entry (JSON, which holds no raw newline), the due time (Unix ms) and
// the caller's record, newline-separated; the record is last and may hold
// any bytes. The scripts read the host and the entry.
func encodeVisit(host, entry string, dueMS int64, rec []byte) string {
	var b strings.Builder
	b.Grow(len(visitPrefix) + len(host) + len(entry) + 24 + len(rec))
	b.WriteString(visitPrefix)
	b.WriteString(host)
	b.WriteByte('\n')
	b.WriteString(entry)
	b.WriteByte('\n')
	b.WriteString(strconv.FormatInt(dueMS, 10))
	b.WriteByte('\n')
	b.Write(rec)
	return b.String()
}

// visit is a decoded {tag}:sched value.
type visit struct {
	host   string
	entry  frontier.Entry
	due    time.Time
	record []byte
}

// decodeVisit parses the {tag}:sched value v of url.
func decodeVisit(url, v string) (visit, error) {
	bad := func(why string) (visit, error) {
		return visit{}, fmt.Errorf("%w: schedule record of %.60q: %s", ErrCorrupt, url, why)
	}
	rest, ok := strings.CutPrefix(v, visitPrefix)
	if !ok {
		return bad("unknown version")
	}
	host, rest, ok1 := strings.Cut(rest, "\n")
	entry, rest, ok2 := strings.Cut(rest, "\n")
	due, rec, ok3 := strings.Cut(rest, "\n")
	if !ok1 || !ok2 || !ok3 || host == "" {
		return bad("missing fields")
	}
	ms, err := strconv.ParseInt(due, 10, 64)
	if err != nil || ms <= 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return bad("due time out of range")
	}
	if len(rec) > maxVisitRecord {
		return bad("record too long")
	}
	e, err := decodeRecord(entry)
	if err != nil {
		return visit{}, fmt.Errorf("schedule record of %.60q: %w", url, err)
	}
	if e.URL != url {
		return bad("entry of another URL")
	}
	return visit{host: host, entry: e, due: time.UnixMilli(ms), record: []byte(rec)}, nil
}

// dueMS is a schedule's due time in Unix ms, rounded up: the URL is
// never handed out before it.
func dueMS(t time.Time) int64 {
	return (t.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
}

// scheduleArgs returns doneScript's schedule section (ARGV[15..18]) for
// the done entry e and its outcome: nothing (” op) in a frontier that is
// not continuous, a drop ('d') for a nil Schedule, else the URL's due
// time and visit record ('s').
func (f *Frontier) scheduleArgs(host string, e frontier.Entry, sc *frontier.Schedule) (op string, due int64, value string) {
	if !f.opts.Continuous {
		return "", 0, ""
	}
	if sc == nil {
		return "d", 0, ""
	}
	n := e
	n.Attempt = 0
	due = max(dueMS(sc.Due), 1)
	return "s", due, encodeVisit(host, encodeRecord(n), due, sc.Record)
}

// checkSchedule refuses a Schedule frontier.Frontier refuses: a zero due
// time or a record over 64 KiB.
func checkSchedule(url string, sc *frontier.Schedule) error {
	if sc != nil && (sc.Due.IsZero() || len(sc.Record) > maxVisitRecord) {
		return fmt.Errorf("redisfrontier: %w for %s: due %v, record of %d bytes", frontier.ErrScheduleRecord, url, sc.Due, len(sc.Record))
	}
	return nil
}

// promoteScript moves up to ARGV[3] URLs due by ARGV[2] (ms) from the
// due set into their hosts' queues, as requeueScript queues a failed URL
// again (the host's list, served before an inlinks zset's entries), and
// makes their hosts ready (not before their politeness delay, not while
// leased). A member without a record (none is left so by the scripts) is
// dropped. It stops at a record it cannot read, leaving it in place, and
// replies {'corrupt', url}; else {'ok', moved, earliest due left or ”}.
var promoteScript = redis.NewScript(orderLua + `
local tag = ARGV[1]
local now = tonumber(ARGV[2])
local due, sched, nxt = tag..':due', tag..':sched', tag..':next'
local n = 0
for _, u in ipairs(redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))) do
  local v = redis.call('HGET', sched, u)
  if v then
    local h, e
    if string.sub(v, 1, 3) == 's1\n' then
      local i = string.find(v, '\n', 4, true)
      local j = i and string.find(v, '\n', i + 1, true)
      if j and i > 4 then h, e = string.sub(v, 4, i - 1), string.sub(v, i + 1, j - 1) end
    end
    if not h then return {'corrupt', u} end
    redis.call('RPUSH', tag..':q:'..h, e)
    local t = tonumber(redis.call('HGET', nxt, h) or '0')
    if t < now then t = now end
    makeReady(tag, inl, h, t)
    n = n + 1
  end
  redis.call('ZREM', due, u)
end
if n > 0 then redis.call('HINCRBY', tag..':stats', 'promoted', n) end
local first = redis.call('ZRANGE', due, 0, 0, 'WITHSCORES')
return {'ok', n, first[2] or ''}
`)

// ErrNotContinuous is returned by Open for a worker without
// Options.Continuous that joins a continuous crawl: its Next would end
// the worker while the schedule holds URLs, and its Done would take the
// URLs it fetched out of the schedule without dropping their records.
var ErrNotContinuous = errors.New("redisfrontier: the crawl in redis is continuous")

// openContinuous marks the crawl continuous in Redis ({tag}:continuous)
// for a continuous worker, or refuses a worker that is not continuous
// when the crawl is. A crawl begun plain becomes continuous with its
// first continuous worker.
func (f *Frontier) openContinuous(ctx context.Context) error {
	var n int64
	err := f.c.retry(ctx, func(ctx context.Context) error {
		if f.opts.Continuous {
			return f.c.rdb.Set(ctx, f.key("continuous"), "1", 0).Err()
		}
		var err error
		n, err = f.c.rdb.Exists(ctx, f.key("continuous")).Result()
		return err
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: continuous: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("%w: this worker is not", ErrNotContinuous)
	}
	return nil
}

// noDue is nextDue when the schedule is known to be empty.
const noDue = math.MaxInt64

// promote moves due URLs into their hosts' queues when the earliest due
// time this worker knows of has come; it returns at once when another
// goroutine of this worker is promoting.
func (f *Frontier) promote(ctx context.Context) error {
	if !f.opts.Continuous || f.nextDue.Load() > f.nowMS() {
		return nil
	}
	select {
	case f.promoting <- struct{}{}:
	default:
		return nil
	}
	defer func() { <-f.promoting }()
	for f.nextDue.Load() <= f.nowMS() {
		var res any
		err := f.c.retry(ctx, func(ctx context.Context) error {
			var err error
			res, err = promoteScript.Run(ctx, f.c.rdb, []string{f.key("due")}, f.tag, f.nowMS(), promoteBatch).Result()
			return err
		})
		if err != nil {
			return fmt.Errorf("redisfrontier: promote due URLs: %w", err)
		}
		arr, _ := res.([]any)
		if len(arr) == 2 && arr[0] == "corrupt" {
			u, _ := arr[1].(string)
			return fmt.Errorf("%w: schedule record of %.60q: no host and entry", ErrCorrupt, u)
		}
		r := newReply("promote", res, 3)
		if r.str(0) != "ok" && r.Err() == nil {
			return fmt.Errorf("%w: promote replied %s", ErrCorrupt, describeReply(arr[0]))
		}
		n := r.int(1)
		first, ok := r.millis(2)
		if err := r.Err(); err != nil {
			return err
		}
		if !ok {
			first = noDue
		}
		f.nextDue.Store(first)
		if n < promoteBatch {
			return nil
		}
	}
	return nil
}

// learnDue lowers the earliest due time this worker knows of to ms.
func (f *Frontier) learnDue(ms int64) {
	for {
		old := f.nextDue.Load()
		if ms >= old || f.nextDue.CompareAndSwap(old, ms) {
			return
		}
	}
}

// ScheduleRecord returns the record the last Done of url kept with its
// schedule (Schedule.Record), and when it is due; ok is false for a URL
// not in the schedule. A record that does not decode is an error wrapping
// ErrCorrupt.
func (f *Frontier) ScheduleRecord(ctx context.Context, url string) (due time.Time, record []byte, ok bool, err error) {
	var v string
	err = f.c.retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = f.c.rdb.HGet(ctx, f.key("sched"), url).Result()
		if err == redis.Nil {
			v, ok = "", false
			return nil
		}
		ok = err == nil
		return err
	})
	if err != nil {
		return time.Time{}, nil, false, fmt.Errorf("redisfrontier: read schedule: %w", err)
	}
	if !ok {
		return time.Time{}, nil, false, nil
	}
	vis, err := decodeVisit(url, v)
	if err != nil {
		return time.Time{}, nil, false, err
	}
	return vis.due, vis.record, true, nil
}

// scheduleScanCount is the HSCAN COUNT of ScheduleRecords.
const scheduleScanCount = 1000

// ScheduleRecords calls fn with every scheduled URL and its record, until
// fn returns false; the record is only valid during the call. It reads the
// hash with HSCAN, a thousand at a time, while the crawl goes on: unlike
// frontier.Frontier's, the URLs come in no order, a URL scheduled or
// dropped during the scan may or may not be reported, and one may be
// reported twice if Redis rehashes the hash meanwhile. A record that does
// not decode stops the scan with an error wrapping ErrCorrupt.
func (f *Frontier) ScheduleRecords(ctx context.Context, fn func(url string, due time.Time, record []byte) bool) error {
	var cursor uint64
	for {
		var kv []string
		err := f.c.retry(ctx, func(ctx context.Context) error {
			var err error
			kv, cursor, err = f.c.rdb.HScan(ctx, f.key("sched"), cursor, "", scheduleScanCount).Result()
			return err
		})
		if err != nil {
			return fmt.Errorf("redisfrontier: read schedule: %w", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			vis, err := decodeVisit(kv[i], kv[i+1])
			if err != nil {
				return err
			}
			if !fn(kv[i], vis.due, vis.record) {
				return nil
			}
		}
		if cursor == 0 {
			return nil
		}
	}
}

// scheduledCount reads the number of scheduled URLs (Stats.Scheduled).
func scheduledCount(ctx context.Context, c *Client, tag string) (int64, error) {
	n, err := c.rdb.HLen(ctx, tag+":sched").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	return n, nil
}

// paceScript takes the crawl's next fetch slot: slot = max(now, next),
// next = slot + ARGV[2] µs, by the Redis server's clock (TIME), so that
// the workers' clocks do not matter. It replies {slot - now, slot} in µs.
var paceScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local k = ARGV[1]..':pace'
local slot = tonumber(redis.call('GET', k) or '0')
if slot < now then slot = now end
redis.call('SET', k, string.format('%.0f', slot + tonumber(ARGV[2])))
return {string.format('%.0f', slot - now), string.format('%.0f', slot)}
`)

// pace takes the crawl's next fetch slot for a crawl-wide rate of one
// fetch every every: how long until it, and the slot (Unix µs, Redis's
// clock).
func (f *Frontier) pace(ctx context.Context, every time.Duration) (wait time.Duration, slot int64, err error) {
	var res any
	err = f.c.retry(ctx, func(ctx context.Context) error {
		var err error
		res, err = paceScript.Run(ctx, f.c.rdb, []string{f.key("pace")}, f.tag, max(every.Microseconds(), 1)).Result()
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("redisfrontier: pace: %w", err)
	}
	r := newReply("pace", res, 2)
	w, err1 := strconv.ParseInt(r.str(0), 10, 64)
	slot, err2 := strconv.ParseInt(r.str(1), 10, 64)
	if err := r.Err(); err != nil {
		return 0, 0, err
	}
	if err1 != nil || err2 != nil || w < 0 {
		return 0, 0, fmt.Errorf("%w: pace replied %v", ErrCorrupt, res)
	}
	return time.Duration(w) * time.Microsecond, slot, nil
}

// Pace spaces the fetches of all the workers of a crawl at most one every
// every (a crawl-wide budget): it takes the crawl's next slot in Redis and
// waits for it, so that any window of d holds at most d/every + 1 slots,
// whatever the number of workers. It returns ctx's error when ctx ends
// first (the slot is not given back: a stopping worker needs none). A
// slot taken by a call whose reply was lost is skipped: the budget is
// under-spent, never over.
func (f *Frontier) Pace(ctx context.Context, every time.Duration) error {
	wait, _, err := f.pace(ctx, every)
	if err != nil {
		return err
	}
	if wait <= 0 {
		return ctx.Err()
	}
	return sleep(ctx, wait)
}
