package frontier

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Continuous crawling (Options.Continuous). A fetched URL is not
// forgotten: Done stores it in the due schedule with the time it is to be
// fetched again (Outcome.Schedule), in the same batch that completes it.
// When that time comes, the URL moves from the schedule into its host's
// queue, and is handed out like any queued entry, under the host's
// politeness. It never goes through the seen-set again: the seen-set
// decides only which discovered links are new, and the schedule alone
// decides when a known URL is fetched again.
//
// Store keys:
//
//	t/<due:8 big-endian Unix ns><url>  a scheduled URL (host, then encodeEntry)
//	v/<url>                            its visit record: version, due (8 bytes), the caller's record
//
// Every scheduled URL is in exactly one place: under t/ until it is due,
// then in its host's queue (q/, or r/ while a fetch is retried) until its
// Done schedules it again. v/ says when it is due; a t/ key whose time
// differs from its URL's v/ record (a URL queued twice, once as a seed
// whose last attempt failed) is stale and dropped when it comes due.
//
// Memory holds the earliest part of the schedule (up to scheduleWindow
// entries, read from the store as it empties), so that a schedule of any
// size costs a bounded amount of memory; the count of scheduled URLs is
// read at Open (one scan of v/).
const (
	prefixDue   = "t/"
	prefixVisit = "v/"
)

// Schedule, in an Outcome given to Done in a continuous frontier, is when
// the entry's URL is to be fetched again and the caller's record of it,
// kept with it (ScheduleRecord reads it back). A nil Schedule drops the URL
// from the schedule: it is not fetched again unless rediscovered.
type Schedule struct {
	Due    time.Time
	Record []byte
}

// scheduleWindow bounds the scheduled entries memory holds (between one
// and two times it); promoteBatch
// how many due entries one batch moves into the queues.
const (
	scheduleWindow = 4096
	promoteBatch   = 256
)

const visitVersion = 1

// maxVisitRecord bounds a caller's record so that a corrupt value cannot
// ask for much.
const maxVisitRecord = 1 << 16

// ErrScheduleRecord is wrapped by Done's error for an Outcome.Schedule
// whose record is larger than 64 KiB or whose due time is zero.
var ErrScheduleRecord = errors.New("frontier: bad schedule")

func dueKey(due time.Time, url string) []byte {
	k := make([]byte, 0, len(prefixDue)+8+len(url))
	k = append(k, prefixDue...)
	k = binary.BigEndian.AppendUint64(k, uint64(max(due.UnixNano(), 0)))
	return append(k, url...)
}

// parseDueKey returns the due time and URL of a t/ key.
func parseDueKey(k []byte) (time.Time, string, error) {
	if len(k) <= len(prefixDue)+8 || string(k[:len(prefixDue)]) != prefixDue {
		return time.Time{}, "", &CorruptError{Key: string(k), Reason: "malformed schedule key"}
	}
	ns := binary.BigEndian.Uint64(k[len(prefixDue):])
	if ns > 1<<62 {
		return time.Time{}, "", &CorruptError{Key: string(k), Reason: "schedule time out of range"}
	}
	return time.Unix(0, int64(ns)), string(k[len(prefixDue)+8:]), nil
}

func visitKey(url string) []byte { return append([]byte(prefixVisit), url...) }

func encodeDue(e *Entry) []byte {
	return append(appendString(nil, e.host), encodeEntry(e)...)
}

// decodeDue parses a t/ value; k names it in errors and gives the URL the
// entry must have.
func decodeDue(k, v []byte) (Entry, error) {
	_, url, err := parseDueKey(k)
	if err != nil {
		return Entry{}, err
	}
	host, rest, ok := readString(v)
	if !ok || host == "" {
		return Entry{}, &CorruptError{Key: string(k), Reason: "bad schedule host"}
	}
	e, err := decodeEntry(k, rest)
	if err != nil {
		return Entry{}, err
	}
	if e.retry || e.URL != url {
		return Entry{}, &CorruptError{Key: string(k), Reason: "schedule entry does not match its key"}
	}
	e.host = host
	return e, nil
}

func encodeVisit(due time.Time, record []byte) []byte {
	b := make([]byte, 0, 1+8+len(record))
	b = append(b, visitVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(max(due.UnixNano(), 0)))
	return append(b, record...)
}

// decodeVisit parses a v/ value; k names it in errors.
func decodeVisit(k, v []byte) (time.Time, []byte, error) {
	if len(v) < 9 || v[0] != visitVersion || len(v)-9 > maxVisitRecord {
		return time.Time{}, nil, &CorruptError{Key: string(k), Reason: "malformed visit record"}
	}
	ns := binary.BigEndian.Uint64(v[1:])
	if ns > 1<<62 {
		return time.Time{}, nil, &CorruptError{Key: string(k), Reason: "visit due time out of range"}
	}
	return time.Unix(0, int64(ns)), v[9:], nil
}

// schedule is a continuous frontier's memory of its due schedule; f.mu
// protects its fields but promoting.
type schedule struct {
	promoting chan struct{} // holds a token while one Next moves due entries into the queues

	items dueHeap
	// limit: items holds every t/ key of the store up to and including
	// limit; nil: every t/ key. top is the greatest key pushed since
	// items last held every key.
	limit, top []byte
	urls       int64 // v/ records (scheduled URLs, those queued again included)
}

type dueItem struct {
	key []byte
	due time.Time
	e   Entry
}

type dueHeap []dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return bytes.Compare(h[i].key, h[j].key) < 0 }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueItem)) }
func (h *dueHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = dueItem{}
	*h = old[:len(old)-1]
	return it
}

// loadSchedule counts the scheduled URLs at Open; the entries are read
// into memory by the first promotion.
func (f *Frontier) loadSchedule() error {
	s := &schedule{promoting: make(chan struct{}, 1), limit: []byte(prefixDue)}
	end := []byte(prefixVisit)
	end[len(end)-1]++
	err := f.opts.Store.Ascend([]byte(prefixVisit), end, func(_, _ []byte) bool {
		s.urls++
		return true
	})
	if err != nil {
		return fmt.Errorf("frontier: load schedule: %w", err)
	}
	f.sched = s
	return nil
}

// pushLocked adds a committed t/ entry to memory when it falls within
// what memory holds.
func (s *schedule) pushLocked(it dueItem) {
	if s.limit == nil && len(s.items) >= scheduleWindow {
		s.limit = s.top
	}
	if s.limit != nil && bytes.Compare(it.key, s.limit) > 0 {
		return
	}
	if s.limit == nil && bytes.Compare(it.key, s.top) > 0 {
		s.top = it.key
	}
	heap.Push(&s.items, it)
	if len(s.items) >= 2*scheduleWindow {
		// Entries earlier than the last one held keep coming: keep the
		// earliest half, the rest stays in the store alone (sorting
		// once per scheduleWindow pushes).
		slices.SortFunc(s.items, func(a, b dueItem) int { return bytes.Compare(a.key, b.key) })
		clear(s.items[scheduleWindow:])
		s.items = s.items[:scheduleWindow]
		s.limit = s.items[scheduleWindow-1].key
	}
}

// dueLocked reports whether a promotion has work: an entry is due, or
// memory is empty while the store holds more.
func (s *schedule) dueLocked(now time.Time) bool {
	if len(s.items) == 0 {
		return s.limit != nil
	}
	return !s.items[0].due.After(now)
}

// waitLocked returns the time until the first entry in memory is due, -1
// if none.
func (s *schedule) waitLocked(now time.Time) time.Duration {
	if len(s.items) == 0 {
		return -1
	}
	return max(s.items[0].due.Sub(now), 0)
}

// refill reads the store's entries after limit into memory. The caller
// holds commitMu (no batch is between its write and its apply) and not
// f.mu.
func (f *Frontier) refillSchedule() error {
	f.mu.Lock()
	s := f.sched
	start := s.limit
	f.mu.Unlock()
	if start == nil {
		return nil
	}
	start = append(append([]byte(nil), start...), 0)
	end := []byte(prefixDue)
	end[len(end)-1]++
	var items []dueItem
	var derr error
	err := f.opts.Store.Ascend(start, end, func(k, v []byte) bool {
		e, err := decodeDue(k, v)
		if err != nil {
			derr = err
			return false
		}
		due, _, _ := parseDueKey(k)
		items = append(items, dueItem{key: append([]byte(nil), k...), due: due, e: e})
		return len(items) < scheduleWindow
	})
	if err := scheduleScanErr(err, derr); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, it := range items {
		heap.Push(&s.items, it)
	}
	switch {
	case len(items) < scheduleWindow:
		s.limit, s.top = nil, nil
		for _, it := range s.items {
			if bytes.Compare(it.key, s.top) > 0 {
				s.top = it.key
			}
		}
	default:
		s.limit = items[len(items)-1].key
	}
	return nil
}

// promote moves due entries of the schedule into their hosts' queues, in
// one batch. It returns at once when another call is promoting.
func (f *Frontier) promote(ctx context.Context) error {
	s := f.sched
	select {
	case s.promoting <- struct{}{}:
	default:
		return nil
	}
	defer func() { <-s.promoting }()
	defer f.batches.exit(f.batches.enter())
	f.commitMu.Lock()
	f.mu.Lock()
	empty := len(s.items) == 0 && s.limit != nil && f.broken == nil
	f.mu.Unlock()
	if empty {
		if err := f.refillSchedule(); err != nil {
			f.commitMu.Unlock()
			f.fail(err)
			return err
		}
	}
	f.mu.Lock()
	now := f.opts.Now()
	var due []dueItem
	for len(s.items) > 0 && len(due) < promoteBatch && !s.items[0].due.After(now) {
		due = append(due, heap.Pop(&s.items).(dueItem))
	}
	f.mu.Unlock()
	f.commitMu.Unlock()
	if len(due) == 0 {
		return nil
	}
	o := &op{ch: make(chan struct{})}
	for _, it := range due {
		o.unschedule = append(o.unschedule, it.key)
		// A stale key (the URL was scheduled again since, or dropped)
		// goes without queuing anything.
		v, err := f.opts.Store.Get(visitKey(it.e.URL))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			err = fmt.Errorf("frontier: read schedule: %w", err)
			f.fail(err)
			return err
		}
		at, _, err := decodeVisit(visitKey(it.e.URL), v)
		if err != nil {
			f.fail(err)
			return err
		}
		if !at.Equal(it.due) {
			continue
		}
		o.requeue = append(o.requeue, it.e)
	}
	return f.commit(o)
}

// prepareSchedule fills o's schedule changes for the done entry e, whose
// outcome is out: its new t/ key and v/ record, and the deletion of a t/
// key it may still have (a URL that was queued twice). It reads e's v/
// record.
func (f *Frontier) prepareSchedule(ctx context.Context, o *op, e Entry, out Outcome) error {
	if f.sched == nil {
		return nil
	}
	if sc := out.Schedule; sc != nil && (sc.Due.IsZero() || len(sc.Record) > maxVisitRecord) {
		return fmt.Errorf("%w for %s: due %v, record of %d bytes", ErrScheduleRecord, e.URL, sc.Due, len(sc.Record))
	}
	vk := visitKey(e.URL)
	v, err := f.opts.Store.Get(vk)
	var old time.Time
	had := false
	switch {
	case err == nil:
		if old, _, err = decodeVisit(vk, v); err != nil {
			return err
		}
		had = true
	case !errors.Is(err, ErrNotFound):
		return fmt.Errorf("frontier: read schedule: %w", err)
	}
	ch := &scheduleChange{visit: vk}
	if had {
		ch.oldKey = dueKey(old, e.URL)
	}
	if sc := out.Schedule; sc != nil {
		if f.age != nil {
			if err := f.touch(ctx, o, e.URL); err != nil {
				return err
			}
		}
		n := e
		n.Attempt, n.retry, n.seq, n.due, n.rank, n.ck = 0, false, 0, time.Time{}, 0, 0
		ch.item = &dueItem{key: dueKey(sc.Due, e.URL), due: time.Unix(0, sc.Due.UnixNano()), e: n}
		ch.value = encodeVisit(sc.Due, sc.Record)
		if !had {
			ch.delta = 1
		}
	} else if had {
		ch.delta = -1
	}
	o.sched = ch
	return nil
}

// scheduleChange is what one Done changes in the schedule.
type scheduleChange struct {
	visit  []byte   // the URL's v/ key
	value  []byte   // its new v/ value; nil: delete it
	oldKey []byte   // a t/ key the URL may still have, deleted
	item   *dueItem // the new t/ entry; nil: none
	delta  int64    // change in the count of scheduled URLs
}

// writeSchedule writes the schedule changes of a batch's ops.
func writeSchedule(w Writer, ops []*op) error {
	for _, p := range ops {
		for _, k := range p.unschedule {
			if err := w.Delete(k); err != nil {
				return err
			}
		}
		ch := p.sched
		if ch == nil {
			continue
		}
		if ch.oldKey != nil && (ch.item == nil || !bytes.Equal(ch.oldKey, ch.item.key)) {
			if err := w.Delete(ch.oldKey); err != nil {
				return err
			}
		}
		if ch.item != nil {
			if err := w.Set(ch.item.key, encodeDue(&ch.item.e)); err != nil {
				return err
			}
		}
		var err error
		if ch.value != nil {
			err = w.Set(ch.visit, ch.value)
		} else {
			err = w.Delete(ch.visit)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// applyScheduleLocked brings the schedule in memory in line with a
// committed batch.
func (f *Frontier) applyScheduleLocked(ops []*op) {
	if f.sched == nil {
		return
	}
	for _, p := range ops {
		if ch := p.sched; ch != nil {
			f.sched.urls += ch.delta
			if ch.item != nil {
				f.sched.pushLocked(*ch.item)
			}
		}
	}
}

// ScheduleRecord returns the record the last Done of url kept with its
// schedule (Schedule.Record), and when it is due; ok is false for a URL
// not in the schedule.
func (f *Frontier) ScheduleRecord(url string) (due time.Time, record []byte, ok bool, err error) {
	vk := visitKey(url)
	v, err := f.opts.Store.Get(vk)
	if errors.Is(err, ErrNotFound) {
		return time.Time{}, nil, false, nil
	}
	if err != nil {
		return time.Time{}, nil, false, fmt.Errorf("frontier: read schedule: %w", err)
	}
	due, rec, err := decodeVisit(vk, v)
	if err != nil {
		return time.Time{}, nil, false, err
	}
	return due, rec, true, nil
}

// ScheduleRecords calls fn with every scheduled URL and its record, in URL
// order, until fn returns false (a continuous crawl rebuilds its
// scheduler's summary with it at Open). The record is only valid during
// the call.
func (f *Frontier) ScheduleRecords(fn func(url string, due time.Time, record []byte) bool) error {
	end := []byte(prefixVisit)
	end[len(end)-1]++
	var derr error
	err := f.opts.Store.Ascend([]byte(prefixVisit), end, func(k, v []byte) bool {
		due, rec, err := decodeVisit(k, v)
		if err != nil {
			derr = err
			return false
		}
		return fn(string(k[len(prefixVisit):]), due, rec)
	})
	return scheduleScanErr(err, derr)
}

// scheduleScanErr is the error of a scan of the schedule: the store's,
// wrapped, or else derr, the decoding error that stopped the scan (a
// *CorruptError, returned as it is).
func scheduleScanErr(err, derr error) error {
	if err == nil {
		err = derr
	}
	var ce *CorruptError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("frontier: read schedule: %w", err)
}
